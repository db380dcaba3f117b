# Copyright The TensorStack Training Authors.
# Licensed under the Apache License, Version 2.0.
"""Hyperparameter searches without a cluster: the builders make the
TuningJob the API takes, field by field, and refuse bad values naming the
field; tune() creates it from a job or a function (whose script reads the
trial's values from its arguments); the trials come back best first and the
wait ends as the search does."""

import json
import os
import subprocess
import sys

import pytest
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from tensorstack.training import (
    ASHA,
    KINDS,
    BuildError,
    JobDeleted,
    MedianStop,
    Objective,
    Parameter,
    PyTorchJob,
    ShippingError,
    TrainingClient,
    TrainingError,
    WaitTimeout,
    function_script,
    rank_trials,
    trial_template,
    tuning_job,
    tuning_state,
)
from tensorstack.training.client import RUNTIME_TEMPLATE_KINDS
from tensorstack.training.tuning import TEMPLATE_FIELDS

# ---- the builders

LR = Parameter.double("lr", 1e-4, 0.1, log=True)
OPTIMIZER = Parameter.categorical("optimizer", ["adam", "sgd"])


def trial_job():
    return (PyTorchJob("ignored", "ignored-too", labels={"team": "vision"})
            .replica("node", 1, image="registry.example/train:1",
                     command=["python3", "train.py", "--lr", "${param.lr}", "--optimizer", "${param.optimizer}",
                              "--out", "/runs/${trial.name}"]))


def test_parameters_as_the_api_has_them():
    assert LR.to_dict() == {"name": "lr", "type": "double", "min": "0.0001", "max": "0.1", "logScale": True}
    assert Parameter.double("dropout", 0, "0.5", step=0.1).to_dict() == {
        "name": "dropout", "type": "double", "min": "0", "max": "0.5", "step": "0.1"}
    assert Parameter.double("tiny", 1e-6, 1e-5).to_dict()["min"] == "1e-06"
    assert Parameter.int("batch", 16, "256", log=True, step=16).to_dict() == {
        "name": "batch", "type": "int", "min": "16", "max": "256", "step": "16", "logScale": True}
    assert Parameter.categorical("width", [32, 0.5, True, "wide"]).to_dict() == {
        "name": "width", "type": "categorical", "values": ["32", "0.5", "true", "wide"]}
    assert Parameter.categorical("width", [32, True]).choices() == {"32": 32, "true": True}


@pytest.mark.parametrize("parameter, path, why", [
    (Parameter.double("2lr", 0, 1), "spec.parameters[0].name", "not a parameter name"),
    (Parameter.double("lr", 1, 0), "spec.parameters[0].max", "at least min (1)"),
    (Parameter.double("lr", 0, 1, log=True), "spec.parameters[0].min", "above 0 on a log scale"),
    (Parameter.double("lr", 0, 1, step=0), "spec.parameters[0].step", "above 0"),
    (Parameter.double("lr", "a", 1), "spec.parameters[0].min", "must be a number"),
    (Parameter.double("lr", 0, "1_000"), "spec.parameters[0].max", "must be a number"),
    (Parameter.double("lr", float("inf"), 1), "spec.parameters[0].min", "finite"),
    (Parameter.double("lr", None, 1), "spec.parameters[0].min", "needs min and max"),
    (Parameter.int("batch", 1.5, 4), "spec.parameters[0].min", "whole number"),
    (Parameter.int("batch", True, 4), "spec.parameters[0].min", "must be a number"),
    (Parameter.categorical("opt", []), "spec.parameters[0].values", "at least one value"),
    (Parameter.categorical("opt", "adam"), "spec.parameters[0].values", "list of values"),
    (Parameter.categorical("opt", ["a", "a"]), "spec.parameters[0].values[1]", "there already"),
    (Parameter.categorical("opt", [1, "1"]), "spec.parameters[0].values[1]", "there already"),
    (Parameter.categorical("opt", [None]), "spec.parameters[0].values[0]", "a string, a number or a boolean"),
])
def test_bad_parameters_are_refused_naming_the_field(parameter, path, why):
    with pytest.raises(BuildError) as refused:
        tuning_job("s", trial_job(), [parameter], "loss")
    assert refused.value.path == path and why in str(refused.value), str(refused.value)


