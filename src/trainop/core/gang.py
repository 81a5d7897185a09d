"""Gang scheduling (contract §5): the PodGroup a job needs, and what it changes on the job's pods.

Volcano (``scheduling.volcano.sh/v1beta1``) or scheduler-plugins (``scheduling.x-k8s.io/v1alpha1``)
PodGroups, or YuniKorn's task groups (no object: labels and annotations on every pod), chosen by
``--gang-scheduler-name``. Pure: builds dicts and decides; the backend creates, updates and deletes
the objects through the Plan. No I/O, no clock.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from trainop.api.common import TrainingJob
from trainop.api.kinds import KIND_INFO
from trainop.core.plan import Event

POD_GROUP_KIND = "PodGroup"
VOLCANO = "volcano"
VOLCANO_API_VERSION = "scheduling.volcano.sh/v1beta1"
PLUGINS_API_VERSION = "scheduling.x-k8s.io/v1alpha1"
# Pod decoration (§5): Volcano reads annotations, scheduler-plugins' Coscheduling a label.
ANNOTATION_VOLCANO_GROUP = "scheduling.k8s.io/group-name"
ANNOTATION_VOLCANO_TASK = "volcano.sh/task-spec"
LABEL_PLUGINS_POD_GROUP = "scheduling.x-k8s.io/pod-group"
VOLCANO_DEFAULT_QUEUE = "default"
# Volcano's PodGroup phases: pods are created only once the group left Pending (§5).
PHASE_PENDING = "Pending"

# YuniKorn (issue 25; upstream v1 has no YuniKorn code). What its scheduler reads from a pod:
# apache/yunikorn-site docs/user_guide/labels_and_annotations_in_yunikorn.md (1.6+: the canonical
# app-id and queue labels) and docs/user_guide/gang_scheduling.md (task groups: every pod carries the
# full list, and its own group's name); yunikorn-k8shim pkg/cache/gang_utils.go
# (GetTaskGroupsFromAnnotation) refuses a group without a name or minResource, or with minMember < 1.
YUNIKORN = "yunikorn"
LABEL_YUNIKORN_APP_ID = "yunikorn.apache.org/app-id"
LABEL_YUNIKORN_QUEUE = "yunikorn.apache.org/queue"
ANNOTATION_YUNIKORN_TASK_GROUP = "yunikorn.apache.org/task-group-name"
ANNOTATION_YUNIKORN_TASK_GROUPS = "yunikorn.apache.org/task-groups"
ANNOTATION_YUNIKORN_POLICY = "yunikorn.apache.org/schedulingPolicyParameters"
# The fields of a task group taken from its replica type's pod template, as YuniKorn names them.
_TASK_GROUP_TEMPLATE_FIELDS = ("nodeSelector", "tolerations", "affinity", "topologySpreadConstraints")

MESSAGE_OTHER_SCHEDULER = (
    "Another scheduler is specified when gang-scheduling is enabled and it will not be overwritten"
)


@dataclass(frozen=True, slots=True)
class GangScheduler:
    """The operator's ``--gang-scheduler-name``: ``volcano`` or ``yunikorn`` (any case), or a
    scheduler-plugins scheduler's name (§5)."""

    scheduler_name: str

    @classmethod
    def from_flag(cls, value: str) -> GangScheduler | None:
        value = value.strip()
        if not value:
            return None
        return cls(value.lower() if value.lower() in (VOLCANO, YUNIKORN) else value)

    @property
    def volcano(self) -> bool:
        return self.scheduler_name == VOLCANO

    @property
    def yunikorn(self) -> bool:
        return self.scheduler_name == YUNIKORN

    @property
    def pod_group(self) -> bool:
        """Whether the gang is a PodGroup object (Volcano, scheduler-plugins); YuniKorn reads its gang
        from the pods themselves."""
        return not self.yunikorn

    @property
    def api_version(self) -> str:
        return VOLCANO_API_VERSION if self.volcano else PLUGINS_API_VERSION

    @property
    def crd_name(self) -> str:
        return f"podgroups.{self.api_version.split('/')[0]}"


