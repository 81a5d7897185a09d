"""The small Protocol every framework plugin implements (re-exported by ``trainop.frameworks.base``), plus the shared data it exchanges with core.

A plugin knows its kind's replica types, default container and port, the env vars and files it
injects (§3.3-§3.9), the master-role rule (§3.1), its extra validation (§2.3) and its success/failure
rule (§4.4). Pure: no I/O, no clock, no Kubernetes client.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from trainop.api.common import TrainingJob
from trainop.api.errors import FieldError
from trainop.api.kinds import KindInfo
from trainop.core.topology import Topology


@dataclass(frozen=True, slots=True)
class ReplicaCounts:
    """One replica type's view for the status rule (§4.2, §4.4), built by core from the pods."""

    replicas: int  # desired (defaulted) replicas
    active: int
    succeeded: int
    failed: int
    restart_policy: str  # defaulted replica restartPolicy

    @property
    def expected(self) -> int:
        return self.replicas - self.succeeded


@dataclass(frozen=True, slots=True)
class ConditionUpdate:
    """One ``setCondition`` call the status rule makes, in order (§4.1 rules applied by core).

    Core applies the list in order with the §4.1 rules (Failed is terminal, same type+status+reason is
    a no-op, Running and Restarting replace each other, ...), so a later update sees the earlier ones.

    ``event``: also emit an event with this type; its reason is ``event_reason`` when set (MPI's
    Failed condition is ``MPIJobMPIJobFailed`` but its event ``MPIJobFailed``, §9.6), else ``reason``;
    its message is ``message``. ``metric``: a counter to increment ("jobs_successful", "jobs_failed",
    "jobs_restarted"). ``complete``: set completionTime if unset. ``set_condition=False``: emit the
    event / metric only and leave the conditions alone (upstream computes some conditions on a copy it
    then discards, so only their events survive: MPI's status helper, §4.4).
    """

    type: str
    reason: str
    message: str
    status: Literal["True", "False"] = "True"
    event: Literal["Normal", "Warning"] | None = None
    metric: str | None = None
    complete: bool = False
    event_reason: str | None = None
    set_condition: bool = True


class FrameworkPlugin(Protocol):
    """What the core needs from a framework. ``job`` is always the DEFAULTED job (§1.4)."""

    info: KindInfo
    # MPI (§3.9) creates no Services and has its own pod/restart logic.
    creates_services: bool
    restarts_failed_pods: bool  # generic §4.5 restart path (False for MPI)

    def validate(self, job: TrainingJob, old: TrainingJob | None = None) -> list[FieldError]:
        """Upstream's admission rules for the kind (§2.2-§2.4) on the UNDEFAULTED job
        (``trainop.api.validation.validate_<kind>``)."""
        ...

    def replica_indices(self, job: TrainingJob, rtype: str) -> range:
        """Indices of the pods that should exist for this type (MPI's Launcher: always ``range(1)``)."""
        ...

    def pod_name(self, job: TrainingJob, rtype: str, index: int) -> str: ...

    def is_master_role(self, job: TrainingJob, rtype: str, index: int) -> bool: ...

    def pod_labels(self, job: TrainingJob, rtype: str, index: int) -> dict[str, str]:
        """The operator's labels for pod ``rtype``/``index`` (§3.1; MPI's launcher has no
        replica-index, §3.9), to lay over the template's labels."""
        ...

    def declared_port(self, job: TrainingJob, rtype: str) -> int:
        """The port ``rtype``'s default container declares (kind's port name), else the default port."""
        ...

    def build_env(self, job: TrainingJob, rtype: str, index: int, topology: Topology) -> list[dict[str, Any]]:
        """EnvVar dicts appended to the containers the kind injects into (§3.3)."""
        ...

    def customize_pod(
        self, job: TrainingJob, rtype: str, index: int, pod: dict[str, Any], topology: Topology
    ) -> None:
        """Add env, init containers, volumes, default commands to ``pod`` (a fresh Pod dict built by
        core from the template, with name, labels and restartPolicy already set)."""
        ...

    def build_extra_objects(
        self, job: TrainingJob, pods: list[dict[str, Any]], topology: Topology
    ) -> list[dict[str, Any]]:
        """Other owned objects to create, or to replace when their content drifted: MPI's
        ServiceAccount, ConfigMap, Role and RoleBinding (until the launcher finishes), PyTorch's HPA
        (when ``elasticPolicy.metrics`` is set); [] for the rest. Each carries its namespace and the
        job's controller ownerReference. An object missing from the list is NOT a request to delete
        it (MPI's objects outlive the launcher; the HPA's removal on suspend is core's, §4.10)."""
        ...

    def compute_conditions(
        self,
        job: TrainingJob,
        counts: Mapping[str, ReplicaCounts],
        pods: list[dict[str, Any]],
    ) -> list[ConditionUpdate]:
        """The kind's success/failure rule (§4.4) as ordered condition updates.

        ``counts`` has one entry per replica type of the job; ``job.status`` holds the in-flight
        conditions of this pass (TF keeps an existing Restarting, XGBoost sets Running only when
        absent); ``pods`` are the job's pods (TF reads worker 0's exit code, MPI the launcher's phase).
        """
        ...
