# Copyright The TensorStack Training Authors.
# Licensed under the Apache License, Version 2.0.
"""``TrainingClient``: TensorStack training jobs from Python.

It talks to the cluster as the ``kubernetes`` package does: the kubeconfig
(``KUBECONFIG`` or ``~/.kube/config``, or the file and context given), or,
inside a pod, its ServiceAccount. Every refusal of the server is raised as a
typed error (:mod:`tensorstack.training.errors`).
"""

from __future__ import annotations

import queue
import re
import threading
import time
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Union

from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client.exceptions import ApiException

from .builders import (API_VERSION, GROUP, KINDS, QUEUE_LABEL, SHORT_NAMES, VERSION, TrainingJobBuilder, _env, _int,
                       job_from_dict)
from .comparison import ALIGNS, as_table, comparison_rows
from .errors import (BuildError, ForbiddenError, JobDeleted, NotFoundError, TrainingError, WaitTimeout,
                     from_api_exception)
from .shipping import SCRIPT_NAME, function_script, tuned_argument
from .tuning import (ASHA, TEMPLATE_FIELDS, TUNING_JOB_KIND, TUNING_JOB_PLURAL, MedianStop, Objective, Parameter,
                     placeholder, rank_trials, trial_template, tuning_search, tuning_state, with_trial_template)

#: The label every pod of a job carries, with the job's name.
JOB_NAME_LABEL = f"{GROUP}/job-name"
# The records the server keeps of deleted jobs.
RECORD_PLURAL = "trainingjobrecords"

FINISHED_PHASES = ("Succeeded", "Failed")

Job = Dict[str, Any]

#: The kinds of runtime, by their resources.
CLUSTER_RUNTIME, NAMESPACED_RUNTIME = "ClusterTrainingRuntime", "TrainingRuntime"
_RUNTIME_PLURALS = {CLUSTER_RUNTIME: "clustertrainingruntimes", NAMESPACED_RUNTIME: "trainingruntimes"}

#: The field of a runtime's spec.template that holds each job kind's spec,
#: in the order the server reads them.
RUNTIME_TEMPLATE_KINDS = {
    "generic": "GenericJob",
    "mpi": "MPIJob",
    "pytorch": "PyTorchTrainingJob",
    "tensorflow": "TensorFlowTrainingJob",
    "xgboost": "XGBoostTrainingJob",
}

#: The runtime train() and a function's trials run on when none is named.
DEFAULT_RUNTIME = "torch-distributed"

#: The most nodes a trainer may ask for (the API's limit).
MAX_NUM_NODES = 1000

_DNS_1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")


def _kind(kind: str) -> str:
    aliases = {}
    for name, (plural, _) in KINDS.items():
        for alias in (name.lower(), plural, SHORT_NAMES[name]):
            aliases[alias] = name
    resolved = aliases.get(kind.lower(), kind)
    if resolved not in KINDS:
        known = ", ".join(f"{name} ({SHORT_NAMES[name]})" for name in KINDS)
        raise TrainingError(f"unknown kind {kind!r}: one of {known}")
    return resolved


def _plural(kind: str) -> str:
    return KINDS[_kind(kind)][0]


def runtime_job_kind(runtime: Mapping[str, Any]) -> str:
    """The job kind a runtime makes: the kind whose spec its
    ``spec.template`` holds."""
    template = (runtime.get("spec") or {}).get("template") or {}
    for field, kind in RUNTIME_TEMPLATE_KINDS.items():
        if template.get(field) is not None:
            return kind
    name = (runtime.get("metadata") or {}).get("name", "")
    raise TrainingError(f"{runtime.get('kind', 'runtime')} {name!r} holds no job spec "
                        f"({', '.join(RUNTIME_TEMPLATE_KINDS)}) in spec.template")


def _runtime_summary(runtime: Mapping[str, Any]) -> Dict[str, Any]:
    """What list_runtimes says of a runtime: the columns of kubectl get
    (name, kind of job, image of the first replica type's first container)
    and its scope."""
    meta = runtime.get("metadata") or {}
    template = (runtime.get("spec") or {}).get("template") or {}
    try:
        kind = runtime_job_kind(runtime)
    except TrainingError:
        kind = ""
    image = ""
    for field in RUNTIME_TEMPLATE_KINDS:
        specs = (template.get(field) or {}).get("replicaSpecs") or []
        if specs:
            containers = ((specs[0].get("template") or {}).get("spec") or {}).get("containers") or []
            image = containers[0].get("image", "") if containers else ""
            break
    namespaced = runtime.get("kind") == NAMESPACED_RUNTIME
    return {
        "name": meta.get("name", ""),
        "scope": "Namespace" if namespaced else "Cluster",
        "namespace": meta.get("namespace") if namespaced else None,
        "kind": kind,
        "image": image,
    }


def _generate_name(func_name: str) -> str:
    """A generateName prefix from a function's name: ``train_func`` makes
    ``train-func-``. Job names are DNS-1035 labels (lower case, starting with
    a letter); the server adds 5 characters."""
    prefix = re.sub(r"[^a-z0-9]+", "-", func_name.lower())
    prefix = re.sub(r"^[^a-z]+", "", prefix).strip("-")[:40].rstrip("-")
    return (prefix or "train") + "-"


