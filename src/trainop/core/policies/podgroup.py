"""Gang scheduling's steps in a reconcile pass (§5): the PodGroup created, replaced when its spec
drifted, deleted on finish and suspend, and each new pod decorated for the scheduler. ``core/gang.py``
builds the objects; these only plan, through the pass's state. Pure.
"""

from __future__ import annotations

from typing import Any

from trainop.core import events as ev
from trainop.core.gang import (
    POD_GROUP_KIND,
    build_pod_decoration,
    build_pod_group,
    compute_priorities,
    detect_pod_group_admitted,
)
from trainop.core.naming import build_owner_reference
from trainop.core.observed import detect_drift
from trainop.core.pass_state import PassState
from trainop.core.plan import UpdateObject
from trainop.core.pods import detect_deleting, detect_name


def _pod_group(p: PassState) -> dict[str, Any] | None:
    return next((o for o in p.observed.extras.get(POD_GROUP_KIND, ()) if detect_name(o) == p.name), None)


def reconcile_pod_group(p: PassState) -> bool:
    """Create the PodGroup, or replace it when its spec drifted (minAvailable patched); False while
    Volcano has not admitted it (then no pod is created this pass; its phase change requeues)."""
    assert p.gang is not None
    current = _pod_group(p)
    priorities = compute_priorities(p.observed.extras.get("PriorityClass", []))
    desired = build_pod_group(p.job, p.gang, current, priorities)
    desired["metadata"]["ownerReferences"] = [build_owner_reference(p.job)]
    if current is None:
        p.act(ev.build_create_action(p.info, desired))
    elif detect_drift(desired, current):
        if "status" in current:  # kept when the CRD has no status subresource
            desired["status"] = current["status"]
        # Custom resources allow no unconditional update; a conflict retries on the next pass.
        rv = (current.get("metadata") or {}).get("resourceVersion")
        if rv:
            desired["metadata"]["resourceVersion"] = rv
        p.act(UpdateObject(desired))
    return not p.gang.volcano or detect_pod_group_admitted(current)


def delete_pod_group(p: PassState, *, finished: bool) -> None:
    """On finish and on suspend (§4.8, §4.10); deletion of the job leaves it to ownerRef GC."""
    if p.gang is None or not p.gang.pod_group:  # YuniKorn: task groups on the pods, no PodGroup
        return
    current = _pod_group(p)
    if current is None or detect_deleting(current) or (POD_GROUP_KIND, p.name) in p.deleted:
        return
    if finished:
        p.event("Normal", "JobTerminated", "Job has been terminated. Deleting PodGroup")
    p.delete(POD_GROUP_KIND, p.name)


def decorate_for_gang(p: PassState, pod: dict[str, Any], rtype: str) -> None:
    assert p.gang is not None
    warning = build_pod_decoration(pod, p.gang, p.job, rtype)
    if warning is not None:
        p.plan.events.append(warning)
