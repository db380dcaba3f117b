# Copyright The TensorStack Training Authors.
# Licensed under the Apache License, Version 2.0.
"""Runtimes and train() without a cluster: the script shipped for a function
holds what it needs and runs on its own; what cannot be shipped is refused,
naming it; runtimes are looked up namespace first, a scope the user may not
list left out; train() builds the job the runtime's kind takes."""

import functools
import json
import linecache
import math as m
import os
import subprocess
import sys
import textwrap
import threading
import uuid

import pytest
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

import tensorstack.training
from tensorstack.training import (
    BuildError,
    ForbiddenError,
    InvalidError,
    NotFoundError,
    ShippingError,
    TrainingClient,
    function_script,
    runtime_job_kind,
)
from tensorstack.training.client import _generate_name

# ---- what the shipped functions use

SCALE = 3
NAMES = ("a", "b")
LOCK = threading.Lock()


def _double(x):
    return 2 * x


def helper(x):
    return _double(x) * SCALE


def train_func(steps=1, label="run"):
    import os

    print(f"rank={os.environ['RANK']} label={label} value={helper(steps) + m.sqrt(16)} names={list(NAMES)}")


def failing(message="boom"):
    raise ValueError(message)


def logged(func):
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        print("not in the pod")
        return func(*args, **kwargs)
    return wrapper


@functools.lru_cache(maxsize=None)
def cached_square(x):
    return x * x


@logged
def decorated(x=3):
    print(f"square={cached_square(x)}")


def make_scaled(factor, thing=None):
    def scaled(x=2):
        print(f"scaled={x * factor}")

    def with_object():
        return thing

    return scaled, with_object


def uses_lock():
    with LOCK:
        pass


def generator():
    yield 1


def run_script(tmp_path, script, **env):
    """Run a script as the pod does, in a Python of its own that sees
    nothing of the tests (-I: no PYTHONPATH, no user site)."""
    path = tmp_path / "train.py"
    path.write_text(script)
    return subprocess.run([sys.executable, "-I", str(path)], env={"PATH": os.environ.get("PATH", ""), **env},
                          capture_output=True, text=True, timeout=60)


# ---- the script

def test_the_script_holds_what_the_function_uses_and_runs_it(tmp_path):
    script = function_script(train_func, {"steps": 2, "label": "unit"})
    compile(script, "train.py", "exec")
    assert "import math as m\n" in script
    assert "SCALE = 3\n" in script and "NAMES = ('a', 'b')\n" in script
    assert "def helper(x):" in script and "def _double(x):" in script and "def train_func(" in script
    # What the function does not use stays behind.
    for unused in ("threading", "LOCK", "pytest", "failing", "\nimport os\n"):
        assert unused not in script, unused
    # Each definition comes after what it needs: helper after _double.
    assert script.index("def _double") < script.index("def helper") < script.index("def train_func")
    done = run_script(tmp_path, script, RANK="1")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "rank=1 label=unit value=16.0 names=['a', 'b']\n"


def test_an_exception_fails_the_script_with_its_traceback(tmp_path):
    done = run_script(tmp_path, function_script(failing, {"message": "no data"}))
    assert done.returncode == 1
    assert "Traceback" in done.stderr and "ValueError: no data" in done.stderr


def test_the_functions_decorators_go_a_helpers_stay(tmp_path):
    script = function_script(decorated)
    assert "@logged" not in script and "def logged" not in script
    assert "import functools\n" in script and "@functools.lru_cache(maxsize=None)\ndef cached_square" in script
    done = run_script(tmp_path, script)
    assert (done.returncode, done.stdout) == (0, "square=9\n"), done.stderr


def test_a_closure_over_constants_carries_them(tmp_path):
    scaled, _ = make_scaled(5)
    script = function_script(scaled, {"x": 3})
    assert "factor = 5\n" in script
    done = run_script(tmp_path, script)
    assert (done.returncode, done.stdout) == (0, "scaled=15\n"), done.stderr


def test_constants_are_written_to_be_read_back():
    from tensorstack.training.shipping import _literal

    for value in (0, -1.5, 1e-300, "quote'\"", None, True, [1, (2,), {"k": [None]}], {1: "a"}, ()):
        assert eval(_literal(value)) == value  # noqa: S307
    assert _literal(float("inf")) == 'float("inf")' and _literal(-float("inf")) == '-float("inf")'
    cycle = []
    cycle.append(cycle)
    assert _literal(cycle) is None
    assert _literal({1, 2}) is None and _literal(object()) is None


