"""TFJob plugin: ``TF_CONFIG`` in both layouts (§3.5) and the TF success/failure rule (§4.4).

TF_CONFIG goes only into the first ``tensorflow`` container, is skipped for a one-replica job, and uses
FQDN hosts from the Topology. Pure: no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, ClassVar

from trainop.api.common import TrainingJob
from trainop.api.constants import COND_RESTARTING, ENV_TF_CONFIG
from trainop.api.kinds import TFJobSpec
from trainop.core.pods import PHASE_SUCCEEDED, detect_exit_code
from trainop.core.status import detect_condition
from trainop.core.topology import Topology
from trainop.frameworks.base import ConditionUpdate, ReplicaCounts
from trainop.frameworks.generic import (
    METRIC_RESTARTED,
    BasePlugin,
    env_var,
    failed_update,
    peer_port,
    replicas_of,
    running_update,
    succeeded_update,
)

CHIEF, EVALUATOR, MASTER, PS, WORKER = "Chief", "Evaluator", "Master", "PS", "Worker"
# §4.4: TF visits the types in this fixed order (the other kinds range over a Go map).
STATUS_ORDER = (CHIEF, EVALUATOR, MASTER, PS, WORKER)
SUCCESS_POLICY_ALL_WORKERS = "AllWorkers"


def _spec(job: TrainingJob) -> TFJobSpec:
    assert isinstance(job.spec, TFJobSpec), f"not a TFJob: {job.kind}"
    return job.spec


def _compact(obj: Any) -> str:
    # Go's encoding/json output: no spaces; key order as built (cluster keys are sorted by the caller).
    return json.dumps(obj, separators=(",", ":"))


def is_distributed(job: TrainingJob) -> bool:
    """§3.5: TF_CONFIG is skipped when Chief+Evaluator+Master+PS+Worker replicas sum to exactly 1
    (an unset ``replicas`` counts as 1)."""
    return sum(replicas_of(job, t) for t in STATUS_ORDER) != 1


def contains_chief_or_master(job: TrainingJob) -> bool:
    return CHIEF in job.replica_specs or MASTER in job.replica_specs


class TFPlugin(BasePlugin):
    kind: ClassVar[str] = "TFJob"
    env_in_every_container: ClassVar[bool] = False

    def status_order(self, job: TrainingJob) -> list[str]:
        return [t for t in STATUS_ORDER if t in job.replica_specs]

    def is_master_role(self, job: TrainingJob, rtype: str, index: int) -> bool:
        # §3.1: every Chief/Master pod when either type exists, else Worker-0.
        if contains_chief_or_master(job):
            return rtype in (CHIEF, MASTER)
        return rtype == WORKER and index == 0

    def build_cluster_spec(self, job: TrainingJob, topology: Topology) -> dict[str, list[str]]:
        """``cluster`` of TF_CONFIG: every type present, lower-case, sorted, ``host:port`` per index."""
        cluster: dict[str, list[str]] = {}
        for rtype in sorted(job.replica_specs, key=str.lower):
            cluster[rtype.lower()] = [
                f"{topology.host(job, rtype, i, fqdn=True)}:{peer_port(job, topology, self.info, rtype, i)}"
                for i in range(replicas_of(job, rtype))
            ]
        return dict(sorted(cluster.items()))

    def build_tf_config(self, job: TrainingJob, rtype: str, index: int, topology: Topology) -> str:
        cluster = self.build_cluster_spec(job, topology)
        rt = rtype.lower()
        task = {"type": rt, "index": index}
        if not _spec(job).enable_dynamic_worker:
            return _compact({"cluster": cluster, "task": task, "environment": "cloud"})
        # Sparse layout: a worker sees itself and every PS (null when there is no PS), a PS only
        # itself; other types get empty maps. Key order worker, ps as upstream's struct has it.
        worker: dict[str, str] = {}
        ps: list[str] | None = []
        if rt == "ps":
            ps = [cluster["ps"][index]] if index < len(cluster.get("ps", [])) else []
        elif rt == "worker":
            ps = cluster.get("ps")
            if index < len(cluster.get("worker", [])):
                worker[str(index)] = cluster["worker"][index]
        return _compact({"cluster": {"worker": worker, "ps": ps}, "task": task})

    def build_env(self, job: TrainingJob, rtype: str, index: int, topology: Topology) -> list[dict[str, Any]]:
        if not is_distributed(job):
            return []
        return [env_var(ENV_TF_CONFIG, self.build_tf_config(job, rtype, index, topology))]

    def compute_conditions(
        self, job: TrainingJob, counts: Mapping[str, ReplicaCounts]
    ) -> list[ConditionUpdate]:
        """§4.4 TF, types in the order Chief, Evaluator, Master, PS, Worker. With a Chief/Master its
        counts decide Running/Succeeded; otherwise Worker does: all succeeded, or (successPolicy is
        not AllWorkers) worker 0 Succeeded with exit code 0. Any failure keeps an existing Restarting
        (re-set, since a Running set earlier in this pass removed it), is ignored for workers under
        enableDynamicWorker, and otherwise fails the job ("has failed", ``<ns>/<name>``)."""
        spec = _spec(job)
        out: list[ConditionUpdate] = []
        restarting = detect_condition(job.status, COND_RESTARTING) if job.status is not None else None
        chief_or_master = contains_chief_or_master(job)
        worker0_done = self._worker0_completed(counts)
        for rtype in self.status_order(job):
            c = self.counts_for(counts, rtype, job.replica_specs.get(rtype))
            if chief_or_master:
                if rtype in (CHIEF, MASTER):
                    if c.active > 0:
                        out.append(running_update(job, namespaced=True))
                    if c.expected == 0:
                        out.append(succeeded_update(job, namespaced=True))
            elif rtype == WORKER:
                if c.expected == 0 or (worker0_done and spec.success_policy != SUCCESS_POLICY_ALL_WORKERS):
                    out.append(succeeded_update(job, namespaced=True))
                elif c.active > 0:
                    out.append(running_update(job, namespaced=True))
            if c.failed > 0:
                if restarting is not None:  # kept whatever its status, with its reason and message
                    reason, message = restarting.reason or "", restarting.message or ""
                    out.append(
                        ConditionUpdate(
                            type=COND_RESTARTING, reason=reason, message=message, metric=METRIC_RESTARTED
                        )
                    )
                elif spec.enable_dynamic_worker and rtype == WORKER:
                    continue  # workers may come and go under enableDynamicWorker
                else:
                    out.append(
                        failed_update(
                            job,
                            c.failed,
                            rtype,
                            message=f"TFJob {job.namespace}/{job.name} has failed because {c.failed} "
                            f"{rtype} replica(s) failed.",
                        )
                    )
        return out

    def _worker0_completed(self, counts: Mapping[str, ReplicaCounts]) -> bool:
        """Worker 0's pod (the only one at index 0) is Succeeded and its ``tensorflow`` container
        exited 0."""
        at0 = [p for p in self.counts_for(counts, WORKER, None).pods if p.index == 0]
        if len(at0) != 1 or at0[0].phase != PHASE_SUCCEEDED:
            return False
        return detect_exit_code(at0[0].obj, self.info.default_container) == 0
