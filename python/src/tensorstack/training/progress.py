# Copyright The TensorStack Training Authors.
# Licensed under the Apache License, Version 2.0.
"""Report how far a TensorStack training job has come, from its own pods.

One call in the training loop:

    from tensorstack.training.progress import report

    for step in range(1, steps + 1):
        loss = train_one_step()
        report(step=step, total_steps=steps, metrics={"loss": loss})

`kubectl get` then shows the job's PROGRESS, `kubectl get -o wide` its ETA
and first metric, and `kubectl training status JOB --watch` a live bar.

The report is a POST of a ProgressReport to the job's progress subresource,
made with the pod's own service-account token (the one Kubernetes mounts
into every pod, bound to the pod). The server accepts it from the job's own
pods without any RBAC grant, and refuses it from any other pod. The
controller names the job in every container's environment
(TENSORSTACK_JOB_NAME, TENSORSTACK_JOB_NAMESPACE, TENSORSTACK_JOB_RESOURCE);
Kubernetes gives the API address (KUBERNETES_SERVICE_HOST and _PORT).

The module uses only Python's standard library (importing it loads none of
the rest of the package, which needs the kubernetes client): the training
image installs the package's wheel for it. Reporting never stops the
training: a failed report is printed once to stderr and dropped, unless the
Reporter is strict. Calls closer together than min_interval seconds
(TENSORSTACK_PROGRESS_INTERVAL, 1 by default) are skipped, except the one
that reports the last step; the server itself stores a job's reports at
most once per write interval (5 s by default) and keeps the latest.

Checkpoints. A job with spec.runPolicy.checkpoint gives its pods a
checkpoint directory and, after its first checkpoint, the one to resume
from; the training code saves where checkpoint_dir() says, when
should_checkpoint() says, and reports each finished checkpoint:

    from tensorstack.training import progress

    start = 1
    if progress.resume_from():
        load(progress.resume_from())
        start = progress.resume_step() + 1
    for step in range(start, steps + 1):
        train_one_step()
        if progress.should_checkpoint():
            path = save(progress.checkpoint_dir(), step)  # written in full
            progress.report_checkpoint(path, step=step)

should_checkpoint() is true once the controller asks for a checkpoint
before it stops the pods (pause, eviction, scale-down, restart), until a
report answers that request, and every TENSORSTACK_CHECKPOINT_INTERVAL_SECONDS
when the policy sets an interval. It reads one small file and is cheap
enough to call at every step. report_checkpoint() posts a CheckpointReport
to the job's checkpoint subresource, with the same token as progress; the
job's next pods get the checkpoint as TENSORSTACK_RESUME_FROM and
TENSORSTACK_RESUME_STEP. Like progress, a failed checkpoint report is
printed to stderr and dropped unless the Reporter is strict.
"""

import json
import math
import os
import ssl
import stat
import sys
import time
import urllib.error
import urllib.request

SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
API_VERSION = "batch.tensorstack.dev/v1beta1"

# When this module was first imported: about when the training process
# started, from which the first checkpoint interval counts.
_STARTED = time.monotonic()


class ReportError(Exception):
    """A report the server refused, or could not be reached for."""


