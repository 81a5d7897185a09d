"""``controller/jobs.py``'s one pass over one job, with the real core and plugins and a target that
keeps what it is handed: a job whose writes are pending waits, a gone job is left, a new job's Plan
(its pods and Services) is applied once, and a job another controller manages gets no Plan applied."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from trainop.controller.jobs import JobReconciler
from trainop.controller.loop import Result
from trainop.core.observed import Observed
from trainop.core.plan import Plan
from trainop.core.topology import ServiceTopology
from trainop.frameworks.registry import REGISTRY
from trainop.testing.builders import pytorch_job, written

KEY = ("PyTorchJob", "default", "a")
NOW = datetime(2024, 1, 1, tzinfo=UTC)


class Target:
    """A ReconcileTarget holding one job: what a pass observed and the Plans it applied."""

    def __init__(self, observed: Observed | None, pending: float | None = None) -> None:
        self.observed, self.wait = observed, pending
        self.applied: list[Plan] = []

    def pending(self, key: tuple[str, str, str]) -> float | None:
        return self.wait

    def observe(self, key: tuple[str, str, str]) -> Observed | None:
        return self.observed

    async def apply(self, key: tuple[str, str, str], observed: Observed, plan: Plan) -> None:
        self.applied.append(plan)


def run(target: Target) -> Result:
    reconciler = JobReconciler(target, REGISTRY.get, ServiceTopology(), now=lambda: NOW)
    return asyncio.run(reconciler.reconcile(KEY))


def new_job() -> Observed:
    return Observed(pytorch_job("a").master(1).workers(1).uid("a-uid").build())


def test_pending_writes_requeue_without_a_pass() -> None:
    target = Target(new_job(), pending=0.25)
    assert (run(target), target.applied) == (Result(requeue_after=0.25), [])


def test_a_job_that_is_gone_is_left() -> None:
    target = Target(None)
    assert (run(target), target.applied) == (Result(), [])


def test_a_new_job_gets_its_pods_and_services_in_one_plan() -> None:
    target = Target(new_job())
    run(target)
    (plan,) = target.applied
    made = sorted(
        f"{type(a).__name__}:{written(a)['kind']}:{written(a)['metadata']['name']}" for a in plan.actions
    )
    assert made == [
        "CreateObject:Pod:a-master-0",
        "CreateObject:Pod:a-worker-0",
        "CreateObject:Service:a-master-0",
        "CreateObject:Service:a-worker-0",
    ]


def test_a_job_another_controller_manages_gets_no_plan_applied() -> None:
    job = pytorch_job("a").master(1).uid("a-uid").managed_by("kueue.x-k8s.io/multikueue").build()
    target = Target(Observed(job))
    assert (run(target), target.applied) == (Result(requeue_after=None), [])
