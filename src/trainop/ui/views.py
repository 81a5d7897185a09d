"""What the web view shows, as JSON-ready dicts: a job list row, one job's page, its progress series.
Pure: jobs, pods, events and progress posts in (``now`` too), plain data out; no I/O, no clock.

Replica phases, restarts, exit codes and why a replica waits come from ``cli.live`` (what ``trainop
run`` prints), so the page and the terminal never disagree.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from trainop.api.constants import LABEL_KUEUE_QUEUE
from trainop.cli.format import compute_replica_counts, format_replicas
from trainop.cli.listing import compute_display_state, job_reason
from trainop.cli.live import build_replica_views
from trainop.cli.selectors import Requirement, matches

if TYPE_CHECKING:
    from trainop.api.common import TrainingJob
    from trainop.backends.base import JobEvent

# Metrics that place a point on the x axis, first found first: an epoch, else a step. Upstream's KEP
# names (currentEpoch), transformers' KubeflowCallback's (current_step, current_epoch: a fraction,
# so its step comes first), and plain ones.
X_METRICS = ("currentEpoch", "epoch", "current_step", "currentStep", "step", "global_step", "current_epoch")
# Metrics that describe the run rather than measure it (totals), and the x axes themselves.
NOT_PLOTTED = frozenset({"totalEpochs", "totalSteps", "total_steps", "total_epochs", *X_METRICS})


def _created(job: TrainingJob) -> float | None:
    ts = job.metadata.creation_timestamp
    return ts.timestamp() if ts else None


def detect_queue(job: TrainingJob) -> str:
    """Kueue's queue label, else runPolicy.schedulingPolicy.queue (Volcano's)."""
    labels = job.metadata.labels or {}
    if labels.get(LABEL_KUEUE_QUEUE):
        return str(labels[LABEL_KUEUE_QUEUE])
    policy = job.run_policy.scheduling_policy
    return str(policy.queue or "") if policy else ""


def count_restarts(pods: Sequence[Mapping[str, Any]]) -> int:
    return sum(
        int(cs.get("restartCount") or 0)
        for p in pods
        for key in ("initContainerStatuses", "containerStatuses")
        for cs in (p.get("status") or {}).get(key) or []
    )


def build_job_row(job: TrainingJob, pods: Sequence[Mapping[str, Any]] | None) -> dict[str, Any]:
    """One row of the job list; ``pods`` None when they could not be read (restarts unknown)."""
    counts = compute_replica_counts(job)
    return {
        "namespace": job.namespace,
        "name": job.name,
        "kind": job.kind,
        "state": compute_display_state(job),
        "reason": job_reason(job),
        "created": _created(job),
        "ready": sum(c[1] for c in counts),
        "total": sum(c[2] for c in counts),
        "replicas": format_replicas(job, counts),
        "restarts": None if pods is None else count_restarts(pods),
        "queue": detect_queue(job),
        "labels": dict(job.metadata.labels or {}),
    }


def select_rows(
    rows: Sequence[dict[str, Any]], kind: str | None, selector: list[Requirement] | None
) -> list[dict[str, Any]]:
    return [
        r
        for r in rows
        if (not kind or r["kind"].lower() == kind.lower())
        and (not selector or matches(r["labels"], selector))
    ]


def _container_summary(spec: Mapping[str, Any]) -> dict[str, Any]:
    containers = [c for c in spec.get("containers") or [] if isinstance(c, dict)]
    first = containers[0] if containers else {}
    command = [*(first.get("command") or []), *(first.get("args") or [])]
    return {
        "image": str(first.get("image") or ""),
        "command": " ".join(str(c) for c in command),
        "containers": [str(c.get("name") or "") for c in containers],
    }


def build_job_page(
    job: TrainingJob,
    pods: Sequence[Mapping[str, Any]] | None,
    events: Sequence[JobEvent] | None,
    now: float,
    errors: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """One job: the row, the spec in brief, conditions, each replica (phase, restarts, last exit, why
    it waits) and events. A part the reader may not read is None, with its error under ``errors``."""
    specs = [
        {
            "type": t,
            "replicas": rs.replicas,
            "restartPolicy": rs.restart_policy,
            **_container_summary(rs.pod_spec),
        }
        for t, rs in job.replica_specs.items()
    ]
    conditions = [
        {
            "type": c.type,
            "status": c.status,
            "reason": c.reason or "",
            "message": c.message or "",
            "lastTransitionTime": str(c.last_transition_time or ""),
        }
        for c in ((job.status.conditions if job.status else None) or [])
    ]
    views = [] if pods is None else build_replica_views(job, pods, now)
    replicas = [
        {
            "name": v.label,
            "type": v.rtype,
            "phase": v.phase,
            "restarts": v.restarts,
            "exitCode": v.last_exit.code if v.last_exit else None,
            "exitReason": v.last_exit.reason if v.last_exit else "",
            "waiting": v.waiting,
        }
        for v in views
    ]
    event_rows = [
        {
            "type": e.type,
            "reason": e.reason,
            "message": e.message,
            "count": e.count,
            "first": e.first_ts,
            "last": e.last_ts,
        }
        for e in events or []
    ]
    return {
        "job": build_job_row(job, pods),
        "specs": specs,
        "runPolicy": job.run_policy.model_dump(by_alias=True, exclude_none=True, mode="json"),
        "conditions": conditions,
        "replicas": None if pods is None else replicas,
        "events": None if events is None else event_rows,
        "errors": dict(errors or {}),
    }


def _number(value: str) -> float | None:
    try:
        out = float(value)
    except ValueError:
        return None
    return out if out == out and abs(out) != float("inf") else None


def build_progress(posts: Sequence[tuple[str, float, Mapping[str, Any]]]) -> dict[str, Any]:
    """The latest trainerStatus, and each numeric metric as a series per replica: ``{metric: {replica:
    [[x, y], …]}}``. x is the post's epoch or step metric when it has one (a later post for the same x
    replaces the earlier: one point per epoch per rank), else the replica's post count."""
    series: dict[str, dict[str, dict[float, float]]] = {}
    counts: dict[str, int] = {}
    latest: dict[str, Any] | None = None
    x_name = ""
    for replica, _ts, status in posts:
        latest = dict(status)
        metrics = {
            str(m.get("name")): str(m.get("value"))
            for m in status.get("metrics") or []
            if isinstance(m, Mapping)
        }
        counts[replica] = counts.get(replica, 0) + 1
        x: float | None = None
        for name in X_METRICS:
            if name in metrics and (x := _number(metrics[name])) is not None:
                x_name = x_name or name
                break
        if x is None:
            x = float(counts[replica])
        for name, value in metrics.items():
            y = _number(value)
            if name in NOT_PLOTTED or y is None:
                continue
            series.setdefault(name, {}).setdefault(replica or "?", {})[x] = y
    return {
        "latest": latest,
        "x": x_name or "report",
        "series": {
            name: {rep: sorted(points.items()) for rep, points in sorted(by_rep.items())}
            for name, by_rep in series.items()
        },
    }