@pytest.mark.parametrize("func, what, why", [
    (lambda x: x, "<lambda>", "lambda"),
    (len, "len", "built-in"),
    (LOCK.acquire, "acquire", "built-in"),
    (k8s.Configuration().get_api_key_with_prefix, "get_api_key_with_prefix", "bound method"),
    (functools.partial(train_func, 1), "partial", "func_args"),
    (generator, "generator", "generator"),
    (make_scaled(2, thing=object())[1], "with_object -> thing", "closure over it"),
    (uses_lock, "uses_lock -> LOCK", "_thread.lock object"),
])
def test_what_cannot_be_shipped_is_named(func, what, why):
    with pytest.raises(ShippingError) as refused:
        function_script(func)
    assert what in str(refused.value) and why in str(refused.value), str(refused.value)
    assert isinstance(refused.value, ValueError)


def test_func_args_must_be_json_and_fit_the_function():
    with pytest.raises(ShippingError, match=r"func_args\['label'\].*not JSON"):
        function_script(train_func, {"label": object()})
    with pytest.raises(ShippingError, match=r"func_args\['steps'\].*set object"):
        function_script(train_func, {"steps": {1, 2}})
    with pytest.raises(ShippingError, match="do not fit its parameters.*epochs"):
        function_script(train_func, {"epochs": 3})
    with pytest.raises(ShippingError, match="do not fit its parameters.*other"):
        function_script(failing, {"message": "x", "other": 1})
    # JSON's own values get through, tuples as lists.
    assert '"label": ["a", 1.5, null, true]' in function_script(train_func, {"label": ("a", 1.5, None, True)})


def test_a_function_without_source_is_refused_naming_why():
    # python -c: Python keeps no source of what it ran.
    code = textwrap.dedent("""
        from tensorstack.training import ShippingError, function_script
        def train():
            print("hi")
        try:
            function_script(train)
        except ShippingError as err:
            print(err)
    """)
    pkg = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(tensorstack.training.__file__))))
    done = subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": pkg},
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "cannot ship train: Python cannot find its source" in done.stdout
    assert "python -c" in done.stdout
    # exec() of a string: the same.
    scope = {}
    exec("def made():\n    pass\n", scope)  # noqa: S102
    with pytest.raises(ShippingError, match="cannot find its source"):
        function_script(scope["made"])


def test_a_script_over_256_kib_is_refused():
    scope = {"BIG": "x" * (300 * 1024)}
    filename = cell_file("def big():\n    return len(BIG)\n", scope)
    try:
        with pytest.raises(ShippingError, match="over the 262144 .256 KiB."):
            function_script(scope["big"])
    finally:
        linecache.cache.pop(filename, None)


# ---- a notebook's cells, as IPython keeps them: in linecache, by cell name

def cell_file(source, scope):
    filename = f"<ipython-input-{uuid.uuid4().hex[:8]}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(compile(source, filename, "exec"), scope)  # noqa: S102
    return filename


@pytest.fixture
def notebook():
    """Runs cells in one namespace, as a notebook's __main__."""
    files = []

    def run(*cells, scope=None):
        scope = scope if scope is not None else {"__name__": "__main__"}
        for cell in cells:
            files.append(cell_file(textwrap.dedent(cell), scope))
        return scope

    yield run
    for f in files:
        linecache.cache.pop(f, None)


def test_cells_of_a_notebook_are_shipped(notebook, tmp_path):
    scope = notebook(
        """
        import os
        from dataclasses import dataclass
        WIDTH = 4
        """,
        """
        @dataclass
        class Config:
            width: int = WIDTH
            name: str = "cfg"
        """,
        """
        class Summer:
            def __init__(self):
                self.total = 0

            def add(self, x):
                self.total += x
                return self
        """,
        """
        def train(n=3):
            s = Summer()
            for i in range(n):
                s.add(i * Config().width)
            print(f"rank={os.environ['RANK']} total={s.total} name={Config().name}")
        """,
    )
    script = function_script(scope["train"], {"n": 4})
    assert "@dataclass\nclass Config:" in script and "from dataclasses import dataclass\n" in script
    assert script.index("WIDTH = 4") < script.index("class Config")
    done = run_script(tmp_path, script, RANK="0")
    assert (done.returncode, done.stdout) == (0, "rank=0 total=24 name=cfg\n"), done.stderr


def test_one_name_for_two_things_is_refused(notebook):
    other = notebook("""
        import math as np
        def root(x):
            return np.sqrt(x)
        """)
    scope = notebook("import cmath as np\n")
    scope["root"] = other["root"]
    notebook("""
        def train():
            return root(4), np.sqrt(-1)
        """, scope=scope)
    with pytest.raises(ShippingError, match="np: the script would need the name for two things: module "):
        function_script(scope["train"])