def test_objective_and_early_stopping():
    assert Objective("loss").to_dict() == {"metric": "loss", "direction": "minimize", "trialValue": "last"}
    assert Objective("accuracy", "maximize", goal=0.95, trial_value="atStep", step=1000).to_dict() == {
        "metric": "accuracy", "direction": "maximize", "goal": "0.95", "trialValue": "atStep", "step": 1000}
    assert ASHA(100).to_dict() == {"asha": {"resource": "steps", "minResource": 100, "reductionFactor": 3, "rungs": 3}}
    assert ASHA(1, reduction_factor=2, rungs=4, resource="epochs").to_dict() == {
        "asha": {"resource": "epochs", "minResource": 1, "reductionFactor": 2, "rungs": 4}}
    assert MedianStop().to_dict() == {"medianStop": {"startStep": 1, "minTrials": 3}}
    assert MedianStop(start_step=50, min_trials=5).to_dict() == {"medianStop": {"startStep": 50, "minTrials": 5}}


def test_a_search_from_a_builder():
    search = tuning_job("lr-search", trial_job(), [LR, OPTIMIZER], Objective("loss", goal="0.05"), algorithm="tpe",
                        seed=42, startup_trials=5, early_stopping=ASHA(min_resource=100), parallel_trials=2,
                        max_trials=20, max_failed_trials=1, namespace="team")
    assert search == {
        "apiVersion": "batch.tensorstack.dev/v1beta1",
        "kind": "TuningJob",
        "metadata": {"name": "lr-search", "namespace": "team"},
        "spec": {
            "trialTemplate": {
                "labels": {"team": "vision"},
                "pytorch": {"replicaSpecs": [{"type": "node", "replicas": 1, "template": {"spec": {"containers": [{
                    "name": "pytorch", "image": "registry.example/train:1",
                    "command": ["python3", "train.py", "--lr", "${param.lr}", "--optimizer", "${param.optimizer}",
                                "--out", "/runs/${trial.name}"]}]}}}]},
            },
            "parameters": [
                {"name": "lr", "type": "double", "min": "0.0001", "max": "0.1", "logScale": True},
                {"name": "optimizer", "type": "categorical", "values": ["adam", "sgd"]},
            ],
            "objective": {"metric": "loss", "direction": "minimize", "goal": "0.05", "trialValue": "last"},
            "algorithm": {"name": "tpe", "seed": 42, "startupTrials": 5},
            "earlyStopping": {"asha": {"resource": "steps", "minResource": 100, "reductionFactor": 3, "rungs": 3}},
            "parallelTrials": 2,
            "maxTrials": 20,
            "maxFailedTrials": 1,
        },
    }
    # The defaults, as the API's.
    spec = tuning_job("s", trial_job(), [LR, OPTIMIZER], "loss")["spec"]
    assert (spec["algorithm"], spec["parallelTrials"], spec["maxTrials"], spec["maxFailedTrials"]) == (
        {"name": "random"}, 1, 10, 3)
    assert "earlyStopping" not in spec and spec["objective"]["direction"] == "minimize"


def test_trial_templates_of_manifests():
    manifest = {"apiVersion": "batch.tensorstack.dev/v1beta1", "kind": "MPIJob",
                "metadata": {"name": "x", "namespace": "ns", "annotations": {"a": "b"}},
                "spec": {"slotsPerWorker": 2, "replicaSpecs": []}}
    assert trial_template(manifest) == {"annotations": {"a": "b"}, "mpi": {"slotsPerWorker": 2, "replicaSpecs": []}}
    as_is = {"labels": {"l": "v"}, "generic": {"replicaSpecs": []}}
    assert trial_template(as_is) == as_is and trial_template(as_is) is not as_is
    with pytest.raises(BuildError, match="spec of exactly one kind"):
        trial_template({"generic": {}, "mpi": {}})
    with pytest.raises(BuildError, match="^kind"):
        trial_template({"apiVersion": "batch.tensorstack.dev/v1beta1", "kind": "TFJob", "spec": {}})


