"""Shared pieces of the framework plugins: replica look-ups, env injection and the §4.4 status loop.

``BasePlugin`` gives every kind the generic behaviour of §3.1 (names, labels, master role, env into
every container) and §4.4 (the PyTorch/Paddle/JAX success/failure loop); kinds override what differs.
Pure: no I/O, no clock, no Kubernetes client; inputs are never mutated.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, ClassVar

from trainop.api.common import ReplicaSpec, TrainingJob
from trainop.api.constants import (
    COND_FAILED,
    COND_RESTARTING,
    COND_RUNNING,
    COND_SUCCEEDED,
    ENV_PYTHONUNBUFFERED,
    RESTART_NEVER,
)
from trainop.api.defaults import container_port
from trainop.api.kinds import KIND_INFO, KindInfo
from trainop.core.naming import build_replica_labels
from trainop.core.topology import Topology, replica_name
from trainop.frameworks.base import ConditionUpdate, ReplicaCounts

# Metric names a ConditionUpdate may carry (§6.6), as core's Plan.metrics spells them.
METRIC_SUCCESSFUL = "jobs_successful"
METRIC_FAILED = "jobs_failed"
METRIC_RESTARTED = "jobs_restarted"


# --- small readers over the (defaulted) job ---------------------------------------------------------


def env_var(name: str, value: str) -> dict[str, Any]:
    return {"name": name, "value": value}


def replicas_of(job: TrainingJob, rtype: str, default: int = 1) -> int:
    """Desired replicas of ``rtype``: 0 when the type is absent, ``default`` when replicas is unset
    (defaulting has normally filled it, §1.4 step 4)."""
    rs = job.replica_specs.get(rtype)
    if rs is None:
        return 0
    return rs.replicas if rs.replicas is not None else default


def total_replicas(job: TrainingJob, default: int = 1) -> int:
    """``N`` of §3.4-§3.8: the sum of replicas over every type present."""
    return sum(rs.replicas if rs.replicas is not None else default for rs in job.replica_specs.values())


def declared_port(job: TrainingJob, rtype: str, info: KindInfo, port_name: str | None = None) -> int:
    """The port the template declares for ``rtype`` (default container, kind's port name), falling back
    to the kind's default port: defaulting adds that port (§1.4 step 5), so the fallback only covers
    templates whose default-named container is missing, which validation rejects (C5)."""
    rs = job.replica_specs.get(rtype)
    port = container_port(rs, info, port_name) if rs is not None else None
    return port if port is not None else info.default_port


def peer_port(job: TrainingJob, topology: Topology, info: KindInfo, rtype: str, index: int) -> int:
    """The port replica ``rtype``/``index`` listens on: the declared port on Kubernetes, the allocated
    one on the local backend."""
    return topology.port(job, rtype, index, declared_port(job, rtype, info))


# --- env injection into a pod dict (copy-on-write: templates shared with the job stay untouched) ----


def append_env(container: dict[str, Any], env: list[dict[str, Any]]) -> dict[str, Any]:
    """A copy of ``container`` with ``env`` appended after the user's own env (§3.1: operator values
    come later, so they win on a name clash at runtime)."""
    return {**container, "env": [*(container.get("env") or []), *copy.deepcopy(env)]}


def pod_spec_for_write(pod: dict[str, Any]) -> dict[str, Any]:
    """``pod['spec']`` replaced by a shallow copy the caller may change (lists must still be replaced)."""
    spec = dict(pod.get("spec") or {})
    pod["spec"] = spec
    return spec


def inject_env(pod: dict[str, Any], env: list[dict[str, Any]], only: str | None = None) -> None:
    """§3.3: PyTorch, XGBoost, Paddle and JAX append their env to every container (init containers
    excluded); TF (§3.5) only to the first container named ``only``, the default one."""
    if not env:
        return
    spec = pod_spec_for_write(pod)
    containers = list(spec.get("containers") or [])
    for i, c in enumerate(containers):
        if only is None or c.get("name") == only:
            containers[i] = append_env(c, env)
            if only is not None:
                break
    spec["containers"] = containers


# --- condition updates with upstream's reasons and messages (§4.1) ---------------------------------


def job_ref(job: TrainingJob, *, namespaced: bool) -> str:
    """``<name>`` or ``<ns>/<name>``, the two ways upstream's messages name a job (§4.1)."""
    return f"{job.namespace}/{job.name}" if namespaced else job.name


def running_update(job: TrainingJob, *, namespaced: bool) -> ConditionUpdate:
    return ConditionUpdate(
        type=COND_RUNNING,
        reason=f"{job.kind}Running",
        message=f"{job.kind} {job_ref(job, namespaced=namespaced)} is running.",
    )


def succeeded_update(job: TrainingJob, *, namespaced: bool) -> ConditionUpdate:
    # Upstream words the two variants differently: "<name> is successfully completed." vs
    # "<ns>/<name> successfully completed." (§4.1).
    text = (
        f"{job.kind} {job.namespace}/{job.name} successfully completed."
        if namespaced
        else f"{job.kind} {job.name} is successfully completed."
    )
    return ConditionUpdate(
        type=COND_SUCCEEDED,
        reason=f"{job.kind}Succeeded",
        message=text,
        event="Normal",
        metric=METRIC_SUCCESSFUL,
        complete=True,
    )


