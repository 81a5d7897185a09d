"""What a backend saw for one job: the job and the objects it owns, as Kubernetes JSON dicts.

Both backends fill it the same way (the local backend writes pod-shaped dicts for its processes), so
one pure core decides for both. No I/O here.
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
