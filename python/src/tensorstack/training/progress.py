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
"""

import json
import math
import os
import ssl
import sys
import time
import urllib.error
import urllib.request

SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
API_VERSION = "batch.tensorstack.dev/v1beta1"


class ReportError(Exception):
    """A report the server refused, or could not be reached for."""


class Reporter:
    """Sends progress reports of the job this pod belongs to."""

    def __init__(self, min_interval=None, strict=False, timeout=10.0, environ=None):
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
            return self._post(body)
        except ReportError as err:
            if self.strict:
                raise
            if not self._warned:
                self._warned = True
                print("tensorstack.training.progress: progress not reported: %s" % err, file=sys.stderr, flush=True)
            return None

    def _post(self, body):
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
        if self._context is None:
            self._context = ssl.create_default_context(cafile=self.ca_file)
        request = urllib.request.Request(
            self.url, data=json.dumps(body).encode(), method="POST",
            headers={"Authorization": "Bearer " + token, "Content-Type": "application/json",
                     "Accept": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout, context=self._context) as answer:
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


def _number(value):
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return format(float(value), ".6g")


_default = None


def report(**kwargs):
    """Reports progress through a Reporter made on first use; see
    Reporter.report for the arguments."""
    global _default
    if _default is None:
        _default = Reporter()
    return _default.report(**kwargs)


if __name__ == "__main__":
    # A report from a shell: python3 -m tensorstack.training.progress step=10 total_steps=100 loss=0.5
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