def restarting_update(job: TrainingJob, failed: int, rtype: str) -> ConditionUpdate:
    return ConditionUpdate(
        type=COND_RESTARTING,
        reason=f"{job.kind}Restarting",
        message=f"{job.kind} {job.name} is restarting because {failed} {rtype} replica(s) failed.",
        event="Warning",
        metric=METRIC_RESTARTED,
    )


def failed_update(
    job: TrainingJob, failed: int, rtype: str, *, reason: str | None = None, message: str | None = None
) -> ConditionUpdate:
    # The status logic records its Failed event as Normal (§6.3); the ExitCode path's Warning is core's.
    return ConditionUpdate(
        type=COND_FAILED,
        reason=reason if reason is not None else f"{job.kind}Failed",
        message=message
        if message is not None
        else f"{job.kind} {job.name} is failed because {failed} {rtype} replica(s) failed.",
        event="Normal",
        metric=METRIC_FAILED,
        complete=True,
        event_reason=f"{job.kind}Failed",
    )


def generic_failure(job: TrainingJob, rtype: str, c: ReplicaCounts) -> list[ConditionUpdate]:
    """§4.4 failure rule of PyTorch, Paddle and JAX: failed pods that are not covered by succeeded +
    running ones restart the job unless the type's restartPolicy is Never, which fails it."""
    if c.failed > 0 and c.replicas > c.succeeded + c.active:
        if c.restart_policy != RESTART_NEVER:
            return [restarting_update(job, c.failed, rtype)]
        return [failed_update(job, c.failed, rtype)]
    return []


# --- the plugin base --------------------------------------------------------------------------------


class BasePlugin:
    """Generic behaviour shared by every kind; a kind subclasses it and sets ``kind``."""

    kind: ClassVar[str] = ""
    # §3.3: PYTHONUNBUFFERED=1 and env in every container (False: TF's first `tensorflow` container).
    env_in_every_container: ClassVar[bool] = True

    def __init__(self, info: KindInfo | None = None) -> None:
        # A kind beyond the six passes its own row (it registers it with ``register_framework``).
        self.info: KindInfo = info if info is not None else KIND_INFO[self.kind]

    # -- identity and layout (§3.1) --
    def status_order(self, job: TrainingJob) -> list[str]:
        """Replica types in the order the status rule visits them. Upstream ranges over a Go map
        (random order); we fix the kind's canonical order, then any other keys as written."""
        present = job.replica_specs
        known = [t for t in self.info.replica_types if t in present]
        return known + [t for t in present if t not in self.info.replica_types]

    def replica_indices(self, job: TrainingJob, rtype: str) -> range:
        return range(replicas_of(job, rtype))

    def pod_name(self, job: TrainingJob, rtype: str, index: int) -> str:
        return replica_name(job.name, rtype, index)

    def is_master_role(self, job: TrainingJob, rtype: str, index: int) -> bool:
        return False

    def pod_labels(self, job: TrainingJob, rtype: str, index: int) -> dict[str, str]:
        """The operator's labels on pod ``rtype``/``index`` (§3.1): operator-name, job-name,
        replica-type, replica-index, and job-role=master on the master-role pod. Core lays these over
        the template's labels (operator values win)."""
        return build_replica_labels(
            self.info, job.name, rtype, index, master=self.is_master_role(job, rtype, index)
        )

    # -- pods --
    def build_env(self, job: TrainingJob, rtype: str, index: int, topology: Topology) -> list[dict[str, Any]]:
        return []

    def customize_pod(
        self, job: TrainingJob, rtype: str, index: int, pod: dict[str, Any], topology: Topology
    ) -> None:
        only = None if self.env_in_every_container else self.info.default_container
        inject_env(pod, self.build_env(job, rtype, index, topology), only)

    # -- status (§4.4) --
    def compute_conditions(
        self, job: TrainingJob, counts: Mapping[str, ReplicaCounts]
    ) -> list[ConditionUpdate]:
        return []

    @staticmethod
    def counts_for(counts: Mapping[str, ReplicaCounts], rtype: str, rs: ReplicaSpec | None) -> ReplicaCounts:
        c = counts.get(rtype)
        if c is not None:
            return c
        # Core normally supplies every type; a missing entry means no pods seen yet.
        replicas = rs.replicas if rs is not None and rs.replicas is not None else 0
        policy = rs.restart_policy if rs is not None and rs.restart_policy else ""
        return ReplicaCounts(replicas=replicas, active=0, succeeded=0, failed=0, restart_policy=policy)


def python_unbuffered() -> dict[str, Any]:
    """``PYTHONUNBUFFERED=1`` (§3.3), first in the env of PyTorch, XGBoost (last there), Paddle, JAX."""
    return env_var(ENV_PYTHONUNBUFFERED, "1")
