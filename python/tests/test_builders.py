# Copyright The TensorStack Training Authors.
# Licensed under the Apache License, Version 2.0.
"""Every example of artifacts/examples, built with the builders, is the same
object as its YAML, field by field; bad values are refused before any
request, naming the field."""

import pathlib

import pytest
import yaml

from tensorstack.training import BuildError, GenericJob, MPIJob, PyTorchJob, TensorFlowJob, XGBoostJob, job_from_dict, job_from_yaml

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "artifacts" / "examples"

# The simulated (kwok) nodes of the local stack read these; real nodes ignore them.
KWOK = {"kwok.tensorstack.dev/exit-code": "0", "kwok.tensorstack.dev/run-duration": "5s"}
TRAINING_IMAGE = "localhost/tensorstack/training:v1"
TF_IMAGE = "docker.io/tensorflow/tensorflow:2.16.1"
TORCH_IMAGE = "docker.io/pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime"


def example(name):
    return yaml.safe_load((EXAMPLES / f"{name}.yaml").read_text())


def program(obj, replica, container=0):
    """A replica's inline program, the first of its args: the program is the
    example's text, what the builders shape is everything around it."""
    return obj["spec"]["replicaSpecs"][replica]["template"]["spec"]["containers"][container]["args"][0]


def build_pytorch_ddp(_):
    return (PyTorchJob("pytorch-ddp")
            .torchrun(procs_per_node=1)
            .replica("node", 2, restart_policy="ExitCode", annotations=KWOK, image=TRAINING_IMAGE,
                     command=["python3", "pytorch_ddp.py"], env={"STEPS": "40", "STEP_SECONDS": "0.5"},
                     requests={"cpu": "250m", "memory": "512Mi"}, limits={"cpu": "1", "memory": "2Gi"})
            .run_policy(backoff_limit=2))


def build_pytorch_elastic(_):
    return (PyTorchJob("pytorch-elastic")
            .torchrun(procs_per_node=1, max_restarts=10, extra_options=["--rdzv-conf=last_call_timeout=1"])
            .elastic(min_replicas=1, max_replicas=3, expected_replicas=1)
            .replica("worker", 1, annotations=KWOK, image=TRAINING_IMAGE, command=["python3", "pytorch_elastic.py"],
                     env={"STEPS": "200"}, requests={"cpu": "200m", "memory": "256Mi"}, limits={"memory": "1Gi"},
                     template={"spec": {"terminationGracePeriodSeconds": 5}}))


def build_pytorch_torchrun(obj):
    return (PyTorchJob("llm-finetune")
            .torchrun(procs_per_node="gpu", rdzv_backend="c10d", max_restarts=3, extra_options=["--no-python"])
            .replica("node", 2, restart_policy="ExitCode", annotations=KWOK, image=TORCH_IMAGE,
                     args=["python", "-c", obj["spec"]["replicaSpecs"][0]["template"]["spec"]["containers"][0]["args"][2]],
                     env={"NCCL_DEBUG": "WARN"}, requests={"cpu": "16", "memory": "64Gi"},
                     limits={"cpu": "32", "memory": "64Gi", "nvidia.com/gpu": 2})
            .run_policy(active_deadline_seconds=86400, backoff_limit=5, clean_up_policy="Unfinished"))


def build_pytorch_failure_policy(_):
    tolerations = {"spec": {"tolerations": [
        {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30},
        {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30},
    ]}}
    job = PyTorchJob("nccl-allreduce").run_policy(
        backoff_limit=3, start_timeout_seconds=600, startup_policy="InOrder",
        failure_rules=[
            {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]},
            {"action": "FailJob", "onReasons": ["OOMKilled"]},
            {"action": "FailJob", "onExitCodes": {"containerName": "pytorch", "operator": "In", "values": [42]}},
            {"action": "RestartJob", "onExitCodes": {"operator": "NotIn", "values": [42]}},
        ])
    for replica, count in (("master", 1), ("worker", 3)):
        job.replica(replica, count, annotations=KWOK, image=TORCH_IMAGE, command=["python", "-m", "allreduce_bench"],
                    template=tolerations)
    return job