def compute_min_member(job: TrainingJob) -> int:
    """``schedulingPolicy.minAvailable``, else the total replicas (nil counts as 1), §5."""
    policy = job.run_policy.scheduling_policy
    if policy is not None and policy.min_available is not None:
        return int(policy.min_available)
    return sum(1 if spec.replicas is None else int(spec.replicas) for spec in job.replica_specs.values())


def compute_min_resources(
    job: TrainingJob, min_member: int, priorities: dict[str, int] | None = None
) -> dict[str, str] | None:
    """``schedulingPolicy.minResources``, else the requests of the first ``min_member`` pods, the
    replica types taken highest PriorityClass value first (§5).

    Upstream means exactly this, but its PriorityClass lister is never started, so every value is 0 and
    Go's map order picks an arbitrary subset of types (§9.10). Here the values come from
    ``priorities`` (PriorityClass name → value; unknown = 0) and ties keep the kind's canonical order
    (Master, Chief, Launcher before workers), so the result is deterministic and counts the pods a job
    cannot start without first. Each pod counts its containers' ``requests`` (``limits`` when a
    container has no requests), as upstream.
    """
    policy = job.run_policy.scheduling_policy
    if policy is not None and policy.min_resources is not None:
        return {str(k): str(v) for k, v in policy.min_resources.items()}
    priorities = priorities or {}
    canonical = canonical_rank(job)
    order = sorted(
        job.replica_specs.items(),
        key=lambda item: (
            -priorities.get(str(item[1].pod_spec.get("priorityClassName") or ""), 0),
            canonical(item[0]),
        ),
    )
    totals: dict[str, list[tuple[Decimal, str]]] = {}
    counted = 0
    for _, spec in order:
        replicas = 1 if spec.replicas is None else int(spec.replicas)
        for _ in range(min(replicas, min_member - counted)):
            counted += 1
            _add_requests(totals, spec.containers)
    if not totals:
        return None
    return {name: _format_sum(values) for name, values in totals.items()}


def canonical_rank(job: TrainingJob) -> Callable[[str], int]:
    """A replica type's place in the kind's canonical order (``KindInfo.replica_types``); others last."""
    canonical = {t.lower(): i for i, t in enumerate(KIND_INFO[job.kind].replica_types)}
    return lambda rtype: canonical.get(rtype.lower(), len(canonical))


def _add_requests(totals: dict[str, list[tuple[Decimal, str]]], containers: list[dict[str, Any]]) -> None:
    """One pod's containers' ``requests`` (``limits`` for a container without requests), as upstream."""
    for container in containers:
        res = container.get("resources") or {}
        requests = res.get("requests")
        for name, value in (requests if requests is not None else res.get("limits") or {}).items():
            totals.setdefault(str(name), []).append((compute_quantity(str(value)), str(value)))


def build_pod_group(
    job: TrainingJob,
    gang: GangScheduler,
    existing: dict[str, Any] | None = None,
    priorities: dict[str, int] | None = None,
) -> dict[str, Any]:
    """The PodGroup ``<job>`` for ``job`` (defaulted), §5. Annotations are the job's (upstream copies
    them on create; an update keeps what the existing group carries). The caller adds the namespace
    and the controller ownerReference, as for every owned object."""
    policy = job.run_policy.scheduling_policy
    min_member = compute_min_member(job)
    min_resources = compute_min_resources(job, min_member, priorities)
    spec: dict[str, Any] = {"minMember": min_member}
    if gang.volcano:
        existing_queue = ((existing or {}).get("spec") or {}).get("queue")  # §5: a non-empty one wins
        queue = existing_queue or (policy.queue if policy is not None else None) or VOLCANO_DEFAULT_QUEUE
        spec["queue"] = str(queue)
        if policy is not None and policy.priority_class:
            spec["priorityClassName"] = policy.priority_class
    elif policy is not None and policy.schedule_timeout_seconds is not None:
        spec["scheduleTimeoutSeconds"] = int(policy.schedule_timeout_seconds)
    if min_resources is not None:
        spec["minResources"] = min_resources
    meta: dict[str, Any] = {"name": job.name, "namespace": job.namespace}
    annotations = existing.get("metadata", {}).get("annotations") if existing else job.metadata.annotations
    if annotations:
        meta["annotations"] = dict(annotations)
    return {"apiVersion": gang.api_version, "kind": POD_GROUP_KIND, "metadata": meta, "spec": spec}


