# Copyright The TensorStack Training Authors.
# Licensed under the Apache License, Version 2.0.
"""TrainingClient.compare without a cluster: the jobs and their progress
histories from fakes, the rows aligned as the dashboard's comparison aligns
them, and a pandas DataFrame when pandas is there."""

import sys
import types

import pytest
from kubernetes import client as k8s

from tensorstack.training import NotFoundError, TrainingClient, TrainingError
from tensorstack.training.client import _plural
from tensorstack.training.comparison import comparison_rows, parse_time, run_start

HISTORY_PATH = "/apis/batch.tensorstack.dev/v1beta1/namespaces/{ns}/{plural}/{name}/progresshistory"


def sample(second, step, **metrics):
    return {"reportTime": f"2026-01-01T00:00:{second:02d}.000000Z", "step": step,
            "metrics": [{"name": k, "value": v} for k, v in metrics.items()]}


def job(name, kind="PyTorchTrainingJob", start="2026-01-01T00:00:00Z", attempts=None):
    status = {"phase": "Running", "startTime": start}
    if attempts:
        status["attempts"] = attempts
    return {"kind": kind, "metadata": {"name": name, "namespace": "ns", "creationTimestamp": "2025-12-31T23:59:00Z"},
            "status": status}


class FakeCluster:
    """The jobs by (plural, name), and each job's progress history by its
    subresource's path; every GET is recorded."""

    def __init__(self, jobs, histories):
        self.jobs = {(_plural(j["kind"]), j["metadata"]["name"]): j for j in jobs}
        self.histories = histories
        self.calls = []

    def get_namespaced_custom_object(self, group, version, namespace, plural, name):
        self.calls.append((namespace, plural, name))
        if (plural, name) not in self.jobs:
            from kubernetes.client.exceptions import ApiException
            exc = ApiException(status=404, reason="Not Found")
            exc.body = '{"reason": "NotFound", "message": "not found"}'
            raise exc
        return self.jobs[(plural, name)]

    def call_api(self, path, method, **kw):
        self.calls.append((path, method))
        return {"kind": "ProgressHistory", "samples": self.histories.get(path, [])}


def fake_client(cluster):
    c = TrainingClient("ns", api_client=k8s.ApiClient(k8s.Configuration()))
    c.custom = cluster
    c.api_client.call_api = cluster.call_api
    return c


@pytest.fixture
def no_pandas(monkeypatch):
    # None in sys.modules makes the import fail, pandas installed or not.
    monkeypatch.setitem(sys.modules, "pandas", None)


def three_jobs():
    histories = {
        HISTORY_PATH.format(ns="ns", plural="pytorchtrainingjobs", name="a"): [
            sample(1, 1, loss="2.5"), sample(2, 2, loss="2.0", acc="0.1"), sample(3, 3, loss="1.5")],
        # b resumed from step 1's checkpoint: step 2 again, its later value kept.
        HISTORY_PATH.format(ns="ns", plural="pytorchtrainingjobs", name="b"): [
            sample(11, 1, loss="3.0"), sample(12, 2, loss="2.9"), sample(20, 2, loss="2.2"), sample(21, 3, loss="1.9")],
        HISTORY_PATH.format(ns="ns", plural="tensorflowtrainingjobs", name="c"): [
            sample(5, None, loss="9"), sample(6, 1, loss="1.0"), sample(7, 2, loss="not-a-number")],
    }
    jobs = [job("a"), job("b", start="2026-01-01T00:00:19Z", attempts=[{"number": 1, "startTime": "2026-01-01T00:00:10Z"}]),
            job("c", kind="TensorFlowTrainingJob", start="2026-01-01T00:00:04Z")]
    return FakeCluster(jobs, histories)


