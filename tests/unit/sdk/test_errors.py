"""The SDK's error builders: upstream's ``Failed to <verb> <target>. Error: <detail>`` messages (§7.3),
the typed class each backend failure becomes, and the object fields NotFound/AlreadyExists carry."""

from __future__ import annotations

from typing import Any

import pytest

from trainop.sdk.errors import (
    AlreadyExistsError,
    NotFoundError,
    SDKError,
    build_log_error,
    build_request_error,
    build_request_target,
)


def fields(err: BaseException) -> dict[str, Any]:
    """What a caller can read off an error, as one comparable dict."""
    return {
        "type": type(err),
        "message": str(err),
        **{k: getattr(err, k) for k in ("detail", "kind", "namespace", "name") if hasattr(err, k)},
    }


@pytest.mark.parametrize(
    ("cls", "verb", "kind", "name", "want"),
    [
        pytest.param(
            NotFoundError,
            "get",
            "PyTorchJob",
            "a",
            {
                "type": NotFoundError,
                "message": "Failed to get PyTorchJob: ns/a. Error: gone",
                "detail": "gone",
                "kind": "PyTorchJob",
                "namespace": "ns",
                "name": "a",
            },
            id="not found names the object",
        ),
        pytest.param(
            AlreadyExistsError,
            "create",
            "TFJob",
            "b",
            {
                "type": AlreadyExistsError,
                "message": "Failed to create TFJob: ns/b. Error: gone",
                "detail": "gone",
                "kind": "TFJob",
                "namespace": "ns",
                "name": "b",
            },
            id="already exists names the object",
        ),
        pytest.param(
            SDKError,
            "list",
            "Pod",
            "",
            {
                "type": SDKError,
                "message": "Failed to list Pods in namespace ns. Error: gone",
                "detail": "gone",
            },
            id="a list names the kind and namespace",
        ),
    ],
)
def test_build_request_error(
    cls: type[SDKError], verb: str, kind: str, name: str, want: dict[str, Any]
) -> None:
    assert fields(build_request_error(cls, verb, kind, "ns", name, "gone")) == want


@pytest.mark.parametrize(
    ("cls", "builtin"),
    [
        pytest.param(NotFoundError, RuntimeError, id="not found is a RuntimeError"),
        pytest.param(AlreadyExistsError, RuntimeError, id="already exists is a RuntimeError"),
    ],
)
def test_typed_errors_keep_upstreams_builtin(cls: type[SDKError], builtin: type[Exception]) -> None:
    assert isinstance(build_request_error(cls, "get", "PyTorchJob", "ns", "a", "x"), builtin)


def test_build_request_target() -> None:
    got = [build_request_target("JAXJob", "ns", "j"), build_request_target("Event", "ns", "")]
    assert got == ["JAXJob: ns/j", "Events in namespace ns"]


def test_build_log_error() -> None:
    got = fields(build_log_error("ns", "a-worker-1", "container not started"))
    assert got == {
        "type": SDKError,
        "message": "Failed to read logs for pod ns/a-worker-1. Error: container not started",
        "detail": "container not started",
    }
