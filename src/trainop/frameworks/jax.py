"""JAXJob plugin: the coordinator env of §3.8 (Worker-0 coordinates) and the Worker-only status rule
of §4.4. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from types import MappingProxyType
from typing import Any, ClassVar

from trainop.api.common import TrainingJob
from trainop.api.constants import (
    ENV_COORDINATOR_ADDRESS,
    ENV_COORDINATOR_PORT,
    ENV_JAX_COORDINATOR_BIND_ADDRESS,
    ENV_NUM_PROCESSES,
    ENV_PROCESS_ID,
)
from trainop.core.topology import Topology
from trainop.frameworks.base import ConditionUpdate, ReplicaCounts
from trainop.frameworks.generic import (
    BasePlugin,
    env_var,
    generic_failure,
    peer_port,
    python_unbuffered,
    running_update,
    succeeded_update,
    total_replicas,
)

WORKER = "Worker"


class JAXPlugin(BasePlugin):
    """Capability: ``LocalEnv`` (the coordinator binds the loopback address)."""

    kind: ClassVar[str] = "JAXJob"
    local_noop_helpers: Mapping[str, str] = MappingProxyType({})

    def is_master_role(self, job: TrainingJob, rtype: str, index: int) -> bool:
        return index == 0  # §3.1: Worker-0

    def build_env(self, job: TrainingJob, rtype: str, index: int, topology: Topology) -> list[dict[str, Any]]:
        """§3.8: PYTHONUNBUFFERED, COORDINATOR_PORT, COORDINATOR_ADDRESS, NUM_PROCESSES, PROCESS_ID."""
        return [
            python_unbuffered(),
            env_var(ENV_COORDINATOR_PORT, str(peer_port(job, topology, self.info, WORKER, 0))),
            env_var(ENV_COORDINATOR_ADDRESS, topology.host(job, WORKER, 0)),
            env_var(ENV_NUM_PROCESSES, str(total_replicas(job))),
            env_var(ENV_PROCESS_ID, str(index)),
        ]

    def build_loopback_env(self, env: Mapping[str, str], pod_ip: str) -> dict[str, str]:
        """Process 0's coordinator service binds [::]:<port> unless told otherwise (§3.8's port)."""
        port = env.get(ENV_COORDINATOR_PORT)
        if port is None or ENV_JAX_COORDINATOR_BIND_ADDRESS in env:
            return {}
        return {ENV_JAX_COORDINATOR_BIND_ADDRESS: f"{pod_ip}:{port}"}

    def build_local_env(
        self, pod: Mapping[str, Any], env: Mapping[str, str], listed: Collection[str], pod_ip: str
    ) -> dict[str, str]:
        return {}

    def compute_conditions(
        self, job: TrainingJob, counts: Mapping[str, ReplicaCounts], pods: list[dict[str, Any]]
    ) -> list[ConditionUpdate]:
        """§4.4 JAX: all workers succeeded → Succeeded, else any running → Running (messages name
        ``<ns>/<name>``); failure as PyTorch's."""
        out: list[ConditionUpdate] = []
        for rtype in self.status_order(job):
            c = self.counts_for(counts, rtype, job.replica_specs.get(rtype))
            if rtype == WORKER:
                if c.expected == 0:
                    out.append(succeeded_update(job, namespaced=True))
                elif c.active > 0:
                    out.append(running_update(job, namespaced=True))
            out += generic_failure(job, rtype, c)
        return out