def test_compare_by_step_aligns_every_job_on_its_steps(no_pandas):
    cluster = three_jobs()
    rows = fake_client(cluster).compare(["a", "b", "c"], "loss")
    assert [(r["job"], r["step"], r["loss"]) for r in rows] == [
        ("a", 1, 2.5), ("b", 1, 3.0), ("c", 1, 1.0),
        ("a", 2, 2.0), ("b", 2, 2.2),
        ("a", 3, 1.5), ("b", 3, 1.9),
    ]
    assert set(rows[0]) == {"job", "step", "elapsed_seconds", "time", "loss"}
    assert rows[0]["time"] == "2026-01-01T00:00:01.000000Z"
    # Each job's history read once, from its own kind's subresource.
    assert (HISTORY_PATH.format(ns="ns", plural="tensorflowtrainingjobs", name="c"), "GET") in cluster.calls
    assert sum(1 for call in cluster.calls if call[-1] == "GET") == 3


def test_compare_by_elapsed_counts_from_each_jobs_first_start(no_pandas):
    rows = fake_client(three_jobs()).compare(["a", "b", "c"], "loss", align="elapsed")
    got = [(r["job"], r["elapsed_seconds"]) for r in rows]
    # b counts from its first attempt (00:10), not its resumed run (00:19);
    # every report, the step reported twice and the one without a step too.
    assert got == [("a", 1.0), ("b", 1.0), ("c", 1.0), ("a", 2.0), ("b", 2.0), ("c", 2.0), ("a", 3.0), ("b", 10.0),
                   ("b", 11.0)]


def test_compare_by_time_orders_by_the_wall_clock(no_pandas):
    rows = fake_client(three_jobs()).compare(["a", "b", "c"], "loss", align="time")
    assert [r["time"][17:19] for r in rows] == ["01", "02", "03", "05", "06", "11", "12", "20", "21"]


def test_compare_takes_one_name_a_kind_and_a_namespace(no_pandas):
    cluster = three_jobs()
    rows = fake_client(cluster).compare("c", "loss", namespace="ns", kind="tj")
    assert [(r["step"], r["loss"]) for r in rows] == [(1, 1.0)]
    assert cluster.calls[0] == ("ns", "tensorflowtrainingjobs", "c")


def test_compare_refuses_an_unknown_alignment_and_a_missing_job(no_pandas):
    client = fake_client(three_jobs())
    with pytest.raises(TrainingError, match="align must be one of step, elapsed, time"):
        client.compare(["a"], "loss", align="epoch")
    with pytest.raises(NotFoundError):
        client.compare(["a", "nope"], "loss")


def test_compare_is_a_dataframe_when_pandas_is_there(monkeypatch):
    made = {}

    class Frame(dict):
        pass

    def data_frame(rows, columns):
        made["rows"], made["columns"] = rows, columns
        frame = Frame({c: [r.get(c) for r in rows] for c in columns})
        return frame

    fake = types.ModuleType("pandas")
    fake.DataFrame = data_frame
    fake.to_datetime = lambda values, utc: [parse_time(v) for v in values]
    monkeypatch.setitem(sys.modules, "pandas", fake)
    frame = fake_client(three_jobs()).compare(["a", "b"], "loss")
    assert isinstance(frame, Frame)
    assert made["columns"] == ["job", "step", "elapsed_seconds", "time", "loss"]
    assert frame["loss"] == [2.5, 3.0, 2.0, 2.2, 1.5, 1.9]
    assert frame["time"][0].isoformat() == "2026-01-01T00:00:01+00:00"


def test_times_of_any_precision_and_the_start_without_a_run():
    assert parse_time("2026-01-01T00:00:01.5Z").microsecond == 500000
    assert parse_time("2026-01-01T00:00:01.1234567Z").microsecond == 123456
    assert parse_time("2026-01-01T00:00:01Z").tzinfo is not None
    assert parse_time("yesterday") is None and parse_time(None) is None
    pending = {"metadata": {"creationTimestamp": "2026-01-01T00:00:00Z"}, "status": {}}
    assert run_start(pending, []) == parse_time("2026-01-01T00:00:00Z")
    assert comparison_rows([("p", pending, [])], "loss") == []
