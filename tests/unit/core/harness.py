"""Helpers for the core tests: a fixed clock, one-pass runs, plan summaries and a tiny job world.

``World`` plays the backend's part for multi-pass tests: it applies a Plan's actions to its lists of
pods and Services, stores the status the way the API server does (a JSON round trip), and lets the
test move pods through phases. It decides nothing; every decision is the real core's.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from trainop.api.common import JobStatus, RunPolicy, TrainingJob
from trainop.core.observed import Observed
from trainop.core.plan import CreateObject, DeleteJob, DeleteObject, Plan, UpdateObject
from trainop.core.reconcile import reconcile
from trainop.core.topology import ServiceTopology
from trainop.frameworks.registry import REGISTRY

T0 = datetime(2024, 1, 1, tzinfo=UTC)


def at(seconds: float) -> datetime:
    """The fake clock: ``seconds`` after T0."""
    return T0 + timedelta(seconds=seconds)


def ts(seconds: float = 0) -> str:
    """``at(seconds)`` as the API server writes a timestamp."""
    return at(seconds).strftime("%Y-%m-%dT%H:%M:%SZ")


def run(
    job: TrainingJob,
    pods: list[dict[str, Any]] | tuple[()] = (),
    services: list[dict[str, Any]] | tuple[()] = (),
    *,
    now: datetime = T0,
    extras: dict[str, list[dict[str, Any]]] | None = None,
) -> Plan:
    observed = Observed(job, list(pods), list(services), extras or {})
    plan = reconcile(job, observed, REGISTRY.get(job.kind), ServiceTopology(), now)
    # What the Kubernetes backend writes when the pass rendered it: the status itself.
    assert plan.status_json is None or (plan.status_changed and plan.status_json == plan.status.to_dict())
    return plan


def describe_action(action: Any) -> tuple[str, ...]:
    if isinstance(action, CreateObject):
        return ("create", action.obj["kind"], action.obj["metadata"]["name"])
    if isinstance(action, UpdateObject):
        return ("update", action.obj["kind"], action.obj["metadata"]["name"])
    if isinstance(action, DeleteObject):
        return ("delete", action.kind, action.name)
    assert isinstance(action, DeleteJob)
    return ("delete-job", action.done.reason if action.done else "")


def summary(plan: Plan) -> dict[str, Any]:
    """Everything a Plan decides, in a form a test can spell out in full (pods by name only)."""
    return {
        "actions": [describe_action(a) for a in plan.actions],
        "status": plan.status.to_dict(),
        "status_changed": plan.status_changed,
        "events": [(e.type, e.reason, e.message) for e in plan.events],
        "requeue_after": plan.requeue_after,
        "metrics": plan.metrics,
        "skipped": plan.skipped,
    }


def cond(
    ctype: str,
    status: str = "True",
    *,
    kind: str,
    msg: str,
    t: float = 0,
    lt: float | None = None,
    reason: str | None = None,
) -> dict[str, Any]:
    """A condition as the status JSON holds it; ``lt`` is lastTransitionTime when it differs from ``t``."""
    return {
        "type": ctype,
        "status": status,
        "reason": reason if reason is not None else f"{kind}{ctype}",
        "message": msg,
        "lastUpdateTime": ts(t),
        "lastTransitionTime": ts(t if lt is None else lt),
    }


def created(kind: str, name: str = "a", t: float = 0) -> dict[str, Any]:
    return cond("Created", kind=kind, msg=f"{kind} {name} is created.", t=t)


def with_status(job: TrainingJob, status: dict[str, Any]) -> TrainingJob:
    return job.model_copy(update={"status": JobStatus.model_validate(status)})


@dataclass
class World:
    """A job and the objects it owns, advanced one reconcile at a time."""

    job: TrainingJob
    now: float = 0.0
    pods: dict[str, dict[str, Any]] = field(default_factory=dict)
    services: dict[str, dict[str, Any]] = field(default_factory=dict)
    job_deleted: bool = False
    deleted_pods: dict[str, dict[str, Any]] = field(default_factory=dict)
    plans: list[Plan] = field(default_factory=list)

    def reconcile(self) -> Plan:
        plan = run(self.job, list(self.pods.values()), list(self.services.values()), now=at(self.now))
        self.plans.append(plan)
        self.apply(plan)
        return plan

    def apply(self, plan: Plan) -> None:
        for action in plan.actions:
            if isinstance(action, CreateObject):
                obj = copy.deepcopy(action.obj)
                name = obj["metadata"]["name"]
                obj["metadata"]["uid"] = f"{name}-uid"
                if obj["kind"] == "Pod":
                    obj["status"] = {"phase": "Pending"}
                    self.pods.setdefault(name, obj)
                elif obj["kind"] == "Service":
                    self.services.setdefault(name, obj)
            elif isinstance(action, DeleteObject):
                gone = (self.pods if action.kind == "Pod" else self.services).pop(action.name, None)
                if gone is not None and action.kind == "Pod":
                    self.deleted_pods[action.name] = gone
            elif isinstance(action, DeleteJob):
                self.job_deleted = True
        if plan.status_changed and not self.job_deleted:
            # The API server stores JSON: a round trip, as the next observe would read it back.
            self.job = with_status(self.job, plan.status.to_dict())

    def advance(self, seconds: float) -> None:
        self.now += seconds

    def set_phase(
        self,
        name: str,
        phase: str,
        *,
        exit_code: int | None = None,
        restart_count: int = 0,
        container: str | None = None,
    ) -> None:
        """Move pod ``name`` to ``phase``; its default container terminated with ``exit_code`` if given."""
        pod = self.pods[name]
        cname = container or REGISTRY.get(self.job.kind).info.default_container
        state: dict[str, Any] = {"running": {"startedAt": ts(self.now)}}
        if exit_code is not None:
            state = {"terminated": {"exitCode": exit_code, "reason": "Error" if exit_code else "Completed"}}
        pod["status"] = {
            "phase": phase,
            "containerStatuses": [{"name": cname, "restartCount": restart_count, "state": state}],
        }

    def set_all(self, phase: str, **kw: Any) -> None:
        for name in self.pods:
            self.set_phase(name, phase, **kw)

    def set_run_policy(self, **fields: Any) -> None:
        """Edit ``spec.runPolicy`` as a user's ``kubectl patch`` would (snake_case field names)."""
        spec = self.job.spec
        rp = (spec.run_policy or RunPolicy()).model_copy(update=fields)
        self.job = self.job.model_copy(update={"spec": spec.model_copy(update={"run_policy": rp})})

    def terminate(self, name: str) -> None:
        """Put a deleted pod back as terminating (deletionTimestamp set), as a graceful deletion shows."""
        plan_pod = self.deleted_pods[name]
        plan_pod["metadata"]["deletionTimestamp"] = ts(self.now)
        self.pods[name] = plan_pod

    def conditions(self) -> list[tuple[str, str]]:
        return [(c.type, c.status) for c in (self.job.status.conditions if self.job.status else None) or []]


