"""The two ``JobClient`` adapters without a cluster or a supervisor: the local backend's patch,
events, errors and isolated submit checks on a real store, and the Kubernetes client's error mapping,
request deadline and unreachable server against real sockets (nothing here reaches an API server)."""

from __future__ import annotations

import asyncio
import json
import socket
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest
from lightkube.core.exceptions import ApiError

from trainop.api.errors import FieldError
from trainop.backends.base import (
    AlreadyExistsError,
    BackendError,
    ClusterError,
    JobRejectedError,
    NotFoundError,
    WaitTimeoutError,
)
from trainop.backends.kubernetes.client import build_config_from_client_configuration
from trainop.backends.kubernetes.jobs import KubernetesBackend
from trainop.backends.local.api import LocalBackend, build_merge_patch
from trainop.backends.local.paths import StatePaths
from trainop.testing.builders import pytorch_job


def _no_supervisor(paths: StatePaths, uid: str, env: Any, log: Path) -> None:
    """Starts nothing: these tests read and change the stored job only."""


@pytest.fixture
def local(tmp_path: Path) -> Any:
    backend = LocalBackend(home=tmp_path / "home", env={"PATH": "/usr/bin"}, spawner=_no_supervisor)
    yield backend
    backend.close()


def manifest(name: str = "a") -> dict[str, Any]:
    return pytorch_job(name).master(1).command(["python", "-c", "pass"]).build_dict()


def test_local_patch_merges_and_keeps_what_the_server_owns(local: LocalBackend) -> None:
    created = local.submit(manifest())
    got = local.patch(
        "a",
        "default",
        "PyTorchJob",
        {"metadata": {"labels": {"team": "x"}, "uid": "forged"}, "spec": {"runPolicy": {"suspend": True}}},
    )
    assert (got.metadata.labels, got.run_policy.suspend, got.metadata.uid, got.metadata.generation) == (
        {"team": "x"},
        True,
        created.metadata.uid,
        2,
    )


@pytest.mark.parametrize(
    ("call", "want"),
    [
        pytest.param(
            lambda b: b.patch("a", "default", "TFJob", {"spec": {}}),
            (NotFoundError, 404, 'TFJob "a" not found in namespace "default"'),
            id="patch names the kind as a URL does: another kind's job is not found",
        ),
        pytest.param(
            lambda b: b.delete("a", "default", kind="TFJob", wait=False),
            (NotFoundError, 404, 'TFJob "a" not found in namespace "default"'),
            id="delete of another kind",
        ),
        pytest.param(
            lambda b: b.submit(manifest()),
            (
                AlreadyExistsError,
                409,
                'PyTorchJob "a" already exists in namespace "default"; delete it first (trainop delete a) '
                "or choose another metadata.name",
            ),
            id="a second job of that name",
        ),
        pytest.param(
            lambda b: b.submit_isolated(manifest(), packages=["x"], index_url="http://127.0.0.1:9/simple"),
            (
                AlreadyExistsError,
                409,
                'PyTorchJob "a" already exists in namespace "default"; delete it first (trainop delete a) '
                "or choose another metadata.name",
            ),
            id="an isolated submit checks the name before making a venv over the job's state",
        ),
    ],
)
def test_local_errors_are_the_family(local: LocalBackend, call: Any, want: tuple[Any, ...]) -> None:
    local.submit(manifest())
    with pytest.raises(BackendError) as err:
        call(local)
    assert (type(err.value), err.value.code, str(err.value)) == want
    assert isinstance(err.value, RuntimeError), "a RuntimeError, as upstream's"


def test_local_events_read_as_a_clusters(local: LocalBackend) -> None:
    job = local.submit(manifest())
    local.store.add_events(job.metadata.uid or "", [("Normal", "Created", "made it")], 1700000000.0)
    got = local.events("default")
    assert [{k: e[k] for k in ("involvedObject", "type", "reason", "message", "count")} for e in got] == [
        {
            "involvedObject": {
                "apiVersion": "kubeflow.org/v1",
                "kind": "PyTorchJob",
                "name": "a",
                "namespace": "default",
            },
            "type": "Normal",
            "reason": "Created",
            "message": "made it",
            "count": 1,
        }
    ]
    assert got[0]["firstTimestamp"] == "2023-11-14T22:13:20Z"