def compute_priorities(priority_classes: list[dict[str, Any]]) -> dict[str, int]:
    """PriorityClass name → value, from the PriorityClass objects the backend observed."""
    names = [((pc.get("metadata") or {}).get("name"), pc) for pc in priority_classes]
    return {str(name): int(pc.get("value") or 0) for name, pc in names if name}


def detect_pod_group_admitted(pod_group: dict[str, Any] | None) -> bool:
    """Volcano: pods may be created once the PodGroup's phase is set and not Pending (§5)."""
    if pod_group is None:
        return False
    phase = (pod_group.get("status") or {}).get("phase")
    return bool(phase) and phase != PHASE_PENDING


def build_pod_decoration(
    pod: dict[str, Any], gang: GangScheduler, job: TrainingJob, rtype: str
) -> Event | None:
    """Set the gang scheduler and the group's annotation/label on a fresh ``pod`` (§5). Returns the
    Warning upstream records when the template names another scheduler (which is kept)."""
    spec = pod.setdefault("spec", {})
    meta = pod.setdefault("metadata", {})
    event: Event | None = None
    current = spec.get("schedulerName")
    if not current:
        spec["schedulerName"] = gang.scheduler_name
    elif current != gang.scheduler_name:
        reason = KIND_INFO[job.kind].scheduler_name_reason  # MPI spells it its own way (§5)
        event = Event("Warning", reason, MESSAGE_OTHER_SCHEDULER, key=f"{reason}/{rtype}")
    if gang.volcano:
        annotations = meta.setdefault("annotations", {})
        annotations[ANNOTATION_VOLCANO_GROUP] = job.name
        annotations[ANNOTATION_VOLCANO_TASK] = rtype.lower()
    elif gang.yunikorn:
        labels, annotations = build_yunikorn_metadata(job, rtype)
        meta.setdefault("labels", {}).update(labels)
        meta.setdefault("annotations", {}).update(annotations)
    else:
        meta.setdefault("labels", {})[LABEL_PLUGINS_POD_GROUP] = job.name
    return event


# --- YuniKorn ---------------------------------------------------------------------------------------


def compute_task_group_members(job: TrainingJob) -> dict[str, int]:
    """minMember of each replica type's task group (``job`` defaulted): its replicas; with
    ``schedulingPolicy.minAvailable`` the job's minimum is handed out in the kind's canonical replica
    type order (``KindInfo.replica_types``: Master before Worker, PS and Worker before Chief), so a type
    may get fewer than its replicas, or 0."""
    order = sorted(job.replica_specs, key=canonical_rank(job))
    left = compute_min_member(job)
    members: dict[str, int] = {}
    for rtype in order:
        spec = job.replica_specs[rtype]
        replicas = 1 if spec.replicas is None else int(spec.replicas)
        members[rtype] = min(replicas, max(left, 0))
        left -= members[rtype]
    return members


def compute_pod_requests(containers: list[dict[str, Any]]) -> dict[str, str]:
    """One pod's resources: its containers' ``requests`` summed (``limits`` for a container without
    requests, as a PodGroup's minResources counts them)."""
    totals: dict[str, list[tuple[Decimal, str]]] = {}
    _add_requests(totals, containers)
    return {name: _format_sum(values) for name, values in totals.items()}