def test_a_real_ipython_session(tmp_path):
    pytest.importorskip("IPython")
    code = textwrap.dedent('''
        from IPython.core.interactiveshell import InteractiveShell
        shell = InteractiveShell.instance()
        for cell in ["import math\\nfrom dataclasses import dataclass\\nK = 2",
                     "@dataclass\\nclass C:\\n    n: int = 5",
                     "def train(x=1):\\n    print(math.sqrt(C().n * K * x))",
                     "from tensorstack.training import function_script\\nprint(function_script(train, {'x': 8}))"]:
            result = shell.run_cell(cell)
            assert result.success, result.error_in_exec
    ''')
    pkg = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(tensorstack.training.__file__))))
    made = subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": pkg},
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert made.returncode == 0, made.stderr + made.stdout
    done = run_script(tmp_path, made.stdout)
    assert (done.returncode, done.stdout) == (0, "8.94427190999916\n"), done.stderr + made.stdout


# ---- runtimes and train() against a fake API

def api_exception(status, message=""):
    exc = ApiException(status=status, reason="refused")
    exc.body = json.dumps({"kind": "Status", "code": status, "message": message,
                           "reason": {403: "Forbidden", 404: "NotFound", 422: "Invalid"}.get(status, "")})
    return exc


def runtime(kind, name, field, image="registry.example/train:1", namespace=None):
    meta = {"name": name, "uid": f"uid-{name}"}
    if namespace:
        meta["namespace"] = namespace
    container = {"name": "main", "image": image}
    return {"apiVersion": "batch.tensorstack.dev/v1beta1", "kind": kind, "metadata": meta,
            "spec": {"template": {field: {"replicaSpecs": [
                {"type": "node", "replicas": 1, "template": {"spec": {"containers": [container]}}}]}}}}


class FakeApi:
    """The runtimes and jobs of a fake server; forbidden names the
    resources the user may not read ("trainingruntimes",
    "clustertrainingruntimes")."""

    def __init__(self, cluster=(), namespaced=(), forbidden=(), create_error=None):
        self.cluster = {r["metadata"]["name"]: r for r in cluster}
        self.namespaced = {(r["metadata"]["namespace"], r["metadata"]["name"]): r for r in namespaced}
        self.forbidden = set(forbidden)
        self.create_error = create_error
        self.calls = []
        self.created = []

    def _check(self, plural):
        if plural in self.forbidden:
            raise api_exception(403, f'{plural}.batch.tensorstack.dev is forbidden: User "alice" cannot get resource '
                                     f'"{plural}" in API group "batch.tensorstack.dev"')

    def list_cluster_custom_object(self, group, version, plural, **kw):
        self.calls.append(("list", plural))
        self._check(plural)
        return {"items": [json.loads(json.dumps(r)) for r in self.cluster.values()]}

    def list_namespaced_custom_object(self, group, version, namespace, plural, **kw):
        self.calls.append(("list", plural, namespace))
        self._check(plural)
        return {"items": [json.loads(json.dumps(r)) for (ns, _), r in self.namespaced.items() if ns == namespace]}

    def get_cluster_custom_object(self, group, version, plural, name):
        self.calls.append(("get", plural, name))
        self._check(plural)
        if name not in self.cluster:
            raise api_exception(404, f"{plural} {name!r} not found")
        return json.loads(json.dumps(self.cluster[name]))

    def get_namespaced_custom_object(self, group, version, namespace, plural, name):
        self.calls.append(("get", plural, namespace, name))
        self._check(plural)
        if (namespace, name) not in self.namespaced:
            raise api_exception(404, f"{plural} {name!r} not found")
        return json.loads(json.dumps(self.namespaced[(namespace, name)]))

    def create_namespaced_custom_object(self, group, version, namespace, plural, body):
        self.calls.append(("create", plural, namespace))
        if self.create_error:
            raise self.create_error
        self.created.append((plural, namespace, body))
        stored = json.loads(json.dumps(body))
        stored["metadata"]["name"] = stored["metadata"].get("name") or stored["metadata"]["generateName"] + "x7k2q"
        stored["metadata"]["namespace"] = namespace
        return stored


def fake_client(api):
    c = TrainingClient("team", api_client=k8s.ApiClient(k8s.Configuration()))
    c.custom = api
    return c


