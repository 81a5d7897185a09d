"""What a backend saw for one job: the job and the objects it owns, as Kubernetes JSON dicts.

Both backends fill it the same way (the local backend writes pod-shaped dicts for its processes), so
one pure core decides for both. No I/O here.

What the core may read of an owned pod or Service: its metadata, its status, and the scalar fields of
its spec (``nodeName``, ``restartPolicy``, ``schedulerName``, ``clusterIP``, ...). The Kubernetes
backend's cache keeps nothing else of their spec (``slim_owned`` in backends/kubernetes/cache.py, to
hold thousands of pods in little memory): a rule that reads containers, volumes or tolerations of an
observed pod would see none there. Desired pods come from the job's templates, never from these.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from trainop.api.common import TrainingJob


@dataclass(slots=True)
class Observed:
    job: TrainingJob
    # Pods and Services controlled by the job (ownerReference controller uid == job uid).
    pods: list[dict[str, Any]] = field(default_factory=list)
    services: list[dict[str, Any]] = field(default_factory=list)
    # Other owned objects by Kubernetes kind: "ConfigMap", "ServiceAccount", "Role", "RoleBinding".
    extras: dict[str, list[dict[str, Any]]] = field(default_factory=dict)


def detect_drift(desired: dict[str, Any], current: dict[str, Any]) -> bool:
    """Whether an owned extra object must be replaced: its ``data`` or ``rules`` differ (MPI's
    ConfigMap and Role, §3.9), or a field it sets under ``spec`` differs (the HPA, §3.4). Fields the API
    server fills in (defaults, metadata, status) are not compared."""
    for key in ("data", "rules"):
        if key in desired and desired[key] != current.get(key):
            return True
    if "spec" in desired:
        return not _contains(current.get("spec"), desired["spec"])
    return False


def _contains(have: Any, want: Any) -> bool:
    """``want`` is a subset of ``have``: dict keys recursively, lists element by element."""
    if isinstance(want, dict):
        return isinstance(have, dict) and all(k in have and _contains(have[k], v) for k, v in want.items())
    if isinstance(want, list):
        return (
            isinstance(have, list)
            and len(have) == len(want)
            and all(_contains(h, w) for h, w in zip(have, want, strict=True))
        )
    return bool(have == want)
