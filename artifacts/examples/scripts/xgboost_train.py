"""Distributed gradient boosting with XGBoost's collective, on CPUs.

Every replica of an XGBoostTrainingJob runs it. The controller tells each one
where the tracker is (DMLC_TRACKER_URI, DMLC_TRACKER_PORT: the master), how
many replicas train (DMLC_NUM_WORKER) and its own rank (DMLC_TASK_ID). The
master, rank 0, starts XGBoost's tracker; then every replica, the master
too, joins the collective and trains on its own shard of a synthetic
classification problem. Each round's gradient histograms are all-reduced, so
every replica grows the same trees, and the evaluation metric is computed
over all the shards: every replica prints the same value.

Each replica prints one line per round:

    rank=R round=N train-logloss=X at=T

and, at the end, "rank=R done rounds=N train-logloss=X". Rank 0 reports the
job's progress (round, logloss) to its progress subresource with
tensorstack.training.progress.

ROUNDS (default 30) sets the rounds, ROUND_SECONDS a pause after each, so
that a short example runs long enough to watch; ROWS the rows of each shard.
"""
import os
import socket
import time

import numpy as np
import xgboost as xgb
from xgboost import collective
from xgboost.tracker import RabitTracker

from tensorstack.training.progress import report

ROUNDS = int(os.environ.get("ROUNDS", "30"))
ROUND_SECONDS = float(os.environ.get("ROUND_SECONDS", "0"))
ROWS = int(os.environ.get("ROWS", "4000"))
FEATURES = 10


class RankedTracker(RabitTracker):
    """The tracker, giving each replica the rank the controller gave it
    (DMLC_TASK_ID) rather than one in the order of the replicas' addresses.
    XGBoost's own "task" order compares the ids as text, which puts "10"
    before "2"."""

    def _sort_pending(self, pending):
        return sorted(pending, key=lambda entry: int(entry.task_id))


def shard(rank):
    """This replica's rows: features drawn with a seed of its own, labelled
    by one rule shared by every replica, with some noise."""
    rule = np.random.default_rng(0).normal(size=FEATURES)
    rng = np.random.default_rng(1000 + rank)
    x = rng.normal(size=(ROWS, FEATURES))
    y = (x @ rule + 0.5 * rng.normal(size=ROWS) > 0).astype(np.float32)
    return xgb.DMatrix(x, label=y)


class RoundLog(xgb.callback.TrainingCallback):
    """Prints each round's metric, and on rank 0 reports the progress."""

    def __init__(self, rank):
        super().__init__()
        self.rank = rank
        self.last = None

    def after_iteration(self, model, epoch, evals_log):
        self.last = evals_log["train"]["logloss"][-1]
        done = epoch + 1
        print(f"rank={self.rank} round={done} train-logloss={self.last:.6f} at={time.time():.3f}", flush=True)
        if self.rank == 0:
            report(step=done, total_steps=ROUNDS, metrics={"logloss": self.last})
        time.sleep(ROUND_SECONDS)
        return False  # go on


def wait_resolves(host, timeout=120.0):
    """A replica's DNS name exists once its pod has an address: a worker
    that starts before the master waits for it, and so does the master for
    its own name."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return socket.getaddrinfo(host, None)[0][4][0]
        except socket.gaierror:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def main():
    rank = int(os.environ["DMLC_TASK_ID"])
    world = int(os.environ["DMLC_NUM_WORKER"])
    tracker_host, tracker_port = os.environ["DMLC_TRACKER_URI"], int(os.environ["DMLC_TRACKER_PORT"])
    tracker = None
    if rank == 0:
        tracker = RankedTracker(host_ip="0.0.0.0", n_workers=world, port=tracker_port, sortby="task")
        tracker.start(world)
    wait_resolves(tracker_host)
    dtrain = shard(rank)
    log = RoundLog(rank)
    # The workers retry their connection to the tracker while the master's
    # pod starts.
    with collective.CommunicatorContext(DMLC_TRACKER_URI=tracker_host, DMLC_TRACKER_PORT=tracker_port,
                                        DMLC_TASK_ID=str(rank), DMLC_WORKER_CONNECT_RETRY=60):
        joined = collective.get_rank()
        print(f"rank={rank} world={collective.get_world_size()} collective-rank={joined} joined at={time.time():.3f}",
              flush=True)
        params = {"objective": "binary:logistic", "tree_method": "hist", "max_depth": 4, "eta": 0.3,
                  "eval_metric": "logloss", "nthread": 1}
        xgb.train(params, dtrain, num_boost_round=ROUNDS, evals=[(dtrain, "train")], verbose_eval=False,
                  callbacks=[log])
    if tracker is not None:
        tracker.join()
    print(f"rank={rank} done rounds={ROUNDS} train-logloss={log.last:.6f} at={time.time():.3f}", flush=True)


if __name__ == "__main__":
    main()