def _quantity(path: str, value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise BuildError(path, f"must be a quantity such as 1, 0.5, '500m' or '2Gi', not {value!r}")
    return value if isinstance(value, str) else repr(value) if isinstance(value, float) else str(value)


def _resources_per_node(value: Optional[Mapping[str, Any]]) -> Optional[Dict[str, Dict[str, str]]]:
    """spec.trainer.resourcesPerNode from {"cpu": 1, "memory": "2Gi"} (both
    requests and limits), or from {"requests": {...}, "limits": {...}}."""
    path = "spec.trainer.resourcesPerNode"
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise BuildError(path, f"must be a mapping such as {{'cpu': 1, 'memory': '2Gi'}}, not {value!r}")
    if value and set(value) <= {"requests", "limits"}:
        out: Dict[str, Dict[str, str]] = {}
        for part, quantities in value.items():
            if not isinstance(quantities, Mapping):
                raise BuildError(f"{path}.{part}", f"must be a mapping of resource to quantity, not {quantities!r}")
            out[part] = {str(k): _quantity(f"{path}.{part}.{k}", v) for k, v in quantities.items()}
        return out
    quantities = {str(k): _quantity(f"{path}.{k}", v) for k, v in value.items()}
    return {"requests": dict(quantities), "limits": dict(quantities)}


def _function_trainer(func: Callable[..., Any], func_args: Optional[Mapping[str, Any]], num_nodes: Optional[int],
                      resources_per_node: Optional[Mapping[str, Any]], env: Optional[Mapping[str, str]],
                      image: Optional[str], tuned: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
    """spec.trainer of a job that runs a function (train, and tune's
    trials), checked before any request."""
    script = function_script(func, func_args, tuned=tuned)
    trainer: Dict[str, Any] = {}
    if image is not None:
        if not isinstance(image, str) or not image:
            raise BuildError("spec.trainer.image", f"must be an image name, not {image!r}")
        trainer["image"] = image
    if num_nodes is not None:
        trainer["numNodes"] = _int("spec.trainer.numNodes", num_nodes, 1)
        if num_nodes > MAX_NUM_NODES:
            raise BuildError("spec.trainer.numNodes", f"must be at most {MAX_NUM_NODES}, not {num_nodes}")
    resources = _resources_per_node(resources_per_node)
    if resources is not None:
        trainer["resourcesPerNode"] = resources
    env_list = _env("spec.trainer.env", env)
    if env_list:
        trainer["env"] = env_list
    trainer["script"] = {"name": SCRIPT_NAME, "source": script}
    return trainer


def _tuned_arguments(parameters: Sequence[Union[Parameter, Mapping[str, Any]]]) -> Dict[str, Any]:
    """How a function's script reads each parameter of a search
    (function_script's tuned): a double as a float, an int as an int, a
    categorical as the value it was given as."""
    tuned: Dict[str, Any] = {}
    for p in parameters:
        if isinstance(p, Parameter):
            name, typ = p.name, p.type
            choices = p.choices() if typ == "categorical" else None
        else:
            name, typ = p.get("name"), p.get("type")
            choices = {v: v for v in p.get("values") or ()}
        tuned[name] = choices if typ == "categorical" else "int" if typ == "int" else "float"
    return tuned


def last_condition(job: Mapping[str, Any]) -> Dict[str, Any]:
    """The job's most recently changed condition, or {}."""
    conditions = (job.get("status") or {}).get("conditions") or []
    if not conditions:
        return {}
    return dict(max(conditions, key=lambda c: c.get("lastTransitionTime") or ""))


class TrainingClient:
    """Create, read, follow and steer training jobs.

    ``namespace`` is the default namespace of every call: the kubeconfig
    context's, or the pod's own inside a cluster, unless given.
    """

    def __init__(
        self,
        namespace: Optional[str] = None,
        *,
        config_file: Optional[str] = None,
        context: Optional[str] = None,
        api_client: Optional[k8s.ApiClient] = None,
    ):
        if api_client is None:
            default_namespace = "default"
            try:
                k8s_config.load_kube_config(config_file=config_file, context=context)
                _, current = k8s_config.list_kube_config_contexts(config_file=config_file)
                if context:
                    contexts, _ = k8s_config.list_kube_config_contexts(config_file=config_file)
                    current = next((c for c in contexts if c["name"] == context), current)
                default_namespace = (current.get("context") or {}).get("namespace") or "default"
            except k8s_config.ConfigException:
                k8s_config.load_incluster_config()
                try:
                    with open("/var/run/secrets/kubernetes.io/serviceaccount/namespace") as f:
                        default_namespace = f.read().strip() or "default"
                except OSError:
                    pass
            api_client = k8s.ApiClient()
            namespace = namespace or default_namespace
        self.namespace = namespace or "default"
        self.api_client = api_client
        self.custom = k8s.CustomObjectsApi(api_client)
        self.core = k8s.CoreV1Api(api_client)

    # ---- plain calls

    def _call(self, fn, *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except ApiException as exc:
            raise from_api_exception(exc) from None

    def create(self, job: Union[TrainingJobBuilder, Mapping[str, Any]], namespace: Optional[str] = None) -> Job:
        """Create a job from a builder or a dict; returns it as stored."""
        obj = job.to_dict() if isinstance(job, TrainingJobBuilder) else job_from_dict(job)
        ns = namespace or obj.get("metadata", {}).get("namespace") or self.namespace
        return self._call(self.custom.create_namespaced_custom_object, GROUP, VERSION, ns, _plural(obj["kind"]), obj)

    def get(self, name: str, kind: Optional[str] = None, namespace: Optional[str] = None) -> Job:
        """Read a job. Without a kind, the one of that name of any kind;
        two of the same name need the kind."""
        ns = namespace or self.namespace
        if kind:
            return self._call(self.custom.get_namespaced_custom_object, GROUP, VERSION, ns, _plural(kind), name)
        found = []
        for k in KINDS:
            try:
                found.append(self.get(name, k, ns))
            except NotFoundError:
                continue
        if not found:
            raise NotFoundError(404, "NotFound", f"no training job {name!r} in namespace {ns!r}")
        if len(found) > 1:
            kinds = " and ".join(sorted(j["kind"] for j in found))
            raise TrainingError(f"{name!r} names a {kinds} in {ns!r}: give the kind")
        return found[0]

    def list(
        self,
        kind: Optional[str] = None,
        namespace: Optional[str] = None,
        *,
        label_selector: str = "",
        field_selector: str = "",
        all_namespaces: bool = False,
    ) -> List[Job]:
        """List jobs of one kind or both, in a namespace or all of them,
        filtered by label and field selectors (``status.phase=Running``)."""
        kinds = [_kind(kind)] if kind else list(KINDS)
        out: List[Job] = []
        for k in kinds:
            if all_namespaces:
                res = self._call(self.custom.list_cluster_custom_object, GROUP, VERSION, _plural(k),
                                 label_selector=label_selector, field_selector=field_selector)
            else:
                res = self._call(self.custom.list_namespaced_custom_object, GROUP, VERSION, namespace or self.namespace,
                                 _plural(k), label_selector=label_selector, field_selector=field_selector)
            for item in res.get("items", []):
                item.setdefault("kind", k)
                out.append(item)
        return out

    def delete(self, name: str, kind: Optional[str] = None, namespace: Optional[str] = None) -> None:
        """Delete a job; its pods and Services go with it."""
        job = self.get(name, kind, namespace)
        self._call(self.custom.delete_namespaced_custom_object, GROUP, VERSION, job["metadata"]["namespace"],
                   _plural(job["kind"]), name)

    # ---- history

    def history(self, name: Optional[str] = None, namespace: Optional[str] = None, *,
                all_namespaces: bool = False) -> List[Dict[str, Any]]:
        """The records the server keeps of deleted jobs (``trainingjobrecords``),
        the most recently deleted first; with ``name``, those of the jobs of that
        name. Each is a dict with ``metadata`` (the record's name is the job's and
        the start of its UID), ``jobKind``, ``jobName``, ``jobUID``, ``phase``,
        ``jobCreationTime``, ``startTime``, ``completionTime``, ``deletionTime``,
        ``job`` (the deleted job as last stored: spec, status, attempts),
        ``progress`` (its metrics, oldest first, thinned to 500), ``events``
        (the newest first) and ``leftOut`` (what a record too large for its
        bound leaves out). The server keeps a bounded number per namespace
        for a bounded time."""
        selector = f"{JOB_NAME_LABEL}={name}" if name else ""
        if all_namespaces:
            res = self._call(self.custom.list_cluster_custom_object, GROUP, VERSION, RECORD_PLURAL,
                             label_selector=selector)
        else:
            res = self._call(self.custom.list_namespaced_custom_object, GROUP, VERSION, namespace or self.namespace,
                             RECORD_PLURAL, label_selector=selector)
        records = [dict(r) for r in res.get("items", [])]
        # RFC 3339 times of one zone sort as text; ties by name.
        records.sort(key=lambda r: r["metadata"]["name"])
        records.sort(key=lambda r: r.get("deletionTime") or "", reverse=True)
        return records

    # ---- runtimes

    def list_runtimes(self, namespace: Optional[str] = None) -> List[Dict[str, Any]]:
        """The runtimes a job of the namespace can name that the user may
        read: the ClusterTrainingRuntimes, then the namespace's
        TrainingRuntimes, each sorted by name, as dicts with ``name``,
        ``scope`` (``"Cluster"`` or ``"Namespace"``), ``namespace`` (None for
        the cluster's), ``kind`` (the job kind it makes) and ``image`` (the
        first replica type's first container's). A TrainingRuntime wins over
        a ClusterTrainingRuntime of the same name in :meth:`get_runtime` and
        :meth:`train`.

        A scope the user may not list (403) is left out; when both are
        refused, the :class:`ForbiddenError` is raised."""
        ns = namespace or self.namespace
        out: List[Dict[str, Any]] = []
        refused: List[ForbiddenError] = []
        for kind in (CLUSTER_RUNTIME, NAMESPACED_RUNTIME):
            plural = _RUNTIME_PLURALS[kind]
            try:
                if kind == CLUSTER_RUNTIME:
                    res = self._call(self.custom.list_cluster_custom_object, GROUP, VERSION, plural)
                else:
                    res = self._call(self.custom.list_namespaced_custom_object, GROUP, VERSION, ns, plural)
            except ForbiddenError as err:
                refused.append(err)
                continue
            items = []
            for item in res.get("items") or []:
                item.setdefault("kind", kind)  # a list's items may come without it
                items.append(_runtime_summary(item))
            out.extend(sorted(items, key=lambda r: r["name"]))
        if len(refused) == len(_RUNTIME_PLURALS):
            raise refused[-1]
        return out

    def get_runtime(self, name: str, namespace: Optional[str] = None) -> Dict[str, Any]:
        """The runtime a job of the namespace naming ``name`` would get: the
        namespace's TrainingRuntime of that name, else the
        ClusterTrainingRuntime. Raises :class:`NotFoundError` when neither
        exists, and :class:`ForbiddenError` when the one that may exist
        cannot be read."""
        ns = namespace or self.namespace
        refused: Optional[ForbiddenError] = None
        try:
            runtime = self._call(self.custom.get_namespaced_custom_object, GROUP, VERSION, ns,
                                 _RUNTIME_PLURALS[NAMESPACED_RUNTIME], name)
            runtime.setdefault("kind", NAMESPACED_RUNTIME)
            return runtime
        except NotFoundError:
            pass
        except ForbiddenError as err:
            refused = err
        try:
            runtime = self._call(self.custom.get_cluster_custom_object, GROUP, VERSION,
                                 _RUNTIME_PLURALS[CLUSTER_RUNTIME], name)
        except NotFoundError:
            if refused is not None:
                raise refused from None
            raise NotFoundError(404, "NotFound", f"no training runtime {name!r}: no TrainingRuntime of that name in "
                                                 f"namespace {ns!r} and no ClusterTrainingRuntime "
                                                 "(list_runtimes() shows the ones there are)") from None
        runtime.setdefault("kind", CLUSTER_RUNTIME)
        return runtime

    def train(
        self,
        func: Callable[..., Any],
        runtime: str = DEFAULT_RUNTIME,
        num_nodes: Optional[int] = None,
        resources_per_node: Optional[Mapping[str, Any]] = None,
        func_args: Optional[Mapping[str, Any]] = None,
        env: Optional[Mapping[str, str]] = None,
        queue: Optional[str] = None,
        name: Optional[str] = None,
        *,
        namespace: Optional[str] = None,
        image: Optional[str] = None,
    ) -> Job:
        """Train with a Python function: create a job from a runtime that
        runs ``func(**func_args)`` on every node, and return the job as
        stored.

        The function travels in the job as its script (``spec.trainer.script``,
        ``train.py``), with what it uses by global name: the modules it uses
        (as imports), constants, and functions and classes of your own (as
        source). :mod:`tensorstack.training.shipping` says what exactly, and
        :func:`~tensorstack.training.function_script` shows the script. Works
        for a function of a notebook cell or a ``.py`` file; a lambda, a
        builtin, a closure over something that is not a constant, a global
        that holds an object (a model, a tensor), or a function whose source
        Python cannot find (typed in ``python -c`` or the plain interactive
        prompt) raise :class:`ShippingError`, naming it, before any request.
        Modules are imported in the pods, not shipped: a module only the
        image has (torch, on a laptop without it) is imported inside the
        function. ``func_args`` travel as JSON.

        - ``runtime``: the name of a TrainingRuntime of the namespace or of a
          ClusterTrainingRuntime (:meth:`get_runtime`); it decides the job's
          kind, image, launcher and the rest. The shipped runtimes run
          ``python3 -u $(TRAINING_SCRIPT)`` (under mpirun on an MPIJob's
          launcher).
        - ``num_nodes``: how many nodes run the function (1 to 1000); the
          runtime's count without it.
        - ``resources_per_node``: ``{"cpu": 1, "memory": "2Gi",
          "nvidia.com/gpu": 1}`` is both requested and the limit (a GPU's
          request must equal its limit anyway); ``{"requests": {...},
          "limits": {...}}`` sets them apart.
        - ``env``: variables of every node's training container.
        - ``queue``: the Kueue LocalQueue of the namespace to queue the job in.
        - ``name``: the job's name; without one, the server makes one from the
          function's (``train-func-x7k2q`` for ``train_func``).
        - ``image``: the training container's image, over the runtime's.

        The job is created in ``namespace`` (the client's by default). Its
        kind is the runtime's (``created["kind"]``): pass it and
        ``created["metadata"]["name"]`` to :meth:`wait`, :meth:`logs` and the
        rest. Refusals are the typed errors of
        :mod:`tensorstack.training.errors` (``InvalidError`` naming
        ``spec.trainer...``, ``ForbiddenError`` for a runtime the user may
        not get).
        """
        # Everything that needs no request is checked first.
        trainer = _function_trainer(func, func_args, num_nodes, resources_per_node, env, image)
        metadata: Dict[str, Any] = {}
        if name is not None:
            if not isinstance(name, str) or len(name) > 63 or not _DNS_1035.match(name):
                raise BuildError("metadata.name", f"{name!r} is not a DNS-1035 label (lower case letters, digits and "
                                                  "'-', starting with a letter, at most 63)")
            metadata["name"] = name
        else:
            metadata["generateName"] = _generate_name(getattr(func, "__name__", "") or "")
        if queue:
            metadata["labels"] = {QUEUE_LABEL: queue}

        ns = namespace or self.namespace
        kind, ref = self._runtime_ref(runtime, ns)
        job = {"apiVersion": API_VERSION, "kind": kind, "metadata": metadata,
               "spec": {"runtimeRef": ref, "trainer": trainer}}
        return self.create(job, namespace=ns)

    def _runtime_ref(self, runtime: str, namespace: str):
        """The job kind a runtime makes and the runtimeRef that names it."""
        found = self.get_runtime(runtime, namespace)
        return runtime_job_kind(found), {"name": found["metadata"]["name"], "kind": found["kind"]}

    # ---- hyperparameter searches

    def tune(
        self,
        name: str,
        trial: Union[Callable[..., Any], TrainingJobBuilder, Mapping[str, Any]],
        parameters: Sequence[Union[Parameter, Mapping[str, Any]]],
        objective: Union[Objective, str],
        algorithm: str = "random",
        seed: Optional[int] = None,
        early_stopping: Optional[Union[ASHA, MedianStop]] = None,
        parallel_trials: int = 1,
        max_trials: int = 10,
        max_failed_trials: int = 3,
        namespace: Optional[str] = None,
        *,
        startup_trials: Optional[int] = None,
        runtime: Optional[str] = None,
        num_nodes: Optional[int] = None,
        resources_per_node: Optional[Mapping[str, Any]] = None,
        func_args: Optional[Mapping[str, Any]] = None,
        env: Optional[Mapping[str, str]] = None,
        queue: Optional[str] = None,
        image: Optional[str] = None,
    ) -> Job:
        """Create a hyperparameter search, a ``TuningJob`` named ``name``, and
        return it as stored. Its trials are training jobs named
        ``<name>-<index>``, with the label ``batch.tensorstack.dev/tuning-job``.

        ``trial`` is what every trial runs:

        - a job: a builder (``PyTorchJob(...)``) or a manifest dict, whose
          strings hold ``${param.<name>}`` where a parameter's value goes
          (``command=["python3", "train.py", "--lr", "${param.lr}"]``), and
          ``${trial.name}`` for the trial's name. Its name and namespace are
          not used.
        - a Python function, shipped as :meth:`train` ships one, on
          ``runtime`` (``"torch-distributed"`` by default) with
          ``num_nodes``, ``resources_per_node``, ``env`` and ``image`` as
          there. Every parameter is passed to it as a keyword
          argument of its name, converted to the parameter's type (``float``,
          ``int``, or the categorical value given), after ``func_args``: the
          function must take them. The values reach the script as its
          arguments, ``--lr=0.01`` (``spec.trainer.args``), which the shipped
          runtimes pass to it.

        ``queue`` (a Kueue LocalQueue) labels every trial, of either kind.
        ``parameters``, ``objective``, ``algorithm``, ``seed``,
        ``startup_trials``, ``early_stopping``, ``parallel_trials``,
        ``max_trials`` and ``max_failed_trials`` are
        :func:`~tensorstack.training.tuning.tuning_job`'s. Bad values raise
        :class:`BuildError` or :class:`ShippingError` before any request.

        Follow the search with :meth:`get_tuning_job`, :meth:`list_trials`,
        :meth:`get_best_trial` and :meth:`wait_for_tuning_job`; each trial is
        a job :meth:`get`, :meth:`logs` and the rest take.
        """
        # Everything that needs no request is checked first.
        search = tuning_search(name, parameters, objective, algorithm=algorithm, seed=seed,
                               startup_trials=startup_trials, early_stopping=early_stopping,
                               parallel_trials=parallel_trials, max_trials=max_trials,
                               max_failed_trials=max_failed_trials)
        if callable(trial) and not isinstance(trial, (TrainingJobBuilder, Mapping)):
            tuned = _tuned_arguments(parameters)
            trainer = _function_trainer(trial, func_args, num_nodes, resources_per_node, env, image, tuned)
            trainer["args"] = [tuned_argument(n, placeholder(n)) for n in tuned]
            ns = namespace or self.namespace
            kind, ref = self._runtime_ref(runtime or DEFAULT_RUNTIME, ns)
            template: Dict[str, Any] = {TEMPLATE_FIELDS[kind]: {"runtimeRef": ref, "trainer": trainer}}
        else:
            given = {"runtime": runtime, "num_nodes": num_nodes, "resources_per_node": resources_per_node,
                     "func_args": func_args, "env": env, "image": image}
            for what, value in given.items():
                if value is not None:
                    raise TrainingError(f"tune: {what} is for the trials of a function; a job's trials take "
                                        "theirs from the job")
            template = trial_template(trial)
            if isinstance(trial, TrainingJobBuilder):
                ns = namespace or trial.namespace or self.namespace
            else:
                ns = namespace or ((trial.get("metadata") or {}).get("namespace")) or self.namespace
        if queue:
            template.setdefault("labels", {})[QUEUE_LABEL] = queue
        body = with_trial_template(search, template)
        return self._call(self.custom.create_namespaced_custom_object, GROUP, VERSION, ns, TUNING_JOB_PLURAL, body)

    def get_tuning_job(self, name: str, namespace: Optional[str] = None) -> Job:
        """Read a search (a ``TuningJob``)."""
        return self._call(self.custom.get_namespaced_custom_object, GROUP, VERSION, namespace or self.namespace,
                          TUNING_JOB_PLURAL, name)

    def list_trials(self, name: str, namespace: Optional[str] = None) -> List[Dict[str, Any]]:
        """A search's trials (``status.trials``), best first by its objective;
        trials without a value yet follow, in the order they were made
        (:func:`~tensorstack.training.tuning.rank_trials`). Each has
        ``name`` (its job's), ``index``, ``parameters`` (``[{"name",
        "value"}]``), ``state``, ``value``, ``progress``, and under asha
        ``rung``, ``rungValues`` and ``promotions``; ``curve`` and
        ``message``."""
        return rank_trials(self.get_tuning_job(name, namespace))

    def get_best_trial(self, name: str, namespace: Optional[str] = None) -> Optional[Dict[str, Any]]:
        """The search's best trial so far (``status.bestTrial``), as
        :meth:`list_trials` has it, or None before any trial has a value."""
        search = self.get_tuning_job(name, namespace)
        best = (search.get("status") or {}).get("bestTrial")
        if not best:
            return None
        return next((t for t in rank_trials(search) if t.get("name") == best), None)

    def wait_for_tuning_job(self, name: str, timeout: float = 3600, namespace: Optional[str] = None, *,
                            interval: float = 5.0) -> Job:
        """Wait until the search ends, its Succeeded or Failed condition True,
        and return it; a failed search is returned too (its conditions say
        why). Raises :class:`WaitTimeout` after ``timeout`` seconds and
        :class:`JobDeleted` when the search goes meanwhile."""
        ns = namespace or self.namespace
        search = self.get_tuning_job(name, ns)
        deadline = time.monotonic() + timeout
        while True:
            state = tuning_state(search)
            if state in FINISHED_PHASES:
                return search
            if time.monotonic() >= deadline:
                last = last_condition(search)
                raise WaitTimeout(
                    f"{TUNING_JOB_KIND} {ns}/{name}: not finished within {timeout:g} s; it is {state}"
                    + (f", last condition {last.get('type')}={last.get('status')} ({last.get('reason', '')}: "
                       f"{last.get('message', '')})" if last else ""),
                    phase=state, condition=last)
            time.sleep(interval)
            try:
                search = self.get_tuning_job(name, ns)
            except NotFoundError:
                raise JobDeleted(f"{TUNING_JOB_KIND} {ns}/{name} was deleted while waiting") from None

    # ---- waiting

    def wait(
        self,
        name: str,
        kind: Optional[str] = None,
        namespace: Optional[str] = None,
        *,
        phase: Optional[str] = "Succeeded",
        condition: Optional[str] = None,
        condition_status: str = "True",
        timeout: float = 600,
        interval: float = 1.0,
    ) -> Job:
        """Wait until the job is in ``phase``, or has ``condition`` with
        ``condition_status``, and return it.

        Raises :class:`WaitTimeout` (with the job's last phase and condition)
        after ``timeout`` seconds, :class:`JobDeleted` when the job goes
        meanwhile, and :class:`TrainingError` when it finishes in another
        phase, which it cannot leave.
        """
        job = self.get(name, kind, namespace)
        kind, ns = job["kind"], job["metadata"]["namespace"]
        deadline = time.monotonic() + timeout
        while True:
            status = job.get("status") or {}
            current = status.get("phase", "")
            if condition:
                if any(c.get("type") == condition and c.get("status") == condition_status
                       for c in status.get("conditions") or []):
                    return job
            elif current == phase:
                return job
            if current in FINISHED_PHASES and (condition or current != phase):
                last = last_condition(job)
                raise TrainingError(f"{kind} {ns}/{name} finished as {current} "
                                    f"({last.get('reason', '')}: {last.get('message', '')})")
            if time.monotonic() >= deadline:
                last = last_condition(job)
                want = f"condition {condition}={condition_status}" if condition else f"phase {phase}"
                raise WaitTimeout(
                    f"{kind} {ns}/{name}: no {want} within {timeout:g} s; it is {current or 'not reconciled yet'}"
                    + (f", last condition {last.get('type')}={last.get('status')} ({last.get('reason', '')}: "
                       f"{last.get('message', '')})" if last else ""),
                    phase=current, condition=last)
            time.sleep(interval)
            try:
                job = self.get(name, kind, ns)
            except NotFoundError:
                raise JobDeleted(f"{kind} {ns}/{name} was deleted while waiting") from None

    # ---- what it says

    def progress(self, name: str, kind: Optional[str] = None, namespace: Optional[str] = None) -> Dict[str, Any]:
        """The job's last stored progress report (``status.progress``), or {}."""
        return dict((self.get(name, kind, namespace).get("status") or {}).get("progress") or {})

    def get_attempts(self, name: str, kind: Optional[str] = None, namespace: Optional[str] = None) -> List[Dict[str, Any]]:
        """The job's attempts (``status.attempts``), oldest first: each start of its
        pods, when and why it ended, the checkpoints it resumed from and wrote, the
        steps it made, and its failed replicas with the end of their logs. The job
        keeps the last 20; ``status.attemptCount`` counts them all."""
        return [dict(a) for a in (self.get(name, kind, namespace).get("status") or {}).get("attempts") or []]

    def get_progress_history(self, name: str, kind: Optional[str] = None,
                             namespace: Optional[str] = None) -> List[Dict[str, Any]]:
        """The metrics of every stored progress report of the job, oldest first
        (its ``progresshistory`` subresource; ``status.progress.history`` keeps
        only the last 30): each sample has ``reportTime``, ``step``, ``epoch`` and
        ``metrics``. Past 4096 samples the older ones are thinned, the first kept."""
        return self._history_of(self.get(name, kind, namespace))

    def _history_of(self, job: Mapping[str, Any]) -> List[Dict[str, Any]]:
        ns, name = job["metadata"]["namespace"], job["metadata"]["name"]
        path = f"/apis/{GROUP}/{VERSION}/namespaces/{ns}/{_plural(job['kind'])}/{name}/progresshistory"
        history = self._call(self.api_client.call_api, path, "GET", header_params={"Accept": "application/json"},
                             response_type="object", auth_settings=["BearerToken"], _return_http_data_only=True)
        return [dict(s) for s in (history or {}).get("samples") or []]

    def compare(self, names: Union[str, Sequence[str]], metric: str, namespace: Optional[str] = None,
                kind: Optional[str] = None, align: str = "step") -> Any:
        """One metric of several jobs side by side, the series the dashboard's
        comparison draws: a row per report of each job, with ``job`` (its
        name), ``step``, ``elapsed_seconds`` (since the job first started),
        ``time`` (the report's, RFC 3339) and the metric's value as a float.

        ``align`` orders the rows: ``"step"`` by step, leaving out reports
        without one and keeping the last report of a step reported twice;
        ``"elapsed"`` by the time since each job started; ``"time"`` by the
        wall clock. Each job's whole run is read (its ``progresshistory``).
        Returns a list of dicts, or a pandas DataFrame when pandas is
        installed (the client does not require it)."""
        if align not in ALIGNS:
            raise TrainingError(f"align must be one of {', '.join(ALIGNS)}, not {align!r}")
        if isinstance(names, str):
            names = [names]
        histories = []
        for name in names:
            job = self.get(name, kind, namespace)
            histories.append((name, job, self._history_of(job)))
        return as_table(comparison_rows(histories, metric, align), metric)

    def events(self, name: str, kind: Optional[str] = None, namespace: Optional[str] = None) -> List[Dict[str, Any]]:
        """The events of the job itself, oldest first."""
        job = self.get(name, kind, namespace)
        ns = job["metadata"]["namespace"]
        selector = f"involvedObject.name={name},involvedObject.kind={job['kind']}"
        res = self._call(self.core.list_namespaced_event, ns, field_selector=selector)
        events = [self.api_client.sanitize_for_serialization(e) for e in res.items]
        return sorted(events, key=lambda e: e.get("lastTimestamp") or e.get("eventTime") or "")

    def pods(self, name: str, namespace: Optional[str] = None) -> List[Dict[str, Any]]:
        """The job's pods, by name."""
        res = self._call(self.core.list_namespaced_pod, namespace or self.namespace,
                         label_selector=f"{JOB_NAME_LABEL}={name}")
        pods = [self.api_client.sanitize_for_serialization(p) for p in res.items]
        return sorted(pods, key=lambda p: p["metadata"]["name"])

    def logs(
        self,
        name: str,
        replica: Optional[str] = None,
        kind: Optional[str] = None,
        namespace: Optional[str] = None,
        *,
        follow: bool = False,
        container: Optional[str] = None,
        tail_lines: Optional[int] = None,
    ) -> Iterator[str]:
        """The log lines of one replica (``"worker-0"``) or, without one, of
        every pod, each line then prefixed with ``[pod]``. With
        ``follow=True`` the lines come as they are written, until every
        container ends."""
        job = self.get(name, kind, namespace)
        ns = job["metadata"]["namespace"]
        # A generic job's training container is each replica's first.
        container = container or KINDS[job["kind"]][1] or job["spec"]["replicaSpecs"][0]["template"]["spec"]["containers"][0]["name"]
        if replica:
            pods = [f"{name}-{replica}"]
        else:
            pods = [p["metadata"]["name"] for p in self.pods(name, ns)]
        if len(pods) == 1:
            yield from self._pod_log(pods[0], ns, container, follow, tail_lines, prefix="" if replica else f"[{pods[0]}] ")
            return
        yield from self._merged_logs(pods, ns, container, follow, tail_lines)

    def _pod_log(self, pod: str, ns: str, container: str, follow: bool, tail_lines: Optional[int],
                 prefix: str = "") -> Iterator[str]:
        kwargs: Dict[str, Any] = {"container": container, "follow": follow, "_preload_content": False}
        if tail_lines is not None:
            kwargs["tail_lines"] = tail_lines
        resp = self._call(self.core.read_namespaced_pod_log, pod, ns, **kwargs)
        try:
            pending = b""
            for chunk in resp.stream(4096):
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    yield prefix + line.decode("utf-8", "replace")
            if pending:
                yield prefix + pending.decode("utf-8", "replace")
        finally:
            resp.release_conn()

    def _merged_logs(self, pods: List[str], ns: str, container: str, follow: bool,
                     tail_lines: Optional[int]) -> Iterator[str]:
        lines: "queue.Queue[Any]" = queue.Queue(maxsize=1000)
        done = object()

        def read(pod: str) -> None:
            try:
                for line in self._pod_log(pod, ns, container, follow, tail_lines, prefix=f"[{pod}] "):
                    lines.put(line)
            except TrainingError as err:
                lines.put(err)
            finally:
                lines.put(done)

        for pod in pods:
            threading.Thread(target=read, args=(pod,), daemon=True).start()
        remaining = len(pods)
        while remaining:
            item = lines.get()
            if item is done:
                remaining -= 1
            elif isinstance(item, Exception):
                raise item
            else:
                yield item

    # ---- steering

    def _post_action(self, name: str, action: str, body: Dict[str, Any], kind: Optional[str],
                     namespace: Optional[str]) -> Job:
        job = self.get(name, kind, namespace)
        ns = job["metadata"]["namespace"]
        path = f"/apis/{GROUP}/{VERSION}/namespaces/{ns}/{_plural(job['kind'])}/{name}/{action}"
        self._call(self.api_client.call_api, path, "POST",
                   header_params={"Accept": "application/json", "Content-Type": "application/json"},
                   body=body, response_type="object", auth_settings=["BearerToken"], _return_http_data_only=True)
        return self.get(name, job["kind"], ns)

    def pause(self, name: str, kind: Optional[str] = None, namespace: Optional[str] = None) -> Job:
        """Pause a job: its pods are deleted, the job stays (``Paused``)."""
        return self._post_action(name, "pause", {"apiVersion": f"{GROUP}/{VERSION}", "kind": "PauseRequest"},
                                 kind, namespace)

    def resume(self, name: str, kind: Optional[str] = None, namespace: Optional[str] = None) -> Job:
        """Resume a paused job."""
        return self._post_action(name, "resume", {"apiVersion": f"{GROUP}/{VERSION}", "kind": "ResumeRequest"},
                                 kind, namespace)

    def clear_suspect_nodes(self, name: str, kind: Optional[str] = None, namespace: Optional[str] = None) -> Job:
        """Let the job's next pods use the nodes it left out (``status.suspectNodes``),
        once they are repaired. It writes the job's status: the caller needs the
        patch verb on the kind's ``status`` subresource."""
        job = self.get(name, kind, namespace)
        ns = job["metadata"]["namespace"]
        path = f"/apis/{GROUP}/{VERSION}/namespaces/{ns}/{_plural(job['kind'])}/{name}/status"
        self._call(self.api_client.call_api, path, "PATCH",
                   header_params={"Accept": "application/json", "Content-Type": "application/merge-patch+json"},
                   body={"status": {"suspectNodes": None}}, response_type="object", auth_settings=["BearerToken"],
                   _return_http_data_only=True)
        return self.get(name, job["kind"], ns)

    def debug(self, name: str, kind: Optional[str] = None, namespace: Optional[str] = None, *,
              replica_specs: Optional[List[Mapping[str, Any]]] = None) -> Job:
        """Restart a job in debug mode: its pods start and wait, for
        ``kubectl exec``; ``replica_specs`` (type, command, skipInitContainer)
        say how."""
        body: Dict[str, Any] = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "DebugRequest"}
        if replica_specs:
            body["replicaSpecs"] = [dict(s) for s in replica_specs]
        return self._post_action(name, "debug", body, kind, namespace)

    def scale(self, name: str, replicas: int, namespace: Optional[str] = None,
              kind: Optional[str] = None) -> Dict[str, Any]:
        """Set an elastic job's replicas (its ``scale`` subresource: a
        PyTorchTrainingJob's or a GenericJob's); returns the Scale. Without
        a kind, the job is found by its name."""
        if isinstance(replicas, bool) or not isinstance(replicas, int) or replicas < 0:
            raise BuildError("spec.replicas", f"must be a whole number of at least 0, not {replicas!r}")
        if kind is None:
            job = self.get(name, None, namespace)
            kind, ns = job["kind"], job["metadata"]["namespace"]
        else:
            kind, ns = _kind(kind), namespace or self.namespace
        path = f"/apis/{GROUP}/{VERSION}/namespaces/{ns}/{_plural(kind)}/{name}/scale"
        return self._call(self.api_client.call_api, path, "PATCH",
                          header_params={"Accept": "application/json", "Content-Type": "application/merge-patch+json"},
                          body={"spec": {"replicas": replicas}}, response_type="object",
                          auth_settings=["BearerToken"], _return_http_data_only=True)
