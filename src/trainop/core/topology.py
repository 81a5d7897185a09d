"""How replicas address each other; the backend supplies it, plugins read it (design.md "Topology").

Kubernetes: ``<job>-<rt>-<i>`` Service names (TF: FQDNs) and the ports declared in the template.
Local: 127.0.0.1 and a port allocated per replica. Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from trainop.api.common import TrainingJob


def replica_name(job_name: str, rtype: str, index: int) -> str:
    """``<job>-<rt>-<i>``, the pod and Service name of a replica (§3.1; ``/`` becomes ``-``)."""
    return f"{job_name}-{rtype.lower()}-{index}".replace("/", "-")


class Topology(Protocol):
    def host(self, job: TrainingJob, rtype: str, index: int, *, fqdn: bool = False) -> str:
        """The address peers use to reach replica ``rtype``/``index``."""
        ...

    def port(self, job: TrainingJob, rtype: str, index: int, declared: int) -> int:
        """The port replica ``rtype``/``index`` listens on; ``declared`` is the template's port."""
        ...


@dataclass(frozen=True, slots=True)
class ServiceTopology:
    """Kubernetes addressing: per-replica headless Services (§3.2, §3.5)."""

    cluster_domain: str = ""  # CUSTOM_CLUSTER_DOMAIN on the operator (TF FQDNs)

    def host(self, job: TrainingJob, rtype: str, index: int, *, fqdn: bool = False) -> str:
        name = replica_name(job.name, rtype, index)
        if not fqdn:
            return name
        h = f"{name}.{job.namespace}.svc"
        return f"{h}.{self.cluster_domain}" if self.cluster_domain else h

    def port(self, job: TrainingJob, rtype: str, index: int, declared: int) -> int:
        return declared


@dataclass(frozen=True, slots=True)
class LoopbackTopology:
    """One machine: every replica on 127.0.0.1 with its own port (allocated by the local backend)."""

    ports: dict[tuple[str, int], int]  # (canonical replica type, index) -> port
    address: str = "127.0.0.1"

    def host(self, job: TrainingJob, rtype: str, index: int, *, fqdn: bool = False) -> str:
        return self.address

    def port(self, job: TrainingJob, rtype: str, index: int, declared: int) -> int:
        return self.ports.get((rtype, index), declared)
