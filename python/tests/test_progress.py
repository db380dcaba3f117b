# Copyright The TensorStack Training Authors.
# Licensed under the Apache License, Version 2.0.
"""The in-pod helper without a cluster: the checkpoint contract's
environment, when should_checkpoint() says yes, and what report_checkpoint()
and report() send, to a fake API server on the loopback address."""

import http.server
import json
import os
import pathlib
import subprocess
import sys
import threading
import time

import pytest

import tensorstack.training
from tensorstack.training import progress
from tensorstack.training.progress import Reporter, ReportError

JOB_PATH = "/apis/batch.tensorstack.dev/v1beta1/namespaces/team/pytorchtrainingjobs/ddp"
REQUEST = "2026-03-01T10:00:00.123456Z"


class FakeServer(http.server.HTTPServer):
    """Records every request; answers from `answers` (status, body) while it
    has any, else 201 with the report and a reportTime, as the server does."""

    def __init__(self):
        super().__init__(("127.0.0.1", 0), Handler)
        self.requests = []
        self.answers = []

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.server_address[1]


class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):  # noqa: N802 (the base class names it)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
        if self.server.answers:
            status, answer = self.server.answers.pop(0)
        else:
            status, answer = 201, dict(body, reportTime="2026-03-01T10:00:01.000000Z")
            if body.get("kind") == "CheckpointReport" and not answer["path"].startswith("/"):
                answer["path"] = "/ckpt/" + answer["path"]
        data = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    srv = FakeServer()
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


@pytest.fixture
def pod(tmp_path, server):
    """A pod's environment: the job, the token, the checkpoint contract."""
    sa = tmp_path / "serviceaccount"
    sa.mkdir()
    (sa / "token").write_text("token-1\n")
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    return {
        "TENSORSTACK_JOB_NAME": "ddp",
        "TENSORSTACK_JOB_NAMESPACE": "team",
        "TENSORSTACK_JOB_RESOURCE": "pytorchtrainingjobs",
        "TENSORSTACK_API_SERVER": server.url,
        "TENSORSTACK_SERVICE_ACCOUNT_DIR": str(sa),
        "TENSORSTACK_CHECKPOINT_DIR": str(ckpt),
        "TENSORSTACK_CHECKPOINT_REQUEST_FILE": str(tmp_path / "request"),
    }


def request_file(env):
    return pathlib.Path(env["TENSORSTACK_CHECKPOINT_REQUEST_FILE"])


# The environment.

def test_no_checkpoint_policy():
    r = Reporter(environ={})
    assert (r.checkpoint_dir, r.resume_from, r.resume_step, r.checkpoint_interval) == (None, None, None, None)
    assert r.should_checkpoint() is False


def test_the_contract_environment(pod):
    env = dict(pod, TENSORSTACK_RESUME_FROM="/ckpt/step-20.pt", TENSORSTACK_RESUME_STEP="20",
               TENSORSTACK_CHECKPOINT_INTERVAL_SECONDS="600")
    r = Reporter(environ=env)
    assert r.checkpoint_dir == pod["TENSORSTACK_CHECKPOINT_DIR"]
    assert (r.resume_from, r.resume_step, r.checkpoint_interval) == ("/ckpt/step-20.pt", 20, 600.0)
    assert r.checkpoint_url == pod["TENSORSTACK_API_SERVER"] + JOB_PATH + "/checkpoint"


@pytest.mark.parametrize("interval", ["", "0", "-5", "soon", "nan"])
def test_no_interval_unless_a_positive_number(pod, interval):
    r = Reporter(environ=dict(pod, TENSORSTACK_CHECKPOINT_INTERVAL_SECONDS=interval))
    assert r.checkpoint_interval is None
    r._last_checkpoint -= 1e6
    assert r.should_checkpoint() is False


def test_a_resume_step_that_is_no_number_is_none(pod):
    r = Reporter(environ=dict(pod, TENSORSTACK_RESUME_FROM="/ckpt/x", TENSORSTACK_RESUME_STEP="x"))
    assert (r.resume_from, r.resume_step) == ("/ckpt/x", None)