def build_debug_mode(_):
    job = PyTorchJob("mnist-debug").debug([
        {"type": "master"},
        {"type": "worker", "skipInitContainer": True,
         "command": ["sh", "-c", "env | grep -E '^(MASTER_|WORLD_SIZE|RANK)'; sleep inf"]},
    ])
    for replica in ("master", "worker"):
        job.replica(replica, 1, annotations=KWOK, image=TORCH_IMAGE,
                    command=["python", "/workspace/train.py", "--epochs=10"],
                    limits={"cpu": "4", "memory": "8Gi", "nvidia.com/gpu": 1})
    return job


def build_paused(_):
    train = ["/workspace/train.py", "--epochs=10"]
    return (TensorFlowJob("mnist-paused")
            .paused([{"type": "worker", "args": train + ["--resume-from=/checkpoints/latest"]}])
            .replica("chief", 1, annotations=KWOK, image=TF_IMAGE, command=["python"], args=train,
                     limits={"cpu": "2", "memory": "4Gi"})
            .replica("worker", 2, restart_policy="OnFailure", annotations=KWOK, image=TF_IMAGE, command=["python"],
                     args=train, limits={"cpu": "4", "memory": "8Gi"})
            .run_policy(clean_up_policy="Unfinished"))


def build_tensorflow_ps(obj):
    port = [{"name": "tensorflow", "containerPort": 2222}]
    job = TensorFlowJob("mnist-ps")
    for i, (replica, count, policy, requests, limits) in enumerate((
        ("chief", 1, "OnFailure", {"cpu": "1", "memory": "2Gi"}, {"cpu": "2", "memory": "4Gi"}),
        ("ps", 2, "OnFailure", {"cpu": "1", "memory": "4Gi"}, {"cpu": "2", "memory": "4Gi"}),
        ("worker", 4, "ExitCode", {"cpu": "2", "memory": "4Gi"}, {"cpu": "4", "memory": "8Gi"}),
    )):
        job.replica(replica, count, restart_policy=policy, annotations=KWOK, image=TF_IMAGE,
                    command=["python", "-u", "-c"], args=[program(obj, i)], ports=port,
                    requests=requests, limits=limits)
    return job.run_policy(active_deadline_seconds=7200, backoff_limit=3, clean_up_policy="Unfinished")


def build_tensorflow_multiworker(obj):
    return (TensorFlowJob("mnist-multiworker")
            .replica("worker", 3, restart_policy="OnFailure", annotations=KWOK, image=TF_IMAGE + "-gpu",
                     command=["python", "-u", "-c"], args=[program(obj, 0)],
                     ports=[{"name": "tensorflow", "containerPort": 2222}],
                     requests={"cpu": "4", "memory": "8Gi"}, limits={"cpu": "8", "memory": "16Gi", "nvidia.com/gpu": 1})
            .run_policy(backoff_limit=2, clean_up_policy="All", ttl_seconds_after_finished=86400))


def build_tensorflow_tfconfig(_):
    job = TensorFlowJob("tensorflow-tfconfig")
    for replica, count in (("chief", 1), ("worker", 2), ("ps", 1)):
        job.replica(replica, count, annotations=KWOK, image=TRAINING_IMAGE, command=["python3", "tf_config_check.py"],
                    requests={"cpu": "50m", "memory": "64Mi"}, limits={"cpu": "500m", "memory": "256Mi"})
    return job.run_policy(backoff_limit=1, clean_up_policy="None")


def build_tensorboard_scheduler(obj):
    return (TensorFlowJob("mnist-tb")
            .t9k_scheduler("default", priority=50)
            .tensorboard(TF_IMAGE, ["t9k://pvc/mnist-logs/train", "t9k://pvc/mnist-logs/validation"],
                         requests={"cpu": "100m", "memory": "512Mi"}, limits={"cpu": "1", "memory": "1Gi"})
            .replica("worker", 2, restart_policy="OnFailure", annotations=KWOK, image=TF_IMAGE + "-gpu",
                     command=["python", "-u", "-c"], args=[program(obj, 0)],
                     requests={"cpu": "4", "memory": "8Gi"}, limits={"cpu": "8", "memory": "16Gi", "nvidia.com/gpu": 1})
            .run_policy(backoff_limit=2, clean_up_policy="Unfinished"))