def test_every_kind_has_a_trial_template_field():
    assert set(TEMPLATE_FIELDS) == set(KINDS)
    assert {field: kind for kind, field in TEMPLATE_FIELDS.items()} == RUNTIME_TEMPLATE_KINDS


@pytest.mark.parametrize("kwargs, path, why", [
    ({"name": "Search"}, "metadata.name", "DNS-1035"),
    ({"name": "s" * 62, "max_trials": 10}, "metadata.name", "over 63 characters"),
    ({"max_trials": 501}, "spec.maxTrials", "at most 500"),
    ({"max_trials": 0}, "spec.maxTrials", "at least 1"),
    ({"parallel_trials": 11}, "spec.parallelTrials", "at most maxTrials (10)"),
    ({"max_failed_trials": -1}, "spec.maxFailedTrials", "at least 0"),
    ({"algorithm": "bayes"}, "spec.algorithm.name", "not one of random, grid, tpe"),
    ({"algorithm": "grid"}, "spec.parameters[0].step", "grid search needs the step"),
    ({"startup_trials": 3}, "spec.algorithm.startupTrials", "only under tpe"),
    ({"seed": "42"}, "spec.algorithm.seed", "whole number"),
    ({"objective": Objective("loss", "lower")}, "spec.objective.direction", "not one of minimize, maximize"),
    ({"objective": Objective("loss", trial_value="atStep")}, "spec.objective.step", "needs the step"),
    ({"objective": Objective("loss", step=10)}, "spec.objective.step", "only with trial_value 'atStep'"),
    ({"early_stopping": ASHA(0)}, "spec.earlyStopping.asha.minResource", "at least 1"),
    ({"early_stopping": ASHA(1, reduction_factor=11)}, "spec.earlyStopping.asha.reductionFactor", "from 2 to 10"),
    ({"early_stopping": ASHA(1, resource="seconds")}, "spec.earlyStopping.asha.resource", "not one of steps"),
    ({"early_stopping": MedianStop(min_trials=0)}, "spec.earlyStopping.medianStop.minTrials", "at least 1"),
    ({"early_stopping": {"asha": {}}}, "spec.earlyStopping", "ASHA(...) or MedianStop(...)"),
    ({"parameters": []}, "spec.parameters", "at least one parameter"),
    ({"parameters": LR}, "spec.parameters", "a list"),
    ({"parameters": [LR, LR]}, "spec.parameters[1].name", "there already"),
    ({"parameters": [Parameter.int(f"p{i}", 0, 1) for i in range(17)]}, "spec.parameters", "at most 16"),
    ({"parameters": [OPTIMIZER]}, "spec.trialTemplate.pytorch.replicaSpecs[0].template.spec.containers[0].command[3]",
     "${param.lr} names no parameter: use ${param.<name>} with one of optimizer, or ${trial.name}"),
])
def test_bad_searches_are_refused_naming_the_field(kwargs, path, why):
    args = {"name": "s", "trial": trial_job(), "parameters": [LR, OPTIMIZER], "objective": "loss", **kwargs}
    with pytest.raises(BuildError) as refused:
        tuning_job(**args)
    assert refused.value.path == path and why in str(refused.value), str(refused.value)


# ---- the trials and the state

def search_with(trials, direction="minimize", conditions=()):
    return {"kind": "TuningJob", "metadata": {"name": "s", "namespace": "team"},
            "spec": {"objective": {"metric": "loss", "direction": direction}},
            "status": {"trials": trials, "bestTrial": "s-2", "bestValue": "0.1",
                       "conditions": [{"type": t, "status": v, "reason": "R", "message": "m",
                                       "lastTransitionTime": f"2026-01-01T00:00:0{i}Z"}
                                      for i, (t, v) in enumerate(conditions)]}}


