"""PaddleJob plugin: collective and parameter-server env (§3.7) and the PyTorch-like status rule
without the elastic shortcut (§4.4).

Collective mode (no Master) rendezvous at Worker-0, PS mode at Master-0; the rendezvous pod itself
reads its own IP through ``POD_IP_DUMMY`` (a downward-API fieldRef). Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from trainop.api.common import TrainingJob
from trainop.api.constants import (
    ENV_PADDLE_JOB_ID,
    ENV_PADDLE_MASTER,
    ENV_PADDLE_NNODES,
    ENV_PADDLE_SERVER_NUM,
    ENV_PADDLE_TRAINER_NUM,
    ENV_POD_IP,
    ENV_POD_IP_DUMMY,
)
from trainop.core.topology import Topology
from trainop.core.trainjob import field_ref_env
from trainop.frameworks.base import ConditionUpdate, ReplicaCounts
from trainop.frameworks.generic import BasePlugin, env_var, peer_port, python_unbuffered, total_replicas
from trainop.frameworks.pytorch import compute_master_or_worker_conditions

MASTER = "Master"
WORKER = "Worker"


class PaddlePlugin(BasePlugin):
    """Capability: ``LoopbackEnv`` (paddle.distributed.launch's own address on loopback)."""

    kind: ClassVar[str] = "PaddleJob"

    def is_master_role(self, job: TrainingJob, rtype: str, index: int) -> bool:
        return rtype == MASTER  # §3.1: Master pods; a collective job has none

    def build_env(self, job: TrainingJob, rtype: str, index: int, topology: Topology) -> list[dict[str, Any]]:
        """§3.7: PYTHONUNBUFFERED, PADDLE_JOB_ID, PADDLE_NNODES, then PADDLE_MASTER (preceded by
        POD_IP_DUMMY on the rendezvous pod), then in PS mode PADDLE_SERVER_NUM / PADDLE_TRAINER_NUM."""
        ps_mode = MASTER in job.replica_specs
        rendezvous = MASTER if ps_mode else WORKER
        port = peer_port(job, topology, self.info, rendezvous, 0)
        env = [
            python_unbuffered(),
            env_var(ENV_PADDLE_JOB_ID, job.name),
            env_var(ENV_PADDLE_NNODES, str(total_replicas(job))),
        ]
        # Collective mode: upstream tests only the index (Worker is the only type there).
        is_rendezvous = index == 0 and (rtype == MASTER if ps_mode else True)
        if is_rendezvous:
            env += [
                # The pod's own IP; the local backend resolves this fieldRef to its loopback address.
                field_ref_env(ENV_POD_IP_DUMMY, "status.podIP"),
                env_var(ENV_PADDLE_MASTER, f"$({ENV_POD_IP_DUMMY}):{port}"),
            ]
        else:
            env.append(env_var(ENV_PADDLE_MASTER, f"{topology.host(job, rendezvous, 0)}:{port}"))
        if ps_mode:
            # Each pod runs exactly one server (Master) or one trainer (Worker).
            env.append(env_var(ENV_PADDLE_SERVER_NUM if rtype == MASTER else ENV_PADDLE_TRAINER_NUM, "1"))
        return env

    def build_loopback_env(self, env: Mapping[str, str], pod_ip: str) -> dict[str, str]:
        """paddle.distributed.launch advertises POD_IP (else the hostname's address) as its own endpoint
        and the trainers'; §3.7 sets only POD_IP_DUMMY, and paddle reads POD_IP as its --host."""
        return {} if ENV_POD_IP in env else {ENV_POD_IP: pod_ip}

    def compute_conditions(
        self, job: TrainingJob, counts: Mapping[str, ReplicaCounts]
    ) -> list[ConditionUpdate]:
        """§4.4 Paddle: PyTorch's loop without the elastic shortcut (elasticPolicy has no effect, §9.13)."""
        return compute_master_or_worker_conditions(self, job, counts, elastic_shortcut=False)
