# Copyright The TensorStack Training Authors.
# Licensed under the Apache License, Version 2.0.
"""Typed errors of the client.

Every refusal of the server becomes one of these, carrying what the server
said: the HTTP status, its reason, and for a 422 the paths of the fields it
refused. A caller catches the kind it can handle and reads the details,
instead of parsing an ``ApiException`` dump.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, List, Optional


@dataclass
class FieldError:
    """One refused field of a 422: its path (``spec.replicaSpecs[0].replicas``),
    the kind of problem (``FieldValueInvalid``, ``FieldValueRequired``, ...)
    and the server's message."""

    path: str
    reason: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


class TrainingError(Exception):
    """The base of every error of this package."""


class BuildError(TrainingError, ValueError):
    """A builder was given a value the API would refuse; raised before any
    request. ``path`` names the field as the API does."""

    def __init__(self, path: str, message: str):
        super().__init__(f"{path}: {message}")
        self.path = path
        self.message = message


class ShippingError(TrainingError, ValueError):
    """``TrainingClient.train`` (or ``function_script``) cannot ship a function
    to a job's pods; raised before any request. ``what`` names what cannot be
    shipped, by the path to it (``train -> helper -> model``), ``reason``
    says why."""

    def __init__(self, what: str, reason: str):
        super().__init__(f"cannot ship {what}: {reason}")
        self.what = what
        self.reason = reason


class ApiError(TrainingError):
    """A request the server refused.

    ``status`` is the HTTP status, ``reason`` the Status reason (``Invalid``,
    ``Forbidden``, ``Conflict``, ``NotFound``, ...), ``message`` the server's
    message, ``body`` the decoded Status object when there was one.
    """

    def __init__(self, status: int, reason: str, message: str, body: Optional[dict] = None):
        super().__init__(f"{status} {reason}: {message}")
        self.status = status
        self.reason = reason
        self.message = message
        self.body = body or {}


class InvalidError(ApiError):
    """422: the object was refused; ``fields`` says which fields and why."""

    def __init__(self, status: int, reason: str, message: str, body: Optional[dict] = None):
        super().__init__(status, reason, message, body)
        causes = (self.body.get("details") or {}).get("causes") or []
        self.fields: List[FieldError] = [
            FieldError(c.get("field", ""), c.get("reason", ""), c.get("message", "")) for c in causes
        ]

    @property
    def paths(self) -> List[str]:
        """The paths of the refused fields."""
        return [f.path for f in self.fields]


class ForbiddenError(ApiError):
    """403: the user may not do this; ``verb`` and ``resource`` say what was
    refused, when the server said it the usual way."""

    def __init__(self, status: int, reason: str, message: str, body: Optional[dict] = None):
        super().__init__(status, reason, message, body)
        self.user, self.verb, self.resource = _parse_forbidden(message)


class ConflictError(ApiError):
    """409: the object changed meanwhile, already exists, or the action does
    not apply to it now (pausing a finished job)."""


class NotFoundError(ApiError):
    """404: no such job (or no such API: is the APIService available?)."""


class UnauthorizedError(ApiError):
    """401: no credentials the server accepts."""


class WaitTimeout(TrainingError):
    """``wait`` ran out of time; ``phase`` and ``condition`` are the job's last
    phase and its most recent condition."""

    def __init__(self, message: str, phase: str = "", condition: Optional[dict] = None):
        super().__init__(message)
        self.phase = phase
        self.condition = condition or {}


class JobDeleted(TrainingError):
    """The job was deleted while ``wait`` or ``logs`` followed it."""


def from_api_exception(exc: Any) -> ApiError:
    """Turn a ``kubernetes.client.exceptions.ApiException`` into the typed
    error of its status, keeping the server's Status object."""
    status = int(getattr(exc, "status", 0) or 0)
    body: dict = {}
    raw = getattr(exc, "body", None)
    if raw:
        try:
            body = json.loads(raw)
        except (ValueError, TypeError):
            body = {}
    reason = body.get("reason") or getattr(exc, "reason", "") or ""
    message = body.get("message") or (raw if isinstance(raw, str) else "") or str(reason)
    cls = {401: UnauthorizedError, 403: ForbiddenError, 404: NotFoundError, 409: ConflictError, 422: InvalidError}.get(
        status, ApiError
    )
    return cls(status, reason, message, body)


def _parse_forbidden(message: str):
    # kube-apiserver says: User "alice" cannot create resource "pytorchtrainingjobs"
    # in API group "batch.tensorstack.dev" in the namespace "team"
    user = verb = resource = ""
    try:
        if 'User "' in message:
            user = message.split('User "', 1)[1].split('"', 1)[0]
        if " cannot " in message:
            rest = message.split(" cannot ", 1)[1]
            verb = rest.split(" ", 1)[0]
            if 'resource "' in rest:
                resource = rest.split('resource "', 1)[1].split('"', 1)[0]
    except IndexError:
        pass
    return user, verb, resource