def test_the_projected_resume_point_wins_over_the_environment(pod):
    # The pod was made with step 20; the controller has since projected
    # step 40 beside the request file: a restarted process resumes there.
    env = dict(pod, TENSORSTACK_RESUME_FROM="/ckpt/step-20.pt", TENSORSTACK_RESUME_STEP="20")
    r = Reporter(environ=env)
    folder = request_file(pod).parent
    (folder / "resume-from").write_text("")
    assert (r.resume_from, r.resume_step) == ("/ckpt/step-20.pt", 20)
    (folder / "resume-from").write_text("/ckpt/step-40.pt")
    (folder / "resume-step").write_text("40")
    assert (r.resume_from, r.resume_step) == ("/ckpt/step-40.pt", 40)
    (folder / "resume-step").write_text("")
    assert (r.resume_from, r.resume_step) == ("/ckpt/step-40.pt", None)


def test_the_module_functions_read_the_process_environment(pod, monkeypatch):
    for key, value in dict(pod, TENSORSTACK_RESUME_FROM="/ckpt/step-7.pt", TENSORSTACK_RESUME_STEP="7").items():
        monkeypatch.setenv(key, value)
    monkeypatch.setattr(progress, "_default", None)
    assert progress.checkpoint_dir() == pod["TENSORSTACK_CHECKPOINT_DIR"]
    assert (progress.resume_from(), progress.resume_step()) == ("/ckpt/step-7.pt", 7)
    assert progress.should_checkpoint() is False
    request_file(pod).write_text(REQUEST)
    assert progress.should_checkpoint() is True
    # The package exports them too, loaded when first used.
    assert tensorstack.training.should_checkpoint is progress.should_checkpoint
    assert tensorstack.training.resume_step() == 7


