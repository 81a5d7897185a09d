"""Typed SDK errors that still subclass the built-ins kubeflow-training raised (contract §7.3).

Upstream raised plain RuntimeError / TimeoutError / ValueError, so ``except RuntimeError:`` in notebook
code must keep catching ours. Invalid input reuses ``trainop.api.errors.InvalidJobError`` (a ValueError
with field paths). Pure data: no I/O.
"""

from __future__ import annotations

from typing import Any

from trainop.api.errors import FieldError, InvalidJobError

__all__ = [
    "AlreadyExistsError",
    "FieldError",
    "InvalidJobError",
    "JobFailedError",
    "NotFoundError",
    "SDKError",
    "WaitTimeoutError",
]


class SDKError(RuntimeError):
    """A call to the backend failed (upstream: ``RuntimeError("Failed to <verb> <Kind>: <ns>/<name>")``).

    ``detail`` is the backend's own words (the API server's message), without the prefix.
    """

    def __init__(self, message: str, *, detail: str = "") -> None:
        super().__init__(message)
        self.detail = detail or message


class NotFoundError(SDKError):
    """The job (or pod) does not exist."""

    def __init__(
        self, message: str, *, kind: str = "", namespace: str = "", name: str = "", detail: str = ""
    ) -> None:
        super().__init__(message, detail=detail)
        self.kind = kind
        self.namespace = namespace
        self.name = name


class AlreadyExistsError(SDKError):
    """A job of that kind and name already exists in the namespace."""

    def __init__(
        self, message: str, *, kind: str = "", namespace: str = "", name: str = "", detail: str = ""
    ) -> None:
        super().__init__(message, detail=detail)
        self.kind = kind
        self.namespace = namespace
        self.name = name


class JobFailedError(SDKError):
    """``wait_for_job_conditions`` saw Failed without expecting it; ``conditions`` holds the job's conditions."""

    def __init__(self, message: str, *, job: Any = None, conditions: list[Any] | None = None) -> None:
        super().__init__(message, detail=message)
        self.job = job
        self.conditions = list(conditions or [])


class WaitTimeoutError(TimeoutError):
    """The expected conditions did not appear within ``wait_timeout`` (or a backend call timed out)."""

    def __init__(self, message: str, *, job: Any = None) -> None:
        super().__init__(message)
        self.job = job