TORCH = runtime("ClusterTrainingRuntime", "torch-distributed", "pytorch")
CLUSTER_MPI = runtime("ClusterTrainingRuntime", "mpi", "mpi", image="registry.example/mpi:1")
TEAM_MPI = runtime("TrainingRuntime", "mpi", "mpi", image="registry.example/team-mpi:1", namespace="team")
TEAM_XGB = runtime("TrainingRuntime", "team-xgb", "xgboost", image="registry.example/xgb:1", namespace="team")
OTHER_TEAM = runtime("TrainingRuntime", "theirs", "generic", namespace="other")


def test_list_runtimes_lists_both_scopes():
    c = fake_client(FakeApi(cluster=[TORCH, CLUSTER_MPI], namespaced=[TEAM_XGB, TEAM_MPI, OTHER_TEAM]))
    assert c.list_runtimes() == [
        {"name": "mpi", "scope": "Cluster", "namespace": None, "kind": "MPIJob", "image": "registry.example/mpi:1"},
        {"name": "torch-distributed", "scope": "Cluster", "namespace": None, "kind": "PyTorchTrainingJob",
         "image": "registry.example/train:1"},
        {"name": "mpi", "scope": "Namespace", "namespace": "team", "kind": "MPIJob",
         "image": "registry.example/team-mpi:1"},
        {"name": "team-xgb", "scope": "Namespace", "namespace": "team", "kind": "XGBoostTrainingJob",
         "image": "registry.example/xgb:1"},
    ]
    assert [r["name"] for r in c.list_runtimes("other")] == ["mpi", "torch-distributed", "theirs"]


def test_list_runtimes_leaves_out_a_scope_the_user_may_not_read():
    c = fake_client(FakeApi(cluster=[TORCH], namespaced=[TEAM_XGB], forbidden={"trainingruntimes"}))
    assert [(r["name"], r["scope"]) for r in c.list_runtimes()] == [("torch-distributed", "Cluster")]
    c = fake_client(FakeApi(cluster=[TORCH], namespaced=[TEAM_XGB], forbidden={"clustertrainingruntimes"}))
    assert [(r["name"], r["scope"]) for r in c.list_runtimes()] == [("team-xgb", "Namespace")]
    c = fake_client(FakeApi(forbidden={"clustertrainingruntimes", "trainingruntimes"}))
    with pytest.raises(ForbiddenError):
        c.list_runtimes()


def test_get_runtime_takes_the_namespaces_first():
    api = FakeApi(cluster=[TORCH, CLUSTER_MPI], namespaced=[TEAM_MPI])
    c = fake_client(api)
    assert c.get_runtime("mpi")["kind"] == "TrainingRuntime"
    assert api.calls == [("get", "trainingruntimes", "team", "mpi")]
    assert c.get_runtime("mpi", namespace="other")["kind"] == "ClusterTrainingRuntime"
    assert c.get_runtime("torch-distributed")["metadata"]["name"] == "torch-distributed"


def test_get_runtime_of_no_such_name():
    c = fake_client(FakeApi(cluster=[TORCH]))
    with pytest.raises(NotFoundError) as missing:
        c.get_runtime("tensorflow")
    message = str(missing.value)
    assert "no TrainingRuntime of that name in namespace 'team'" in message
    assert "no ClusterTrainingRuntime" in message and "'tensorflow'" in message


def test_get_runtime_when_a_scope_is_forbidden():
    # The namespace's cannot be read: the cluster's is the one.
    c = fake_client(FakeApi(cluster=[TORCH], forbidden={"trainingruntimes"}))
    assert c.get_runtime("torch-distributed")["kind"] == "ClusterTrainingRuntime"
    # ...and when there is none, the refusal says more than a 404 would.
    with pytest.raises(ForbiddenError):
        c.get_runtime("team-xgb")
    c = fake_client(FakeApi(namespaced=[TEAM_XGB], forbidden={"clustertrainingruntimes"}))
    assert c.get_runtime("team-xgb")["kind"] == "TrainingRuntime"
    with pytest.raises(ForbiddenError):
        c.get_runtime("torch-distributed")


def test_runtime_job_kind():
    assert runtime_job_kind(TORCH) == "PyTorchTrainingJob"
    assert runtime_job_kind(runtime("ClusterTrainingRuntime", "tf", "tensorflow")) == "TensorFlowTrainingJob"
    assert runtime_job_kind(OTHER_TEAM) == "GenericJob"
    with pytest.raises(tensorstack.training.TrainingError, match="holds no job spec"):
        runtime_job_kind({"kind": "ClusterTrainingRuntime", "metadata": {"name": "empty"}, "spec": {"template": {}}})


