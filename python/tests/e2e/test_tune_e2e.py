# Copyright The TensorStack Training Authors.
# Licensed under the Apache License, Version 2.0.
"""tune(func) on the real nodes: a function of this file is every trial's
script, on the shipped generic runtime; it trains a tiny model with the
learning rate the search gives it and reports its loss. The search of two
trials succeeds, and its best trial is the one with the lower loss."""

from tensorstack.training import Objective, Parameter, TrainingClient, tuning_state

IMAGE = "localhost/tensorstack/training:v1"


def fit(lr: float, steps: int = 12):
    import time

    import torch
    from tensorstack.training.progress import report

    torch.manual_seed(0)
    x = torch.linspace(-1, 1, 64).unsqueeze(1)
    y = 3 * x + 1
    model = torch.nn.Linear(1, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    for step in range(1, steps + 1):
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        print(f"step={step} lr={lr} loss={loss.item():.6f}", flush=True)
        report(step=step, total_steps=steps, metrics={"loss": loss.item()})
        time.sleep(0.5)


def test_tune_a_function(real_node, admin_api, namespace):
    client = TrainingClient(namespace, api_client=admin_api)
    created = client.tune(
        "fit-lr", fit,
        parameters=[Parameter.categorical("lr", [0.001, 0.3])],
        objective=Objective("loss", "minimize"),
        algorithm="grid", parallel_trials=2, max_trials=2,
        early_stopping=None,
        runtime="generic", image=IMAGE,
        resources_per_node={"requests": {"cpu": "250m", "memory": "512Mi"}})
    assert created["kind"] == "TuningJob" and created["spec"]["maxTrials"] == 2

    ended = client.wait_for_tuning_job("fit-lr", timeout=600, interval=2)
    assert tuning_state(ended) == "Succeeded", ended.get("status")
    trials = client.list_trials("fit-lr")
    assert [t["state"] for t in trials] == ["Succeeded", "Succeeded"], trials
    values = {t["parameters"][0]["value"]: float(t["value"]) for t in trials}
    # A learning rate of 0.3 fits the line in 12 steps; 0.001 barely moves.
    assert values["0.3"] < values["0.001"], values
    best = client.get_best_trial("fit-lr")
    assert best is not None and best["parameters"][0]["value"] == "0.3", best
    assert trials[0]["name"] == best["name"]
