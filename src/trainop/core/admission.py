"""Local gang admission (issue 11): whether a job waiting for GPUs may start now, its whole gang at once.

The local backend has no gang scheduler, so it applies §5's meaning itself: the ``minMember`` pods of a
job (``schedulingPolicy.minAvailable``, else every replica) get their GPUs together or not at all, and
waiting jobs go in priority order, then queue, then creation time. Pure: the store hands in the queue
and the GPUs held, and applies the answer in the same transaction. No I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from trainop.api.common import TrainingJob
from trainop.api.constants import ENV_TRAINOP_PRIORITY_CLASSES, RESOURCE_NVIDIA_GPU
from trainop.core.gang import canonical_rank, compute_min_member

# Kubernetes' two built-in PriorityClasses (scheduling.k8s.io/v1, created by every API server); any
# other name means something only where an admin created it, so locally it maps through
# TRAINOP_PRIORITY_CLASSES, else 0: the value of a pod without a PriorityClass and of an unknown one
# in upstream's minResources ordering (§5).
SYSTEM_PRIORITY_CLASSES: Mapping[str, int] = {
    "system-cluster-critical": 2_000_000_000,
    "system-node-critical": 2_000_001_000,
}
# Volcano's default queue (§5): a job without schedulingPolicy.queue waits in it.
DEFAULT_QUEUE = "default"


@dataclass(frozen=True, slots=True)
class GangRequest:
    """What one job asks of the machine: ``gpus`` GPUs at once for its ``pods`` gang pods."""

    uid: str
    job: str  # namespace/name, as messages name it
    pods: int
    gpus: int
    priority: int
    priority_class: str  # "" when the job names none
    queue: str
    created_at: float
    error: str = ""  # the job cannot be ranked (a malformed TRAINOP_PRIORITY_CLASSES): it waits, saying why


@dataclass(frozen=True, slots=True)
class Admission:
    admit: bool
    message: str = ""  # why the gang waits; "" when admitted


def parse_priority_classes(text: str | None) -> tuple[dict[str, int], str]:
    """``TRAINOP_PRIORITY_CLASSES="high=1000,low=-10"`` → ({name: value}, ""), or ({}, what is wrong)."""
    classes: dict[str, int] = {}
    for entry in (text or "").split(","):
        if not entry.strip():
            continue
        name, sep, value = entry.partition("=")
        try:
            if not sep or not name.strip():
                raise ValueError
            classes[name.strip()] = int(value.strip())
        except ValueError:
            return {}, (
                f'{ENV_TRAINOP_PRIORITY_CLASSES}: "{entry.strip()}" is not name=integer; write it like '
                f"{ENV_TRAINOP_PRIORITY_CLASSES}=high=1000,low=-10 and resubmit the job"
            )
    return classes, ""


def compute_priority(priority_class: str | None, classes: Mapping[str, int]) -> int:
    """A PriorityClass name's value on this machine: the local mapping, then Kubernetes' system
    classes, else 0 (no class, or one this machine does not define)."""
    if not priority_class:
        return 0
    if priority_class in classes:
        return classes[priority_class]
    return SYSTEM_PRIORITY_CLASSES.get(priority_class, 0)


def _gpu_limit(container: Any) -> int:
    """A container's ``resources.limits["nvidia.com/gpu"]``, as the local runner assigns GPUs."""
    resources = container.get("resources") if isinstance(container, dict) else None
    limits = resources.get("limits") if isinstance(resources, dict) else None
    value = limits.get(RESOURCE_NVIDIA_GPU) if isinstance(limits, dict) else None
    if value is None:
        return 0
    try:
        n = Decimal(str(value))
    except InvalidOperation:
        return 0
    return max(int(n), 0)


def compute_gang_gpus(job: TrainingJob) -> tuple[int, int]:
    """(pods, GPUs) of the gang of ``job`` (defaulted): ``minMember`` pods (§5), and the GPUs they need
    at once: ``schedulingPolicy.minResources["nvidia.com/gpu"]`` if given, else the limits of the first
    ``minMember`` pods, the replica types in the kind's order (Master, Chief, Launcher first), the order
    core.gang's computed minResources uses."""
    min_member = compute_min_member(job)
    policy = job.run_policy.scheduling_policy
    if policy is not None and policy.min_resources is not None:
        return min_member, _gpu_limit({"resources": {"limits": policy.min_resources}})
    rank = canonical_rank(job)
    order = sorted(job.replica_specs.items(), key=lambda kv: rank(kv[0]))
    gpus = counted = 0
    for _, spec in order:
        per_pod = sum(_gpu_limit(c) for c in spec.containers)
        take = min(1 if spec.replicas is None else max(int(spec.replicas), 0), max(min_member - counted, 0))
        counted += take
        gpus += take * per_pod
    return min_member, gpus