@pytest.mark.parametrize(
    ("target", "patch", "want"),
    [
        pytest.param(
            {"a": 1, "b": {"c": 2}}, {"b": {"d": 3}}, {"a": 1, "b": {"c": 2, "d": 3}}, id="maps merge"
        ),
        pytest.param({"a": 1, "b": 2}, {"b": None}, {"a": 1}, id="null deletes"),
        pytest.param({"a": [1, 2]}, {"a": [3]}, {"a": [3]}, id="lists are replaced"),
    ],
)
def test_merge_patch(target: Any, patch: Any, want: Any) -> None:
    assert build_merge_patch(target, patch) == want


# --- the Kubernetes client, without a cluster -----------------------------------------------------------


class _Conf:
    """A ``kubernetes.client.Configuration``'s fields, as the SDK's callers pass one."""

    def __init__(self, host: str) -> None:
        self.host = host
        self.api_key = {"authorization": "Bearer t0ken"}
        self.verify_ssl = False


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def kube() -> Any:
    config = build_config_from_client_configuration(_Conf(f"https://127.0.0.1:{_closed_port()}"))
    client = KubernetesBackend(config=config, timeout=5.0)
    yield client
    client.close()


def api_error(code: int, message: str, **details: Any) -> ApiError:
    status = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": message, "code": code}
    if details:
        status["details"] = details
    request = httpx.Request("POST", "https://cluster/apis/kubeflow.org/v1/namespaces/ns/pytorchjobs")
    response = httpx.Response(code, json=status, request=request, headers={"Audit-Id": "1"})
    return ApiError(request=request, response=response)


@pytest.mark.parametrize(
    ("exc", "want"),
    [
        pytest.param(
            api_error(409, "exists", name="a", kind="pytorchjobs"), (AlreadyExistsError, None), id="409"
        ),
        pytest.param(
            api_error(422, "bad", name="a", causes=[{"field": "spec.x", "message": "must be set"}]),
            (JobRejectedError, [FieldError("spec.x", "must be set")]),
            id="the schema's 422 keeps one error per field",
        ),
        pytest.param(
            api_error(403, 'admission webhook "v" denied the request: spec.y: bad'),
            (JobRejectedError, [FieldError("", 'admission webhook "v" denied the request: spec.y: bad')]),
            id="a webhook's denial is an invalid job",
        ),
        pytest.param(
            api_error(404, 'namespaces "ns" not found', name="ns", kind="namespaces"),
            (ClusterError, None),
            id="a missing namespace says how to make it",
        ),
        pytest.param(api_error(500, "etcd is down"), (ClusterError, None), id="anything else: the cluster"),
    ],
)
def test_kubernetes_write_errors(kube: KubernetesBackend, exc: ApiError, want: tuple[Any, ...]) -> None:
    err = kube._write_error(exc, "PyTorchJob", "a", "ns")
    got = (type(err), getattr(err, "errors", None))
    assert got == want
    assert err.answer is not None
    assert (
        err.answer.code,
        json.loads(err.answer.body)["message"],
        dict(err.answer.headers)["Audit-Id"],
    ) == (
        exc.response.status_code,
        exc.status.message,
        "1",
    )
    assert (err.kind, err.namespace, err.name) == ("PyTorchJob", "ns", "a")


def test_kubernetes_request_past_its_deadline_is_a_timeout(kube: KubernetesBackend) -> None:
    with pytest.raises(WaitTimeoutError, match=r"did not answer within 0\.01s"):
        kube._run(asyncio.sleep(30), timeout=0.01)


def test_kubernetes_unreachable_cluster_is_one_line(kube: KubernetesBackend) -> None:
    with pytest.raises(ClusterError) as err:
        kube.get("a", "ns", "PyTorchJob")
    assert str(err.value).startswith(f"cannot reach {kube.where()}: ")
    assert "\n" not in str(err.value)
