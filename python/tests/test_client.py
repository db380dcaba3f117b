# Copyright The TensorStack Training Authors.
# Licensed under the Apache License, Version 2.0.
"""TrainingClient without a cluster: refusals become typed errors with the
server's details, and wait ends as the job does."""

import json

import pytest
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from tensorstack.training import (
    ConflictError,
    ForbiddenError,
    InvalidError,
    JobDeleted,
    NotFoundError,
    TrainingClient,
    TrainingError,
    WaitTimeout,
)
from tensorstack.training.builders import SHORT_NAMES
from tensorstack.training.client import _plural
from tensorstack.training.errors import from_api_exception


def api_exception(status, body):
    exc = ApiException(status=status, reason="refused")
    exc.body = json.dumps(body)
    return exc


def test_422_names_the_fields():
    err = from_api_exception(api_exception(422, {
        "kind": "Status", "status": "Failure", "reason": "Invalid", "code": 422,
        "message": 'PyTorchTrainingJob.batch.tensorstack.dev "x" is invalid: spec.replicaSpecs[0].replicas: Invalid value: -1',
        "details": {"causes": [{"reason": "FieldValueInvalid", "message": "Invalid value: -1: must be at least 0",
                                "field": "spec.replicaSpecs[0].replicas"}]},
    }))
    assert isinstance(err, InvalidError)
    assert err.paths == ["spec.replicaSpecs[0].replicas"]
    assert err.fields[0].reason == "FieldValueInvalid"
    assert "422" in str(err) and "spec.replicaSpecs[0].replicas" in str(err)


def test_403_names_the_verb_and_resource():
    err = from_api_exception(api_exception(403, {
        "kind": "Status", "reason": "Forbidden", "code": 403,
        "message": 'pytorchtrainingjobs.batch.tensorstack.dev is forbidden: User "alice" cannot create resource '
                   '"pytorchtrainingjobs" in API group "batch.tensorstack.dev" in the namespace "team"',
    }))
    assert isinstance(err, ForbiddenError)
    assert (err.user, err.verb, err.resource) == ("alice", "create", "pytorchtrainingjobs")


def test_409_and_others_keep_the_status():
    err = from_api_exception(api_exception(409, {"reason": "Conflict", "message": "the job is finished"}))
    assert isinstance(err, ConflictError) and err.status == 409 and err.message == "the job is finished"
    raw = ApiException(status=500, reason="Internal Server Error")
    raw.body = "not json"
    err = from_api_exception(raw)
    assert err.status == 500 and err.message == "not json"


class FakeJobs:
    """Answers get_namespaced_custom_object from a script of jobs; None
    stands for a 404."""

    def __init__(self, script):
        self.script = list(script)

    def get_namespaced_custom_object(self, group, version, namespace, plural, name):
        item = self.script.pop(0) if len(self.script) > 1 else self.script[0]
        if item is None:
            raise api_exception(404, {"reason": "NotFound", "message": f"{name} not found"})
        return item


def job(phase, *conditions):
    return {"kind": "PyTorchTrainingJob", "metadata": {"name": "x", "namespace": "ns"},
            "status": {"phase": phase, "conditions": [
                {"type": t, "status": s, "reason": r, "message": m, "lastTransitionTime": f"2026-01-01T00:00:0{i}Z"}
                for i, (t, s, r, m) in enumerate(conditions)]}}


def fake_client(script):
    c = TrainingClient("ns", api_client=k8s.ApiClient(k8s.Configuration()))
    c.custom = FakeJobs(script)
    return c


def test_wait_returns_the_job_in_its_phase():
    c = fake_client([job("Pending"), job("Running"), job("Succeeded")])
    assert c.wait("x", "pj", interval=0)["status"]["phase"] == "Succeeded"


def test_wait_for_a_condition():
    c = fake_client([job("Running"), job("Running", ("Queued", "False", "Admitted", "admitted"))])
    got = c.wait("x", "pj", condition="Queued", condition_status="False", interval=0)
    assert got["status"]["conditions"][0]["reason"] == "Admitted"


def test_wait_times_out_naming_the_last_condition():
    c = fake_client([job("Pending", ("Queued", "True", "WaitingForAdmission", "waiting in queue user-queue"))])
    with pytest.raises(WaitTimeout) as err:
        c.wait("x", "pj", timeout=0.05, interval=0.01)
    assert err.value.phase == "Pending"
    assert err.value.condition["reason"] == "WaitingForAdmission"
    assert "waiting in queue user-queue" in str(err.value)


