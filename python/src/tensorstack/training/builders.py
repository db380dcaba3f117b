# Copyright The TensorStack Training Authors.
# Licensed under the Apache License, Version 2.0.
"""Builders of ``PyTorchTrainingJob``, ``TensorFlowTrainingJob``,
``XGBoostTrainingJob``, ``GenericJob`` and ``MPIJob`` objects.

A builder turns Python calls into the same object ``kubectl apply`` takes
(``to_dict()``), and refuses a value the API would refuse before any request
(:class:`~tensorstack.training.errors.BuildError`, naming the field by its API
path). What the builders do not cover can be set from a plain dict or YAML
with :meth:`TrainingJobBuilder.set`, merged into the built object.

Example::

    job = (PyTorchJob("mnist-ddp")
           .replica("node", 2, image="registry.example/mnist:1",
                    command=["python3", "train.py"], env={"EPOCHS": "3"},
                    requests={"cpu": "1", "memory": "2Gi"})
           .torchrun(procs_per_node=1)
           .run_policy(backoff_limit=2))
"""

from __future__ import annotations

import copy
import re
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Union

import yaml

from . import _kinds
from .errors import BuildError

GROUP = "batch.tensorstack.dev"
VERSION = "v1beta1"
API_VERSION = f"{GROUP}/{VERSION}"

# KINDS (each kind's plural resource and training container) and
# SHORT_NAMES are written from the Go table of kinds (hack/kindlists). A
# generic job's training container is each replica's first; the builders
# name it "main".
KINDS = _kinds.KINDS
SHORT_NAMES = _kinds.SHORT_NAMES

RESTART_POLICIES = ("Never", "OnFailure", "Always", "ExitCode")
CLEAN_UP_POLICIES = ("All", "Unfinished", "None")
STARTUP_POLICIES = ("AnyOrder", "InOrder")
RESTART_STRATEGIES = ("Recreate", "InPlace")
SUCCESS_POLICIES = ("Default", "AllWorkers", "AnyWorker")
#: torchrun's rendezvous backends. Unset, the server picks static for a job that
#: is not elastic and c10d for an elastic one, which static cannot serve.
RENDEZVOUS_BACKENDS = ("static", "c10d", "etcd", "etcd-v2")

#: Kueue's label naming a job's LocalQueue.
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_REPLICA_TYPE = re.compile(r"^[A-Za-z][A-Za-z0-9-]*$")

Env = Union[Mapping[str, str], Sequence[Mapping[str, Any]]]


