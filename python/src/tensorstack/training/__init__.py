# Copyright The TensorStack Training Authors.
# Licensed under the Apache License, Version 2.0.
"""TensorStack Training from Python: build jobs, submit them, follow and
steer them.

- :class:`PyTorchJob`, :class:`TensorFlowJob`, :class:`XGBoostJob`,
  :class:`GenericJob`, :class:`MPIJob`: builders of the kinds;
- :class:`TrainingClient`: create, get, list, delete, wait, logs, events,
  progress, pause, resume, debug and scale; ``compare``, one metric of
  several jobs as one table (:mod:`tensorstack.training.comparison`); the
  training runtimes (``list_runtimes``, ``get_runtime``) and ``train``,
  which runs a Python function on a runtime's nodes;
- :func:`function_script`: the script ``train`` ships for a function
  (:mod:`tensorstack.training.shipping` says what it holds);
- hyperparameter searches (``TuningJob``): :class:`Parameter`,
  :class:`Objective`, :class:`ASHA`, :class:`MedianStop` and
  :func:`tuning_job` (:mod:`tensorstack.training.tuning`), and the client's
  ``tune`` (from a job or a function), ``get_tuning_job``, ``list_trials``,
  ``get_best_trial`` and ``wait_for_tuning_job``;
- the errors of :mod:`tensorstack.training.errors`, every refusal of the
  server typed, with its details;
- :mod:`tensorstack.training.progress`: the in-pod helper that reports a job's
  progress from its training code, and its checkpoints: :func:`checkpoint_dir`,
  :func:`resume_from`, :func:`resume_step`, :func:`should_checkpoint` and
  :func:`report_checkpoint` (standard library only, like the module).
"""

# The rest of the package is loaded when first used: the in-pod helper
# (tensorstack.training.progress) runs in training images that have no
# kubernetes client, and importing it must not need one.
_EXPORTS = {
    "builders": ["API_VERSION", "GROUP", "KINDS", "QUEUE_LABEL", "SHORT_NAMES", "VERSION", "GenericJob", "MPIJob", "PyTorchJob", "Replica",
                 "TensorFlowJob", "TrainingJobBuilder", "XGBoostJob", "job_from_dict", "job_from_yaml"],
    "client": ["JOB_NAME_LABEL", "TrainingClient", "last_condition", "runtime_job_kind"],
    "errors": ["ApiError", "BuildError", "ConflictError", "FieldError", "ForbiddenError", "InvalidError", "JobDeleted",
               "NotFoundError", "ShippingError", "TrainingError", "UnauthorizedError", "WaitTimeout"],
    "progress": ["checkpoint_dir", "report_checkpoint", "resume_from", "resume_step", "should_checkpoint"],
    "shipping": ["function_script"],
    "tuning": ["ASHA", "MedianStop", "Objective", "Parameter", "TUNING_JOB_LABEL", "rank_trials", "trial_template",
               "tuning_job", "tuning_state"],
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}

__all__ = sorted(_MODULE_OF)


def __getattr__(name):
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(list(globals()) + __all__)
