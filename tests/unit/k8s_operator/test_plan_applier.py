"""``PlanApplier`` (backends/kubernetes/apply.py) without a cluster: creates and deletes are idempotent
(AlreadyExists and NotFound are success, and only what this pass did is reported as created or
deleted, for the expectations), and any other refusal fails the plan."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx2 as httpx
import pytest
from lightkube import ApiError

from trainop.backends.executor import ApplyError
from trainop.backends.kubernetes.apply import PlanApplier
from trainop.core.plan import CreateObject, DeleteJob, DeleteObject, Plan


def api_error(code: int) -> ApiError:
    body = {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "message": f"said {code}",
        "code": code,
    }
    return ApiError(response=httpx.Response(code, json=body, request=httpx.Request("POST", "https://api")))


class FakeCluster:
    """Objects by (kind, name); ``refuse`` names answers other than success."""

    def __init__(
        self, existing: set[tuple[str, str]], refuse: dict[tuple[str, str], int] | None = None
    ) -> None:
        self.objects = set(existing)
        self.refuse = refuse or {}
        self.api = self

    def _check(self, key: tuple[str, str]) -> None:
        if key in self.refuse:
            raise api_error(self.refuse[key])

    async def create(self, res: Any, namespace: str, obj: dict[str, Any]) -> None:
        key = (obj["kind"], obj["metadata"]["name"])
        self._check(key)
        if key in self.objects:
            raise api_error(409)
        self.objects.add(key)

    async def delete(self, res: Any, name: str, namespace: str) -> None:
        key = (res.__name__, name)
        self._check(key)
        if key not in self.objects:
            raise api_error(404)
        self.objects.remove(key)


JOB = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "j", "namespace": "ns"}}


def pod(name: str) -> CreateObject:
    return CreateObject({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}})


def apply(cluster: FakeCluster, *actions: Any) -> Any:
    applier = PlanApplier(cluster, emit=lambda job, event: None)  # type: ignore[arg-type]
    plan = Plan(actions=list(actions))
    plan.status_json = None
    return asyncio.run(applier.apply(JOB, plan))


@pytest.fixture(autouse=True)
def no_status_write(monkeypatch: pytest.MonkeyPatch) -> None:
    async def skip(self: Any, job: Any, plan: Any) -> None:
        return None

    monkeypatch.setattr(PlanApplier, "write_status", skip)


def test_already_there_and_already_gone_are_success_but_not_reported() -> None:
    cluster = FakeCluster({("Pod", "a"), ("Pod", "c")})
    out = apply(cluster, DeleteObject("Pod", "c"), DeleteObject("Pod", "d"), pod("a"), pod("b"))
    assert out.created == [("Pod", "b")]  # a existed: AlreadyExists is success
    assert out.deleted == [("Pod", "c")]  # d was gone: NotFound is success
    assert cluster.objects == {("Pod", "a"), ("Pod", "b")}
    apply(cluster, DeleteJob())  # a job already gone: success too


def test_any_other_refusal_fails_the_plan() -> None:
    cluster = FakeCluster(set(), refuse={("Pod", "a"): 403})
    with pytest.raises(ApplyError, match="said 403"):
        apply(cluster, pod("a"))
    cluster = FakeCluster({("Pod", "a")}, refuse={("Pod", "a"): 500})
    with pytest.raises(ApplyError, match="said 500"):
        apply(cluster, DeleteObject("Pod", "a"))
