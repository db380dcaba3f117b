"""One all_reduce of the ranks, without torchrun.

Joins the process group from the environment the controller sets
(MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK) with init_method "env://",
sums every rank's number and checks the sum. Exits 1 when it is wrong.
"""
import sys

import torch
import torch.distributed as dist

from waitdns import wait_for_master


def main():
    wait_for_master()
    dist.init_process_group("gloo", init_method="env://")
    rank, world = dist.get_rank(), dist.get_world_size()
    total = torch.tensor([float(rank)])
    dist.all_reduce(total)
    want = world * (world - 1) / 2
    print(f"rank={rank} world={world} all_reduce={total.item():g} want={want:g}", flush=True)
    dist.destroy_process_group()
    sys.exit(0 if total.item() == want else 1)


if __name__ == "__main__":
    main()
