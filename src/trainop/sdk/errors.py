"""The SDK's edge of the one error family (``trainop.backends.base``): upstream's messages and the
``ApiException`` kubeflow-training chained (contract §7.3) are made here and nowhere else.

Upstream raised plain RuntimeError / TimeoutError / ValueError and chained the API server's
``ApiException`` as ``__cause__``; the family's errors subclass the same built-ins, and here they get
upstream's wording and an ``ApiException`` (``kubernetes.client``'s when installed) on both backends.
Pure data and message builders: no I/O.
"""

from __future__ import annotations

import json
from http import HTTPStatus
from typing import Any

from trainop.api import errors as api_errors
from trainop.api.errors import FieldError
from trainop.backends.base import (
    AlreadyExistsError,
    BackendError,
    JobFailedError,
    JobRejectedError,
    NotFoundError,
    WaitTimeoutError,
)
from trainop.sdk import constants
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
    "build_sdk_error",
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
    details: dict[str, Any] = {k: v for k, v in (("name", name), ("group", group), ("kind", kind)) if v}
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


SDKError = BackendError  # trainop's name for the family's base in the SDK (a RuntimeError)
InvalidJobError = JobRejectedError  # upstream's name for a job the API server refused


def build_cause(err: BackendError) -> Exception:
    """The ``ApiException`` upstream chained for ``err``: built from the API server's answer when
    there was one, else the Status the API server would have answered (404, 409, 422, 500)."""
    if err.answer is not None:
        return build_api_exception(err.answer.code, err.answer.body, _headers(err.answer.headers))
    kind = err.kind or ""
    known = kind in constants.JOB_PARAMETERS
    plural = str(constants.JOB_PARAMETERS.get(kind, {}).get("plural") or f"{kind.lower()}s")
    resource = f"{plural}.{constants.GROUP}" if known else plural
    text = {
        404: f'{resource} "{err.name}" not found',
        409: f'{resource} "{err.name}" already exists',
    }.get(err.code, err.detail)
    causes = err.errors if isinstance(err, InvalidJobError) else None
    body = build_status_body(
        err.code,
        text,
        name=err.name,
        group=constants.GROUP if known else "",
        kind=plural if kind else "",
        causes=causes,
    )
    return build_api_exception(err.code, body)


def _headers(pairs: tuple[tuple[str, str], ...]) -> Any:
    """The headers as kubernetes.client's ApiException holds them (urllib3's type, when installed)."""
    try:
        from urllib3 import HTTPHeaderDict

        return HTTPHeaderDict(list(pairs))
    except ImportError:
        return dict(pairs)


def build_sdk_error(err: BackendError, failed: str) -> BackendError:
    """``err`` as upstream raised it: ``<failed>. Error: <the ApiException>``, chained to that
    ``ApiException`` (``cause``); same class and fields."""
    cause = build_cause(err)
    out = err.with_message(f"{failed}. Error: {cause}")
    out.cause = cause
    return out


def build_invalid_job_error(
    err: api_errors.InvalidJobError, *, kind: str, namespace: str, name: str, code: int = 422
) -> InvalidJobError:
    """``trainop.api``'s validation error → the family's, chained to the API server's 422 for it
    (``<Kind>.kubeflow.org "<name>" is invalid: …``, one cause per field)."""
    kind = err.kind or kind
    name = err.name or name
    fields = "; ".join(str(e) for e in err.errors)
    message = f'{kind}.kubeflow.org "{name}" is invalid: {fields}'
    body = build_status_body(code, message, name=name, group="kubeflow.org", kind=kind, causes=err.errors)
    out = InvalidJobError(message, errors=err.errors, kind=kind, namespace=namespace, name=name)
    out.cause = build_api_exception(code, body)
    return out


def build_log_error(namespace: str, pod: str, detail: str, cause: BaseException | None = None) -> SDKError:
    """Upstream's error for a pod log that cannot be read (``get_job_logs``, §7.3); the reason is in
    ``detail`` and the chained ``__cause__``."""
    out = BackendError(f"Failed to read logs for pod {namespace}/{pod}", detail=detail)
    out.cause = cause
    return out
