"""Typed SDK errors that still subclass the built-ins kubeflow-training raised (contract §7.3).

Upstream raised plain RuntimeError / TimeoutError / ValueError, so ``except RuntimeError:`` in notebook
code must keep catching ours. Invalid input reuses ``trainop.api.errors.InvalidJobError`` (a ValueError
with field paths). Pure data and message builders: no I/O.
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


class _NamedObjectError(SDKError):
    """A request about one named object failed; ``kind``, ``namespace`` and ``name`` say which."""

    def __init__(
        self, message: str, *, kind: str = "", namespace: str = "", name: str = "", detail: str = ""
    ) -> None:
        super().__init__(message, detail=detail)
        self.kind = kind
        self.namespace = namespace
        self.name = name


class NotFoundError(_NamedObjectError):
    """The job (or pod) does not exist."""


class AlreadyExistsError(_NamedObjectError):
    """A job of that kind and name already exists in the namespace."""


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


def build_request_target(kind: str, namespace: str, name: str) -> str:
    """What a request was about, as upstream's messages name it: ``<Kind>: <ns>/<name>``, or
    ``<Kind>s in namespace <ns>`` for a list (``name`` empty)."""
    return f"{kind}: {namespace}/{name}" if name else f"{kind}s in namespace {namespace}"


def build_request_error(
    cls: type[SDKError], verb: str, kind: str, namespace: str, name: str, detail: str
) -> SDKError:
    """``cls("Failed to <verb> <target>. Error: <detail>")``, the shape of upstream's RuntimeErrors
    (§7.3); NotFoundError and AlreadyExistsError also record which object."""
    message = f"Failed to {verb} {build_request_target(kind, namespace, name)}. Error: {detail}"
    if issubclass(cls, _NamedObjectError):
        return cls(message, kind=kind, namespace=namespace, name=name, detail=detail)
    return cls(message, detail=detail)


def build_log_error(namespace: str, pod: str, detail: str) -> SDKError:
    """Upstream's error for a pod log that cannot be read (``get_job_logs``, §7.3)."""
    return SDKError(f"Failed to read logs for pod {namespace}/{pod}. Error: {detail}", detail=detail)
