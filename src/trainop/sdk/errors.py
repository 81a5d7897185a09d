"""Typed SDK errors that are the built-ins kubeflow-training raised (contract §7.3), with its causes.

Upstream raised plain RuntimeError / TimeoutError / ValueError and chained the API server's
``ApiException`` as ``__cause__``; ours subclass the same built-ins and chain an ``ApiException``
(``kubernetes.client``'s when installed) on both backends. Pure data and message builders: no I/O.
"""

from __future__ import annotations

import json
from http import HTTPStatus
from typing import Any

from trainop.api import errors as api_errors
from trainop.api.errors import FieldError
from trainop.sdk.models import kube_client

__all__ = [
    "AlreadyExistsError",
    "ApiStatusError",
    "FieldError",
    "InvalidJobError",
    "JobFailedError",
    "NotFoundError",
    "SDKError",
    "WaitTimeoutError",
    "build_api_exception",
    "build_status_body",
]

# The API server's Status reasons per code (k8s.io/apimachinery metav1.StatusReason).
STATUS_REASONS = {
    400: "BadRequest",
    403: "Forbidden",
    404: "NotFound",
    409: "AlreadyExists",
    422: "Invalid",
    500: "InternalError",
}


class ApiStatusError(Exception):
    """``kubernetes.client.ApiException``'s shape (``status``, ``reason``, ``body``, ``headers``), for
    when that package is not installed."""

    def __init__(self, status: int | None = None, reason: str | None = None) -> None:
        super().__init__()
        self.status = status
        self.reason = reason
        self.body: str | None = None
        self.headers: Any = None

    def __str__(self) -> str:
        # ApiException.__str__, so messages read the same with or without the Kubernetes client.
        message = f"({self.status})\nReason: {self.reason}\n"
        if self.headers:
            message += f"HTTP response headers: {self.headers}\n"
        if self.body:
            message += f"HTTP response body: {self.body}\n"
        return message


def build_api_exception(status: int, body: str | None = None, headers: Any = None) -> Exception:
    """An ``ApiException`` as the Kubernetes client raises it for an HTTP ``status`` response."""
    try:
        reason = HTTPStatus(status).phrase
    except ValueError:
        reason = ""
    client = kube_client()
    exc: Any = (
        client.exceptions.ApiException(status=status, reason=reason)
        if client is not None
        else ApiStatusError(status, reason)
    )
    exc.body = body
    exc.headers = headers
    return exc  # type: ignore[no-any-return]


def build_status_body(
    code: int,
    message: str,
    *,
    name: str = "",
    group: str = "",
    kind: str = "",
    causes: list[FieldError] | None = None,
) -> str:
    """A ``metav1.Status`` failure as the API server writes it (compact JSON, its key order)."""
    details: dict[str, Any] = {}
    if name:
        details["name"] = name
    if group:
        details["group"] = group
    if kind:
        details["kind"] = kind
    if causes:
        details["causes"] = [
            {"reason": "FieldValueInvalid", "message": c.message, "field": c.path} for c in causes
        ]
    status: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": STATUS_REASONS.get(code, ""),
    }
    if details:
        status["details"] = details
    status["code"] = code
    return json.dumps(status, separators=(",", ":"))


class SDKError(RuntimeError):
    """A call to the backend failed.

    Upstream: ``RuntimeError("Failed to <verb> <Kind>: <ns>/<name>. Error: …")``.

    ``detail``: the backend's own words, without the prefix. ``cause``: the ``ApiException`` it is
    chained to (``__cause__``), None when no API response was involved.
    """

    def __init__(self, message: str, *, detail: str = "", cause: BaseException | None = None) -> None:
        super().__init__(message)
        self.detail = detail or message
        self.cause = cause

    def with_message(self, message: str) -> SDKError:
        """The same error (class and fields) saying ``message``: the client words it as upstream did."""
        new = type(self).__new__(type(self))
        new.__dict__.update(self.__dict__)
        new.args = (message,)
        return new


class _NamedObjectError(SDKError):
    """A request about one named object failed; ``kind``, ``namespace`` and ``name`` say which."""

    def __init__(
        self,
        message: str,
        *,
        kind: str = "",
        namespace: str = "",
        name: str = "",
        detail: str = "",
        cause: BaseException | None = None,
    ) -> None:
        super().__init__(message, detail=detail, cause=cause)
        self.kind = kind
        self.namespace = namespace
        self.name = name


class NotFoundError(_NamedObjectError):
    """The job (or pod) does not exist (``__cause__.status`` 404)."""


class AlreadyExistsError(_NamedObjectError):
    """A job of that kind and name already exists in the namespace (``__cause__.status`` 409)."""


class InvalidJobError(_NamedObjectError, api_errors.InvalidJobError):
    """The job is invalid (``__cause__.status`` 422, or 403 for a webhook's denial); ``errors`` holds
    the ``FieldError(path, message)`` items.

    A RuntimeError, as upstream's (the API server refused it); also ``trainop.api``'s InvalidJobError
    (a ValueError), as trainop's SDK raised before.
    """

    def __init__(
        self,
        message: str,
        *,
        errors: list[FieldError],
        kind: str = "",
        namespace: str = "",
        name: str = "",
        cause: BaseException | None = None,
    ) -> None:
        _NamedObjectError.__init__(
            self, message, kind=kind, namespace=namespace, name=name, detail=message, cause=cause
        )
        self.errors = list(errors)


class JobFailedError(SDKError):
    """``wait_for_job_conditions`` saw Failed without expecting it.

    ``conditions`` holds the job's conditions.
    """

    def __init__(self, message: str, *, job: Any = None, conditions: list[Any] | None = None) -> None:
        super().__init__(message, detail=message)
        self.job = job
        self.conditions = list(conditions or [])


class WaitTimeoutError(TimeoutError):
    """The expected conditions did not appear within ``wait_timeout`` (or a backend call timed out)."""

    def __init__(self, message: str, *, job: Any = None) -> None:
        super().__init__(message)
        self.job = job


def build_invalid_job_error(
    err: api_errors.InvalidJobError, *, kind: str, namespace: str, name: str, code: int = 422
) -> InvalidJobError:
    """``trainop.api``'s validation error → the SDK's, chained to the API server's 422 for it
    (``<Kind>.kubeflow.org "<name>" is invalid: …``, one cause per field)."""
    kind = err.kind or kind
    name = err.name or name
    fields = "; ".join(str(e) for e in err.errors)
    message = f'{kind}.kubeflow.org "{name}" is invalid: {fields}'
    body = build_status_body(code, message, name=name, group="kubeflow.org", kind=kind, causes=err.errors)
    cause = build_api_exception(code, body)
    return InvalidJobError(message, errors=err.errors, kind=kind, namespace=namespace, name=name, cause=cause)


def build_log_error(namespace: str, pod: str, detail: str, cause: BaseException | None = None) -> SDKError:
    """Upstream's error for a pod log that cannot be read (``get_job_logs``, §7.3); the reason is in
    ``detail`` and the chained ``__cause__``."""
    return SDKError(f"Failed to read logs for pod {namespace}/{pod}", detail=detail, cause=cause)
