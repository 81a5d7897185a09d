"""XGBoostJob plugin: the tracker env of §3.6 and XGBoost's own success/failure rule (§4.4).

The failure rule keeps upstream's behaviour on purpose (§9.7): ANY failed pod fails the job unless that
type's restartPolicy is ExitCode, so OnFailure and Always fail too (see ``compute_conditions``).
Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from trainop.api.common import TrainingJob
from trainop.api.constants import (
    COND_RUNNING,
    ENV_MASTER_ADDR,
    ENV_MASTER_PORT,
    ENV_RANK,
    ENV_WORKER_ADDRS,
    ENV_WORKER_PORT,
    ENV_WORLD_SIZE,
    RESTART_EXIT_CODE,
)
from trainop.core.topology import Topology
from trainop.frameworks.base import ConditionUpdate, ReplicaCounts
from trainop.frameworks.generic import (
    BasePlugin,
    env_var,
    existing_condition,
    failed_update,
    peer_port,
    python_unbuffered,
    replicas_of,
    restarting_update,
    running_update,
    succeeded_update,
    total_replicas,
)

MASTER = "Master"
WORKER = "Worker"


class XGBoostPlugin(BasePlugin):
    kind: ClassVar[str] = "XGBoostJob"

    def is_master_role(self, job: TrainingJob, rtype: str, index: int) -> bool:
        return rtype == MASTER  # §3.1: every Master pod

    def build_env(self, job: TrainingJob, rtype: str, index: int, topology: Topology) -> list[dict[str, Any]]:
        """§3.6 in upstream's order: MASTER_PORT, MASTER_ADDR, WORLD_SIZE, RANK, PYTHONUNBUFFERED, then
        WORKER_PORT and WORKER_ADDRS when N > 1.

        Upstream lists N-1 worker addresses (it assumes one Master). On the local backend every
        replica has its own port but WORKER_PORT is one value: Worker-0's."""
        n = total_replicas(job)
        rank = index + replicas_of(job, MASTER) if rtype == WORKER else index
        env = [
            env_var(ENV_MASTER_PORT, str(peer_port(job, topology, self.info, MASTER, 0))),
            env_var(ENV_MASTER_ADDR, topology.host(job, MASTER, 0)),
            env_var(ENV_WORLD_SIZE, str(n)),
            env_var(ENV_RANK, str(rank)),
            python_unbuffered(),
        ]
        if n > 1:
            addrs = ",".join(topology.host(job, WORKER, i) for i in range(n - 1))
            env += [
                env_var(ENV_WORKER_PORT, str(peer_port(job, topology, self.info, WORKER, 0))),
                env_var(ENV_WORKER_ADDRS, addrs),
            ]
        return env

    def compute_conditions(
        self, job: TrainingJob, counts: Mapping[str, ReplicaCounts], pods: list[dict[str, Any]]
    ) -> list[ConditionUpdate]:
        """§4.4 XGBoost. Master running → Running; Master done → Running (only if the job has no
        Running condition yet), then Succeeded, and stop. Any type with a failed pod → Running (same
        proviso), then Restarting if its restartPolicy is ExitCode, else Failed.

        Deliberate upstream quirk (§9.7): unlike PyTorch, the failure test ignores succeeded/running
        counts and every policy but ExitCode fails the job on the first failed pod, even OnFailure and
        Always, whose pods kubelet would have restarted in place."""
        out: list[ConditionUpdate] = []
        has_running = existing_condition(job, COND_RUNNING) is not None

        def ensure_running() -> None:
            # Upstream's helper adds Running only when no Running condition exists at all.
            nonlocal has_running
            if not has_running:
                out.append(running_update(job, namespaced=False))
                has_running = True

        for rtype in self.status_order(job):
            c = self.counts_for(counts, rtype, job.replica_specs.get(rtype))
            if rtype == MASTER:
                if c.active > 0:
                    ensure_running()
                if c.expected == 0:
                    ensure_running()
                    out.append(succeeded_update(job, namespaced=False))
                    return out
            if c.failed > 0:
                ensure_running()
                if c.restart_policy == RESTART_EXIT_CODE:
                    out.append(restarting_update(job, c.failed, rtype))
                    has_running = False  # setting Restarting removes Running (§4.1)
                else:
                    out.append(failed_update(job, c.failed, rtype))
        return out
