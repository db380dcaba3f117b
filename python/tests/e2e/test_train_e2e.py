# Copyright The TensorStack Training Authors.
# Licensed under the Apache License, Version 2.0.
"""train(func) on the real nodes: a DDP function of this file travels as the
job's script to the shipped torch-distributed runtime on 2 nodes; every rank
all-reduces and trains a few steps, and the job succeeds, recording the
runtime it was made from."""

import math
import re

import pytest

from tensorstack.training import TrainingClient, TrainingError, last_condition

# The stack's own training image (it has torch): its pods go to the real nodes.
IMAGE = "localhost/tensorstack/training:v1"

# A constant of the module the function reads: shipped with it.
FEATURES = 4

LINE = re.compile(r"rank=(\d+) world=(\d+) allreduce=(\S+) final_loss=(\S+)")


def ddp_train(steps: int = 5, lr: float = 0.05):
    # torch is imported here: the pods have it, the machine running the
    # tests may not.
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    # env:// reads MASTER_ADDR, MASTER_PORT, WORLD_SIZE and RANK, which the
    # controller (or the runtime's torchrun) sets.
    dist.init_process_group(backend="gloo", init_method="env://")
    rank, world = dist.get_rank(), dist.get_world_size()
    total = torch.tensor([float(rank + 1)])
    dist.all_reduce(total)  # 1 + 2 + ... + world

    torch.manual_seed(0)
    model = DistributedDataParallel(torch.nn.Linear(FEATURES, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    data = torch.Generator().manual_seed(1000 + rank)
    x = torch.randn(64, FEATURES, generator=data)
    y = x.sum(dim=1, keepdim=True)
    loss = None
    for _ in range(steps):
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
    print(f"rank={rank} world={world} allreduce={total.item():g} final_loss={loss.item():.6f}", flush=True)
    dist.destroy_process_group()


def diagnosis(client, name, kind):
    """What the job says of itself, for a failure's message."""
    out = []
    try:
        job = client.get(name, kind)
        out.append(f"phase {(job.get('status') or {}).get('phase')}, last condition {last_condition(job)}")
        out += [f"event {e.get('reason')}: {e.get('message')}" for e in client.events(name, kind)]
        out += list(client.logs(name, kind=kind, tail_lines=50))
    except TrainingError as err:
        out.append(f"(reading the job: {err})")
    return "\n".join(out)


def test_train_a_ddp_function_on_two_nodes(real_node, admin_api, namespace):
    client = TrainingClient(namespace, api_client=admin_api)
    runtimes = client.list_runtimes()
    assert any(r["name"] == "torch-distributed" and r["scope"] == "Cluster" and r["kind"] == "PyTorchTrainingJob"
               for r in runtimes), f"the stack has no ClusterTrainingRuntime torch-distributed: {runtimes}"

    created = client.train(
        ddp_train, "torch-distributed", num_nodes=2,
        resources_per_node={"requests": {"cpu": "250m", "memory": "512Mi"}, "limits": {"memory": "2Gi"}},
        func_args={"steps": 5}, image=IMAGE)
    name, kind = created["metadata"]["name"], created["kind"]
    assert name.startswith("ddp-train-") and kind == "PyTorchTrainingJob", (name, kind)
    assert created["spec"]["trainer"]["script"]["name"] == "train.py"
    assert created["status"]["runtime"]["name"] == "torch-distributed"

    try:
        done = client.wait(name, kind, phase="Succeeded", timeout=600, interval=2)
    except TrainingError as err:
        pytest.fail(f"{err}\n{diagnosis(client, name, kind)}")
    runtime = done["status"]["runtime"]
    assert (runtime["kind"], runtime["name"]) == ("ClusterTrainingRuntime", "torch-distributed"), runtime
    assert len(runtime["hash"]) == 64, runtime

    # Every pod's log, each line prefixed with its pod. The job keeps its
    # finished pods (cleanUpPolicy Unfinished, the default).
    lines = list(client.logs(name, kind=kind))
    ranks = {}
    for line in lines:
        found = LINE.search(line)
        if found:
            rank, world, allreduce, loss = found.groups()
            ranks[int(rank)] = (int(world), float(allreduce), float(loss))
    assert sorted(ranks) == [0, 1], "\n".join(lines)
    for rank, (world, allreduce, loss) in ranks.items():
        assert world == 2, (rank, world)
        assert allreduce == 3.0, (rank, allreduce)  # (0 + 1) + (1 + 1)
        assert math.isfinite(loss) and loss >= 0, (rank, loss)
