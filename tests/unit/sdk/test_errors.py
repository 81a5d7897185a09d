"""The SDK's error builders: the built-in class upstream raised (RuntimeError/TimeoutError), its message,
and the ``ApiException`` chained as ``__cause__`` with the API server's status and ``metav1.Status`` body."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from trainop.api import errors as api_errors
from trainop.api.errors import FieldError
from trainop.backends.base import ApiAnswer, BackendError
from trainop.sdk.errors import (
    AlreadyExistsError,
    InvalidJobError,
    NotFoundError,
    SDKError,
    WaitTimeoutError,
    build_api_exception,
    build_invalid_job_error,
    build_log_error,
    build_sdk_error,
    build_status_body,
)


def fields(err: BaseException) -> dict[str, Any]:
    """What a caller can read off an error, as one comparable dict."""
    return {
        "type": type(err),
        "message": str(err),
        **{k: getattr(err, k) for k in ("detail", "kind", "namespace", "name", "errors") if hasattr(err, k)},
    }


@pytest.mark.parametrize(
    ("code", "message", "kw", "want"),
    [
        pytest.param(
            404,
            'pytorchjobs.kubeflow.org "a" not found',
            {"name": "a", "group": "kubeflow.org", "kind": "pytorchjobs"},
            {
                "kind": "Status",
                "apiVersion": "v1",
                "metadata": {},
                "status": "Failure",
                "message": 'pytorchjobs.kubeflow.org "a" not found',
                "reason": "NotFound",
                "details": {"name": "a", "group": "kubeflow.org", "kind": "pytorchjobs"},
                "code": 404,
            },
            id="not found names the resource",
        ),
        pytest.param(
            422,
            "bad",
            {"causes": [FieldError("spec.x", "must be set")]},
            {
                "kind": "Status",
                "apiVersion": "v1",
                "metadata": {},
                "status": "Failure",
                "message": "bad",
                "reason": "Invalid",
                "details": {
                    "causes": [{"reason": "FieldValueInvalid", "message": "must be set", "field": "spec.x"}]
                },
                "code": 422,
            },
            id="invalid lists one cause per field",
        ),
        pytest.param(
            500,
            "disk full",
            {},
            {
                "kind": "Status",
                "apiVersion": "v1",
                "metadata": {},
                "status": "Failure",
                "message": "disk full",
                "reason": "InternalError",
                "code": 500,
            },
            id="no details when there are none",
        ),
    ],
)
def test_build_status_body(code: int, message: str, kw: dict[str, Any], want: dict[str, Any]) -> None:
    body = build_status_body(code, message, **kw)
    assert json.loads(body) == want
    assert list(json.loads(body)) == list(want), "the API server's key order"


@pytest.mark.parametrize(
    ("code", "want_reason"),
    [
        pytest.param(404, "Not Found", id="404"),
        pytest.param(409, "Conflict", id="409"),
        pytest.param(422, "Unprocessable Entity", id="422"),
    ],
)
def test_build_api_exception_is_kubernetes_clients(code: int, want_reason: str) -> None:
    body = json.dumps({"code": code})
    got = build_api_exception(code, body)
    assert isinstance(got, ApiException)
    assert (got.status, got.reason, got.body) == (code, want_reason, body)
    assert str(got) == f"({code})\nReason: {want_reason}\nHTTP response body: {body}\n"


def test_build_invalid_job_error() -> None:
    err = api_errors.InvalidJobError(
        [FieldError("spec.pytorchReplicaSpecs[Master].replicas", "must be an integer")],
        kind="PyTorchJob",
        name="j",
    )
    got = build_invalid_job_error(err, kind="PyTorchJob", namespace="ns", name="j")
    message = (
        'PyTorchJob.kubeflow.org "j" is invalid: spec.pytorchReplicaSpecs[Master].replicas: must be '
        "an integer"
    )
    assert fields(got) == {
        "type": InvalidJobError,
        "message": message,
        "detail": message,
        "kind": "PyTorchJob",
        "namespace": "ns",
        "name": "j",
        "errors": err.errors,
    }
    # Upstream's caller catches RuntimeError (the API server refused it); older trainop code ValueError.
    assert isinstance(got, RuntimeError) and isinstance(got, ValueError)
    assert isinstance(got.cause, ApiException) and got.cause.status == 422
    body = json.loads(got.cause.body)
    assert (body["reason"], body["details"]["kind"], body["details"]["causes"][0]["field"]) == (
        "Invalid",
        "PyTorchJob",
        "spec.pytorchReplicaSpecs[Master].replicas",
    )


@pytest.mark.parametrize(
    "err",
    [
        pytest.param(NotFoundError("m", kind="TFJob", namespace="ns", name="a", detail="d"), id="not found"),
        pytest.param(AlreadyExistsError("m", kind="TFJob", namespace="ns", name="a"), id="already exists"),
        pytest.param(SDKError("m", detail="d"), id="plain"),
    ],
)
def test_with_message_keeps_class_and_fields(err: SDKError) -> None:
    got = err.with_message("Failed to get TFJob: ns/a. Error: d")
    assert isinstance(got, RuntimeError)
    assert fields(got) == {**fields(err), "message": "Failed to get TFJob: ns/a. Error: d"}
    assert str(err) == "m", "the original is unchanged"


def test_build_log_error() -> None:
    got = fields(build_log_error("ns", "a-worker-1", "container not started"))
    assert got == {
        "type": SDKError,
        "message": "Failed to read logs for pod ns/a-worker-1",
        "detail": "container not started",
        "kind": "",
        "namespace": "",
        "name": "",
    }


@pytest.mark.parametrize(
    ("err", "want"),
    [
        pytest.param(
            NotFoundError(kind="PyTorchJob", namespace="ns", name="a"),
            (
                NotFoundError,
                404,
                {
                    "kind": "Status",
                    "apiVersion": "v1",
                    "metadata": {},
                    "status": "Failure",
                    "message": 'pytorchjobs.kubeflow.org "a" not found',
                    "reason": "NotFound",
                    "details": {"name": "a", "group": "kubeflow.org", "kind": "pytorchjobs"},
                    "code": 404,
                },
            ),
            id="this machine's not found: the Status the API server would answer",
        ),
        pytest.param(
            AlreadyExistsError(kind="TFJob", namespace="ns", name="a"),
            (
                AlreadyExistsError,
                409,
                {
                    "kind": "Status",
                    "apiVersion": "v1",
                    "metadata": {},
                    "status": "Failure",
                    "message": 'tfjobs.kubeflow.org "a" already exists',
                    "reason": "AlreadyExists",
                    "details": {"name": "a", "group": "kubeflow.org", "kind": "tfjobs"},
                    "code": 409,
                },
            ),
            id="already exists",
        ),
        pytest.param(
            NotFoundError(
                kind="PyTorchJob",
                namespace="ns",
                name="a",
                answer=ApiAnswer(404, '{"kind":"Status","code":404}', (("Audit-Id", "x"),)),
            ),
            (NotFoundError, 404, {"kind": "Status", "code": 404}),
            id="a cluster's answer is chained as it came",
        ),
        pytest.param(
            BackendError("the disk is full", kind="PyTorchJob", namespace="ns", name="a"),
            (
                BackendError,
                500,
                {
                    "kind": "Status",
                    "apiVersion": "v1",
                    "metadata": {},
                    "status": "Failure",
                    "message": "the disk is full",
                    "reason": "InternalError",
                    "details": {"name": "a", "group": "kubeflow.org", "kind": "pytorchjobs"},
                    "code": 500,
                },
            ),
            id="anything else is the API server's 500",
        ),
    ],
)
def test_the_sdk_edge_words_errors_as_upstream(err: BackendError, want: tuple[Any, ...]) -> None:
    got = build_sdk_error(err, "Failed to get X: ns/a")
    cause = got.cause
    assert isinstance(cause, ApiException)
    assert (type(got), cause.status, json.loads(cause.body)) == want
    assert str(got) == f"Failed to get X: ns/a. Error: {cause}"
    assert (got.kind, got.namespace, got.name) == (err.kind, err.namespace, err.name)
    if err.answer is not None:
        assert cause.headers["Audit-Id"] == "x"


def test_wait_timeout_is_a_timeout_error() -> None:
    assert isinstance(WaitTimeoutError("t"), TimeoutError)