def selector(kind: str, rtype: str, name: str = "a") -> str:
    info = REGISTRY.get(kind).info
    return (
        f"training.kubeflow.org/job-name={name},training.kubeflow.org/operator-name={info.controller_name},"
        f"training.kubeflow.org/replica-type={rtype.lower()}"
    )


def replica_statuses(kind: str, **types: dict[str, int]) -> dict[str, Any]:
    """``replicaStatuses`` as core writes it: the counts given, plus the selector for PyTorch, Paddle
    and JAX (§4.2)."""
    scalable = REGISTRY.get(kind).info.scalable
    return {
        rt: {**counts, **({"selector": selector(kind, rt)} if scalable else {})}
        for rt, counts in types.items()
    }


def service(job: TrainingJob, rtype: str, index: int) -> dict[str, Any]:
    """An observed Service of replica ``rtype``/``index`` (what a backend lists)."""
    info = REGISTRY.get(job.kind).info
    name = f"{job.name}-{rtype.lower()}-{index}"
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": name,
            "namespace": job.namespace,
            "uid": f"{name}-svc-uid",
            "labels": {
                "training.kubeflow.org/operator-name": info.controller_name,
                "training.kubeflow.org/job-name": job.name,
                "training.kubeflow.org/replica-type": rtype.lower(),
                "training.kubeflow.org/replica-index": str(index),
            },
        },
        "spec": {"clusterIP": "None"},
    }
