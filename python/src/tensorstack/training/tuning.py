# Copyright The TensorStack Training Authors.
# Licensed under the Apache License, Version 2.0.
"""Builders of ``TuningJob`` objects: hyperparameter searches.

A search runs *trials*, ordinary training jobs made from one template with
different parameter values, and looks for the values that give the best
objective. The template's strings hold placeholders: ``${param.<name>}`` is
the trial's value of a parameter, ``${trial.name}`` the trial's job name
(``<search>-<index>``).

- :class:`Parameter`: what the search varies, ``Parameter.double``,
  ``Parameter.int`` or ``Parameter.categorical``;
- :class:`Objective`: the metric the trials report (their progress reports'
  metrics) and which way is better;
- :class:`ASHA` and :class:`MedianStop`: early stopping;
- :func:`trial_template`: a job (a builder or a manifest dict) as a trial
  template;
- :func:`tuning_job`: the whole object, as ``kubectl apply`` takes it;
- :func:`rank_trials` and :func:`tuning_state`: a search's trials best
  first, and its one-word state.

``TrainingClient.tune`` builds and creates a search in one call, from a job
or from a Python function. Bad values are refused before any request
(:class:`~tensorstack.training.errors.BuildError`, naming the field by its
API path).

Example::

    search = tuning_job(
        "lr-search",
        PyTorchJob("trial").replica("node", 1, image="registry.example/train:1",
                                    command=["python3", "train.py", "--lr", "${param.lr}"]),
        [Parameter.double("lr", 1e-4, 1e-1, log=True), Parameter.categorical("optimizer", ["adam", "sgd"])],
        Objective("loss"),
        algorithm="tpe", early_stopping=ASHA(min_resource=100), parallel_trials=2, max_trials=20)
"""

from __future__ import annotations

import copy
import math
import re
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from .builders import API_VERSION, TrainingJobBuilder, _choice, _int, job_from_dict
from .errors import BuildError

#: The kind of a search, and its resource.
TUNING_JOB_KIND = "TuningJob"
TUNING_JOB_PLURAL = "tuningjobs"

#: The label every trial's job carries, with its search's name.
TUNING_JOB_LABEL = "batch.tensorstack.dev/tuning-job"

ALGORITHMS = ("random", "grid", "tpe")
DIRECTIONS = ("minimize", "maximize")
TRIAL_VALUES = ("last", "best", "atStep")
ASHA_RESOURCES = ("steps", "epochs")

#: The API's limits of a search.
MAX_PARAMETERS = 16
MAX_TRIALS = 500

#: The field of a trial template that holds each job kind's spec.
TEMPLATE_FIELDS = {
    "PyTorchTrainingJob": "pytorch",
    "TensorFlowTrainingJob": "tensorflow",
    "XGBoostTrainingJob": "xgboost",
    "MPIJob": "mpi",
    "GenericJob": "generic",
}

_PARAMETER_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
_DNS_1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_PLACEHOLDER = re.compile(r"\$\{([^}]*)\}")


def placeholder(name: str) -> str:
    """The placeholder of a parameter: ``${param.<name>}``."""
    return "${param." + name + "}"


def _decimal(path: str, value: Any, whole: bool) -> str:
    """A parameter's bound as the API takes it: a decimal string."""
    if isinstance(value, bool):
        raise BuildError(path, f"must be a number, not {value!r}")
    if isinstance(value, str):
        text = value.strip()
        try:
            if "_" in text:  # Python reads 1_000; the API does not
                raise ValueError(text)
            number = float(text)
        except ValueError:
            raise BuildError(path, f"must be a number, not {value!r}") from None
    elif isinstance(value, (int, float)):
        number = float(value)
        text = repr(value)
    else:
        raise BuildError(path, f"must be a number, not {value!r}")
    if math.isnan(number) or math.isinf(number):
        raise BuildError(path, f"must be a finite number, not {value!r}")
    if whole:
        if isinstance(value, float) or (isinstance(value, str) and not re.fullmatch(r"[+-]?\d+", text)):
            raise BuildError(path, f"must be a whole number, not {value!r}")
        if abs(int(text)) > 2 ** 53:
            raise BuildError(path, f"must be from -2^53 to 2^53, not {value!r}")
        return str(int(text))
    return text