def test_the_package_exports_need_no_kubernetes_client():
    root = pathlib.Path(progress.__file__).resolve().parents[2]
    code = ("import sys\n"
            "from tensorstack.training import checkpoint_dir, report_checkpoint, resume_from, resume_step,"
            " should_checkpoint\n"
            "assert checkpoint_dir() is None and resume_from() is None and resume_step() is None\n"
            "assert should_checkpoint() is False\n"
            "assert 'kubernetes' not in sys.modules and 'yaml' not in sys.modules, sorted(sys.modules)\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("TENSORSTACK_")}
    env["PYTHONPATH"] = str(root)
    subprocess.run([sys.executable, "-c", code], check=True, env=env)


# should_checkpoint and the request file.

def test_should_checkpoint_follows_the_request_file(pod):
    r = Reporter(environ=pod)
    f = request_file(pod)
    assert not f.exists() and r.should_checkpoint() is False  # missing
    f.write_text("")
    assert r.should_checkpoint() is False  # empty: no request
    f.write_text("\n")
    assert r.should_checkpoint() is False
    f.write_text(REQUEST)
    assert r.should_checkpoint() is True
    assert r.should_checkpoint() is True  # until a report answers it
    assert r.checkpoint_request() == REQUEST
    f.write_text("")
    assert r.should_checkpoint() is False  # the controller took it back


def test_without_a_checkpoint_dir_never(pod):
    env = dict(pod)
    del env["TENSORSTACK_CHECKPOINT_DIR"]
    request_file(pod).write_text(REQUEST)
    assert Reporter(environ=env).should_checkpoint() is False


def test_downward_api_symlink_swap(pod, tmp_path):
    # The kubelet's layout: request -> ..data/request, ..data -> a dated dir
    # that it replaces with a new one when the annotation changes.
    vol = tmp_path / "downward"
    vol.mkdir()
    for name, content in (("..2026_1", ""), ("..2026_2", REQUEST)):
        (vol / name).mkdir()
        (vol / name / "request").write_text(content)
    (vol / "..data").symlink_to("..2026_1")
    (vol / "request").symlink_to("..data/request")
    r = Reporter(environ=dict(pod, TENSORSTACK_CHECKPOINT_REQUEST_FILE=str(vol / "request")))
    assert r.should_checkpoint() is False
    (vol / "..data_tmp").symlink_to("..2026_2")
    os.replace(vol / "..data_tmp", vol / "..data")
    assert r.should_checkpoint() is True


def test_should_checkpoint_is_cheap(pod):
    request_file(pod).write_text(REQUEST)
    r = Reporter(environ=pod)
    n = 2000
    start = time.perf_counter()
    for _ in range(n):
        r.should_checkpoint()
    per_call = (time.perf_counter() - start) / n
    # A few microseconds here; the bound leaves room for a slow machine.
    assert per_call < 200e-6, per_call


def test_the_interval_counts_from_the_last_report(pod, server):
    r = Reporter(environ=dict(pod, TENSORSTACK_CHECKPOINT_INTERVAL_SECONDS="60"))
    r._last_checkpoint = time.monotonic()  # as if the process had just started
    assert r.should_checkpoint() is False
    r._last_checkpoint -= 61
    assert r.should_checkpoint() is True
    assert r.report_checkpoint("step-1.pt", step=1) is not None
    assert r.should_checkpoint() is False
    # A failed report restarts the interval too: the checkpoint was written.
    r._last_checkpoint -= 61
    server.answers.append((409, {"kind": "Status", "message": "the job is finished"}))
    assert r.report_checkpoint("step-2.pt", step=2) is None
    assert r.should_checkpoint() is False


def test_the_first_interval_counts_from_the_start(pod):
    env = dict(pod, TENSORSTACK_CHECKPOINT_INTERVAL_SECONDS="3600")
    assert Reporter(environ=env)._last_checkpoint == progress._STARTED
    env["TENSORSTACK_CHECKPOINT_INTERVAL_SECONDS"] = "0.001"
    time.sleep(0.002)
    assert Reporter(environ=env).should_checkpoint() is True


# report_checkpoint.

def test_report_checkpoint_posts_the_report(pod, server, tmp_path):
    ckpt = pathlib.Path(pod["TENSORSTACK_CHECKPOINT_DIR"])
    (ckpt / "step-20.pt").write_bytes(b"x" * 1234)
    r = Reporter(environ=pod)
    answer = r.report_checkpoint(str(ckpt / "step-20.pt"), step=20, epoch=2)
    assert answer["path"] == str(ckpt / "step-20.pt") and answer["reportTime"]
    sent = server.requests[-1]
    assert sent["path"] == JOB_PATH + "/checkpoint"
    assert sent["headers"]["Authorization"] == "Bearer token-1"
    assert sent["headers"]["Content-Type"] == "application/json"
    assert sent["body"] == {"apiVersion": "batch.tensorstack.dev/v1beta1", "kind": "CheckpointReport",
                            "path": str(ckpt / "step-20.pt"), "step": 20, "epoch": 2, "sizeBytes": 1234}


def test_the_size_on_disk(pod, server):
    ckpt = pathlib.Path(pod["TENSORSTACK_CHECKPOINT_DIR"])
    shard = ckpt / "step-5"
    (shard / "rank-1").mkdir(parents=True)
    (shard / "model.pt").write_bytes(b"m" * 100)
    (shard / "rank-1" / "optim.pt").write_bytes(b"o" * 50)
    (shard / "link").symlink_to(shard / "model.pt")  # not counted twice
    r = Reporter(environ=pod)
    # A directory, named relative to the checkpoint directory.
    r.report_checkpoint("step-5", step=5)
    assert server.requests[-1]["body"] == {"apiVersion": "batch.tensorstack.dev/v1beta1",
                                           "kind": "CheckpointReport", "path": "step-5", "step": 5,
                                           "sizeBytes": 150}
    # A path object; a size given is sent as given, even 0.
    r.report_checkpoint(shard / "model.pt", size_bytes=0)
    assert server.requests[-1]["body"]["path"] == str(shard / "model.pt")
    assert server.requests[-1]["body"]["sizeBytes"] == 0
    # Nothing there: no size.
    r.report_checkpoint("gone.pt", step=6)
    assert "sizeBytes" not in server.requests[-1]["body"]


def test_the_token_is_read_for_every_report(pod, server):
    r = Reporter(environ=pod)
    r.report_checkpoint("a.pt", step=1)
    (pathlib.Path(pod["TENSORSTACK_SERVICE_ACCOUNT_DIR"]) / "token").write_text("token-2")
    r.report_checkpoint("b.pt", step=2)
    assert [s["headers"]["Authorization"] for s in server.requests] == ["Bearer token-1", "Bearer token-2"]


def test_a_report_answers_the_pending_request(pod, server):
    r = Reporter(environ=pod)
    f = request_file(pod)
    f.write_text(REQUEST)
    assert r.should_checkpoint() is True
    r.report_checkpoint("step-3.pt", step=3)
    assert r.should_checkpoint() is False
    assert r.checkpoint_request() == ""
    # A newer request asks again.
    f.write_text("2026-03-01T10:05:00.5Z")
    assert r.should_checkpoint() is True
    r.report_checkpoint("step-4.pt", step=4)
    assert r.should_checkpoint() is False
    # Cleared once the stop is done.
    f.write_text("")
    assert r.should_checkpoint() is False


def test_a_report_before_the_request_does_not_answer_it(pod, server):
    r = Reporter(environ=pod)
    r.report_checkpoint("step-1.pt", step=1)
    request_file(pod).write_text(REQUEST)
    assert r.should_checkpoint() is True


def test_a_failed_report_leaves_the_request_pending(pod, server):
    r = Reporter(environ=pod, retry_seconds=30)
    f = request_file(pod)
    f.write_text(REQUEST)
    server.answers.append((500, {"kind": "Status", "message": "etcd is away"}))
    assert r.report_checkpoint("step-3.pt", step=3) is None
    # Not answered, but not asked for again at once: a checkpoint every step
    # while the server refuses would only fill the disk.
    assert r.checkpoint_request() == REQUEST
    assert r.should_checkpoint() is False
    r._failed_at -= 31
    assert r.should_checkpoint() is True
    # A newer request is not held back by the failure of the older one.
    r._failed_at = time.monotonic()
    f.write_text("2026-03-01T10:05:00.5Z")
    assert r.should_checkpoint() is True
    # A report that succeeds answers it.
    assert r.report_checkpoint("step-4.pt", step=4)["step"] == 4
    assert r.should_checkpoint() is False


def test_lenient_reports_print_the_servers_message(pod, server, capsys):
    r = Reporter(environ=pod)
    server.answers.append((422, {"kind": "Status", "code": 422,
                                 "message": 'path: Invalid value: "/etc/passwd": must be inside /ckpt'}))
    assert r.report_checkpoint("/etc/passwd", step=1) is None
    err = capsys.readouterr().err
    assert "checkpoint /etc/passwd not reported: HTTP 422" in err and "must be inside /ckpt" in err
    # Every failed checkpoint report is told, not only the first.
    server.answers.append((409, {"kind": "Status", "code": 409, "message": "the job has no checkpoint policy"}))
    assert r.report_checkpoint("step-2.pt", step=2) is None
    assert "HTTP 409: the job has no checkpoint policy" in capsys.readouterr().err


def test_strict_reports_raise(pod, server):
    r = Reporter(environ=pod, strict=True)
    server.answers.append((403, {"kind": "Status", "code": 403, "message": "pod x is not one of the job's pods"}))
    with pytest.raises(ReportError, match="HTTP 403: pod x is not one of the job's pods"):
        r.report_checkpoint("step-1.pt", step=1)
    with pytest.raises(ReportError, match="not in a TensorStack training job's pod"):
        Reporter(environ={"TENSORSTACK_CHECKPOINT_DIR": "/ckpt"}, strict=True).report_checkpoint("a.pt")


def test_failures_outside_the_server(pod, tmp_path, capsys):
    # No job in the environment, no token, no server, no CA certificate:
    # lenient, each is printed and dropped; never raised into the training.
    assert Reporter(environ={"TENSORSTACK_CHECKPOINT_DIR": "/ckpt"}).report_checkpoint("a.pt") is None
    assert "not in a TensorStack training job's pod" in capsys.readouterr().err
    no_token = dict(pod, TENSORSTACK_SERVICE_ACCOUNT_DIR=str(tmp_path / "nowhere"))
    assert Reporter(environ=no_token).report_checkpoint("a.pt") is None
    assert "no service-account token" in capsys.readouterr().err
    closed = dict(pod, TENSORSTACK_API_SERVER="http://127.0.0.1:9")
    assert Reporter(environ=closed, timeout=2).report_checkpoint("a.pt") is None
    assert "not reported" in capsys.readouterr().err
    no_ca = dict(pod, TENSORSTACK_API_SERVER="https://127.0.0.1:9")
    assert Reporter(environ=no_ca).report_checkpoint("a.pt") is None
    assert "no cluster CA certificate" in capsys.readouterr().err
    with pytest.raises(ReportError, match="no cluster CA certificate"):
        Reporter(environ=no_ca, strict=True).report_checkpoint("a.pt")


# report, through the same POST.

def test_progress_reports_still_go_to_progress(pod, server):
    r = Reporter(environ=pod, min_interval=0)
    answer = r.report(step=3, total_steps=10, metrics={"loss": 0.25})
    assert answer["step"] == 3
    sent = server.requests[-1]
    assert sent["path"] == JOB_PATH + "/progress"
    assert sent["headers"]["Authorization"] == "Bearer token-1"
    assert sent["body"] == {"apiVersion": "batch.tensorstack.dev/v1beta1", "kind": "ProgressReport",
                            "step": 3, "totalSteps": 10, "metrics": [{"name": "loss", "value": "0.25"}]}