def build_task_groups(job: TrainingJob) -> list[dict[str, Any]]:
    """YuniKorn's task groups for ``job`` (defaulted): one per replica type with a non-zero minMember,
    named after the type in lower case, in the kind's canonical order; ``minResource`` is one pod's
    requests (YuniKorn sizes each placeholder pod with it) and the template's nodeSelector,
    tolerations, affinity and topologySpreadConstraints, so the placeholders land where the pods can."""
    members = compute_task_group_members(job)
    groups: list[dict[str, Any]] = []
    for rtype, n in members.items():
        if n < 1:
            continue  # YuniKorn refuses a group with minMember 0; such pods join the app ungrouped
        spec = job.replica_specs[rtype]
        group: dict[str, Any] = {
            "name": rtype.lower(),
            "minMember": n,
            "minResource": compute_pod_requests(spec.containers),
        }
        for key in _TASK_GROUP_TEMPLATE_FIELDS:
            if spec.pod_spec.get(key):
                group[key] = spec.pod_spec[key]
        groups.append(group)
    return groups


def build_yunikorn_metadata(job: TrainingJob, rtype: str) -> tuple[dict[str, str], dict[str, str]]:
    """(labels, annotations) YuniKorn reads on a pod of ``rtype``: the application (the job's uid,
    unique and a valid label value), its queue (``schedulingPolicy.queue``, when set), every task group
    and the pod's own (when its type has one), and ``placeholderTimeoutInSeconds`` from
    ``schedulingPolicy.scheduleTimeoutSeconds``."""
    policy = job.run_policy.scheduling_policy
    labels = {LABEL_YUNIKORN_APP_ID: job.metadata.uid or job.name}
    if policy is not None and policy.queue:
        labels[LABEL_YUNIKORN_QUEUE] = policy.queue
    groups = build_task_groups(job)
    annotations: dict[str, str] = {}
    if groups:
        annotations[ANNOTATION_YUNIKORN_TASK_GROUPS] = json.dumps(groups, separators=(",", ":"))
        if any(g["name"] == rtype.lower() for g in groups):
            annotations[ANNOTATION_YUNIKORN_TASK_GROUP] = rtype.lower()
    if policy is not None and policy.schedule_timeout_seconds is not None:
        annotations[ANNOTATION_YUNIKORN_POLICY] = (
            f"placeholderTimeoutInSeconds={int(policy.schedule_timeout_seconds)}"
        )
    return labels, annotations


# --- quantities (the few Kubernetes forms requests use) ----------------------------------------------

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "": Decimal(1),
            "k": Decimal(10**3), "M": Decimal(10**6), "G": Decimal(10**9), "T": Decimal(10**12),
            "P": Decimal(10**15), "E": Decimal(10**18)}  # fmt: skip


def compute_quantity(text: str) -> Decimal:
    """A Kubernetes quantity (``500m``, ``2Gi``, ``4``) as a Decimal; ValueError when malformed."""
    text = text.strip()
    try:
        for suffix, factor in _BINARY.items():
            if text.endswith(suffix):
                return Decimal(text[: -len(suffix)]) * factor
        if text and text[-1] in _DECIMAL and text[-1] != "":
            return Decimal(text[:-1]) * _DECIMAL[text[-1]]
        return Decimal(text)
    except InvalidOperation as exc:
        raise ValueError(f"invalid resource quantity {text!r}") from exc


def _format_sum(values: list[tuple[Decimal, str]]) -> str:
    """The sum in the form of the first addend, as Go's Quantity.Add keeps its receiver's format:
    binary (``Gi``/``Mi``/``Ki``) when that divides exactly, else milli-units or a plain integer."""
    total = sum((v for v, _ in values), Decimal(0))
    first = values[0][1]
    if any(first.endswith(s) for s in _BINARY) and total == total.to_integral_value():
        for suffix in ("Ei", "Pi", "Ti", "Gi", "Mi", "Ki"):
            if total % _BINARY[suffix] == 0 and total >= _BINARY[suffix]:
                return f"{int(total / _BINARY[suffix])}{suffix}"
        return str(int(total))
    if total == total.to_integral_value():
        return str(int(total))
    milli = total * 1000
    if milli == milli.to_integral_value():
        return f"{int(milli)}m"
    return f"{int((total * 10**9).to_integral_value())}n"
