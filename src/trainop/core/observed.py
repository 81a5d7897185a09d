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
