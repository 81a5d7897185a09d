"""Informer logic without a server: the store's owner index, event folding, stale events, 410 Gone."""

from __future__ import annotations

from typing import Any

import httpx2 as httpx
import pytest
from lightkube.core.exceptions import ApiError
from lightkube.models.meta_v1 import Status
from lightkube.types import OnErrorAction

from trainop.backends.kubernetes.cache import slim_owned
from trainop.backends.kubernetes.informer import (
    Handlers,
    Informer,
    compact_object,
    compute_watch_error_action,
)


def obj(name: str, rv: str, owner: str | None = "uid-1", **extra: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": name,
        "namespace": "ns",
        "resourceVersion": rv,
        "managedFields": [{"m": 1}],
    }
    if owner:
        meta["ownerReferences"] = [
            {
                "apiVersion": "kubeflow.org/v1",
                "kind": "PyTorchJob",
                "name": "j",
                "uid": owner,
                "controller": True,
            }
        ]
    return {"metadata": meta, **extra}


class _NoClient:
    pass


def informer() -> tuple[Informer, list[tuple[str, str, str]]]:
    inf = Informer(_NoClient(), type("Pod", (), {}), name="pods")  # type: ignore[arg-type]
    seen: list[tuple[str, str, str]] = []
    inf.add_handlers(
        Handlers(
            on_add=lambda o: seen.append(("add", o["metadata"]["name"], o["metadata"]["resourceVersion"])),
            on_update=lambda a, b: seen.append(
                ("update", b["metadata"]["name"], b["metadata"]["resourceVersion"])
            ),
            on_delete=lambda o: seen.append(
                ("delete", o["metadata"]["name"], o["metadata"]["resourceVersion"])
            ),
        )
    )
    return inf, seen


def test_events_fold_into_the_store_and_index() -> None:
    inf, seen = informer()
    inf.apply_event("ADDED", obj("a", "10"))
    inf.apply_event("ADDED", obj("b", "11", owner="uid-2"))
    inf.apply_event("MODIFIED", obj("a", "12"))
    inf.apply_event("DELETED", obj("b", "13", owner="uid-2"))
    assert seen == [("add", "a", "10"), ("add", "b", "11"), ("update", "a", "12"), ("delete", "b", "11")]
    assert [o["metadata"]["name"] for o in inf.store.owned_by("uid-1")] == ["a"]
    assert inf.store.owned_by("uid-2") == []
    assert "managedFields" not in inf.store.get("ns", "a")["metadata"]  # type: ignore[index]


def test_an_older_event_never_replaces_our_own_write() -> None:
    inf, seen = informer()
    inf.apply_event("ADDED", obj("a", "10"))
    inf.put_newer(obj("a", "20", status={"written": True}))  # the PUT /status response
    inf.apply_event("MODIFIED", obj("a", "15"))  # an event from before our write, arriving late
    assert inf.store.get("ns", "a")["metadata"]["resourceVersion"] == "20"  # type: ignore[index]
    inf.apply_event("MODIFIED", obj("a", "21"))
    assert inf.store.get("ns", "a")["metadata"]["resourceVersion"] == "21"  # type: ignore[index]
    assert seen == [("add", "a", "10"), ("update", "a", "21")]


def _api_error(code: int) -> ApiError:
    return ApiError(status=Status(code=code, message="too old resource version"))


@pytest.mark.parametrize(
    ("exc", "count", "want"),
    [
        pytest.param(_api_error(410), 1, (OnErrorAction.STOP, 0.0), id="410 Gone: stop and list again"),
        pytest.param(_api_error(500), 1, (OnErrorAction.RETRY, 0.4), id="server error: retry soon"),
        pytest.param(
            httpx.ReadError("reset"), 20, (OnErrorAction.RETRY, 30.0), id="transport errors back off to 30 s"
        ),
    ],
)
def test_watch_error_action(exc: Exception, count: int, want: tuple[OnErrorAction, float]) -> None:
    got = compute_watch_error_action(exc, count)
    assert (got.action, got.sleep) == want


def _pod(name: str) -> dict[str, Any]:
    """A pod as the API server sends it (decoded separately, so no string is shared)."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "ns",
            "labels": {"training.kubeflow.org/replica-type": "".join(["wor", "ker"])},
            "managedFields": [{"manager": "trainop"}],
        },
        "spec": {
            "nodeName": "node-1",
            "restartPolicy": "OnFailure",
            "priority": 0,
            "enableServiceLinks": True,
            "containers": [{"name": "pytorch", "env": [{"name": "RANK", "value": "1"}]}],
            "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists"}],
            "securityContext": {},
        },
        "status": {"phase": "Running", "containerStatuses": [{"name": "pytorch", "restartCount": 2}]},
    }


@pytest.mark.parametrize(
    ("transform", "want_spec"),
    [
        pytest.param(compact_object, _pod("p")["spec"], id="any object: all of it but managedFields"),
        pytest.param(
            slim_owned,
            {"nodeName": "node-1", "restartPolicy": "OnFailure", "priority": 0, "enableServiceLinks": True},
            id="pods and Services: the scalar fields of their spec",
        ),
    ],
)
def test_cached_objects_keep_what_the_operator_reads(transform: Any, want_spec: dict[str, Any]) -> None:
    got = transform(_pod("p"))
    want = _pod("p")
    del want["metadata"]["managedFields"]
    assert got == {**want, "spec": want_spec}


def test_cached_objects_share_their_strings() -> None:
    key = "training.kubeflow.org/replica-type"
    a, b = _pod("a"), _pod("b")
    assert a["metadata"]["labels"][key] is not b["metadata"]["labels"][key]  # as decoded
    a, b = compact_object(a), compact_object(b)
    assert a["metadata"]["labels"][key] is b["metadata"]["labels"][key]
