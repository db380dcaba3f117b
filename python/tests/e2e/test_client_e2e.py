# Copyright The TensorStack Training Authors.
# Licensed under the Apache License, Version 2.0.
"""TrainingClient against the local stack: pause and resume, a 422 with its
field path, a 403 through impersonation, list by selectors, and wait on a
job deleted meanwhile."""

import threading
import time

import pytest
from kubernetes import client as k8s

from tensorstack.training import (
    ForbiddenError,
    InvalidError,
    JobDeleted,
    PyTorchJob,
    TensorFlowJob,
    TrainingClient,
)

# Not the stack's own image: the pods go to the simulated (kwok) nodes,
# where they run until deleted.
IMAGE = "docker.io/library/busybox:1.36"


def running_job(name, **labels):
    return PyTorchJob(name, labels=labels).replica("worker", 1, image=IMAGE, command=["sleep", "inf"])


def test_pause_and_resume(admin_api, namespace):
    client = TrainingClient(namespace, api_client=admin_api)
    client.create(running_job("pausable"))
    client.wait("pausable", "pj", phase="Running", timeout=120)
    assert client.pause("pausable", "pj")["metadata"]["name"] == "pausable"
    paused = client.wait("pausable", "pj", phase="Paused", timeout=120)
    assert not client.pods("pausable"), "a paused job keeps no pods"
    assert paused["status"]["phase"] == "Paused"
    client.resume("pausable", "pj")
    client.wait("pausable", "pj", phase="Running", timeout=120)


def test_422_names_the_field(admin_api, namespace):
    client = TrainingClient(namespace, api_client=admin_api)
    with pytest.raises(InvalidError) as err:
        client.create({"apiVersion": "batch.tensorstack.dev/v1beta1", "kind": "PyTorchTrainingJob",
                       "metadata": {"name": "bad"},
                       "spec": {"replicaSpecs": [{"type": "worker", "replicas": -1,
                                                  "template": {"spec": {"containers": [{"name": "pytorch", "image": IMAGE}]}}}]}})
    assert err.value.status == 422
    assert "spec.replicaSpecs[0].replicas" in err.value.paths


def test_403_through_impersonation(admin_api, namespace):
    # The admin may impersonate; the user it names has no rights here.
    api = k8s.ApiClient(admin_api.configuration)
    api.set_default_header("Impersonate-User", "e2e-nobody")
    client = TrainingClient(namespace, api_client=api)
    with pytest.raises(ForbiddenError) as err:
        client.create(running_job("refused"))
    assert err.value.status == 403
    assert (err.value.user, err.value.verb, err.value.resource) == ("e2e-nobody", "create", "pytorchtrainingjobs")


def test_list_by_selectors(admin_api, namespace):
    client = TrainingClient(namespace, api_client=admin_api)
    client.create(running_job("team-a", team="a"))
    client.create(TensorFlowJob("team-b", labels={"team": "b"}).replica("worker", 1, image=IMAGE))
    assert [j["metadata"]["name"] for j in client.list(label_selector="team=a")] == ["team-a"]
    assert {j["kind"] for j in client.list()} == {"PyTorchTrainingJob", "TensorFlowTrainingJob"}
    assert [j["metadata"]["name"] for j in client.list("tj")] == ["team-b"]


def test_wait_on_a_deleted_job_raises(admin_api, namespace):
    client = TrainingClient(namespace, api_client=admin_api)
    client.create(running_job("short-lived"))
    client.wait("short-lived", "pj", phase="Running", timeout=120)
    threading.Timer(2, client.delete, args=("short-lived", "pj")).start()
    start = time.monotonic()
    with pytest.raises(JobDeleted):
        client.wait("short-lived", "pj", phase="Succeeded", timeout=120)
    assert time.monotonic() - start < 60, "wait noticed the deletion late"
