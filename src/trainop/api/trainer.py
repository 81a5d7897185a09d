"""Kubeflow Trainer v2 (trainer.kubeflow.org/v1alpha1): TrainJob, TrainingRuntime, ClusterTrainingRuntime.

The models keep the user's camelCase shape (aliases) with snake_case attributes, like the v1 kinds;
Kubernetes-owned objects (env entries, resources, the Job template of a replicated job, the pod spec
fields of a runtime patch) stay plain dicts, kept verbatim. Field sets follow kubeflow/trainer@v2.3.0
pkg/apis/trainer/v1alpha1 (trainjob_types.go, trainingruntime_types.go). Pure: no I/O.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import Field

from trainop.api.common import Bool, Int32, Int64, KubeModel, TopLevelModel
from trainop.api.constants import (
    KIND_CLUSTER_TRAINING_RUNTIME,
    KIND_TRAINING_RUNTIME,
    KIND_TRAINJOB,
    LABEL_TRAINJOB_ANCESTOR,
    TRAINER_API_VERSION,
)

# --- TrainJob ---------------------------------------------------------------------------------------


class RuntimeRef(KubeModel):
    name: str | None = None
    api_group: str | None = None
    kind: str | None = None


class DatasetInitializer(KubeModel):
    storage_uri: str | None = None
    env: list[dict[str, Any]] | None = None
    secret_ref: dict[str, Any] | None = None


class ModelInitializer(DatasetInitializer):
    """The same fields as the dataset's; it overrides the ``model-initializer`` job."""


class Initializer(KubeModel):
    dataset: DatasetInitializer | None = None
    model: ModelInitializer | None = None


class Trainer(KubeModel):
    image: str | None = None
    command: list[str] | None = None
    args: list[str] | None = None
    env: list[dict[str, Any]] | None = None
    num_nodes: Int32 | None = None
    resources_per_node: dict[str, Any] | None = None
    num_proc_per_node: Int32 | None = None


class PatchMetadata(KubeModel):
    """Only labels and annotations may be patched."""

    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None


class PodTemplatePatch(KubeModel):
    metadata: PatchMetadata | None = None
    # PodSpecPatch: serviceAccountName, volumes, initContainers/containers (name, env, volumeMounts,
    # securityContext), imagePullSecrets, securityContext, nodeSelector, affinity, tolerations,
    # schedulingGates, terminationGracePeriodSeconds; Kubernetes objects, kept verbatim.
    spec: dict[str, Any] | None = None


class JobSpecPatch(KubeModel):
    template: PodTemplatePatch | None = None


class JobTemplatePatch(KubeModel):
    metadata: PatchMetadata | None = None
    spec: JobSpecPatch | None = None


class ReplicatedJobPatch(KubeModel):
    name: str | None = None
    template: JobTemplatePatch | None = None


class JobSetSpecPatch(KubeModel):
    replicated_jobs: list[ReplicatedJobPatch] | None = None


class JobSetTemplatePatch(KubeModel):
    metadata: PatchMetadata | None = None
    spec: JobSetSpecPatch | None = None


class TrainingRuntimeSpecPatch(KubeModel):
    template: JobSetTemplatePatch | None = None


class RuntimePatch(KubeModel):
    manager: str | None = None
    time: datetime | None = None
    training_runtime_spec: TrainingRuntimeSpecPatch | None = None


class TrainJobSpec(KubeModel):
    runtime_ref: RuntimeRef | None = None
    initializer: Initializer | None = None
    trainer: Trainer | None = None
    runtime_patches: list[RuntimePatch] | None = None
    suspend: Bool | None = None
    active_deadline_seconds: Int64 | None = None
    managed_by: str | None = None


class Condition(KubeModel):
    """A metav1.Condition."""

    type: str
    status: str
    observed_generation: Int64 | None = None
    last_transition_time: datetime | None = None
    reason: str | None = None
    message: str | None = None


class ChildJobStatus(KubeModel):
    """One replicated job's counts in ``status.jobsStatus`` (its child Jobs)."""

    name: str
    ready: Int32 = 0
    succeeded: Int32 = 0
    failed: Int32 = 0
    active: Int32 = 0
    suspended: Int32 = 0


class Metric(KubeModel):
    name: str
    value: str


class TrainerStatus(KubeModel):
    progress_percentage: Int32 | None = None
    estimated_remaining_seconds: Int32 | None = None
    metrics: list[Metric] | None = None
    last_updated_time: datetime | None = None


class TrainJobStatus(KubeModel):
    conditions: list[Condition] | None = None
    jobs_status: list[ChildJobStatus] | None = None
    trainer_status: TrainerStatus | None = None


class TrainJob(TopLevelModel):
    api_version: str = TRAINER_API_VERSION
    kind: str = KIND_TRAINJOB
    spec: TrainJobSpec = Field(default_factory=TrainJobSpec)
    status: TrainJobStatus | None = None


# --- Training runtimes ------------------------------------------------------------------------------


class EnvInjectionTarget(KubeModel):
    job_name: str | None = None
    container_names: list[str] | None = None


class EnvInjection(KubeModel):
    targets: list[EnvInjectionTarget] | None = None


class TorchPolicy(KubeModel):
    env_injection: EnvInjection | None = None


class MPIPolicy(KubeModel):
    num_proc_per_node: Int32 | None = None
    mpi_implementation: str | None = None
    ssh_auth_mount_path: str | None = None
    run_launcher_as_node: Bool | None = None


