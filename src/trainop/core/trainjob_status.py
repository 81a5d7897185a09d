"""One reconcile pass of a TrainJob without a JobSet: which pods and objects should exist, which pods
go, and the TrainJob's status. Pure: ``now`` comes in, ``requeue_after`` goes out.

It does what upstream's JobSet and Job controllers do for a TrainJob, on the resolver's steps: a step's
pods are created once its ``dependsOn`` holds (``Complete``: every pod of that step succeeded;
``Ready``: every pod runs and is ready, or succeeded); any failed pod fails the TrainJob (JobSet's
default failure policy, reason ``FailedJobs``; with the runtime's ``failurePolicy.maxRestarts`` every
pod is restarted that many times first, then ``ReachedMaxRestarts``); the success policy's target
steps all succeeded completes it (``AllJobsCompleted``); ``suspend`` deletes the pods
(``Suspended``/``Resumed``); ``activeDeadlineSeconds`` counts from creation or the last resume
(``DeadlineExceeded``). A finished TrainJob keeps its succeeded and failed pods and loses the running
ones.
``status.jobsStatus`` counts child Jobs per step as JobSet reports them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from trainop.api.constants import (
    ANNOTATION_JOBSET_RESTARTS,
    COND_FAILED,
    COND_SUSPENDED,
    COND_TRAINJOB_COMPLETE,
    LABEL_JOB_INDEX,
    LABEL_JOBSET_RESTART_ATTEMPT,
    LABEL_REPLICATED_JOB_NAME,
    REASON_ALL_JOBS_COMPLETED,
    REASON_DEADLINE_EXCEEDED,
    REASON_FAILED_JOBS,
    REASON_REACHED_MAX_RESTARTS,
    REASON_RESUMED,
    REASON_SUSPENDED,
)
from trainop.core.pods import detect_label, detect_phase
from trainop.core.status import parse_time
from trainop.core.trainjob import ResolvedTrainJob

MESSAGE_COMPLETED = "jobset completed successfully"  # JobSet's AllJobsCompletedMessage
MESSAGE_FAILED_JOBS = "jobset failed due to one or more job failures"  # JobSet's FailedJobsMessage
MESSAGE_REACHED_MAX_RESTARTS = "jobset failed due to reaching max number of restarts"  # JobSet's
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
    # JobSet's status.restarts to record (ANNOTATION_JOBSET_RESTARTS) before the pods are deleted:
    # a restart of every pod under the runtime's failurePolicy.maxRestarts.
    restarts: int | None = None


def _ready(pod: Mapping[str, Any]) -> bool:
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return bool(cond.get("status") == "True")
    return detect_phase(pod) == "Running"


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
    cond = next((c for c in conds if c.get("type") == ctype), None)
    if cond is None:
        cond = {"type": ctype}
        conds.append(cond)
    if cond.get("status") != value:
        cond["lastTransitionTime"] = now.strftime("%Y-%m-%dT%H:%M:%SZ")
    cond.update(status=value, reason=reason, message=message)
    status["conditions"] = conds


def is_finished(status: Mapping[str, Any]) -> bool:
    return any(
        c.get("type") in (COND_TRAINJOB_COMPLETE, COND_FAILED) and c.get("status") == "True"
        for c in status.get("conditions") or []
    )


def compute_max_restarts(resolved: ResolvedTrainJob) -> int | None:
    """The runtime's JobSet ``failurePolicy.maxRestarts``; None without a failurePolicy (JobSet then
    fails at the first failed Job, reason FailedJobs, rather than ReachedMaxRestarts)."""
    template = resolved.runtime.spec.template
    policy = template.spec.failure_policy if template is not None and template.spec is not None else None
    if policy is None:
        return None
    value = policy.get("maxRestarts")
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def compute_restarts(job: Any) -> int:
    """JobSet's ``status.restarts`` for this TrainJob (kept in an annotation on it; 0 when absent)."""
    return _count((job.metadata.annotations or {}).get(ANNOTATION_JOBSET_RESTARTS))