TRIALS = [
    {"name": "s-0", "index": 0, "state": "Succeeded", "value": "0.3"},
    {"name": "s-1", "index": 1, "state": "Failed"},
    {"name": "s-2", "index": 2, "state": "Running", "value": "0.1"},
    {"name": "s-3", "index": 3, "state": "Paused", "value": "0.3"},
    {"name": "s-4", "index": 4, "state": "Failed", "value": "NaN"},
    {"name": "s-5", "index": 5, "state": "Pending"},
]


def test_trials_rank_best_first():
    assert [t["name"] for t in rank_trials(search_with(TRIALS))] == ["s-2", "s-0", "s-3", "s-1", "s-4", "s-5"]
    assert [t["name"] for t in rank_trials(search_with(TRIALS, "maximize"))] == ["s-0", "s-3", "s-2", "s-1", "s-4",
                                                                                 "s-5"]
    assert rank_trials({"status": {}}) == []


@pytest.mark.parametrize("conditions, state", [
    ((), "Pending"),
    ((("Running", "True"),), "Running"),
    ((("Running", "False"), ("Suspended", "True")), "Suspended"),
    ((("Running", "False"), ("Failed", "True")), "Failed"),
    ((("Running", "False"), ("Succeeded", "True")), "Succeeded"),
])
def test_tuning_state_is_the_apis_rule(conditions, state):
    assert tuning_state(search_with([], conditions=conditions)) == state


# ---- the client, against a fake API

def api_exception(status, message=""):
    exc = ApiException(status=status, reason="refused")
    exc.body = json.dumps({"kind": "Status", "code": status, "message": message,
                           "reason": {404: "NotFound"}.get(status, "")})
    return exc


TORCH = {"apiVersion": "batch.tensorstack.dev/v1beta1", "kind": "ClusterTrainingRuntime",
         "metadata": {"name": "torch-distributed"},
         "spec": {"template": {"pytorch": {"replicaSpecs": [{"type": "node", "replicas": 1}]}}}}
TEAM_MPI = {"apiVersion": "batch.tensorstack.dev/v1beta1", "kind": "TrainingRuntime",
            "metadata": {"name": "mpi", "namespace": "team"},
            "spec": {"template": {"mpi": {"replicaSpecs": [{"type": "launcher", "replicas": 1}]}}}}


class FakeServer:
    """Answers the REST calls of the kubernetes client's CustomObjectsApi, so
    that the client's own requests (path, method, body) are what is checked:
    runtimes, and searches as a script of answers (None: 404)."""

    def __init__(self, runtimes=(TORCH,), searches=()):
        self.runtimes = list(runtimes)
        self.searches = list(searches)
        self.requests = []

    def call_api(self, resource_path, method, path_params=None, query_params=None, header_params=None, body=None,
                 **kwargs):
        path = resource_path
        for key, value in (path_params or {}).items():
            path = path.replace("{" + key + "}", value)
        self.requests.append((method, path, body))
        parts = path.split("/")
        if method == "POST":
            stored = json.loads(json.dumps(body))
            stored["metadata"]["namespace"] = parts[5]
            return stored
        name = parts[-1]
        if parts[-2] == "tuningjobs":
            answer = self.searches.pop(0) if len(self.searches) > 1 else self.searches[0]
            if answer is None:
                raise api_exception(404, f"tuningjobs {name!r} not found")
            return answer
        for r in self.runtimes:
            namespace = r["metadata"].get("namespace")
            plural = "trainingruntimes" if namespace else "clustertrainingruntimes"
            if r["metadata"]["name"] == name and parts[-2] == plural and (namespace is None or namespace == parts[5]):
                return json.loads(json.dumps(r))
        raise api_exception(404, f"{parts[-2]} {name!r} not found")


def fake_client(server):
    c = TrainingClient("team", api_client=k8s.ApiClient(k8s.Configuration()))
    c.api_client.call_api = server.call_api
    return c


