"""An MPI program: every rank adds its rank + 1 with mpi4py's allreduce and
checks the sum, then a few rounds of averaging a vector, as data-parallel
training does with its gradients.

Started by mpirun on the launcher of an MPIJob, one rank per slot of the
hostfile's workers. Each rank prints

    rank=R size=N host=H sum=S

mpirun forwards every rank's output to the launcher's log. A wrong sum
exits 1, and mpirun with it.

ROUNDS (default 5) sets the averaging rounds, ROUND_SECONDS a pause after
each, so that a test can stop a rank while they run.
"""
import os
import socket
import sys
import time

import numpy as np
from mpi4py import MPI

ROUNDS = int(os.environ.get("ROUNDS", "5"))
ROUND_SECONDS = float(os.environ.get("ROUND_SECONDS", "0"))


def main():
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    total = comm.allreduce(rank + 1, op=MPI.SUM)
    want = size * (size + 1) // 2
    print(f"rank={rank} size={size} host={socket.gethostname()} sum={total}", flush=True)
    if total != want:
        sys.exit(f"rank={rank}: allreduce gave {total}, want {want}")
    # Each rank starts from its own vector; averaging makes them all equal.
    vector = np.full(4, float(rank))
    for step in range(1, ROUNDS + 1):
        mean = np.empty_like(vector)
        comm.Allreduce(vector, mean, op=MPI.SUM)
        vector = mean / size
        print(f"rank={rank} round={step} mean={vector[0]:.3f}", flush=True)
        time.sleep(ROUND_SECONDS)
    comm.Barrier()


if __name__ == "__main__":
    main()