def _attempt(pod: Mapping[str, Any]) -> int:
    return _count(((pod.get("metadata") or {}).get("labels") or {}).get(LABEL_JOBSET_RESTART_ATTEMPT))


def _count(value: object) -> int:
    return int(value) if isinstance(value, str) and value.isdigit() else 0


@dataclass
class _TrainJobPass:
    """What one pass knows: the job, its pods of the current attempt (``by_name``), the pods of earlier
    attempts still there (``stale``), and the plan it fills."""

    resolved: ResolvedTrainJob
    by_name: dict[str, Mapping[str, Any]]
    stale: list[str]
    restarts: int
    plan: TrainJobPlan
    now: datetime

    @property
    def live(self) -> list[str]:
        return [n for n, p in self.by_name.items() if detect_phase(p) not in ("Succeeded", "Failed")]

    def finish(self, delete: list[str], *, suspended: bool = False) -> TrainJobPlan:
        self.plan.delete_pods = sorted({*delete, *self.stale})
        by_name = {} if suspended else self.by_name
        self.plan.status["jobsStatus"] = count_jobs_status(self.resolved, by_name, suspended=suspended)
        return self.plan


def reconcile_trainjob(
    resolved: ResolvedTrainJob, pods: Sequence[Mapping[str, Any]], now: datetime
) -> TrainJobPlan:
    """The pass for ``resolved`` (its ``job`` carries the current status) given its observed pods."""
    job = resolved.job
    status: dict[str, Any] = job.status.to_dict() if job.status is not None else {}
    restarts = compute_restarts(job)
    observed = {str((p.get("metadata") or {}).get("name")): p for p in pods}
    current = {n: p for n, p in observed.items() if _attempt(p) >= restarts}
    stale = sorted(n for n in observed if n not in current)
    step = _TrainJobPass(resolved, current, stale, restarts, TrainJobPlan(status=status), now)

    if is_finished(status):
        return step.finish(step.live)
    if job.spec.suspend:
        set_condition(step.plan.status, COND_SUSPENDED, "True", REASON_SUSPENDED, MESSAGE_SUSPENDED, now)
        return step.finish(sorted(current), suspended=True)
    _resume(step)
    for decide in (_check_deadline, _check_failed, _check_complete):
        plan = decide(step)
        if plan is not None:
            return plan
    _create_ready_steps(step, observed)
    return step.finish([])


def _resume(step: _TrainJobPass) -> None:
    suspended = _condition(step.plan.status, COND_SUSPENDED)
    if suspended is not None and suspended.get("status") == "True":
        set_condition(step.plan.status, COND_SUSPENDED, "False", REASON_RESUMED, MESSAGE_RESUMED, step.now)


def _check_deadline(step: _TrainJobPass) -> TrainJobPlan | None:
    """activeDeadlineSeconds, from creation or the last resume (upstream's TrainJob controller)."""
    job = step.resolved.job
    deadline = job.spec.active_deadline_seconds
    if deadline is None:
        return None
    resumed = _condition(step.plan.status, COND_SUSPENDED)
    start = (
        parse_time(resumed.get("lastTransitionTime")) if resumed else None
    ) or job.metadata.creation_timestamp
    if start is None:
        return None
    elapsed = (step.now - start).total_seconds()
    if elapsed < deadline:
        step.plan.requeue_after = deadline - elapsed
        return None
    set_condition(step.plan.status, COND_FAILED, "True", REASON_DEADLINE_EXCEEDED, MESSAGE_DEADLINE, step.now)
    return step.finish(step.live)