def test_tune_a_job_creates_the_search():
    server = FakeServer()
    created = fake_client(server).tune("lr-search", trial_job(), [LR, OPTIMIZER], Objective("loss"),
                                       algorithm="random", seed=7, early_stopping=MedianStop(), max_trials=4,
                                       namespace="team", queue="user-queue")
    ((method, path, body),) = server.requests
    assert (method, path) == ("POST", "/apis/batch.tensorstack.dev/v1beta1/namespaces/team/tuningjobs")
    want = tuning_job("lr-search", trial_job(), [LR, OPTIMIZER], "loss", seed=7, early_stopping=MedianStop(),
                      max_trials=4)
    # The queue is every trial's.
    want["spec"]["trialTemplate"]["labels"]["kueue.x-k8s.io/queue-name"] = "user-queue"
    assert body == want
    assert body["spec"]["algorithm"] == {"name": "random", "seed": 7}
    assert created["metadata"] == {"name": "lr-search", "namespace": "team"}


def test_tune_takes_the_namespace_of_the_job_then_the_clients():
    server = FakeServer()
    c = fake_client(server)
    c.tune("a", trial_job(), [LR, OPTIMIZER], "loss")
    manifest = trial_job().to_dict()
    c.tune("b", manifest, [LR, OPTIMIZER], "loss")
    del manifest["metadata"]["namespace"]
    c.tune("c", manifest, [LR, OPTIMIZER], "loss")
    assert [path.split("/")[5] for _, path, _ in server.requests] == ["ignored-too", "ignored-too", "team"]


def train_trial(lr: float = 0.1, batch: int = 8, optimizer: str = "sgd", epochs: int = 1, width=None):
    print(f"lr={lr!r} batch={batch!r} optimizer={optimizer!r} epochs={epochs!r} width={width!r}")


TUNED = [LR, Parameter.int("batch", 8, 128, step=8), OPTIMIZER, Parameter.categorical("width", [32, 64, True])]


def test_tune_a_function_runs_it_with_the_trials_values(tmp_path):
    server = FakeServer(runtimes=[TORCH, TEAM_MPI])
    fake_client(server).tune("fn-search", train_trial, TUNED, Objective("accuracy", "maximize"), algorithm="tpe",
                             runtime="mpi", num_nodes=2, func_args={"epochs": 3}, env={"DATA": "/data"},
                             image="registry.example/mine:2", queue="user-queue")
    requests = [(method, path) for method, path, _ in server.requests]
    assert requests == [("GET", "/apis/batch.tensorstack.dev/v1beta1/namespaces/team/trainingruntimes/mpi"),
                        ("POST", "/apis/batch.tensorstack.dev/v1beta1/namespaces/team/tuningjobs")]
    body = server.requests[-1][2]
    template = body["spec"]["trialTemplate"]
    assert set(template) == {"labels", "mpi"} and template["labels"] == {"kueue.x-k8s.io/queue-name": "user-queue"}
    assert template["mpi"]["runtimeRef"] == {"name": "mpi", "kind": "TrainingRuntime"}
    trainer = template["mpi"]["trainer"]
    assert trainer["args"] == ["--lr=${param.lr}", "--batch=${param.batch}", "--optimizer=${param.optimizer}",
                               "--width=${param.width}"]
    assert (trainer["image"], trainer["numNodes"], trainer["env"]) == ("registry.example/mine:2", 2,
                                                                        [{"name": "DATA", "value": "/data"}])
    script = trainer["script"]["source"]
    assert trainer["script"]["name"] == "train.py"
    assert script == function_script(train_trial, {"epochs": 3}, tuned={
        "lr": "float", "batch": "int", "optimizer": {"adam": "adam", "sgd": "sgd"},
        "width": {"32": 32, "64": 64, "true": True}})
    assert "${" not in script
    assert [p["name"] for p in body["spec"]["parameters"]] == ["lr", "batch", "optimizer", "width"]

    # A trial: the controller puts its values in the args, the runtime passes them to the script.
    path = tmp_path / "train.py"
    path.write_text(script)

    def run(*args):
        return subprocess.run([sys.executable, "-I", str(path), *args], env={"PATH": os.environ.get("PATH", "")},
                              capture_output=True, text=True, timeout=60)

    done = run("--lr=1e-05", "--batch=64", "--optimizer=adam", "--width=32")
    assert (done.returncode, done.stdout) == (0, "lr=1e-05 batch=64 optimizer='adam' epochs=3 width=32\n"), done.stderr
    done = run("--other", "x", "--lr=0.5", "--batch=1e+02", "--optimizer=sgd", "--width=true")
    assert (done.returncode, done.stdout) == (0, "lr=0.5 batch=100 optimizer='sgd' epochs=3 width=True\n"), done.stderr
    # Without its arguments the script says why instead of training with the defaults.
    done = run("--lr=0.5")
    assert done.returncode == 1 and done.stdout == ""
    assert "no --NAME=VALUE argument for batch, optimizer, width" in done.stderr
    assert "spec.trainer.args" in done.stderr