class FluxPolicy(KubeModel):
    num_proc_per_node: Int32 | None = None


class JAXPolicy(KubeModel):
    pass


class XGBoostPolicy(KubeModel):
    pass


class MLPolicy(KubeModel):
    num_nodes: Int32 | None = None
    torch: TorchPolicy | None = None
    mpi: MPIPolicy | None = None
    flux: FluxPolicy | None = None
    jax: JAXPolicy | None = None
    xgboost: XGBoostPolicy | None = None

    def sources(self) -> list[str]:
        """The policy sources set (``torch``, ``mpi`` …, then any a registered framework added), in
        declaration order; at most one is valid."""
        known = [name for name in ML_POLICY_SOURCES if getattr(self, name) is not None]
        extra = self.model_extra or {}
        return known + [name for name in _REGISTERED_SOURCES if extra.get(name) is not None]


ML_POLICY_SOURCES = ("torch", "mpi", "flux", "jax", "xgboost")
# mlPolicy sources beyond upstream's, added by ``frameworks.registry.register_framework`` (a seventh
# framework's ``MLPolicyPlugin``); upstream's CRDs prune them, trainop's parser keeps them.
_REGISTERED_SOURCES: list[str] = []


def register_ml_policy_source(name: str) -> None:
    if name not in ML_POLICY_SOURCES and name not in _REGISTERED_SOURCES:
        _REGISTERED_SOURCES.append(name)


def unregister_ml_policy_source(name: str) -> None:
    if name in _REGISTERED_SOURCES:
        _REGISTERED_SOURCES.remove(name)


class CoschedulingPolicy(KubeModel):
    schedule_timeout_seconds: Int32 | None = None


class VolcanoPolicy(KubeModel):
    network_topology: dict[str, Any] | None = None


class PodGroupPolicy(KubeModel):
    coscheduling: CoschedulingPolicy | None = None
    volcano: VolcanoPolicy | None = None


class DependsOn(KubeModel):
    name: str
    status: str  # Ready | Complete


class ReplicatedJob(KubeModel):
    """One JobSet replicated job: ``replicas`` copies of a batch/v1 Job template (kept verbatim)."""

    name: str
    group_name: str | None = None
    replicas: Int32 | None = None
    depends_on: list[DependsOn] | None = None
    template: dict[str, Any] = Field(default_factory=dict)

    @property
    def job_spec(self) -> dict[str, Any]:
        spec = self.template.get("spec")
        return spec if isinstance(spec, dict) else {}

    @property
    def pod_template(self) -> dict[str, Any]:
        template = self.job_spec.get("template")
        return template if isinstance(template, dict) else {}

    @property
    def pod_spec(self) -> dict[str, Any]:
        spec = self.pod_template.get("spec")
        return spec if isinstance(spec, dict) else {}

    @property
    def ancestor(self) -> str | None:
        """The ``trainjob-ancestor-step`` label of the Job template, if any."""
        meta = self.template.get("metadata")
        labels = meta.get("labels") if isinstance(meta, dict) else None
        value = labels.get(LABEL_TRAINJOB_ANCESTOR) if isinstance(labels, dict) else None
        return value if isinstance(value, str) else None

    def containers(self, *, init: bool = False) -> list[dict[str, Any]]:
        items = self.pod_spec.get("initContainers" if init else "containers")
        return [c for c in items if isinstance(c, dict)] if isinstance(items, list) else []


class JobSetNetwork(KubeModel):
    enable_dns_hostnames: Bool | None = None
    subdomain: str | None = None
    publish_not_ready_addresses: Bool | None = None


class SuccessPolicy(KubeModel):
    operator: str | None = None  # All | Any
    target_replicated_jobs: list[str] | None = None


class JobSetSpec(KubeModel):
    """The fields of a sigs.k8s.io/jobset v1alpha2 JobSetSpec the runtime resolver reads; the others
    (startupPolicy, volumeClaimPolicies, coordinator …) are kept as written."""

    replicated_jobs: list[ReplicatedJob] | None = None
    network: JobSetNetwork | None = None
    success_policy: SuccessPolicy | None = None
    failure_policy: dict[str, Any] | None = None
    suspend: Bool | None = None


class JobSetTemplateSpec(KubeModel):
    metadata: PatchMetadata | None = None
    spec: JobSetSpec | None = None


class TrainingRuntimeSpec(KubeModel):
    ml_policy: MLPolicy | None = None
    pod_group_policy: PodGroupPolicy | None = None
    template: JobSetTemplateSpec | None = None

    @property
    def replicated_jobs(self) -> list[ReplicatedJob]:
        spec = self.template.spec if self.template is not None else None
        return list(spec.replicated_jobs or []) if spec is not None else []


class TrainingRuntime(TopLevelModel):
    """A TrainingRuntime (namespaced) or ClusterTrainingRuntime (cluster-scoped); ``kind`` tells."""

    api_version: str = TRAINER_API_VERSION
    kind: str = KIND_CLUSTER_TRAINING_RUNTIME
    spec: TrainingRuntimeSpec = Field(default_factory=TrainingRuntimeSpec)

    @property
    def namespaced(self) -> bool:
        return self.kind == KIND_TRAINING_RUNTIME


TRAINER_MODELS: dict[str, type[KubeModel]] = {
    KIND_TRAINJOB: TrainJob,
    KIND_TRAINING_RUNTIME: TrainingRuntime,
    KIND_CLUSTER_TRAINING_RUNTIME: TrainingRuntime,
}