def test_wait_ends_when_the_job_fails_or_goes():
    c = fake_client([job("Running"), job("Failed", ("Failed", "True", "BackoffLimitExceeded", "too many restarts"))])
    with pytest.raises(TrainingError, match="finished as Failed.*BackoffLimitExceeded"):
        c.wait("x", "pj", interval=0)
    c = fake_client([job("Running"), None])
    with pytest.raises(JobDeleted):
        c.wait("x", "pj", interval=0)


def test_get_without_kind_finds_either_kind():
    c = fake_client([None])
    with pytest.raises(NotFoundError):
        c.get("x")


@pytest.mark.parametrize("alias", ["xj", "XGBoostTrainingJob", "xgboosttrainingjobs", "xgboosttrainingjob"])
def test_every_spelling_of_a_kind_names_its_resource(alias):
    assert _plural(alias) == "xgboosttrainingjobs"


def test_an_unknown_kind_lists_the_kinds():
    with pytest.raises(TrainingError) as refused:
        _plural("rayjob")
    assert "PyTorchTrainingJob (pj)" in str(refused.value)
    for kind, short in SHORT_NAMES.items():
        assert f"{kind} ({short})" in str(refused.value)


def test_get_attempts_lists_the_attempts_oldest_first():
    failed = {"name": "x-worker-0", "node": "real-node2", "exitCode": 3, "reason": "Error", "logs": "rank=1 exiting\n"}
    running = job("Running")
    running["status"]["attempts"] = [
        {"number": 1, "startTime": "2026-01-01T00:00:00Z", "endTime": "2026-01-01T00:01:00Z", "reason": "RestartJob",
         "failedReplicaCount": 1, "failedReplicas": [failed]},
        {"number": 2, "startTime": "2026-01-01T00:01:10Z"},
    ]
    attempts = fake_client([running]).get_attempts("x", "pj")
    assert [a["number"] for a in attempts] == [1, 2]
    assert attempts[0]["failedReplicas"][0]["logs"] == "rank=1 exiting\n"
    assert fake_client([job("Pending")]).get_attempts("x", "pj") == []


def test_get_progress_history_reads_the_subresource():
    c = fake_client([job("Running")])
    calls = []
    samples = [{"reportTime": "2026-01-01T00:00:01.000000Z", "step": 1, "metrics": [{"name": "loss", "value": "2.5"}]},
               {"reportTime": "2026-01-01T00:00:02.000000Z", "step": 2, "metrics": [{"name": "loss", "value": "1.5"}]}]

    def call_api(path, method, **kw):
        calls.append((path, method))
        return {"kind": "ProgressHistory", "samples": samples}
    c.api_client.call_api = call_api
    assert [s["step"] for s in c.get_progress_history("x", "pj")] == [1, 2]
    assert calls == [("/apis/batch.tensorstack.dev/v1beta1/namespaces/ns/pytorchtrainingjobs/x/progresshistory", "GET")]
    c.api_client.call_api = lambda path, method, **kw: {"kind": "ProgressHistory"}
    assert c.get_progress_history("x", "pj") == []


def test_clear_suspect_nodes_merge_patches_the_status():
    c = fake_client([job("Running")])
    calls = []
    c.api_client.call_api = lambda path, method, **kw: calls.append((path, method, kw))
    c.clear_suspect_nodes("x", "pj")
    assert len(calls) == 1
    path, method, kw = calls[0]
    assert (path, method) == ("/apis/batch.tensorstack.dev/v1beta1/namespaces/ns/pytorchtrainingjobs/x/status", "PATCH")
    assert kw["header_params"]["Content-Type"] == "application/merge-patch+json"
    assert kw["body"] == {"status": {"suspectNodes": None}}


def test_scale_patches_the_scale_of_the_jobs_kind():
    generic = job("Running")
    generic["kind"] = "GenericJob"
    c = fake_client([None])
    only_generic = c.custom.get_namespaced_custom_object
    c.custom.get_namespaced_custom_object = lambda group, version, namespace, plural, name: (
        generic if plural == "genericjobs" else only_generic(group, version, namespace, plural, name))
    calls = []
    c.api_client.call_api = lambda path, method, **kw: calls.append((path, method, kw["body"]))
    c.scale("x", 4)
    c.scale("y", 2, kind="pj")
    assert calls == [
        ("/apis/batch.tensorstack.dev/v1beta1/namespaces/ns/genericjobs/x/scale", "PATCH", {"spec": {"replicas": 4}}),
        ("/apis/batch.tensorstack.dev/v1beta1/namespaces/ns/pytorchtrainingjobs/y/scale", "PATCH", {"spec": {"replicas": 2}}),
    ]