def build_xgboost(_):
    replica = dict(restart_policy="ExitCode", annotations=KWOK, image=TRAINING_IMAGE,
                   command=["python3", "xgboost_train.py"], env={"ROUNDS": "30", "ROUND_SECONDS": "0.5"},
                   requests={"cpu": "200m", "memory": "256Mi"}, limits={"cpu": "1", "memory": "1Gi"})
    return (XGBoostJob("xgboost")
            .replica("master", 1, **replica)
            .replica("worker", 2, **replica)
            .run_policy(backoff_limit=2, clean_up_policy="None"))


def build_generic(obj):
    replica = dict(restart_policy="ExitCode", annotations=KWOK, image=TRAINING_IMAGE, command=["sh", "-c"],
                   args=[program(obj, 0)], ports=[{"name": "rendezvous", "containerPort": 29500}],
                   env={"STEPS": "20", "STEP_SECONDS": "0.3"},
                   requests={"cpu": "250m", "memory": "512Mi"}, limits={"cpu": "1", "memory": "2Gi"})
    return (GenericJob("generic-ddp")
            .success_rule({"coordinator": None})
            .replica("coordinator", 1, **replica)
            .replica("worker", 1, **replica)
            .run_policy(backoff_limit=2, clean_up_policy="None"))


def build_mpi(obj):
    worker = obj["spec"]["replicaSpecs"][1]["template"]["spec"]
    return (MPIJob("mpi-allreduce")
            .mpi(slots_per_worker=1, implementation="OpenMPI")
            .replica("launcher", 1, restart_policy="OnFailure", annotations=KWOK, image=TRAINING_IMAGE, container="mpi",
                     command=["mpirun", "--allow-run-as-root", "-np", "2", "python3",
                              "/opt/tensorstack/examples/mpi_allreduce.py"],
                     requests={"cpu": "100m", "memory": "128Mi"}, limits={"memory": "512Mi"})
            .replica("worker", 2, annotations=KWOK, image=TRAINING_IMAGE, container="mpi",
                     command=worker["containers"][0]["command"],
                     requests={"cpu": "200m", "memory": "256Mi"}, limits={"memory": "1Gi"},
                     template={"spec": {"affinity": worker["affinity"]}})
            .run_policy(backoff_limit=2))


BUILDERS = {
    "debug-mode": build_debug_mode,
    "generic": build_generic,
    "mpi": build_mpi,
    "paused": build_paused,
    "pytorch-ddp": build_pytorch_ddp,
    "pytorch-elastic": build_pytorch_elastic,
    "pytorch-failure-policy": build_pytorch_failure_policy,
    "pytorch-torchrun": build_pytorch_torchrun,
    "tensorboard-scheduler": build_tensorboard_scheduler,
    "tensorflow-multiworker": build_tensorflow_multiworker,
    "tensorflow-ps": build_tensorflow_ps,
    "tensorflow-tfconfig": build_tensorflow_tfconfig,
    "xgboost": build_xgboost,
}


def test_every_example_has_a_builder():
    names = sorted(p.stem for p in EXAMPLES.glob("*.yaml"))
    assert names, f"no examples in {EXAMPLES}"
    assert names == sorted(BUILDERS), "examples without a builder here, or builders of examples that are gone"


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_builder_makes_the_example(name):
    want = example(name)
    assert BUILDERS[name](want).to_dict() == want


def test_set_merges_what_the_builders_lack():
    job = (PyTorchJob("x", "team").replica("worker", 1, image="i")
           .set("spec:\n  runPolicy:\n    successPolicy: AllWorkers\n")
           .set({"metadata": {"labels": {"team": "a"}}}))
    obj = job.to_dict()
    assert obj["spec"]["runPolicy"] == {"successPolicy": "AllWorkers"}
    assert obj["metadata"] == {"name": "x", "namespace": "team", "labels": {"team": "a"}}


def test_queue_labels_the_job_for_kueue():
    obj = TensorFlowJob("q").queue("user-queue").replica("worker", 1, image="i").to_dict()
    assert obj["metadata"]["labels"] == {"kueue.x-k8s.io/queue-name": "user-queue"}