def build_gang_request(
    job: TrainingJob, uid: str, created_at: float, host_env: Mapping[str, str]
) -> GangRequest:
    """The request of ``job`` (defaulted) as submitted from ``host_env`` (its TRAINOP_PRIORITY_CLASSES)."""
    pods, gpus = compute_gang_gpus(job)
    policy = job.run_policy.scheduling_policy
    priority_class = (policy.priority_class if policy is not None else None) or ""
    classes, error = parse_priority_classes(host_env.get(ENV_TRAINOP_PRIORITY_CLASSES))
    return GangRequest(
        uid=uid,
        job=f"{job.namespace}/{job.name}",
        pods=pods,
        gpus=gpus,
        priority=compute_priority(priority_class, classes),
        priority_class=priority_class,
        queue=(policy.queue if policy is not None else None) or DEFAULT_QUEUE,
        created_at=created_at,
        error=error,
    )


def detect_ahead(other: GangRequest, job: GangRequest) -> bool:
    """Whether ``other`` is admitted before ``job``: a higher priority always; at equal priority, an
    earlier job of the same queue (jobs of different queues at one priority do not wait for each other)."""
    if other.priority != job.priority:
        return other.priority > job.priority
    return other.queue == job.queue and (other.created_at, other.uid) < (job.created_at, job.uid)


def _gpus(n: int) -> str:
    return f"{n} GPU" if n == 1 else f"{n} GPUs"


def _describe_rank(r: GangRequest) -> str:
    cls = f"priorityClass {r.priority_class} = {r.priority}" if r.priority_class else f"priority {r.priority}"
    return f"{r.job} ({cls}, queue {r.queue})"


def build_queue_order(waiting: Sequence[GangRequest]) -> list[GangRequest]:
    """The order the queue admits jobs in: priority (highest first), then queue, then creation."""
    return sorted(waiting, key=lambda w: (-w.priority, w.queue, w.created_at, w.uid))


def compute_admission(
    job: GangRequest,
    waiting: Sequence[GangRequest],
    inventory: Sequence[str],
    held: Mapping[str, str],
) -> Admission:
    """Whether ``job``'s gang starts now. ``waiting``: the other jobs not yet admitted; ``held``: GPU id →
    the job (namespace/name) holding it, ``job``'s own GPUs left out. Admitted when no job ahead of it
    (``detect_ahead``) still waits and enough GPUs are free for the whole gang; a job whose gang exceeds
    the machine waits forever and holds nobody up. The message is a clause that follows a pod's own
    "pod X needs N" (backends/local/gang.py), so that it reads as the scheduler's refusal does."""
    gang = f"gang of {job.pods} pod{'s' if job.pods != 1 else ''} needs {_gpus(job.gpus)} at once"
    if job.error:
        return Admission(False, f"{gang} and cannot be queued: {job.error}")
    if job.gpus > len(inventory):
        return Admission(
            False,
            f"{gang}, more than this machine has ({len(inventory)}): lower spec.runPolicy.schedulingPolicy."
            "minAvailable or the replicas' nvidia.com/gpu limits",
        )
    ahead = build_queue_order(
        [
            w
            for w in waiting
            if w.uid != job.uid and not w.error and w.gpus <= len(inventory) and detect_ahead(w, job)
        ]
    )
    if ahead:
        first = ahead[0]
        return Admission(
            False,
            f"{gang} and waits behind {_describe_rank(first)}, which needs {_gpus(first.gpus)} and starts "
            "first",
        )
    free = [g for g in inventory if g not in held]
    if job.gpus > len(free):
        owners: dict[str, int] = {}
        for g in inventory:
            if g in held:
                owners[held[g]] = owners.get(held[g], 0) + 1
        by = ", ".join(f"{owner}: {n}" for owner, n in sorted(owners.items()))
        return Admission(
            False,
            f"{gang}, {len(free)} of {len(inventory)} are free (held by {by}); its pods start together "
            "when enough are released",
        )
    return Admission(True)