def test_train_on_a_cluster_runtime():
    api = FakeApi(cluster=[TORCH])
    created = fake_client(api).train(
        train_func, num_nodes=2, resources_per_node={"cpu": 1, "memory": "2Gi", "nvidia.com/gpu": 1},
        func_args={"steps": 3}, env={"EPOCHS": "2"}, queue="user-queue", image="registry.example/mine:2")
    assert created["metadata"]["name"] == "train-func-x7k2q"
    ((plural, namespace, body),) = api.created
    assert (plural, namespace) == ("pytorchtrainingjobs", "team")
    quantities = {"cpu": "1", "memory": "2Gi", "nvidia.com/gpu": "1"}
    assert body == {
        "apiVersion": "batch.tensorstack.dev/v1beta1",
        "kind": "PyTorchTrainingJob",
        "metadata": {"generateName": "train-func-", "labels": {"kueue.x-k8s.io/queue-name": "user-queue"}},
        "spec": {
            "runtimeRef": {"name": "torch-distributed", "kind": "ClusterTrainingRuntime"},
            "trainer": {
                "image": "registry.example/mine:2",
                "numNodes": 2,
                "resourcesPerNode": {"requests": quantities, "limits": quantities},
                "env": [{"name": "EPOCHS", "value": "2"}],
                "script": {"name": "train.py", "source": function_script(train_func, {"steps": 3})},
            },
        },
    }


def test_train_on_a_namespaces_runtime():
    api = FakeApi(cluster=[TORCH], namespaced=[TEAM_XGB])
    fake_client(api).train(failing, "team-xgb", name="xgb-run", func_args={"message": "m"},
                           resources_per_node={"requests": {"cpu": 0.5}, "limits": {"memory": "1Gi"}})
    ((plural, namespace, body),) = api.created
    assert (plural, namespace, body["kind"]) == ("xgboosttrainingjobs", "team", "XGBoostTrainingJob")
    assert body["metadata"] == {"name": "xgb-run"}
    assert body["spec"]["runtimeRef"] == {"name": "team-xgb", "kind": "TrainingRuntime"}
    assert body["spec"]["trainer"]["resourcesPerNode"] == {"requests": {"cpu": "0.5"}, "limits": {"memory": "1Gi"}}
    assert set(body["spec"]["trainer"]) == {"resourcesPerNode", "script"}


def test_train_refuses_before_any_request():
    api = FakeApi(cluster=[TORCH])
    c = fake_client(api)
    with pytest.raises(ShippingError):
        c.train(lambda: None)
    with pytest.raises(ShippingError):
        c.train(train_func, func_args={"steps": object()})
    with pytest.raises(BuildError, match="spec.trainer.numNodes"):
        c.train(train_func, num_nodes=0)
    with pytest.raises(BuildError, match="spec.trainer.numNodes: must be at most 1000"):
        c.train(train_func, num_nodes=1001)
    with pytest.raises(BuildError, match=r"spec.trainer.resourcesPerNode.cpu"):
        c.train(train_func, resources_per_node={"cpu": [1]})
    with pytest.raises(BuildError, match=r"spec.trainer.env\[EPOCHS\]"):
        c.train(train_func, env={"EPOCHS": 2})
    with pytest.raises(BuildError, match="metadata.name"):
        c.train(train_func, name="2-Runs")
    assert api.calls == []


def test_train_raises_the_servers_refusal_typed():
    refusal = api_exception(422, "spec.trainer.numNodes: Invalid value: 3")
    refusal.body = json.dumps({"kind": "Status", "code": 422, "reason": "Invalid", "message": "invalid",
                               "details": {"causes": [{"field": "spec.trainer.numNodes", "reason": "FieldValueInvalid",
                                                       "message": "must be more than 1"}]}})
    c = fake_client(FakeApi(cluster=[TORCH], create_error=refusal))
    with pytest.raises(InvalidError) as refused:
        c.train(train_func, num_nodes=3)
    assert refused.value.paths == ["spec.trainer.numNodes"]
    with pytest.raises(NotFoundError, match="no training runtime 'nope'"):
        fake_client(FakeApi()).train(train_func, "nope")


@pytest.mark.parametrize("func_name, prefix", [
    ("train_func", "train-func-"), ("_private", "private-"), ("Train2GPUs", "train2gpus-"), ("__", "train-"),
    ("x" * 80, "x" * 40 + "-"),
])
def test_generated_names_are_dns_labels(func_name, prefix):
    assert _generate_name(func_name) == prefix
