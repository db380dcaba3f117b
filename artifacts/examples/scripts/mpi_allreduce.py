"""An MPI program: every rank adds its rank + 1 with mpi4py's allreduce and
checks the sum, then rounds of averaging a vector, as data-parallel training
does with its gradients.

Started by mpirun on the launcher of an MPIJob, one rank per slot of the
hostfile's workers. Each rank prints

    rank=R size=N host=H sum=S
    rank=R library=L
    rank=R round=K mean=M

L is the first line of the MPI library's version (MPI_Get_library_version),
which tells the image's MPI apart: "Open MPI v4.1.4, ..." or "Open MPI v5...".

mpirun forwards every rank's output to the launcher's log. A wrong sum
exits 1, and mpirun with it. Rank 0 reports each round as the job's
progress (the launcher's Open MPI passes the job's variables to the ranks).

ROUNDS (default 5) sets the rounds, ROUND_SECONDS a pause after each, so
that a test can stop a rank while they run.

Checkpoints, in a job with spec.runPolicy.checkpoint: rank 0 saves the
vector and the round to <dir>/round-<K>.npz when the job asks
(should_checkpoint) and reports it, printing "rank=0 checkpoint saved
step=K path=... reported=yes|no"; a run with a checkpoint to resume from
loads it on rank 0, every rank takes it, prints "rank=R resumed from
step=K path=..." and goes on at round K+1.
"""
import os
import socket
import sys
import time

import numpy as np
from mpi4py import MPI

from tensorstack.training.progress import checkpoint_dir, report, report_checkpoint, resume_from, resume_step, \
    should_checkpoint

ROUNDS = int(os.environ.get("ROUNDS", "5"))
ROUND_SECONDS = float(os.environ.get("ROUND_SECONDS", "0"))


def save(directory, step, vector):
    """Writes the checkpoint under a temporary name, then renames it, so
    that a checkpoint's name is never that of a half-written file."""
    path = os.path.join(directory, f"round-{step}.npz")
    tmp = os.path.join(directory, f".round-{step}.tmp.npz")
    np.savez(tmp, vector=vector, step=step)
    os.replace(tmp, path)
    return path


def resume(comm, rank, vector):
    """The round to start at and the vector to start from: rank 0 reads the
    job's checkpoint, if any, and every rank takes it."""
    choice = None
    if rank == 0 and checkpoint_dir() and resume_from():
        state = np.load(resume_from())
        step = resume_step()
        choice = (resume_from(), int(state["step"]) if step is None else step, state["vector"])
    choice = comm.bcast(choice, root=0)
    if choice is None:
        return 1, vector
    path, step, saved = choice
    print(f"rank={rank} resumed from step={step} path={path}", flush=True)
    return step + 1, saved


def main():
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    total = comm.allreduce(rank + 1, op=MPI.SUM)
    want = size * (size + 1) // 2
    print(f"rank={rank} size={size} host={socket.gethostname()} sum={total}", flush=True)
    if total != want:
        sys.exit(f"rank={rank}: allreduce gave {total}, want {want}")
    library = MPI.Get_library_version().strip().splitlines()[0]
    print(f"rank={rank} library={library}", flush=True)
    # Each rank starts from its own vector; averaging makes them all equal.
    start, vector = resume(comm, rank, np.full(4, float(rank)))
    directory = checkpoint_dir()
    for step in range(start, ROUNDS + 1):
        mean = np.empty_like(vector)
        comm.Allreduce(vector, mean, op=MPI.SUM)
        vector = mean / size
        print(f"rank={rank} round={step} mean={vector[0]:.3f}", flush=True)
        if rank == 0:
            report(step=step, total_steps=ROUNDS, metrics={"mean": float(vector[0])})
            if directory and should_checkpoint():
                path = save(directory, step, vector)
                reported = report_checkpoint(path, step=step) is not None
                print(f"rank=0 checkpoint saved step={step} path={path} reported={'yes' if reported else 'no'}",
                      flush=True)
        time.sleep(ROUND_SECONDS)
    comm.Barrier()


if __name__ == "__main__":
    main()
