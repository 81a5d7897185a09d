"""JAXJob plugin: the coordinator env of §3.8 (Worker-0 coordinates) and the Worker-only status rule
of §4.4. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from trainop.api.common import TrainingJob
from trainop.api.constants import (
    ANCESTOR_TRAINER,
    ENV_COORDINATOR_ADDRESS,
    ENV_COORDINATOR_PORT,
    ENV_JAX_COORDINATOR_ADDRESS,
    ENV_JAX_COORDINATOR_BIND_ADDRESS,
    ENV_JAX_NUM_PROCESSES,
    ENV_JAX_PROCESS_ID,
    ENV_NUM_PROCESSES,
    ENV_PROCESS_ID,
    FIELD_JOB_COMPLETION_INDEX,
    NODE,
    TRAINER_PORT,
)
from trainop.api.errors import FieldError
from trainop.core.convert import ConvertedTrainer
from trainop.core.topology import Topology
from trainop.core.trainjob import PolicyContext, field_ref_env, upsert_env, upsert_port
from trainop.frameworks.base import ConditionUpdate, ReplicaCounts
from trainop.frameworks.generic import (
    BasePlugin,
    env_var,
    peer_port,
    python_unbuffered,
    total_replicas,
)
from trainop.frameworks.pytorch import compute_master_or_worker_conditions

WORKER = "Worker"


class JAXPlugin(BasePlugin):
    """Capability: ``LoopbackEnv`` (the coordinator binds the loopback address)."""

    kind: ClassVar[str] = "JAXJob"

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

    def convert_to_trainjob(self, job: TrainingJob) -> ConvertedTrainer:
        """jax-distributed: one process per Worker pod."""
        return ConvertedTrainer(
            runtime="jax-distributed",
            template_type=WORKER,
            container=self.info.default_container,
            num_nodes=total_replicas(job),
            notes=(
                "env: the JAX policy sets JAX_COORDINATOR_ADDRESS (host:port), JAX_NUM_PROCESSES and "
                "JAX_PROCESS_ID, which jax.distributed.initialize() reads; a script that reads the JAXJob's "
                "COORDINATOR_ADDRESS, COORDINATOR_PORT, NUM_PROCESSES or PROCESS_ID must read those instead",
            ),
        )

    def compute_conditions(
        self, job: TrainingJob, counts: Mapping[str, ReplicaCounts]
    ) -> list[ConditionUpdate]:
        """§4.4 JAX: all workers succeeded → Succeeded, else any running → Running (messages name
        ``<ns>/<name>``); failure as PyTorch's: PyTorch's loop for a job without Master."""
        return compute_master_or_worker_conditions(self, job, counts, elastic_shortcut=False)


class JAXPolicy:
    """Trainer v2's ``mlPolicy.jax`` (kubeflow/trainer@v2.3.0 plugins/jax/jax.go): the node count from
    ``numNodes``; JAX_NUM_PROCESSES (one process per node), JAX_PROCESS_ID from the Job completion
    index and JAX_COORDINATOR_ADDRESS naming node 0, the distributed-init variables JAX reads, where
    the JAXJob plugin writes its own COORDINATOR_* names."""

    ml_policy = "jax"

    def trainjob_errors(self, ctx: PolicyContext) -> list[FieldError]:
        return []

    def enforce_ml_policy(self, ctx: PolicyContext) -> None:
        trainer = ctx.job.spec.trainer
        step = ctx.step_by_ancestor(ANCESTOR_TRAINER)
        if step is not None and trainer is not None and trainer.num_nodes is not None:
            step.count = trainer.num_nodes
        container = ctx.trainer_container()
        if container is None or trainer is None:
            return
        job = ctx.job.name
        host = ctx.topology.host(job, NODE, 0, 0)
        port = ctx.topology.port(job, NODE, 0, 0, TRAINER_PORT)
        upsert_env(
            container,
            [
                env_var(ENV_JAX_NUM_PROCESSES, str(step.count if step is not None else 1)),
                field_ref_env(ENV_JAX_PROCESS_ID, FIELD_JOB_COMPLETION_INDEX),
                env_var(ENV_JAX_COORDINATOR_ADDRESS, f"{host}:{port}"),
            ],
        )
        upsert_port(container, TRAINER_PORT)
