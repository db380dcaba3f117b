# Copyright The TensorStack Training Authors.
# Licensed under the Apache License, Version 2.0.
"""TensorStack Training from Python: build jobs, submit them, follow and
steer them.

- :class:`PyTorchJob`, :class:`TensorFlowJob`: builders of the two kinds;
- :class:`TrainingClient`: create, get, list, delete, wait, logs, events,
  progress, pause, resume, debug and scale;
- the errors of :mod:`tensorstack.training.errors`, every refusal of the
  server typed, with its details;
- :mod:`tensorstack.training.progress`: the in-pod helper that reports a job's
  progress from its training code.
"""

from .builders import (
    API_VERSION,
    GROUP,
    KINDS,
    QUEUE_LABEL,
    VERSION,
    PyTorchJob,
    Replica,
    TensorFlowJob,
    TrainingJobBuilder,
    job_from_dict,
    job_from_yaml,
)
from .client import JOB_NAME_LABEL, TrainingClient, last_condition
from .errors import (
    ApiError,
    BuildError,
    ConflictError,
    FieldError,
    ForbiddenError,
    InvalidError,
    JobDeleted,
    NotFoundError,
    TrainingError,
    UnauthorizedError,
    WaitTimeout,
)

__all__ = [
    "JOB_NAME_LABEL", "TrainingClient", "last_condition",
    "API_VERSION", "GROUP", "KINDS", "QUEUE_LABEL", "VERSION",
    "PyTorchJob", "Replica", "TensorFlowJob", "TrainingJobBuilder", "job_from_dict", "job_from_yaml",
    "ApiError", "BuildError", "ConflictError", "FieldError", "ForbiddenError", "InvalidError", "JobDeleted",
    "NotFoundError", "TrainingError", "UnauthorizedError", "WaitTimeout",
]
