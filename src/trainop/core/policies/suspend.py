"""suspend / resume (contract §4.10): what a suspended job deletes. Pure."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from trainop.core.pods import detect_deleting, detect_name

# Extra objects deleted while suspended: upstream deletes the PyTorch HPA (and the PodGroup) too.
SUSPEND_DELETES_EXTRA_KINDS = ("HorizontalPodAutoscaler",)


def compute_suspend_deletions(
    pods: Iterable[dict[str, Any]],
    services: Iterable[dict[str, Any]],
    extras: Mapping[str, list[dict[str, Any]]],
) -> list[tuple[str, str]]:
    """Every pod and Service, whatever cleanPodPolicy says, plus the HPA; objects already
    terminating are skipped so repeated passes plan nothing new."""
    out = [("Pod", detect_name(p)) for p in pods if not detect_deleting(p)]
    out += [("Service", detect_name(s)) for s in services if not detect_deleting(s)]
    for kind in SUSPEND_DELETES_EXTRA_KINDS:
        out += [(kind, detect_name(o)) for o in extras.get(kind, ()) if not detect_deleting(o)]
    return out