def _check_failed(step: _TrainJobPass) -> TrainJobPlan | None:
    """A failed pod fails its Job, and JobSet's failure policy decides (failure_policy.go without
    rules): while fewer than maxRestarts restarts were made, every pod goes and the next attempt
    starts; then, or without a failurePolicy, the TrainJob fails."""
    if not any(detect_phase(p) == "Failed" for p in step.by_name.values()):
        return None
    max_restarts = compute_max_restarts(step.resolved)
    if max_restarts is not None and step.restarts < max_restarts:
        step.plan.restarts = step.restarts + 1
        return step.finish(sorted(step.by_name))
    if max_restarts is None:
        reason, message = REASON_FAILED_JOBS, MESSAGE_FAILED_JOBS
    else:
        reason, message = REASON_REACHED_MAX_RESTARTS, MESSAGE_REACHED_MAX_RESTARTS
    set_condition(step.plan.status, COND_FAILED, "True", reason, message, step.now)
    return step.finish(step.live)


def _check_complete(step: _TrainJobPass) -> TrainJobPlan | None:
    resolved = step.resolved
    targets = resolved.success_targets or tuple(s.name for s in resolved.steps)
    done = [_step_succeeded(resolved, step.by_name, t) for t in targets]
    if not ((resolved.success_operator == "Any" and any(done)) or all(done)):
        return None
    status, now = step.plan.status, step.now
    set_condition(status, COND_TRAINJOB_COMPLETE, "True", REASON_ALL_JOBS_COMPLETED, MESSAGE_COMPLETED, now)
    return step.finish(step.live)


def _create_ready_steps(step: _TrainJobPass, observed: Mapping[str, Any]) -> None:
    """The objects, and the pods of each step whose dependsOn holds; a name still held by a pod of an
    earlier attempt waits for it to go."""
    resolved = step.resolved
    step.plan.create_objects = [*resolved.objects, resolved.build_service()]
    attempt = str(step.restarts)
    for s in resolved.steps:
        if not all(_dep_met(resolved, step.by_name, d, status) for d, status in s.depends_on):
            continue
        for pod in resolved.pods(s.name):
            if pod.name in observed:
                continue
            meta = pod.pod["metadata"]
            meta["labels"][LABEL_JOBSET_RESTART_ATTEMPT] = attempt
            meta["annotations"][LABEL_JOBSET_RESTART_ATTEMPT] = attempt
            step.plan.create_pods.append(pod.pod)


def _step_pods(resolved: ResolvedTrainJob, by_name: Mapping[str, Mapping[str, Any]], step: str) -> list[Any]:
    return [by_name.get(p.name) for p in resolved.pods(step)]


def _step_succeeded(resolved: ResolvedTrainJob, by_name: Mapping[str, Mapping[str, Any]], step: str) -> bool:
    pods = _step_pods(resolved, by_name, step)
    return bool(pods) and all(p is not None and detect_phase(p) == "Succeeded" for p in pods)


def _dep_met(
    resolved: ResolvedTrainJob, by_name: Mapping[str, Mapping[str, Any]], step: str, status: str
) -> bool:
    pods = _step_pods(resolved, by_name, step)
    if status == "Complete":
        return all(p is not None and detect_phase(p) == "Succeeded" for p in pods)
    return all(p is not None and (detect_phase(p) == "Succeeded" or _ready(p)) for p in pods)


def count_jobs_status(
    resolved: ResolvedTrainJob, by_name: Mapping[str, Mapping[str, Any]], *, suspended: bool
) -> list[dict[str, Any]]:
    """Per step, its child Jobs (one per job index) counted as JobSet does: ready (every pod ready or
    succeeded), succeeded (every pod succeeded), failed (a pod failed), active (a pod pending or
    running), suspended."""
    out = []
    for step in resolved.steps:
        counts = {"ready": 0, "succeeded": 0, "failed": 0, "active": 0, "suspended": 0}
        for ji in range(0 if suspended else step.replicas):
            pods = [
                p
                for p in by_name.values()
                if detect_label(p, LABEL_REPLICATED_JOB_NAME) == step.name
                and detect_label(p, LABEL_JOB_INDEX) == str(ji)
            ]
            phases = [detect_phase(p) for p in pods]
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
        if suspended:
            counts["suspended"] = step.replicas
        out.append({"name": step.name, **counts})
    return out
