"""Data-parallel training with torch.distributed and gloo, on CPUs.

Started by torchrun, which sets RANK, WORLD_SIZE, MASTER_ADDR and
MASTER_PORT for each process. Every rank fits the same linear model to its
own shard of a synthetic regression problem; DistributedDataParallel
averages the gradients, so all ranks keep one model and the loss falls.
Each rank prints one line per step, and rank 0 reports the job's progress
(step, loss) to its progress subresource with tensorstack.training.progress, so that
kubectl get shows how far the job is.

Checkpoints, in a job with spec.runPolicy.checkpoint (TENSORSTACK_CHECKPOINT_DIR
set; without it none of this happens):
- rank 0 saves the model, the optimizer, the step and the loss with
  torch.save to <dir>/step-<N>.pt when the job asks for one
  (should_checkpoint(): a stop is coming, or the policy's interval passed),
  and every CHECKPOINT_EVERY steps (or --checkpoint-every N) when set, and
  reports it (report_checkpoint), printing
  "rank=0 checkpoint saved step=N path=... reason=every|asked reported=yes|no";
- when the job has a checkpoint to resume from (TENSORSTACK_RESUME_FROM and
  TENSORSTACK_RESUME_STEP), every rank loads it and training goes on at the
  step after it, each rank printing "rank=R resumed from step=N path=...";
  the next step line is step N+1.

For tests, HANG_AT_STEP=N (or --hang-at-step N) makes every rank stop
before training step N and sleep forever, without printing or reporting
anything more: the pod keeps running and the job's progress stands still
(at step N-1 at most). A run that resumed from a checkpoint does not hang,
so that a job restarted after the hang can finish; HANG_AFTER_RESUME=1
makes it hang there too.
"""
import argparse
import os
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel

from tensorstack.training.progress import checkpoint_dir, report, report_checkpoint, resume_from, resume_step, \
    should_checkpoint

STEPS = int(os.environ.get("STEPS", "40"))
# A pause after each step, so that a short example runs long enough to watch.
STEP_SECONDS = float(os.environ.get("STEP_SECONDS", "0"))
FEATURES = 8
BATCH = 64


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkpoint-every", type=int, default=int(os.environ.get("CHECKPOINT_EVERY") or 0),
                        metavar="N", help="save a checkpoint every N steps (env CHECKPOINT_EVERY; 0: only when "
                                          "the job asks)")
    parser.add_argument("--hang-at-step", type=int, default=int(os.environ.get("HANG_AT_STEP") or 0),
                        metavar="N", help="for tests: sleep forever before step N (env HANG_AT_STEP)")
    # torchrun passes no arguments of its own; anything else is not ours.
    args, _ = parser.parse_known_args()
    return args


def batch(data, true_weights):
    x = torch.randn(BATCH, FEATURES, generator=data)
    y = x @ true_weights + 0.1 * torch.randn(BATCH, 1, generator=data)
    return x, y


def resume_point(rank):
    """The checkpoint every rank resumes from, as rank 0 sees it: (path,
    step), or (None, None). The ranks' pods may have been made at different
    times (a replica restarted alone), each with the last checkpoint of its
    own time: one small broadcast at the start makes them agree on it, and
    so on the steps they train together. Every rank calls it, or none: the
    checkpoint policy, and so TENSORSTACK_CHECKPOINT_DIR, is the job's."""
    choice = [resume_from(), resume_step()] if rank == 0 else [None, None]
    dist.broadcast_object_list(choice, src=0)
    return choice


def save_checkpoint(directory, step, loss, model, optimizer):
    """Writes the checkpoint of step to <directory>/step-<step>.pt: to a
    temporary name first, synced, then renamed, so that the name of a
    checkpoint is never that of a half-written file."""
    path = os.path.join(directory, f"step-{step}.pt")
    tmp = os.path.join(directory, f".step-{step}.pt.tmp-{os.getpid()}")
    state = {"model": model.module.state_dict(), "optimizer": optimizer.state_dict(), "step": step, "loss": loss}
    with open(tmp, "wb") as f:
        torch.save(state, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    return path


def main():
    args = parse_args()
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    print(f"rank={rank} world={world} joined at={time.time():.3f}", flush=True)
    torch.manual_seed(0)
    module = torch.nn.Linear(FEATURES, 1)
    optimizer = torch.optim.SGD(module.parameters(), lr=0.05)
    data = torch.Generator().manual_seed(1000 + rank)
    true_weights = torch.arange(1.0, FEATURES + 1).unsqueeze(1)

    directory = checkpoint_dir()
    start = 1
    resumed_path, resumed_step = resume_point(rank) if directory else (None, None)
    if resumed_path:
        state = torch.load(resumed_path, map_location="cpu")
        module.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        if resumed_step is None:
            resumed_step = state["step"]
        start = resumed_step + 1
        # Draw the batches of the steps done, so that the ranks go on with
        # the data they would have seen without the stop.
        for _ in range(resumed_step):
            batch(data, true_weights)
        print(f"rank={rank} resumed from step={resumed_step} path={resumed_path}", flush=True)
    # Wrapped after loading: DDP starts every rank from rank 0's parameters.
    model = DistributedDataParallel(module)

    for step in range(start, STEPS + 1):
        if step == args.hang_at_step and (not resumed_path or os.environ.get("HANG_AFTER_RESUME") == "1"):
            print(f"rank={rank} hanging before step={step}", flush=True)
            while True:
                time.sleep(3600)
        x, y = batch(data, true_weights)
        optimizer.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        print(f"rank={rank} step={step} loss={loss.item():.4f} at={time.time():.3f}", flush=True)
        if rank == 0:
            report(step=step, total_steps=STEPS, metrics={"loss": loss.item()})
        # Only rank 0 decides and only rank 0 saves: DDP keeps the model and
        # the optimizer the same on every rank, and saving them is no
        # collective, so the other ranks need not know. They go on and wait
        # at the next step's gradient all-reduce until rank 0 has saved; no
        # broadcast of the decision is needed.
        if rank == 0 and directory:
            reason = None
            if args.checkpoint_every > 0 and step % args.checkpoint_every == 0:
                reason = "every"
            elif should_checkpoint():
                reason = "asked"  # a stop is coming, or the policy's interval passed
            if reason:
                path = save_checkpoint(directory, step, loss.item(), model, optimizer)
                reported = report_checkpoint(path, step=step) is not None
                print(f"rank={rank} checkpoint saved step={step} path={path} reason={reason} "
                      f"reported={'yes' if reported else 'no'}", flush=True)
        time.sleep(STEP_SECONDS)
    dist.barrier()
    dist.destroy_process_group()
    print(f"rank={rank} done steps={STEPS} at={time.time():.3f}", flush=True)


if __name__ == "__main__":
    main()