def _int(path: str, value: Any, minimum: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise BuildError(path, f"must be a whole number, not {value!r}")
    if value < minimum:
        raise BuildError(path, f"must be at least {minimum}, not {value}")
    return value


def _choice(path: str, value: str, choices: Iterable[str]) -> str:
    choices = tuple(choices)
    if value not in choices:
        raise BuildError(path, f"{value!r} is not one of {', '.join(choices)}")
    return value


def _strings(path: str, values: Optional[Sequence[Any]]) -> Optional[List[str]]:
    if values is None:
        return None
    if isinstance(values, str):
        raise BuildError(path, "must be a list of strings, not one string")
    out = []
    for i, v in enumerate(values):
        if not isinstance(v, str):
            raise BuildError(f"{path}[{i}]", f"must be a string, not {v!r}")
        out.append(v)
    return out


def _env(path: str, env: Optional[Env]) -> Optional[List[Dict[str, Any]]]:
    if env is None:
        return None
    if isinstance(env, Mapping):
        out = []
        for name, value in env.items():
            if not isinstance(value, str):
                raise BuildError(f"{path}[{name}]", f"must be a string (environment values are), not {value!r}")
            out.append({"name": name, "value": value})
        return out
    return [dict(e) for e in env]


def _quantities(path: str, values: Optional[Mapping[str, Any]]) -> Optional[Dict[str, str]]:
    if values is None:
        return None
    out = {}
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            raise BuildError(f"{path}.{name}", f"must be a quantity such as '500m' or '2Gi', not {value!r}")
        out[name] = value
    return out


def merge(base: Dict[str, Any], overlay: Mapping[str, Any]) -> Dict[str, Any]:
    """Merge overlay into base, in place: dicts merge key by key, anything
    else (lists included) replaces what base had. Returns base."""
    for key, value in overlay.items():
        if isinstance(value, Mapping) and isinstance(base.get(key), dict):
            merge(base[key], value)
        else:
            base[key] = copy.deepcopy(value)
    return base


class Replica:
    """One replica type of a job: how many pods and what they run.

    The training container is named for the kind (``pytorch`` or
    ``tensorflow``) unless ``container`` says otherwise. ``template`` is a
    pod template (dict) the rest is merged over, for anything else a pod can
    have.
    """

    def __init__(
        self,
        type: str,
        replicas: int = 1,
        *,
        image: Optional[str] = None,
        command: Optional[Sequence[str]] = None,
        args: Optional[Sequence[str]] = None,
        env: Optional[Env] = None,
        requests: Optional[Mapping[str, Any]] = None,
        limits: Optional[Mapping[str, Any]] = None,
        ports: Optional[Sequence[Mapping[str, Any]]] = None,
        volume_mounts: Optional[Sequence[Mapping[str, Any]]] = None,
        volumes: Optional[Sequence[Mapping[str, Any]]] = None,
        restart_policy: Optional[str] = None,
        annotations: Optional[Mapping[str, str]] = None,
        labels: Optional[Mapping[str, str]] = None,
        container: Optional[str] = None,
        template: Optional[Mapping[str, Any]] = None,
        path: str = "spec.replicaSpecs[0]",
    ):
        if not isinstance(type, str) or not _REPLICA_TYPE.match(type):
            raise BuildError(f"{path}.type", f"{type!r} is not a replica type (letters, digits and '-', starting with a letter)")
        self.type = type
        self.replicas = _int(f"{path}.replicas", replicas)
        self.image = image
        self.command = _strings(f"{path}.template.spec.containers[0].command", command)
        self.args = _strings(f"{path}.template.spec.containers[0].args", args)
        self.env = _env(f"{path}.template.spec.containers[0].env", env)
        self.requests = _quantities(f"{path}.template.spec.containers[0].resources.requests", requests)
        self.limits = _quantities(f"{path}.template.spec.containers[0].resources.limits", limits)
        self.ports = [dict(p) for p in ports] if ports is not None else None
        self.volume_mounts = [dict(m) for m in volume_mounts] if volume_mounts is not None else None
        self.volumes = [dict(v) for v in volumes] if volumes is not None else None
        self.restart_policy = _choice(f"{path}.restartPolicy", restart_policy, RESTART_POLICIES) if restart_policy else None
        self.annotations = dict(annotations) if annotations else None
        self.labels = dict(labels) if labels else None
        self.container = container
        self.template = copy.deepcopy(dict(template)) if template else None

    def to_dict(self, container_name: str) -> Dict[str, Any]:
        """The replica spec, with the kind's training container name."""
        template: Dict[str, Any] = copy.deepcopy(self.template) if self.template else {}
        meta = template.setdefault("metadata", {})
        if self.annotations:
            meta.setdefault("annotations", {}).update(self.annotations)
        if self.labels:
            meta.setdefault("labels", {}).update(self.labels)
        if not meta:
            del template["metadata"]
        spec = template.setdefault("spec", {})
        containers = spec.setdefault("containers", [])
        name = self.container or container_name
        container = next((c for c in containers if c.get("name") == name), None)
        if container is None:
            container = {"name": name}
            containers.insert(0, container)
        for key, value in (
            ("image", self.image),
            ("command", self.command),
            ("args", self.args),
            ("env", self.env),
            ("ports", self.ports),
            ("volumeMounts", self.volume_mounts),
        ):
            if value is not None:
                container[key] = copy.deepcopy(value)
        if self.requests is not None or self.limits is not None:
            resources = container.setdefault("resources", {})
            if self.requests is not None:
                resources["requests"] = dict(self.requests)
            if self.limits is not None:
                resources["limits"] = dict(self.limits)
        if self.volumes is not None:
            spec["volumes"] = copy.deepcopy(self.volumes)
        out: Dict[str, Any] = {"type": self.type, "replicas": self.replicas}
        if self.restart_policy:
            out["restartPolicy"] = self.restart_policy
        out["template"] = template
        return out


class TrainingJobBuilder:
    """What every kind has: metadata, replicas, run policy, scheduling,
    run mode and TensorBoard. Use :class:`PyTorchJob` or
    :class:`TensorFlowJob`."""

    kind = ""

    def __init__(
        self,
        name: str,
        namespace: Optional[str] = None,
        *,
        labels: Optional[Mapping[str, str]] = None,
        annotations: Optional[Mapping[str, str]] = None,
    ):
        if not isinstance(name, str) or len(name) > 63 or not _DNS_LABEL.match(name):
            raise BuildError("metadata.name", f"{name!r} is not a DNS label (lower case letters, digits and '-', at most 63)")
        self.name = name
        self.namespace = namespace
        self.labels: Dict[str, str] = dict(labels or {})
        self.annotations: Dict[str, str] = dict(annotations or {})
        self._replicas: List[Replica] = []
        self._spec: Dict[str, Any] = {}
        self._extra: List[Mapping[str, Any]] = []

    # ---- replicas

    def replica(self, type: str, replicas: int = 1, **kwargs: Any) -> "TrainingJobBuilder":
        """Add a replica type; the keywords are :class:`Replica`'s."""
        path = f"spec.replicaSpecs[{len(self._replicas)}]"
        return self.add_replica(Replica(type, replicas, path=path, **kwargs))

    def add_replica(self, replica: Replica) -> "TrainingJobBuilder":
        """Add a replica type built beforehand."""
        if any(r.type == replica.type for r in self._replicas):
            raise BuildError(f"spec.replicaSpecs[{len(self._replicas)}].type", f"replica type {replica.type!r} is already there")
        self._replicas.append(replica)
        return self

    # ---- policies

    def run_policy(
        self,
        *,
        backoff_limit: Optional[int] = None,
        active_deadline_seconds: Optional[int] = None,
        ttl_seconds_after_finished: Optional[int] = None,
        clean_up_policy: Optional[str] = None,
        start_timeout_seconds: Optional[int] = None,
        startup_policy: Optional[str] = None,
        success_policy: Optional[str] = None,
        failure_rules: Optional[Sequence[Mapping[str, Any]]] = None,
        restart_strategy: Optional[str] = None,
    ) -> "TrainingJobBuilder":
        """Set ``spec.runPolicy``: retries, deadlines, clean-up, start order,
        what success means, failure rules (dicts as the API has them:
        ``{"action": "FailJob", "onExitCodes": {...}}``), and how a restart
        of the whole job brings the replicas back (``"Recreate"`` or
        ``"InPlace"``)."""
        rp = self._spec.setdefault("runPolicy", {})
        if backoff_limit is not None:
            rp["backoffLimit"] = _int("spec.runPolicy.backoffLimit", backoff_limit)
        if active_deadline_seconds is not None:
            rp["activeDeadlineSeconds"] = _int("spec.runPolicy.activeDeadlineSeconds", active_deadline_seconds, 1)
        if ttl_seconds_after_finished is not None:
            rp["ttlSecondsAfterFinished"] = _int("spec.runPolicy.ttlSecondsAfterFinished", ttl_seconds_after_finished)
        if clean_up_policy is not None:
            rp["cleanUpPolicy"] = _choice("spec.runPolicy.cleanUpPolicy", clean_up_policy, CLEAN_UP_POLICIES)
        if start_timeout_seconds is not None:
            rp["startTimeoutSeconds"] = _int("spec.runPolicy.startTimeoutSeconds", start_timeout_seconds, 1)
        if startup_policy is not None:
            rp["startupPolicy"] = _choice("spec.runPolicy.startupPolicy", startup_policy, STARTUP_POLICIES)
        if success_policy is not None:
            rp["successPolicy"] = _choice("spec.runPolicy.successPolicy", success_policy, SUCCESS_POLICIES)
        if failure_rules is not None:
            rp["failurePolicy"] = {"rules": [copy.deepcopy(dict(r)) for r in failure_rules]}
        if restart_strategy is not None:
            rp["restartStrategy"] = _choice("spec.runPolicy.restartStrategy", restart_strategy, RESTART_STRATEGIES)
        return self

    def queue(self, name: str) -> "TrainingJobBuilder":
        """Queue the job in a Kueue LocalQueue of its namespace."""
        self.labels[QUEUE_LABEL] = name
        return self

    def t9k_scheduler(self, queue: str, priority: Optional[int] = None) -> "TrainingJobBuilder":
        """Gang-schedule the job, in a queue (``spec.scheduler.t9kScheduler``)."""
        t9k: Dict[str, Any] = {"queue": queue}
        if priority is not None:
            t9k["priority"] = _int("spec.scheduler.t9kScheduler.priority", priority)
        self._spec["scheduler"] = {"t9kScheduler": t9k}
        return self

    def tensorboard(
        self,
        image: str,
        log_filesets: Sequence[str],
        *,
        requests: Optional[Mapping[str, Any]] = None,
        limits: Optional[Mapping[str, Any]] = None,
    ) -> "TrainingJobBuilder":
        """Run TensorBoard over the job's logs (``spec.tensorboardSpec``)."""
        tb: Dict[str, Any] = {
            "image": image,
            "trainingLogFilesets": _strings("spec.tensorboardSpec.trainingLogFilesets", log_filesets),
        }
        resources: Dict[str, Any] = {}
        if requests is not None:
            resources["requests"] = _quantities("spec.tensorboardSpec.resources.requests", requests)
        if limits is not None:
            resources["limits"] = _quantities("spec.tensorboardSpec.resources.limits", limits)
        if resources:
            tb["resources"] = resources
        self._spec["tensorboardSpec"] = tb
        return self

    def paused(self, resume_specs: Optional[Sequence[Mapping[str, Any]]] = None) -> "TrainingJobBuilder":
        """Create the job paused; ``resume_specs`` (dicts: type, command,
        args, skipInitContainer) say how replicas start when resumed."""
        pause: Dict[str, Any] = {"enabled": True}
        if resume_specs:
            pause["resumeSpecs"] = [copy.deepcopy(dict(s)) for s in resume_specs]
        self._spec.setdefault("runMode", {})["pause"] = pause
        return self

    def debug(self, replica_specs: Optional[Sequence[Mapping[str, Any]]] = None) -> "TrainingJobBuilder":
        """Create the job in debug mode: its pods wait instead of training."""
        debug: Dict[str, Any] = {"enabled": True}
        if replica_specs:
            debug["replicaSpecs"] = [copy.deepcopy(dict(s)) for s in replica_specs]
        self._spec.setdefault("runMode", {})["debug"] = debug
        return self

    def set(self, fields: Union[Mapping[str, Any], str]) -> "TrainingJobBuilder":
        """Merge fields the builders do not cover into the built object: a
        dict, or YAML text, of the object's shape (``{"spec": {...}}``)."""
        if isinstance(fields, str):
            fields = yaml.safe_load(fields) or {}
        if not isinstance(fields, Mapping):
            raise BuildError("", "set() takes a mapping of the object's fields")
        self._extra.append(copy.deepcopy(dict(fields)))
        return self

    # ---- the object

    def _kind_spec(self) -> Dict[str, Any]:
        return {}

    def to_dict(self) -> Dict[str, Any]:
        """The object, as ``kubectl apply`` takes it."""
        if not self._replicas:
            raise BuildError("spec.replicaSpecs", "a job needs at least one replica type")
        container = KINDS[self.kind][1] or "main"
        metadata: Dict[str, Any] = {"name": self.name}
        if self.namespace:
            metadata["namespace"] = self.namespace
        if self.labels:
            metadata["labels"] = dict(self.labels)
        if self.annotations:
            metadata["annotations"] = dict(self.annotations)
        spec: Dict[str, Any] = self._kind_spec()
        spec.update(copy.deepcopy(self._spec))
        spec["replicaSpecs"] = [r.to_dict(container) for r in self._replicas]
        obj = {"apiVersion": API_VERSION, "kind": self.kind, "metadata": metadata, "spec": spec}
        for extra in self._extra:
            merge(obj, extra)
        return obj


def _elastic(min_replicas: int, max_replicas: int, expected_replicas: Optional[int]) -> Dict[str, Any]:
    """``spec.elastic`` of a kind that may scale, checked as the API does."""
    lo = _int("spec.elastic.minReplicas", min_replicas, 1)
    hi = _int("spec.elastic.maxReplicas", max_replicas, 1)
    if hi < lo:
        raise BuildError("spec.elastic.maxReplicas", f"must be at least minReplicas ({lo}), not {hi}")
    el: Dict[str, Any] = {"enabled": True, "minReplicas": lo, "maxReplicas": hi}
    if expected_replicas is not None:
        exp = _int("spec.elastic.expectedReplicas", expected_replicas, lo)
        if exp > hi:
            raise BuildError("spec.elastic.expectedReplicas", f"must be at most maxReplicas ({hi}), not {exp}")
        el["expectedReplicas"] = exp
    return el


class PyTorchJob(TrainingJobBuilder):
    """A ``PyTorchTrainingJob``: replica types ``master``, ``worker`` or, with
    torchrun, ``node``."""

    kind = "PyTorchTrainingJob"

    def __init__(self, name: str, namespace: Optional[str] = None, **kwargs: Any):
        super().__init__(name, namespace, **kwargs)
        self._torchrun: Optional[Dict[str, Any]] = None
        self._elastic: Optional[Dict[str, Any]] = None

    def torchrun(
        self,
        *,
        procs_per_node: Union[int, str, None] = None,
        rdzv_backend: Optional[str] = None,
        max_restarts: Optional[int] = None,
        extra_options: Optional[Sequence[str]] = None,
    ) -> "PyTorchJob":
        """Start every pod's processes with torchrun (``spec.torchrunConfig``)."""
        tc: Dict[str, Any] = {"enabled": True}
        if procs_per_node is not None:
            tc["procPerNode"] = str(procs_per_node)
        if max_restarts is not None:
            tc["maxRestarts"] = _int("spec.torchrunConfig.maxRestarts", max_restarts)
        if rdzv_backend is not None:
            tc["rdzvBackend"] = _choice("spec.torchrunConfig.rdzvBackend", rdzv_backend, RENDEZVOUS_BACKENDS)
        if extra_options is not None:
            tc["extraOptions"] = _strings("spec.torchrunConfig.extraOptions", extra_options)
        self._torchrun = tc
        return self

    def elastic(self, min_replicas: int, max_replicas: int, expected_replicas: Optional[int] = None) -> "PyTorchJob":
        """Let the job run with min_replicas to max_replicas pods
        (``spec.elastic``); scale it with ``TrainingClient.scale``."""
        self._elastic = _elastic(min_replicas, max_replicas, expected_replicas)
        return self

    def _kind_spec(self) -> Dict[str, Any]:
        if self._elastic and self._torchrun and self._torchrun.get("rdzvBackend") == "static":
            raise BuildError("spec.torchrunConfig.rdzvBackend",
                             "an elastic job cannot use the static rendezvous, whose group cannot change: "
                             "use c10d (the default of an elastic job), etcd or etcd-v2")
        spec: Dict[str, Any] = {}
        if self._torchrun:
            spec["torchrunConfig"] = dict(self._torchrun)
        if self._elastic:
            spec["elastic"] = dict(self._elastic)
        return spec


class TensorFlowJob(TrainingJobBuilder):
    """A ``TensorFlowTrainingJob``: replica types ``chief``, ``master``,
    ``worker``, ``ps`` and ``evaluator``; every pod gets ``TF_CONFIG``."""

    kind = "TensorFlowTrainingJob"


class XGBoostJob(TrainingJobBuilder):
    """An ``XGBoostTrainingJob``: one ``master``, which hosts XGBoost's
    tracker, and ``worker`` replicas; every replica gets the tracker's
    address and its rank (``DMLC_*``)."""

    kind = "XGBoostTrainingJob"


class GenericJob(TrainingJobBuilder):
    """A ``GenericJob``: replica types of your own, every container told
    every replica's address (``TENSORSTACK_CLUSTER``,
    ``TENSORSTACK_<TYPE>_HOSTS``, ``TENSORSTACK_RANK``, ...)."""

    kind = "GenericJob"

    def __init__(self, name: str, namespace: Optional[str] = None, **kwargs: Any):
        super().__init__(name, namespace, **kwargs)
        self._rules: Dict[str, List[Dict[str, Any]]] = {"successRules": [], "failureRules": []}
        self._elastic: Optional[Dict[str, Any]] = None

    def elastic(self, min_replicas: int, max_replicas: int, expected_replicas: Optional[int] = None) -> "GenericJob":
        """Let the job run with min_replicas to max_replicas replicas in all
        (``spec.elastic``): its last replica type scales, and the job
        re-forms at each new size, every pod told the new addresses. Scale it
        with ``TrainingClient.scale``."""
        self._elastic = _elastic(min_replicas, max_replicas, expected_replicas)
        return self

    def success_rule(self, replicas: Mapping[str, Optional[Sequence[int]]]) -> "GenericJob":
        """Add a success rule (``spec.successRules``): the job succeeds once
        every replica it names has. ``replicas`` maps a replica type to the
        indexes of the rule, or to None for every replica of the type."""
        return self._add_rule("successRules", replicas)

    def failure_rule(self, replicas: Mapping[str, Optional[Sequence[int]]]) -> "GenericJob":
        """Add a failure rule (``spec.failureRules``): the job fails once
        every replica it names has failed for good. With failure rules, a
        replica whose failure completes none is left failed and the job runs
        on. ``replicas`` is as for :meth:`success_rule`."""
        return self._add_rule("failureRules", replicas)

    def _add_rule(self, field: str, replicas: Mapping[str, Optional[Sequence[int]]]) -> "GenericJob":
        rules = self._rules[field]
        path = f"spec.{field}[{len(rules)}].replicas"
        if not replicas:
            raise BuildError(path, "a rule names at least one replica type")
        selectors = []
        for i, (typ, indexes) in enumerate(replicas.items()):
            selector: Dict[str, Any] = {"type": typ}
            if indexes is not None:
                selector["indexes"] = [_int(f"{path}[{i}].indexes[{j}]", n) for j, n in enumerate(indexes)]
            selectors.append(selector)
        rules.append({"replicas": selectors})
        return self

    def _kind_spec(self) -> Dict[str, Any]:
        known = {r.type for r in self._replicas}
        spec: Dict[str, Any] = {}
        for field, rules in self._rules.items():
            for i, rule in enumerate(rules):
                for j, selector in enumerate(rule["replicas"]):
                    if selector["type"] not in known:
                        raise BuildError(f"spec.{field}[{i}].replicas[{j}].type",
                                         f"names no replica type of the job ({', '.join(sorted(known))})")
            if rules:
                spec[field] = copy.deepcopy(rules)
        if self._elastic:
            spec["elastic"] = dict(self._elastic)
        return spec


MPI_IMPLEMENTATIONS = ("OpenMPI", "IntelMPI", "MPICH")


class MPIJob(TrainingJobBuilder):
    """An ``MPIJob``: one ``launcher``, which runs mpirun, and ``worker``
    replicas, which run an SSH server; the controller gives the job its SSH
    key pair and the launcher its hostfile."""

    kind = "MPIJob"

    def __init__(self, name: str, namespace: Optional[str] = None, **kwargs: Any):
        super().__init__(name, namespace, **kwargs)
        self._mpi: Dict[str, Any] = {}

    def mpi(self, *, slots_per_worker: Optional[int] = None, implementation: Optional[str] = None,
            ssh_auth_mount_path: Optional[str] = None) -> "MPIJob":
        """Set the slots per worker (``spec.slotsPerWorker``), the MPI
        (``spec.mpiImplementation``: OpenMPI, IntelMPI or MPICH) and where the
        SSH keys are mounted (``spec.sshAuthMountPath``)."""
        if slots_per_worker is not None:
            self._mpi["slotsPerWorker"] = _int("spec.slotsPerWorker", slots_per_worker, 1)
        if implementation is not None:
            self._mpi["mpiImplementation"] = _choice("spec.mpiImplementation", implementation, MPI_IMPLEMENTATIONS)
        if ssh_auth_mount_path is not None:
            if not isinstance(ssh_auth_mount_path, str) or not ssh_auth_mount_path.startswith("/"):
                raise BuildError("spec.sshAuthMountPath", f"must be an absolute path, not {ssh_auth_mount_path!r}")
            self._mpi["sshAuthMountPath"] = ssh_auth_mount_path
        return self

    def _kind_spec(self) -> Dict[str, Any]:
        return dict(self._mpi)


def job_from_yaml(text: str) -> Dict[str, Any]:
    """Read a job from YAML (one document), checking that it is one of ours."""
    return job_from_dict(yaml.safe_load(text))


def job_from_dict(obj: Mapping[str, Any]) -> Dict[str, Any]:
    """A copy of a job given as a dict, checking its apiVersion and kind."""
    if not isinstance(obj, Mapping):
        raise BuildError("", "a job is a mapping with apiVersion, kind, metadata and spec")
    if obj.get("apiVersion") != API_VERSION:
        raise BuildError("apiVersion", f"must be {API_VERSION}, not {obj.get('apiVersion')!r}")
    if obj.get("kind") not in KINDS:
        raise BuildError("kind", f"must be one of {', '.join(KINDS)}, not {obj.get('kind')!r}")
    return copy.deepcopy(dict(obj))
