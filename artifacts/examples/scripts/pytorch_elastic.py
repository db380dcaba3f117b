"""Elastic data-parallel training with torch.distributed and gloo, on CPUs.

Started by torchrun with --nnodes=MIN:MAX: whenever replicas join or leave,
torchrun stops this program on every replica and starts it again in a group
of the new size. So that training goes on from where it was rather than
from zero, each process keeps a checkpoint in its pod (the model and the
step), and after every (re)start the group takes the state of the member
that got furthest: it is broadcast to everyone, including replicas that
just joined and have no checkpoint.

Gradients are averaged with all_reduce at every step. Each rank prints one
line per step, with the world size, so a log shows when the group changed.
"""
import os
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F

STEPS = int(os.environ.get("STEPS", "60"))
STEP_SECONDS = float(os.environ.get("STEP_SECONDS", "0.3"))
CHECKPOINT = os.environ.get("CHECKPOINT", "/tmp/elastic-checkpoint.pt")
FEATURES = 8


def restore(model):
    """Loads this pod's checkpoint, then adopts the furthest member's state."""
    step = 0
    if os.path.exists(CHECKPOINT):
        saved = torch.load(CHECKPOINT)
        model.load_state_dict(saved["model"])
        step = saved["step"]
    steps = [torch.zeros(1, dtype=torch.long) for _ in range(dist.get_world_size())]
    dist.all_gather(steps, torch.tensor([step], dtype=torch.long))
    source = max(range(len(steps)), key=lambda r: (steps[r].item(), -r))
    for p in model.parameters():
        dist.broadcast(p.data, src=source)
    return steps[source].item()


def main():
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = torch.nn.Linear(FEATURES, 1)
    start = restore(model)
    print(f"rank={rank} world={world} resumed from step={start} at={time.time():.3f}", flush=True)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    data = torch.Generator().manual_seed(1000 + rank + 7919 * start)
    true_weights = torch.arange(1.0, FEATURES + 1).unsqueeze(1)
    for step in range(start + 1, STEPS + 1):
        x = torch.randn(64, FEATURES, generator=data)
        y = x @ true_weights + 0.1 * torch.randn(64, 1, generator=data)
        optimizer.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
            p.grad /= world
        optimizer.step()
        # Written aside and renamed, so a process stopped mid-write leaves
        # the previous checkpoint whole.
        torch.save({"model": model.state_dict(), "step": step}, CHECKPOINT + ".new")
        os.replace(CHECKPOINT + ".new", CHECKPOINT)
        print(f"rank={rank} world={world} step={step} loss={loss.item():.4f} at={time.time():.3f}", flush=True)
        time.sleep(STEP_SECONDS)
    dist.barrier()
    dist.destroy_process_group()
    print(f"rank={rank} world={world} done steps={STEPS} at={time.time():.3f}", flush=True)


if __name__ == "__main__":
    main()