@pytest.mark.parametrize("build, path", [
    (lambda: PyTorchJob("x").replica("worker", -1), "spec.replicaSpecs[0].replicas"),
    (lambda: PyTorchJob("x").replica("worker", 1).replica("master", "2"), "spec.replicaSpecs[1].replicas"),
    (lambda: PyTorchJob("x").replica("worker", 1, restart_policy="Sometimes"), "spec.replicaSpecs[0].restartPolicy"),
    (lambda: PyTorchJob("x").replica("worker", 1).replica("worker", 1), "spec.replicaSpecs[1].type"),
    (lambda: PyTorchJob("x").replica("worker_1", 1), "spec.replicaSpecs[0].type"),
    (lambda: PyTorchJob("x").replica("worker", 1, env={"N": 3}), "spec.replicaSpecs[0].template.spec.containers[0].env[N]"),
    (lambda: PyTorchJob("x").replica("worker", 1, command="python train.py"),
     "spec.replicaSpecs[0].template.spec.containers[0].command"),
    (lambda: PyTorchJob("x").run_policy(clean_up_policy="Some"), "spec.runPolicy.cleanUpPolicy"),
    (lambda: PyTorchJob("x").run_policy(backoff_limit=True), "spec.runPolicy.backoffLimit"),
    (lambda: PyTorchJob("x").run_policy(restart_strategy="Reboot"), "spec.runPolicy.restartStrategy"),
    (lambda: PyTorchJob("x").elastic(3, 2), "spec.elastic.maxReplicas"),
    (lambda: PyTorchJob("x").torchrun(rdzv_backend="zookeeper"), "spec.torchrunConfig.rdzvBackend"),
    (lambda: PyTorchJob("x").replica("worker", 1).torchrun(rdzv_backend="static").elastic(1, 2).to_dict(),
     "spec.torchrunConfig.rdzvBackend"),
    (lambda: GenericJob("x").replica("worker", 1).failure_rule({"chief": None}).to_dict(),
     "spec.failureRules[0].replicas[0].type"),
    (lambda: GenericJob("x").failure_rule({}), "spec.failureRules[0].replicas"),
    (lambda: GenericJob("x").success_rule({"worker": ["0"]}), "spec.successRules[0].replicas[0].indexes[0]"),
    (lambda: PyTorchJob("Not_A_Name"), "metadata.name"),
    (lambda: PyTorchJob("x").to_dict(), "spec.replicaSpecs"),
])
def test_bad_values_are_refused_with_the_field(build, path):
    with pytest.raises(BuildError) as err:
        build()
    assert err.value.path == path


def test_restart_strategy():
    job = PyTorchJob("x").replica("node", 2).run_policy(restart_strategy="InPlace", backoff_limit=2).to_dict()
    assert job["spec"]["runPolicy"] == {"restartStrategy": "InPlace", "backoffLimit": 2}


def test_generic_job_rules():
    spec = (GenericJob("x").replica("chief", 1).replica("worker", 2)
            .success_rule({"chief": None})
            .failure_rule({"chief": None})
            .failure_rule({"worker": [0, 1]})
            .to_dict()["spec"])
    assert spec["successRules"] == [{"replicas": [{"type": "chief"}]}]
    assert spec["failureRules"] == [{"replicas": [{"type": "chief"}]},
                                    {"replicas": [{"type": "worker", "indexes": [0, 1]}]}]
    assert "failureRules" not in GenericJob("y").replica("worker", 1).to_dict()["spec"]


def test_generic_job_elastic():
    spec = GenericJob("x").replica("coordinator", 1).replica("worker", 2).elastic(2, 5, 3).to_dict()["spec"]
    assert spec["elastic"] == {"enabled": True, "minReplicas": 2, "maxReplicas": 5, "expectedReplicas": 3}
    with pytest.raises(BuildError) as err:
        GenericJob("x").elastic(3, 2)
    assert err.value.path == "spec.elastic.maxReplicas"


def test_job_from_yaml_checks_the_kind():
    assert job_from_yaml((EXAMPLES / "pytorch-ddp.yaml").read_text())["kind"] == "PyTorchTrainingJob"
    with pytest.raises(BuildError) as err:
        job_from_dict({"apiVersion": "batch/v1", "kind": "Job"})
    assert err.value.path == "apiVersion"
