"""What ``PodPreparer`` (operator/progress.py) remembers of the ``<job>-tls-config`` ConfigMaps it wrote:
one entry per live job, forgotten once the job is gone (a v1 job's reconcile finds nothing to observe;
a TrainJob pass no longer lists it), so that a long-running operator does not grow with every job it
ever ran. And whose references the ConfigMap carries: one per job of its name (a v1 job and a TrainJob
share it)."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncIterator
from types import SimpleNamespace
from typing import Any

from lightkube.core.exceptions import ApiError
from lightkube.models.meta_v1 import Status

from trainop.core.observed import Observed
from trainop.core.plan import Plan
from trainop.operator.progress import PodPreparer, ProgressTarget
from trainop.operator.trainjobs import TrainJobController, TrainJobResource

CA = b"-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n"


class FakeApi:
    def __init__(self) -> None:
        self.configmaps: dict[str, dict[str, Any]] = {}
        self.writes: list[tuple[str, str]] = []  # (verb, ConfigMap)
        self.trainjobs: list[dict[str, Any]] = []

    async def create(self, obj: Any) -> Any:
        name = obj["metadata"]["name"]
        if name in self.configmaps:
            raise ApiError(status=Status(code=409, message="already exists"))
        return await self.replace(obj, "create")

    async def get(self, res: Any, name: str, namespace: str) -> Any:
        return copy.deepcopy(self.configmaps[name])

    async def replace(self, obj: Any, verb: str = "replace") -> Any:
        self.configmaps[obj["metadata"]["name"]] = copy.deepcopy(dict(obj))
        self.writes.append((verb, obj["metadata"]["name"]))
        return obj

    def list(self, res: Any, **_: Any) -> AsyncIterator[Any]:
        async def items() -> AsyncIterator[Any]:
            for obj in self.trainjobs if res is TrainJobResource else []:
                yield obj

        return items()


def preparer() -> tuple[PodPreparer, FakeApi]:
    api = FakeApi()
    return PodPreparer(SimpleNamespace(api=api), "https://op:9443", lambda: CA), api  # type: ignore[arg-type]


def owner(kind: str, name: str, uid: str) -> dict[str, Any]:
    return {"apiVersion": "kubeflow.org/v1", "kind": kind, "name": name, "uid": uid, "controller": True}


def pod() -> dict[str, Any]:
    return {"kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}]}}


class GoneTarget:
    """The v1 reconcile's target once the job is deleted: nothing to observe."""

    def pending(self, key: tuple[str, str, str]) -> float | None:
        return None

    def observe(self, key: tuple[str, str, str]) -> Observed | None:
        return None

    async def apply(self, key: tuple[str, str, str], observed: Observed, plan: Plan) -> None:
        raise AssertionError("never applied")


def test_a_v1_job_that_is_gone_is_forgotten() -> None:
    pods, api = preparer()
    asyncio.run(pods.prepare(owner("PyTorchJob", "a", "u1"), "ns", "pytorchjobs", [pod()]))
    asyncio.run(pods.prepare(owner("PyTorchJob", "b", "u2"), "ns", "pytorchjobs", [pod()]))
    asyncio.run(pods.prepare(owner("PyTorchJob", "a", "u1"), "ns", "pytorchjobs", [pod()]))
    assert api.writes == [("create", "a-tls-config"), ("create", "b-tls-config")]  # once each
    assert ProgressTarget(GoneTarget(), pods).observe(("PyTorchJob", "ns", "a")) is None
    assert len(pods._written) == 1  # b's entry only
    asyncio.run(pods.prepare(owner("PyTorchJob", "a", "u3"), "ns", "pytorchjobs", [pod()]))
    assert api.writes[-1] == ("replace", "a-tls-config")  # a namesake: its reference replaces the old one
    assert [o["uid"] for o in api.configmaps["a-tls-config"]["metadata"]["ownerReferences"]] == ["u3"]


def test_a_v1_job_and_a_trainjob_of_one_name_both_own_the_configmap() -> None:
    pods, api = preparer()
    asyncio.run(pods.prepare(owner("PyTorchJob", "twin", "u1"), "ns", "pytorchjobs", [pod()]))
    asyncio.run(pods.prepare(owner("TrainJob", "twin", "u2"), "ns", "trainjobs", [pod()]))
    asyncio.run(pods.prepare(owner("PyTorchJob", "twin", "u1"), "ns", "pytorchjobs", [pod()]))
    assert api.writes == [("create", "twin-tls-config"), ("replace", "twin-tls-config")]
    cm = api.configmaps["twin-tls-config"]
    assert cm["data"] == {"ca.crt": CA.decode()}
    refs = [(o["kind"], o["uid"], o.get("controller")) for o in cm["metadata"]["ownerReferences"]]
    assert refs == [("PyTorchJob", "u1", None), ("TrainJob", "u2", None)]
    pods.forget("TrainJob", "ns", "twin")  # the PyTorchJob's entry stays: nothing written again
    asyncio.run(pods.prepare(owner("PyTorchJob", "twin", "u1"), "ns", "pytorchjobs", [pod()]))
    assert len(api.writes) == 2


def test_a_trainjob_no_longer_listed_is_forgotten() -> None:
    pods, api = preparer()
    job = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "tj", "namespace": "ns", "uid": "u1"},
        "spec": {"runtimeRef": {"name": "missing"}},  # no such runtime: the pass retries it later
    }
    asyncio.run(pods.prepare(owner("TrainJob", "tj", "u1"), "ns", "trainjobs", [pod()]))
    controller = TrainJobController(api, pods=pods)  # type: ignore[arg-type]
    api.trainjobs = [job]
    asyncio.run(controller.sync_all())
    assert len(pods._written) == 1  # still listed: kept
    api.trainjobs = []
    asyncio.run(controller.sync_all())
    assert not pods._written
