"""One reconcile pass of a TrainJob without a JobSet: which pods and objects should exist, which pods
go, and the TrainJob's status. Pure: ``now`` comes in, ``requeue_after`` goes out.

It does what upstream's JobSet and Job controllers do for a TrainJob, on the resolver's steps: a step's
pods are created once its ``dependsOn`` holds (``Complete``: every pod of that step succeeded;
``Ready``: every pod runs and is ready, or succeeded); any failed pod fails the TrainJob (JobSet's
default failure policy, reason ``FailedJobs``); the success policy's target steps all succeeded
completes it (``AllJobsCompleted``); ``suspend`` deletes the pods (``Suspended``/``Resumed``);
``activeDeadlineSeconds`` counts from creation or the last resume (``DeadlineExceeded``). A
finished TrainJob keeps its succeeded and failed pods and loses the running ones.
``status.jobsStatus`` counts child Jobs per step as JobSet reports them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from trainop.api.constants import (
    COND_FAILED,
    COND_SUSPENDED,
    COND_TRAINJOB_COMPLETE,
    LABEL_JOB_INDEX,
    LABEL_REPLICATED_JOB_NAME,
    REASON_ALL_JOBS_COMPLETED,
    REASON_DEADLINE_EXCEEDED,
    REASON_FAILED_JOBS,
    REASON_RESUMED,
    REASON_SUSPENDED,
)
from trainop.core.trainjob import ResolvedTrainJob

MESSAGE_COMPLETED = "jobset completed successfully"  # JobSet's AllJobsCompletedMessage
MESSAGE_FAILED_JOBS = "jobset failed due to one or more job failures"  # JobSet's FailedJobsMessage
MESSAGE_SUSPENDED = "TrainJob is suspended"
MESSAGE_RESUMED = "TrainJob is resumed"
MESSAGE_DEADLINE = "TrainJob exceeded its active deadline"


@dataclass
class TrainJobPlan:
    create_objects: list[dict[str, Any]] = field(default_factory=list)  # created when absent
    create_pods: list[dict[str, Any]] = field(default_factory=list)
    delete_pods: list[str] = field(default_factory=list)
    status: dict[str, Any] = field(default_factory=dict)  # the TrainJob's whole status
    requeue_after: float | None = None


def _phase(pod: Mapping[str, Any]) -> str:
    return str((pod.get("status") or {}).get("phase") or "Pending")


def _ready(pod: Mapping[str, Any]) -> bool:
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return bool(cond.get("status") == "True")
    return _phase(pod) == "Running"


def _condition(status: Mapping[str, Any], ctype: str) -> dict[str, Any] | None:
    for cond in status.get("conditions") or []:
        if cond.get("type") == ctype:
            return dict(cond)
    return None


def set_condition(
    status: dict[str, Any], ctype: str, value: str, reason: str, message: str, now: datetime
) -> None:
    """meta.SetStatusCondition: the transition time changes only with the status."""
    conds: list[dict[str, Any]] = [dict(c) for c in status.get("conditions") or []]
    stamp = now.strftime("%Y-%m-%dT%H:%M:%SZ")
    for c in conds:
        if c.get("type") == ctype:
            if c.get("status") != value:
                c["lastTransitionTime"] = stamp
            c.update(status=value, reason=reason, message=message)
            break
    else:
        conds.append(
            {
                "type": ctype,
                "status": value,
                "reason": reason,
                "message": message,
                "lastTransitionTime": stamp,
            }
        )
    status["conditions"] = conds


def is_finished(status: Mapping[str, Any]) -> bool:
    return any(
        c.get("type") in (COND_TRAINJOB_COMPLETE, COND_FAILED) and c.get("status") == "True"
        for c in status.get("conditions") or []
    )


def _parse_time(text: object) -> datetime | None:
    if not isinstance(text, str):
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def reconcile_trainjob(
    resolved: ResolvedTrainJob, pods: Sequence[Mapping[str, Any]], now: datetime
) -> TrainJobPlan:
    """The pass for ``resolved`` (its ``job`` carries the current status) given its observed pods."""
    job = resolved.job
    status: dict[str, Any] = job.status.to_dict() if job.status is not None else {}
    plan = TrainJobPlan(status=status)
    by_name = {str((p.get("metadata") or {}).get("name")): p for p in pods}
    live = [n for n, p in by_name.items() if _phase(p) not in ("Succeeded", "Failed")]

    if is_finished(status):
        plan.delete_pods = live
        plan.status["jobsStatus"] = count_jobs_status(resolved, by_name, suspended=False)
        return plan

    suspended = _condition(status, COND_SUSPENDED)
    if job.spec.suspend:
        set_condition(plan.status, COND_SUSPENDED, "True", REASON_SUSPENDED, MESSAGE_SUSPENDED, now)
        plan.delete_pods = sorted(by_name)
        plan.status["jobsStatus"] = count_jobs_status(resolved, {}, suspended=True)
        return plan
    if suspended is not None and suspended.get("status") == "True":
        set_condition(plan.status, COND_SUSPENDED, "False", REASON_RESUMED, MESSAGE_RESUMED, now)

    deadline = job.spec.active_deadline_seconds
    if deadline is not None:
        resumed = _condition(plan.status, COND_SUSPENDED)
        start = _parse_time(resumed.get("lastTransitionTime")) if resumed else None
        start = start or job.metadata.creation_timestamp
        if start is not None:
            elapsed = (now - start).total_seconds()
            if elapsed >= deadline:
                set_condition(
                    plan.status, COND_FAILED, "True", REASON_DEADLINE_EXCEEDED, MESSAGE_DEADLINE, now
                )
                plan.delete_pods = live
                plan.status["jobsStatus"] = count_jobs_status(resolved, by_name, suspended=False)
                return plan
            plan.requeue_after = deadline - elapsed

    if any(_phase(p) == "Failed" for p in by_name.values()):
        set_condition(plan.status, COND_FAILED, "True", REASON_FAILED_JOBS, MESSAGE_FAILED_JOBS, now)
        plan.delete_pods = live
        plan.status["jobsStatus"] = count_jobs_status(resolved, by_name, suspended=False)
        return plan

    targets = resolved.success_targets or tuple(s.name for s in resolved.steps)
    done = [_step_succeeded(resolved, by_name, t) for t in targets]
    if (resolved.success_operator == "Any" and any(done)) or all(done):
        set_condition(
            plan.status, COND_TRAINJOB_COMPLETE, "True", REASON_ALL_JOBS_COMPLETED, MESSAGE_COMPLETED, now
        )
        plan.delete_pods = live
        plan.status["jobsStatus"] = count_jobs_status(resolved, by_name, suspended=False)
        return plan

    plan.create_objects = [*resolved.objects, resolved.build_service()]
    for step in resolved.steps:
        if not all(_dep_met(resolved, by_name, d, s) for d, s in step.depends_on):
            continue
        for pod in resolved.pods(step.name):
            if pod.name not in by_name:
                plan.create_pods.append(pod.pod)
    plan.status["jobsStatus"] = count_jobs_status(resolved, by_name, suspended=False)
    return plan


def _step_pods(resolved: ResolvedTrainJob, by_name: Mapping[str, Mapping[str, Any]], step: str) -> list[Any]:
    return [by_name.get(p.name) for p in resolved.pods(step)]


def _step_succeeded(resolved: ResolvedTrainJob, by_name: Mapping[str, Mapping[str, Any]], step: str) -> bool:
    pods = _step_pods(resolved, by_name, step)
    return bool(pods) and all(p is not None and _phase(p) == "Succeeded" for p in pods)


def _dep_met(
    resolved: ResolvedTrainJob, by_name: Mapping[str, Mapping[str, Any]], step: str, status: str
) -> bool:
    pods = _step_pods(resolved, by_name, step)
    if status == "Complete":
        return all(p is not None and _phase(p) == "Succeeded" for p in pods)
    return all(p is not None and (_phase(p) == "Succeeded" or _ready(p)) for p in pods)


def count_jobs_status(
    resolved: ResolvedTrainJob, by_name: Mapping[str, Mapping[str, Any]], *, suspended: bool
) -> list[dict[str, Any]]:
    """Per step, its child Jobs (one per job index) counted as JobSet does: ready (every pod ready or
    succeeded), succeeded (every pod succeeded), failed (a pod failed), active (a pod pending or
    running), suspended."""
    out = []
    for step in resolved.steps:
        counts = {"ready": 0, "succeeded": 0, "failed": 0, "active": 0, "suspended": 0}
        for ji in range(step.replicas):
            pods = [
                p
                for p in by_name.values()
                if (p.get("metadata") or {}).get("labels", {}).get(LABEL_REPLICATED_JOB_NAME) == step.name
                and (p.get("metadata") or {}).get("labels", {}).get(LABEL_JOB_INDEX) == str(ji)
            ]
            if suspended:
                counts["suspended"] += 1
                continue
            phases = [_phase(p) for p in pods]
            if "Failed" in phases:
                counts["failed"] += 1
            elif len(pods) == step.count and all(ph == "Succeeded" for ph in phases):
                counts["succeeded"] += 1
            elif pods:
                counts["active"] += 1
                if len(pods) == step.count and all(
                    ph == "Succeeded" or _ready(p) for ph, p in zip(phases, pods, strict=True)
                ):
                    counts["ready"] += 1
        out.append({"name": step.name, **counts})
    return out
