"""cleanPodPolicy (contract §4.8): what a finished job deletes, on every reconcile once it finished.

Pure: returns the (kind, name) pairs to delete; terminating pods are left alone.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from trainop.api.constants import CLEAN_ALL, CLEAN_RUNNING
from trainop.core.pods import PHASE_PENDING, PHASE_RUNNING, detect_deleting, detect_name, detect_phase


def compute_cleanup(
    policy: str | None, pods: Iterable[dict[str, Any]], services: Iterable[dict[str, Any]]
) -> list[tuple[str, str]]:
    """``All``: every pod and its same-named Service. ``Running``: pods Running or Pending and their
    Services. ``None``: nothing. Services are named after their pod (§3.2); other Services stay until
    the job is deleted (owner-reference GC), as upstream. A pod already terminating is not deleted
    again, but its Service still goes, so it is not left behind once the pod is gone."""
    if policy not in (CLEAN_ALL, CLEAN_RUNNING):
        return []
    out: list[tuple[str, str]] = []
    names: set[str] = set()
    for pod in pods:
        if policy == CLEAN_RUNNING and detect_phase(pod) not in (PHASE_RUNNING, PHASE_PENDING):
            continue
        name = detect_name(pod)
        names.add(name)
        if not detect_deleting(pod):
            out.append(("Pod", name))
    for svc in services:
        name = detect_name(svc)
        if name in names and not detect_deleting(svc):
            out.append(("Service", name))
    return out
