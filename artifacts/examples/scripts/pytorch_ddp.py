"""Data-parallel training with torch.distributed and gloo, on CPUs.

Started by torchrun, which sets RANK, WORLD_SIZE, MASTER_ADDR and
MASTER_PORT for each process. Every rank fits the same linear model to its
own shard of a synthetic regression problem; DistributedDataParallel
averages the gradients, so all ranks keep one model and the loss falls.
Each rank prints one line per step, and rank 0 reports the job's progress
(step, loss) to its progress subresource with tensorstack.training.progress, so that
kubectl get shows how far the job is.
"""
import os
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel

from tensorstack.training.progress import report

STEPS = int(os.environ.get("STEPS", "40"))
# A pause after each step, so that a short example runs long enough to watch.
STEP_SECONDS = float(os.environ.get("STEP_SECONDS", "0"))
FEATURES = 8


def main():
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    print(f"rank={rank} world={world} joined at={time.time():.3f}", flush=True)
    torch.manual_seed(0)
    model = DistributedDataParallel(torch.nn.Linear(FEATURES, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    data = torch.Generator().manual_seed(1000 + rank)
    true_weights = torch.arange(1.0, FEATURES + 1).unsqueeze(1)
    for step in range(1, STEPS + 1):
        x = torch.randn(64, FEATURES, generator=data)
        y = x @ true_weights + 0.1 * torch.randn(64, 1, generator=data)
        optimizer.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        print(f"rank={rank} step={step} loss={loss.item():.4f} at={time.time():.3f}", flush=True)
        if rank == 0:
            report(step=step, total_steps=STEPS, metrics={"loss": loss.item()})
        time.sleep(STEP_SECONDS)
    dist.barrier()
    dist.destroy_process_group()
    print(f"rank={rank} done steps={STEPS} at={time.time():.3f}", flush=True)


if __name__ == "__main__":
    main()