class Reporter:
    """Sends progress and checkpoint reports of the job this pod belongs to,
    and tells when the job wants a checkpoint.

    After a failed checkpoint report, the request it was for makes
    should_checkpoint() true again only retry_seconds later, so that a
    server that refuses the report does not get a checkpoint every step."""

    def __init__(self, min_interval=None, strict=False, timeout=10.0, environ=None, retry_seconds=10.0):
        env = os.environ if environ is None else environ
        self.job = env.get("TENSORSTACK_JOB_NAME", "")
        self.namespace = env.get("TENSORSTACK_JOB_NAMESPACE", "")
        self.resource = env.get("TENSORSTACK_JOB_RESOURCE", "")
        host = env.get("KUBERNETES_SERVICE_HOST", "")
        port = env.get("KUBERNETES_SERVICE_PORT", "443")
        if ":" in host:
            host = "[" + host + "]"
        self.server = env.get("TENSORSTACK_API_SERVER", "https://%s:%s" % (host, port) if host else "")
        sa_dir = env.get("TENSORSTACK_SERVICE_ACCOUNT_DIR", SERVICE_ACCOUNT_DIR)
        self.token_file = os.path.join(sa_dir, "token")
        self.ca_file = os.path.join(sa_dir, "ca.crt")
        if min_interval is None:
            min_interval = float(env.get("TENSORSTACK_PROGRESS_INTERVAL", "1"))
        self.min_interval = min_interval
        self.strict = strict
        self.timeout = timeout
        self._last_sent = None
        self._warned = False
        self._context = None

        self.checkpoint_dir = env.get("TENSORSTACK_CHECKPOINT_DIR") or None
        self.checkpoint_interval = _positive_float(env.get("TENSORSTACK_CHECKPOINT_INTERVAL_SECONDS"))
        self.request_file = env.get("TENSORSTACK_CHECKPOINT_REQUEST_FILE") or None
        # The resume point of the pod's creation; the files beside the
        # request file follow every later checkpoint (see resume_from).
        self._created_resume_from = env.get("TENSORSTACK_RESUME_FROM") or None
        self._created_resume_step = _int_or_none(env.get("TENSORSTACK_RESUME_STEP"))
        self.retry_seconds = retry_seconds
        # The interval counts from the last checkpoint report, successful or
        # not (the checkpoint was written either way), or from the start.
        self._last_checkpoint = _STARTED
        # The request (the file's content) that a successful report answered.
        self._answered = ""
        # When the last report failed, and the request it was for.
        self._failed_at = None
        self._failed_request = None

    def _resume_file(self, name):
        """The content of a file the controller keeps beside the request
        file, or None when it is missing or empty."""
        if not self.request_file:
            return None
        try:
            with open(os.path.join(os.path.dirname(self.request_file), name)) as f:
                return f.read().strip() or None
        except OSError:
            return None

    @property
    def resume_from(self):
        """The newest checkpoint to resume from. The controller keeps it
        current in a file beside the request file while the pod runs, so a
        process restarted inside the pod (torchrun restarting its workers,
        an elastic resize) resumes from the latest checkpoint, not from the
        one of the pod's creation (TENSORSTACK_RESUME_FROM)."""
        return self._resume_file("resume-from") or self._created_resume_from

    @property
    def resume_step(self):
        """The step of resume_from, or None when unknown."""
        if self._resume_file("resume-from"):
            return _int_or_none(self._resume_file("resume-step"))
        return self._created_resume_step

    @property
    def checkpoint_url(self):
        return "%s/apis/%s/namespaces/%s/%s/%s/checkpoint" % (
            self.server, API_VERSION, self.namespace, self.resource, self.job)

    @property
    def url(self):
        return "%s/apis/%s/namespaces/%s/%s/%s/progress" % (
            self.server, API_VERSION, self.namespace, self.resource, self.job)

    def report(self, step=None, total_steps=None, percent=None, epoch=None, total_epochs=None,
               remaining_seconds=None, metrics=None, message=None):
        """Reports progress; returns the server's answer, or None when the
        report was skipped or failed. The answer's status says whether the
        server stored the report at once or holds it for its next write."""
        last = step is not None and total_steps is not None and step >= total_steps
        now = time.monotonic()
        if not last and self._last_sent is not None and now - self._last_sent < self.min_interval:
            return None
        body = {"apiVersion": API_VERSION, "kind": "ProgressReport"}
        for key, value in (("step", step), ("totalSteps", total_steps), ("percent", percent),
                           ("epoch", epoch), ("totalEpochs", total_epochs),
                           ("remainingSeconds", remaining_seconds)):
            if value is not None:
                body[key] = int(value)
        if metrics:
            body["metrics"] = [{"name": str(name), "value": _number(value)}
                               for name, value in metrics.items() if _finite(value)][:8]
        if message:
            body["message"] = str(message)[:256]
        self._last_sent = now
        try:
            return self._post(self.url, body)
        except ReportError as err:
            if self.strict:
                raise
            if not self._warned:
                self._warned = True
                print("tensorstack.training.progress: progress not reported: %s" % err, file=sys.stderr, flush=True)
            return None

    def checkpoint_request(self):
        """The pending checkpoint request: its time as the controller wrote
        it (RFC 3339), or "" when there is none or a report answered it."""
        request = self._read_request()
        return "" if request == self._answered else request

    def should_checkpoint(self):
        """True when the job wants a checkpoint now: the controller asked for
        one before stopping the pods and no report answered it yet, or the
        policy's interval passed since the last checkpoint report (or since
        the start). Always false without a checkpoint directory."""
        if self.checkpoint_dir is None:
            return False
        now = time.monotonic()
        if self.checkpoint_interval is not None and now - self._last_checkpoint >= self.checkpoint_interval:
            return True
        request = self.checkpoint_request()
        if not request:
            return False
        return not (request == self._failed_request and now - self._failed_at < self.retry_seconds)

    def report_checkpoint(self, path, step=None, epoch=None, size_bytes=None):
        """Reports a checkpoint the job finished writing, at path (absolute,
        or relative to the checkpoint directory, and inside it); returns the
        server's answer (the report with the absolute path and reportTime),
        or None when it failed. size_bytes defaults to the size of the file,
        or of all the files under the directory, at path."""
        path = os.fspath(path)
        # The request pending now is answered by this report, which the
        # server receives after it; one that comes later is not.
        request = self._read_request()
        self._last_checkpoint = time.monotonic()
        body = {"apiVersion": API_VERSION, "kind": "CheckpointReport", "path": path}
        if size_bytes is None:
            size_bytes = _size_on_disk(path if os.path.isabs(path) or self.checkpoint_dir is None
                                       else os.path.join(self.checkpoint_dir, path))
        for key, value in (("step", step), ("epoch", epoch), ("sizeBytes", size_bytes)):
            if value is not None:
                body[key] = int(value)
        try:
            answer = self._post(self.checkpoint_url, body)
        except ReportError as err:
            self._failed_at, self._failed_request = time.monotonic(), request
            if self.strict:
                raise
            print("tensorstack.training.progress: checkpoint %s not reported: %s" % (path, err),
                  file=sys.stderr, flush=True)
            return None
        self._failed_at = self._failed_request = None
        self._answered = request
        return answer

    def _read_request(self):
        # A downward API file: the kubelet swaps a symlink to a new copy when
        # the annotation changes, so reading it in full (a few dozen bytes,
        # a few microseconds) is both the simplest and the safest way.
        if self.request_file is None:
            return ""
        try:
            fd = os.open(self.request_file, os.O_RDONLY)
        except OSError:
            return ""
        try:
            return os.read(fd, 4096).decode(errors="replace").strip()
        except OSError:
            return ""
        finally:
            os.close(fd)

    def _post(self, url, body):
        if not (self.job and self.namespace and self.resource and self.server):
            raise ReportError("not in a TensorStack training job's pod: TENSORSTACK_JOB_NAME, "
                              "TENSORSTACK_JOB_NAMESPACE, TENSORSTACK_JOB_RESOURCE and "
                              "KUBERNETES_SERVICE_HOST are needed")
        try:
            with open(self.token_file) as f:
                # Read every time: the kubelet renews the token.
                token = f.read().strip()
        except OSError as err:
            raise ReportError("no service-account token: %s" % err) from err
        context = None
        if url.startswith("https:"):
            if self._context is None:
                try:
                    self._context = ssl.create_default_context(cafile=self.ca_file)
                except (OSError, ssl.SSLError) as err:
                    raise ReportError("no cluster CA certificate: %s" % err) from err
            context = self._context
        request = urllib.request.Request(
            url, data=json.dumps(body).encode(), method="POST",
            headers={"Authorization": "Bearer " + token, "Content-Type": "application/json",
                     "Accept": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout, context=context) as answer:
                return json.load(answer)
        except urllib.error.HTTPError as err:
            detail = err.read().decode(errors="replace")
            try:
                detail = json.loads(detail).get("message", detail)
            except ValueError:
                pass
            raise ReportError("HTTP %d: %s" % (err.code, detail)) from err
        except (urllib.error.URLError, OSError) as err:
            raise ReportError(str(err)) from err


def _finite(value):
    try:
        return math.isfinite(float(value))
    except (TypeError, ValueError):
        return False


def _positive_float(value):
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    return value if value > 0 and math.isfinite(value) else None


def _int_or_none(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _size_on_disk(path):
    """The size of the file at path, or of the regular files under the
    directory at path; None when there is nothing there."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode):
        return st.st_size
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            try:
                st = os.lstat(os.path.join(root, name))
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode):
                total += st.st_size
    return total


def _number(value):
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return format(float(value), ".6g")


_default = None


def _reporter():
    global _default
    if _default is None:
        _default = Reporter()
    return _default


def report(**kwargs):
    """Reports progress through a Reporter made on first use; see
    Reporter.report for the arguments."""
    return _reporter().report(**kwargs)


def checkpoint_dir():
    """The directory where the job writes its checkpoints
    (TENSORSTACK_CHECKPOINT_DIR), or None when the job has no checkpoint
    policy."""
    return _reporter().checkpoint_dir


def resume_from():
    """The path of the checkpoint to resume from (TENSORSTACK_RESUME_FROM),
    or None before the job's first checkpoint."""
    return _reporter().resume_from


def resume_step():
    """The step of the checkpoint to resume from (TENSORSTACK_RESUME_STEP):
    training goes on at resume_step() + 1. None when unknown."""
    return _reporter().resume_step


def should_checkpoint():
    """True when the job wants a checkpoint now; see
    Reporter.should_checkpoint."""
    return _reporter().should_checkpoint()


def report_checkpoint(path, step=None, epoch=None, size_bytes=None):
    """Reports a finished checkpoint through the Reporter made on first use;
    see Reporter.report_checkpoint."""
    return _reporter().report_checkpoint(path, step=step, epoch=epoch, size_bytes=size_bytes)


if __name__ == "__main__":
    # A report from a shell: python3 -m tensorstack.training.progress step=10 total_steps=100 loss=0.5
    # or, for a checkpoint: python3 -m tensorstack.training.progress checkpoint path=step-10.pt step=10
    if sys.argv[1:2] == ["checkpoint"]:
        values = dict(arg.partition("=")[::2] for arg in sys.argv[2:])
        answer = Reporter(strict=True).report_checkpoint(
            values.pop("path"), **{key: int(value) for key, value in values.items()})
        print(json.dumps(answer))
        sys.exit(0)
    values, metrics = {}, {}
    for arg in sys.argv[1:]:
        key, _, value = arg.partition("=")
        if key in ("step", "total_steps", "percent", "epoch", "total_epochs", "remaining_seconds"):
            values[key] = int(value)
        elif key == "message":
            values[key] = value
        else:
            metrics[key] = value
    answer = Reporter(min_interval=0, strict=True).report(metrics=metrics, **values)
    print(json.dumps(answer.get("status", {}) if answer else {}))