def takes_no_lr(batch=1):
    pass


def test_tune_refuses_before_any_request():
    server = FakeServer()
    c = fake_client(server)
    with pytest.raises(ShippingError, match="do not fit its parameters"):
        c.tune("s", takes_no_lr, [LR], "loss")
    with pytest.raises(ShippingError, match=r"func_args\['lr'\].*tuned argument too"):
        c.tune("s", train_trial, [LR], "loss", func_args={"lr": 0.1})
    with pytest.raises(BuildError, match="spec.maxTrials"):
        c.tune("s", train_trial, [LR], "loss", max_trials=0)
    with pytest.raises(BuildError, match="spec.trainer.numNodes"):
        c.tune("s", train_trial, [LR], "loss", num_nodes=0)
    with pytest.raises(TrainingError, match="runtime is for the trials of a function"):
        c.tune("s", trial_job(), [LR, OPTIMIZER], "loss", runtime="mpi")
    with pytest.raises(TrainingError, match="func_args is for the trials of a function"):
        c.tune("s", trial_job(), [LR, OPTIMIZER], "loss", func_args={"epochs": 1})
    assert server.requests == []


def test_get_tuning_job_list_trials_and_the_best():
    server = FakeServer(searches=[search_with(TRIALS)])
    c = fake_client(server)
    assert c.get_tuning_job("s")["metadata"]["name"] == "s"
    assert server.requests == [("GET", "/apis/batch.tensorstack.dev/v1beta1/namespaces/team/tuningjobs/s", None)]
    assert [t["name"] for t in c.list_trials("s")] == ["s-2", "s-0", "s-3", "s-1", "s-4", "s-5"]
    assert c.get_best_trial("s") == TRIALS[2]
    none_yet = search_with(TRIALS[:2])
    none_yet["status"]["bestTrial"] = ""
    assert fake_client(FakeServer(searches=[none_yet])).get_best_trial("s") is None


def test_wait_for_tuning_job_returns_when_it_ends():
    running = search_with(TRIALS, conditions=[("Running", "True")])
    for end in ("Succeeded", "Failed"):
        ended = search_with(TRIALS, conditions=[("Running", "False"), (end, "True")])
        server = FakeServer(searches=[search_with([]), running, ended])
        assert tuning_state(fake_client(server).wait_for_tuning_job("s", interval=0)) == end
        assert len(server.requests) == 3


def test_wait_for_tuning_job_times_out_or_sees_it_go():
    server = FakeServer(searches=[search_with(TRIALS, conditions=[("Suspended", "True")])])
    with pytest.raises(WaitTimeout) as late:
        fake_client(server).wait_for_tuning_job("s", timeout=0.05, interval=0.01)
    assert late.value.phase == "Suspended" and "TuningJob team/s: not finished within 0.05 s" in str(late.value)
    with pytest.raises(JobDeleted):
        fake_client(FakeServer(searches=[search_with(TRIALS), None])).wait_for_tuning_job("s", interval=0)
