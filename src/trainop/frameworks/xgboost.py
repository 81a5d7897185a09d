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
    ANCESTOR_TRAINER,
    COND_RUNNING,
    ENV_DMLC_NUM_WORKER,
    ENV_DMLC_TASK_ID,
    ENV_DMLC_TRACKER_PORT,
    ENV_DMLC_TRACKER_URI,
    ENV_MASTER_ADDR,
    ENV_MASTER_PORT,
    ENV_RANK,
    ENV_WORKER_ADDRS,
    ENV_WORKER_PORT,
    ENV_WORLD_SIZE,
    FIELD_JOB_COMPLETION_INDEX,
    NODE,
    RESTART_EXIT_CODE,
    TRAINER_PORT,
    XGBOOST_RESERVED_ENV,
)
from trainop.api.errors import FieldError, forbidden
from trainop.core.convert import ConvertedTrainer
from trainop.core.status import detect_condition
from trainop.core.topology import Topology
from trainop.core.trainjob import PolicyContext, field_ref_env, upsert_env, upsert_port
from trainop.frameworks.base import ConditionUpdate, ReplicaCounts
from trainop.frameworks.generic import (
    BasePlugin,
    env_var,
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

    def convert_to_trainjob(self, job: TrainingJob) -> ConvertedTrainer:
        """xgboost-distributed: every pod a node (Master first), node 0 hosts the tracker."""
        return ConvertedTrainer(
            runtime="xgboost-distributed",
            template_type=MASTER,
            container=self.info.default_container,
            num_nodes=total_replicas(job),
            notes=(
                "env: the XGBoost policy sets DMLC_TRACKER_URI, DMLC_TRACKER_PORT, DMLC_TASK_ID and "
                "DMLC_NUM_WORKER; a script that reads the XGBoostJob's MASTER_ADDR, MASTER_PORT, RANK, "
                "WORLD_SIZE or WORKER_ADDRS must read those instead",
            ),
        )

    def compute_conditions(
        self, job: TrainingJob, counts: Mapping[str, ReplicaCounts]
    ) -> list[ConditionUpdate]:
        """§4.4 XGBoost. Master running → Running; Master done → Running (only if the job has no
        Running condition yet), then Succeeded, and stop. Any type with a failed pod → Running (same
        proviso), then Restarting if its restartPolicy is ExitCode, else Failed.

        Deliberate upstream quirk (§9.7): unlike PyTorch, the failure test ignores succeeded/running
        counts and every policy but ExitCode fails the job on the first failed pod, even OnFailure and
        Always, whose pods kubelet would have restarted in place."""
        out: list[ConditionUpdate] = []
        has_running = job.status is not None and detect_condition(job.status, COND_RUNNING) is not None

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


class XGBoostPolicy:
    """Trainer v2's ``mlPolicy.xgboost`` (kubeflow/trainer@v2.3.0 plugins/xgboost/xgboost.go): the node
    count from ``numNodes``; the collective's DMLC_TRACKER_URI/PORT naming node 0, DMLC_TASK_ID from
    the Job completion index and DMLC_NUM_WORKER = nodes x (GPUs per node, or 1). The XGBoostJob
    plugin gives the same tracker its own MASTER_*/WORKER_* names."""

    ml_policy = "xgboost"

    def trainjob_errors(self, ctx: PolicyContext) -> list[FieldError]:
        trainer = ctx.job.spec.trainer
        return [
            forbidden(f"spec.trainer.env[{i}]", f"{e.get('name')} is reserved for the XGBoost runtime")
            for i, e in enumerate(trainer.env or [] if trainer is not None else [])
            if e.get("name") in XGBOOST_RESERVED_ENV
        ]

    def enforce_ml_policy(self, ctx: PolicyContext) -> None:
        trainer = ctx.job.spec.trainer
        step = ctx.step_by_ancestor(ANCESTOR_TRAINER)
        if step is None:
            return
        if trainer is not None and trainer.num_nodes is not None:
            step.count = trainer.num_nodes
        container = ctx.trainer_container()
        if container is None or trainer is None:
            return
        job = ctx.job.name
        workers = step.count * (ctx.gpus_per_node() or 1)
        upsert_env(
            container,
            [
                env_var(ENV_DMLC_TRACKER_URI, ctx.topology.host(job, NODE, 0, 0)),
                env_var(ENV_DMLC_TRACKER_PORT, str(ctx.topology.port(job, NODE, 0, 0, TRAINER_PORT))),
                field_ref_env(ENV_DMLC_TASK_ID, FIELD_JOB_COMPLETION_INDEX),
                env_var(ENV_DMLC_NUM_WORKER, str(workers)),
            ],
        )
        upsert_port(container, TRAINER_PORT)