def _categorical_value(path: str, value: Any) -> str:
    """A categorical value as the API takes it: a string, with numbers and
    booleans written as JSON writes them (32, 0.5, true)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float) and not (math.isnan(value) or math.isinf(value)):
        return repr(value)
    raise BuildError(path, f"must be a string, a number or a boolean, not {value!r}")


@dataclass(frozen=True)
class Parameter:
    """One value a search varies (``spec.parameters[]``). Make one with
    :meth:`double`, :meth:`int` or :meth:`categorical`; its values are
    checked when the search is built.

    ``name`` is what placeholders call it (``${param.lr}``): letters, digits
    and ``_``, starting with a letter.
    """

    name: str
    type: str
    min: Any = None
    max: Any = None
    step: Any = None
    log: bool = False
    values: Optional[Tuple[Any, ...]] = None

    @classmethod
    def double(cls, name: str, min: Union[float, str], max: Union[float, str], log: bool = False,
               step: Union[float, str, None] = None) -> "Parameter":
        """Decimal values from ``min`` to ``max``. ``log=True`` samples evenly
        over the logarithm of the range, as suits learning rates (``min``
        must then be above 0); ``step`` makes the values ``min``,
        ``min+step``, ... (a grid search needs it)."""
        return cls(name, "double", min, max, step, log)

    @classmethod
    def int(cls, name: str, min: Union[int, str], max: Union[int, str], log: bool = False,
            step: Union[int, str, None] = None) -> "Parameter":
        """Whole numbers from ``min`` to ``max`` (by ``step``, 1 without it)."""
        return cls(name, "int", min, max, step, log)

    @classmethod
    def categorical(cls, name: str, values: Sequence[Any]) -> "Parameter":
        """One of ``values``: strings, numbers or booleans. The API holds
        them as strings (``32``, ``0.5``, ``true``); a function's trial gets
        them back as the Python values given here."""
        if not isinstance(values, (str, bytes)) and isinstance(values, Sequence):
            values = tuple(values)
        return cls(name, "categorical", values=values)

    def choices(self) -> Dict[str, Any]:
        """A categorical parameter's values by their API strings:
        ``{"32": 32, "true": True}``."""
        return {_categorical_value("values", v): v for v in self.values or ()}

    def to_dict(self, path: str = "spec.parameters[0]") -> Dict[str, Any]:
        """The parameter as the API has it, checked as the API checks it."""
        if not isinstance(self.name, str) or not _PARAMETER_NAME.match(self.name) or len(self.name) > 63:
            raise BuildError(f"{path}.name", f"{self.name!r} is not a parameter name (letters, digits and '_', "
                                             "starting with a letter, at most 63)")
        out: Dict[str, Any] = {"name": self.name, "type": _choice(f"{path}.type", self.type,
                                                                  ("double", "int", "categorical"))}
        if self.type == "categorical":
            if not isinstance(self.values, tuple):
                raise BuildError(f"{path}.values", f"must be a list of values, not {self.values!r}")
            if not self.values:
                raise BuildError(f"{path}.values", "a categorical parameter needs at least one value")
            values = []
            for i, v in enumerate(self.values):
                text = _categorical_value(f"{path}.values[{i}]", v)
                if text in values:
                    raise BuildError(f"{path}.values[{i}]", f"{text!r} is there already")
                values.append(text)
            out["values"] = values
            return out
        whole = self.type == "int"
        if self.min is None or self.max is None:
            missing = "min" if self.min is None else "max"
            raise BuildError(f"{path}.{missing}", f"a {self.type} parameter needs min and max")
        lo, hi = _decimal(f"{path}.min", self.min, whole), _decimal(f"{path}.max", self.max, whole)
        if float(lo) > float(hi):
            raise BuildError(f"{path}.max", f"must be at least min ({lo}), not {hi}")
        out["min"], out["max"] = lo, hi
        if self.step is not None:
            step = _decimal(f"{path}.step", self.step, whole)
            if float(step) <= 0:
                raise BuildError(f"{path}.step", f"must be above 0, not {step}")
            out["step"] = step
        if self.log:
            if float(lo) <= 0:
                raise BuildError(f"{path}.min", f"must be above 0 on a log scale, not {lo}")
            out["logScale"] = True
        return out


@dataclass(frozen=True)
class Objective:
    """What a search optimizes (``spec.objective``): a metric of the trials'
    progress reports (``loss``, ``accuracy``), and its ``direction``:
    ``"minimize"`` or ``"maximize"``.

    - ``goal``: the search ends as Succeeded as soon as a trial reaches it.
    - ``trial_value``: which value of a trial counts: ``"last"`` (the last it
      reported), ``"best"`` (its best) or ``"atStep"`` (the one at ``step``,
      or the last before it).
    """

    metric: str
    direction: str = "minimize"
    goal: Union[float, str, None] = None
    trial_value: str = "last"
    step: Optional[int] = None

    def to_dict(self, path: str = "spec.objective") -> Dict[str, Any]:
        if not isinstance(self.metric, str) or not self.metric:
            raise BuildError(f"{path}.metric", "the metric the trials report, such as 'loss'")
        out: Dict[str, Any] = {"metric": self.metric,
                               "direction": _choice(f"{path}.direction", self.direction, DIRECTIONS)}
        if self.goal is not None:
            out["goal"] = _decimal(f"{path}.goal", self.goal, False)
        out["trialValue"] = _choice(f"{path}.trialValue", self.trial_value, TRIAL_VALUES)
        if self.trial_value == "atStep":
            if self.step is None:
                raise BuildError(f"{path}.step", "trial_value 'atStep' needs the step whose value counts")
            out["step"] = _int(f"{path}.step", self.step, 1)
        elif self.step is not None:
            raise BuildError(f"{path}.step", "only with trial_value 'atStep'")
        return out


@dataclass(frozen=True)
class ASHA:
    """Asynchronous successive halving (``spec.earlyStopping.asha``): at each
    rung (``min_resource``, then ``min_resource * reduction_factor``, ...
    steps or epochs, as ``resource`` says) only the best
    1/``reduction_factor`` of the trials go on; the others are paused, with a
    checkpoint when the trial template has a checkpoint policy, and resumed
    if they later rank among the best of their rung."""

    min_resource: int
    reduction_factor: int = 3
    rungs: int = 3
    resource: str = "steps"

    def to_dict(self, path: str = "spec.earlyStopping") -> Dict[str, Any]:
        path += ".asha"
        factor = _int(f"{path}.reductionFactor", self.reduction_factor, 2)
        if factor > 10:
            raise BuildError(f"{path}.reductionFactor", f"must be from 2 to 10, not {factor}")
        rungs = _int(f"{path}.rungs", self.rungs, 1)
        if rungs > 10:
            raise BuildError(f"{path}.rungs", f"must be from 1 to 10, not {rungs}")
        return {"asha": {"resource": _choice(f"{path}.resource", self.resource, ASHA_RESOURCES),
                         "minResource": _int(f"{path}.minResource", self.min_resource, 1),
                         "reductionFactor": factor, "rungs": rungs}}


@dataclass(frozen=True)
class MedianStop:
    """The median stopping rule (``spec.earlyStopping.medianStop``): a trial
    whose best value so far is worse than the median of the other trials'
    at the same step is stopped, from ``start_step`` on and once
    ``min_trials`` others have reported there."""

    start_step: int = 1
    min_trials: int = 3

    def to_dict(self, path: str = "spec.earlyStopping") -> Dict[str, Any]:
        path += ".medianStop"
        return {"medianStop": {"startStep": _int(f"{path}.startStep", self.start_step),
                               "minTrials": _int(f"{path}.minTrials", self.min_trials, 1)}}


EarlyStopping = Union[ASHA, MedianStop]


def trial_template(trial: Union[TrainingJobBuilder, Mapping[str, Any]]) -> Dict[str, Any]:
    """The trial template (``spec.trialTemplate``) of a job: a builder's, or
    a job manifest's (a dict with ``apiVersion``, ``kind`` and ``spec``).
    The job's labels and annotations go to every trial; its name and
    namespace do not (trials are named ``<search>-<index>``). A dict that is
    a trial template already (one of ``pytorch``, ``tensorflow``,
    ``xgboost``, ``mpi``, ``generic``, and ``labels`` and ``annotations``)
    is taken as it is."""
    if isinstance(trial, TrainingJobBuilder):
        job = trial.to_dict()
    elif isinstance(trial, Mapping) and "kind" not in trial and "apiVersion" not in trial:
        fields = [f for f in TEMPLATE_FIELDS.values() if trial.get(f) is not None]
        if len(fields) != 1 or set(trial) - set(TEMPLATE_FIELDS.values()) - {"labels", "annotations"}:
            raise BuildError("spec.trialTemplate", "a trial template holds the spec of exactly one kind "
                                                   f"({', '.join(TEMPLATE_FIELDS.values())}), and labels and "
                                                   "annotations")
        return copy.deepcopy(dict(trial))
    else:
        job = job_from_dict(trial)
    template: Dict[str, Any] = {}
    metadata = job.get("metadata") or {}
    for key in ("labels", "annotations"):
        if metadata.get(key):
            template[key] = dict(metadata[key])
    field = TEMPLATE_FIELDS.get(job["kind"])
    if field is None:
        raise BuildError("spec.trialTemplate", f"a trial cannot be a {job['kind']}")
    template[field] = copy.deepcopy(job.get("spec") or {})
    return template


def _check_placeholders(doc: Any, path: str, known: Sequence[str]) -> None:
    """Refuses a placeholder that names no parameter, as the server does."""
    if isinstance(doc, str):
        for found in _PLACEHOLDER.findall(doc):
            if found != "trial.name" and not (found.startswith("param.") and found[len("param."):] in known):
                raise BuildError(path, f"${{{found}}} names no parameter: use ${{param.<name>}} with one of "
                                       f"{', '.join(sorted(known))}, or ${{trial.name}}")
    elif isinstance(doc, Mapping):
        for key, value in doc.items():
            _check_placeholders(value, f"{path}.{key}", known)
    elif isinstance(doc, (list, tuple)):
        for i, value in enumerate(doc):
            _check_placeholders(value, f"{path}[{i}]", known)


def tuning_job(
    name: str,
    trial: Union[TrainingJobBuilder, Mapping[str, Any]],
    parameters: Sequence[Union[Parameter, Mapping[str, Any]]],
    objective: Union[Objective, str],
    *,
    algorithm: str = "random",
    seed: Optional[int] = None,
    startup_trials: Optional[int] = None,
    early_stopping: Optional[EarlyStopping] = None,
    parallel_trials: int = 1,
    max_trials: int = 10,
    max_failed_trials: int = 3,
    namespace: Optional[str] = None,
    labels: Optional[Mapping[str, str]] = None,
) -> Dict[str, Any]:
    """A ``TuningJob``, as ``kubectl apply`` takes it.

    - ``trial``: the job each trial is made from (:func:`trial_template`
      says what it may be), with ``${param.<name>}`` placeholders where the
      parameters' values go.
    - ``parameters``: :class:`Parameter` objects (or dicts as the API has
      them), 1 to 16.
    - ``objective``: an :class:`Objective`, or a metric's name to minimize.
    - ``algorithm``: ``"random"``, ``"grid"`` (every double parameter then
      needs a step) or ``"tpe"`` (random for its first ``startup_trials``
      trials, 3 by default, then guided by the results); ``seed`` makes the
      choices repeatable.
    - ``early_stopping``: :class:`ASHA` or :class:`MedianStop`; without it
      every trial runs to its end.
    - ``parallel_trials`` trials run at once, ``max_trials`` (at most 500)
      are made in all, and ``max_failed_trials`` may fail before the search
      fails.
    """
    search = tuning_search(name, parameters, objective, algorithm=algorithm, seed=seed, startup_trials=startup_trials,
                           early_stopping=early_stopping, parallel_trials=parallel_trials, max_trials=max_trials,
                           max_failed_trials=max_failed_trials, namespace=namespace, labels=labels)
    return with_trial_template(search, trial_template(trial))


def tuning_search(
    name: str,
    parameters: Sequence[Union[Parameter, Mapping[str, Any]]],
    objective: Union[Objective, str],
    *,
    algorithm: str = "random",
    seed: Optional[int] = None,
    startup_trials: Optional[int] = None,
    early_stopping: Optional[EarlyStopping] = None,
    parallel_trials: int = 1,
    max_trials: int = 10,
    max_failed_trials: int = 3,
    namespace: Optional[str] = None,
    labels: Optional[Mapping[str, str]] = None,
) -> Dict[str, Any]:
    """:func:`tuning_job` without its trial template, which
    :func:`with_trial_template` adds."""
    if not isinstance(name, str) or len(name) > 63 or not _DNS_1035.match(name):
        raise BuildError("metadata.name", f"{name!r} is not a DNS-1035 label (lower case letters, digits and '-', "
                                          "starting with a letter, at most 63)")
    max_trials = _int("spec.maxTrials", max_trials, 1)
    if max_trials > MAX_TRIALS:
        raise BuildError("spec.maxTrials", f"must be at most {MAX_TRIALS}, not {max_trials}")
    longest = f"{name}-{max_trials - 1}"
    if len(longest) > 63:
        raise BuildError("metadata.name", f"is too long: its last trial, {longest}, would be over 63 characters")
    parallel_trials = _int("spec.parallelTrials", parallel_trials, 1)
    if parallel_trials > max_trials:
        raise BuildError("spec.parallelTrials", f"must be at most maxTrials ({max_trials}), not {parallel_trials}")

    if isinstance(parameters, (str, Parameter, Mapping)) or not parameters:
        raise BuildError("spec.parameters", "a search varies a list of at least one parameter")
    if len(parameters) > MAX_PARAMETERS:
        raise BuildError("spec.parameters", f"at most {MAX_PARAMETERS} parameters, not {len(parameters)}")
    params: List[Dict[str, Any]] = []
    for i, p in enumerate(parameters):
        path = f"spec.parameters[{i}]"
        if isinstance(p, Parameter):
            built = p.to_dict(path)
        elif isinstance(p, Mapping):
            built = copy.deepcopy(dict(p))
        else:
            raise BuildError(path, f"must be a Parameter, not {p!r}")
        if any(built.get("name") == q.get("name") for q in params):
            raise BuildError(f"{path}.name", f"{built.get('name')!r} is there already")
        params.append(built)

    if isinstance(objective, str):
        objective = Objective(objective)
    if not isinstance(objective, Objective):
        raise BuildError("spec.objective", f"must be an Objective or a metric's name, not {objective!r}")

    algo: Dict[str, Any] = {"name": _choice("spec.algorithm.name", algorithm, ALGORITHMS)}
    if seed is not None:
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise BuildError("spec.algorithm.seed", f"must be a whole number, not {seed!r}")
        algo["seed"] = seed
    if startup_trials is not None:
        if algorithm != "tpe":
            raise BuildError("spec.algorithm.startupTrials", "only under tpe")
        algo["startupTrials"] = _int("spec.algorithm.startupTrials", startup_trials)
    if algorithm == "grid":
        for i, p in enumerate(params):
            if p.get("type") == "double" and not p.get("step"):
                raise BuildError(f"spec.parameters[{i}].step", "a grid search needs the step of every double parameter")

    spec: Dict[str, Any] = {"parameters": params, "objective": objective.to_dict(), "algorithm": algo}
    if early_stopping is not None:
        if not isinstance(early_stopping, (ASHA, MedianStop)):
            raise BuildError("spec.earlyStopping", f"must be ASHA(...) or MedianStop(...), not {early_stopping!r}")
        spec["earlyStopping"] = early_stopping.to_dict()
    spec["parallelTrials"] = parallel_trials
    spec["maxTrials"] = max_trials
    spec["maxFailedTrials"] = _int("spec.maxFailedTrials", max_failed_trials)

    metadata: Dict[str, Any] = {"name": name}
    if namespace:
        metadata["namespace"] = namespace
    if labels:
        metadata["labels"] = dict(labels)
    return {"apiVersion": API_VERSION, "kind": TUNING_JOB_KIND, "metadata": metadata, "spec": spec}


def with_trial_template(search: Mapping[str, Any], template: Mapping[str, Any]) -> Dict[str, Any]:
    """A copy of a search of :func:`tuning_search` with its trial template,
    whose placeholders must name its parameters."""
    out = copy.deepcopy(dict(search))
    spec = out["spec"]
    _check_placeholders(template, "spec.trialTemplate", [p.get("name") for p in spec["parameters"]])
    out["spec"] = {"trialTemplate": copy.deepcopy(dict(template)), **spec}
    return out


def _number(value: Any) -> Optional[float]:
    """A trial's objective value as a number; None for none, or one that is
    not a finite number."""
    if not isinstance(value, str) or not value:
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    return None if math.isnan(number) or math.isinf(number) else number


def rank_trials(search: Mapping[str, Any]) -> List[Dict[str, Any]]:
    """A search's trials (``status.trials``), best first: by their objective
    value, smallest first when the objective minimizes, largest first when
    it maximizes. Trials without a value follow, in the order they were
    made (``index``), as do trials of equal value. The same order as
    ``kubectl training trials``."""
    trials = [dict(t) for t in (search.get("status") or {}).get("trials") or []]
    objective = (search.get("spec") or {}).get("objective") or {}
    sign = -1.0 if objective.get("direction") == "maximize" else 1.0

    def key(trial: Mapping[str, Any]) -> Tuple[int, float, int]:
        value = _number(trial.get("value"))
        index = trial.get("index") or 0
        if value is None:
            return (1, 0.0, index)
        return (0, sign * value, index)

    return sorted(trials, key=key)


def tuning_state(search: Mapping[str, Any]) -> str:
    """A search's one-word state, as ``kubectl get tuningjobs`` says it: the
    last of its Running, Suspended, Failed and Succeeded conditions that
    holds (in that order), or Pending."""
    state = "Pending"
    conditions = (search.get("status") or {}).get("conditions") or []
    for kind in ("Running", "Suspended", "Failed", "Succeeded"):
        if any(c.get("type") == kind and c.get("status") == "True" for c in conditions):
            state = kind
    return state

