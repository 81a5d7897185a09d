"""Shared kubeflow.org/v1 types (contract §1.2): RunPolicy, ReplicaSpec, JobStatus and friends.

Models keep the user's camelCase JSON shape (aliases) with snake_case attributes. Unknown fields are
kept (``extra="allow"``) so nothing the user wrote is lost; validation reports them. Pod templates are
plain Kubernetes PodTemplateSpec dicts, kept verbatim.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt
from pydantic.alias_generators import to_camel

from trainop.api.errors import FieldError

# Kubernetes rejects a string where an integer or a boolean belongs (`replicas: "2"`), and bounds
# int32/int64 fields; these types do the same. ``format`` carries into the generated CRDs.
Int32 = Annotated[StrictInt, Field(ge=-(2**31), le=2**31 - 1, json_schema_extra={"format": "int32"})]
Int64 = Annotated[StrictInt, Field(ge=-(2**63), le=2**63 - 1, json_schema_extra={"format": "int64"})]
Bool = StrictBool


class KubeModel(BaseModel):
    """Base for every API model: camelCase on the wire, snake_case in Python, unknown keys kept."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="allow",
        validate_assignment=False,
    )

    def to_dict(self) -> dict[str, Any]:
        """The object as Kubernetes JSON (camelCase, unset fields omitted)."""
        return self.model_dump(by_alias=True, exclude_none=True, mode="json")


class OwnerReference(KubeModel):
    api_version: str
    kind: str
    name: str
    uid: str
    controller: Bool | None = None
    block_owner_deletion: Bool | None = None


class ObjectMeta(KubeModel):
    name: str | None = None
    generate_name: str | None = None
    namespace: str | None = None
    uid: str | None = None
    resource_version: str | None = None
    generation: Int64 | None = None
    creation_timestamp: datetime | None = None
    deletion_timestamp: datetime | None = None
    deletion_grace_period_seconds: Int64 | None = None
    self_link: str | None = None
    managed_fields: list[dict[str, Any]] | None = None  # written by the API server; kept verbatim
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    owner_references: list[OwnerReference] | None = None
    finalizers: list[str] | None = None


class TopLevelModel(KubeModel):
    """A top-level object: its apiVersion, kind and metadata (subclasses set the defaults)."""

    api_version: str
    kind: str
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)

    @property
    def name(self) -> str:
        return self.metadata.name or ""

    @property
    def namespace(self) -> str:
        return self.metadata.namespace or "default"


class SchedulingPolicy(KubeModel):
    min_available: Int32 | None = None
    queue: str | None = None
    min_resources: dict[str, Any] | None = None
    priority_class: str | None = None
    schedule_timeout_seconds: Int32 | None = None


class RunPolicy(KubeModel):
    clean_pod_policy: str | None = None
    ttl_seconds_after_finished: Int32 | None = None
    active_deadline_seconds: Int64 | None = None
    backoff_limit: Int32 | None = None
    scheduling_policy: SchedulingPolicy | None = None
    suspend: Bool | None = None
    managed_by: str | None = None


class ReplicaSpec(KubeModel):
    replicas: Int32 | None = None
    # A Kubernetes PodTemplateSpec, kept verbatim (every field the user wrote survives a round trip).
    template: dict[str, Any] = Field(default_factory=dict)
    restart_policy: str | None = None

    # --- convenience accessors over the raw template (no copies) ---
    @property
    def pod_spec(self) -> dict[str, Any]:
        spec = self.template.get("spec")
        return spec if isinstance(spec, dict) else {}

    @property
    def containers(self) -> list[dict[str, Any]]:
        cs = self.pod_spec.get("containers")
        return cs if isinstance(cs, list) else []


class JobCondition(KubeModel):
    type: str
    status: str
    reason: str | None = None
    message: str | None = None
    last_update_time: datetime | None = None
    last_transition_time: datetime | None = None


class ReplicaStatus(KubeModel):
    active: Int32 | None = None
    succeeded: Int32 | None = None
    failed: Int32 | None = None
    label_selector: dict[str, Any] | None = None
    selector: str | None = None


class JobStatus(KubeModel):
    conditions: list[JobCondition] | None = None
    replica_statuses: dict[str, ReplicaStatus] | None = None
    start_time: datetime | None = None
    completion_time: datetime | None = None
    last_reconcile_time: datetime | None = None


class JobSpec(KubeModel):
    """Fields every kind's spec shares; subclasses add the replica map and kind-specific fields."""

    # Python attribute name of the replica map, e.g. "pytorch_replica_specs"; set by each kind.
    replica_field: ClassVar[str] = ""

    run_policy: RunPolicy | None = None

    # Kind hooks: what a kind does beyond the rules every kind shares (api/defaults.py and
    # api/validation.py call them, so they never name a kind). Each kind's spec model overrides them.

    def default_fields(self) -> None:
        """§1.4 for the kind's own fields (successPolicy, elasticPolicy …) on a fresh shallow copy of
        the spec whose replica specs are already defaulted; copy a nested model before changing it."""

    def upstream_errors(self, job: TrainingJob, old: TrainingJob | None) -> list[FieldError]:
        """Upstream's admission rules for the kind (§2.2-§2.4) on the undefaulted ``job``."""
        return []

    def field_errors(self) -> list[FieldError]:
        """trainop's checks of the kind's own fields, which upstream lacks (docs/compatibility.md)."""
        return []

    def deprecations(self) -> list[str]:
        """Admission warnings for deprecated fields the spec sets."""
        return []

    def replica_count_errors(self, rtype: str, replicas: int, path: str) -> list[FieldError] | None:
        """trainop's verdict on ``replicas`` < 1 for ``rtype`` (at ``path``), where the kind has its own
        (upstream's rule already rejects it, or 0 is the kind's default); None: the shared rule."""
        return None

    def main_container_name(self) -> str | None:
        """The container whose exit decides a replica's, when the spec names one (MPI's
        ``mainContainer``); None: the kind's default container."""
        return None

    def scaled_replicas(self, rtype: str) -> int | None:
        """The most pods of ``rtype`` the job may scale up to (elastic maxReplicas), if more than set."""
        return None


class TrainingJob(TopLevelModel):
    """One kubeflow.org/v1 job of any kind; ``spec`` is the kind's own spec model."""

    api_version: str = "kubeflow.org/v1"
    spec: JobSpec
    status: JobStatus | None = None

    @property
    def replica_specs(self) -> dict[str, ReplicaSpec]:
        """The kind's replica map (``spec.<x>ReplicaSpecs``), empty when unset."""
        field = type(self.spec).replica_field
        value = getattr(self.spec, field, None)
        return value if isinstance(value, dict) else {}

    @property
    def run_policy(self) -> RunPolicy:
        return self.spec.run_policy or RunPolicy()
