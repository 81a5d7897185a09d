"""The Kubernetes backend's side of a pass without a server: which cache changes queue a job."""

from __future__ import annotations

from typing import Any

from trainop.backends.kubernetes.backend import KubernetesReconcileTarget
from trainop.backends.kubernetes.cache import ClusterCache, JobKey
from trainop.testing.builders import pod, pytorch_job

KEY: JobKey = ("PyTorchJob", "default", "a")


class _NoServer:
    """Stands in for the client and the event recorder: nothing here may reach a server."""


def job_dict(rv: str, *, uid: str = "a-uid", status: dict[str, Any] | None = None) -> dict[str, Any]:
    obj = pytorch_job("a").master(1).workers(1).uid(uid).meta(resource_version=rv).build_dict()
    if status is not None:
        obj["status"] = status
    return obj


def world() -> tuple[ClusterCache, KubernetesReconcileTarget, list[JobKey]]:
    cache = ClusterCache(_NoServer(), ["PyTorchJob"])  # type: ignore[arg-type]
    backend = KubernetesReconcileTarget(_NoServer(), cache, _NoServer())  # type: ignore[arg-type]
    queued: list[JobKey] = []
    cache.subscribe(queued.append, backend.on_owned_change)
    return cache, backend, queued


def test_the_echo_of_our_own_status_write_queues_nothing() -> None:
    cache, _, queued = world()
    jobs = cache.jobs["PyTorchJob"]
    jobs.apply_event("ADDED", job_dict("10"))
    cache.remember_written_job(job_dict("11", status={"startTime": "2024-01-01T00:00:00Z"}))
    jobs.apply_event("MODIFIED", job_dict("11", status={"startTime": "2024-01-01T00:00:00Z"}))  # the echo
    jobs.apply_event("MODIFIED", job_dict("12"))  # someone else's change
    assert queued == [KEY, KEY]  # the add and the other change


def test_an_echo_that_arrives_before_the_write_returns_queues_the_job() -> None:
    cache, _, queued = world()
    jobs = cache.jobs["PyTorchJob"]
    jobs.apply_event("ADDED", job_dict("10"))
    jobs.apply_event("MODIFIED", job_dict("11"))  # the watch was faster than the PUT's answer
    cache.remember_written_job(job_dict("11"))
    assert queued == [KEY, KEY]


def test_owned_changes_queue_their_job_unless_nothing_changed() -> None:
    cache, _, queued = world()
    cache.jobs["PyTorchJob"].apply_event("ADDED", job_dict("10"))
    job = pytorch_job("a").master(1).workers(1).build()

    def master(rv: str, *, running: bool = False) -> dict[str, Any]:
        b = pod(job, "Master")
        obj = (b.running() if running else b).build()
        obj["metadata"]["resourceVersion"] = rv
        return obj

    pods = cache.owned["Pod"]
    pods.apply_event("ADDED", master("20"))
    pods.apply_event("MODIFIED", master("20"))  # a resync
    pods.apply_event("MODIFIED", master("21", running=True))
    assert queued == [KEY, KEY, KEY]
