"""TrainingClient.history: the records of deleted jobs, newest first."""

import json

from kubernetes import client as k8s

from tensorstack.training import TrainingClient


def record(name, job, deleted, namespace="team"):
    return {"apiVersion": "batch.tensorstack.dev/v1beta1", "kind": "TrainingJobRecord",
            "metadata": {"name": name, "namespace": namespace, "labels": {"batch.tensorstack.dev/job-name": job}},
            "jobKind": "PyTorchTrainingJob", "jobName": job, "phase": "Succeeded", "deletionTime": deleted,
            "job": {"kind": "PyTorchTrainingJob", "status": {"attempts": [{"number": 1}]}},
            "progress": [{"step": 1, "metrics": [{"name": "loss", "value": "0.5"}]}]}


class FakeRecords:
    def __init__(self, records):
        self.records = records
        self.calls = []

    def _select(self, items, label_selector):
        if not label_selector:
            return items
        key, value = label_selector.split("=")
        return [r for r in items if r["metadata"]["labels"].get(key) == value]

    def list_namespaced_custom_object(self, group, version, namespace, plural, label_selector="", **kw):
        self.calls.append(("list", plural, namespace, label_selector))
        items = [r for r in self.records if r["metadata"]["namespace"] == namespace]
        return {"items": json.loads(json.dumps(self._select(items, label_selector)))}

    def list_cluster_custom_object(self, group, version, plural, label_selector="", **kw):
        self.calls.append(("list", plural, label_selector))
        return {"items": json.loads(json.dumps(self._select(self.records, label_selector)))}


RECORDS = [
    record("resnet-aaaa1111", "resnet", "2026-05-01T10:00:00Z"),
    record("bert-cccc3333", "bert", "2026-05-02T10:00:00Z"),
    record("resnet-bbbb2222", "resnet", "2026-05-03T10:00:00Z"),
    record("gpt-dddd4444", "gpt", "2026-05-04T10:00:00Z", namespace="other"),
]


def client(api):
    c = TrainingClient("team", api_client=k8s.ApiClient(k8s.Configuration()))
    c.custom = api
    return c


def test_history_lists_the_namespace_newest_first():
    api = FakeRecords(RECORDS)
    records = client(api).history()
    assert [r["metadata"]["name"] for r in records] == ["resnet-bbbb2222", "bert-cccc3333", "resnet-aaaa1111"]
    assert api.calls == [("list", "trainingjobrecords", "team", "")]
    assert records[0]["job"]["status"]["attempts"] == [{"number": 1}]


def test_history_of_one_job_name():
    api = FakeRecords(RECORDS)
    assert [r["metadata"]["name"] for r in client(api).history("resnet")] == ["resnet-bbbb2222", "resnet-aaaa1111"]
    assert api.calls == [("list", "trainingjobrecords", "team", "batch.tensorstack.dev/job-name=resnet")]


def test_history_of_every_namespace():
    api = FakeRecords(RECORDS)
    assert [r["jobName"] for r in client(api).history(all_namespaces=True)] == ["gpt", "resnet", "bert", "resnet"]
    assert client(FakeRecords(RECORDS)).history(namespace="other")[0]["jobName"] == "gpt"
