"""The six kubeflow.org/v1 kinds: their spec models and the static facts of contract §1.1.

``KIND_INFO`` is the one table every layer reads (plural, replica types, default container and
port, default restart policy, controller name, the kind's upstream quirks as data). Each spec model
carries its kind's own defaults and admission rules as ``JobSpec`` hooks, so api/defaults.py and
api/validation.py name no kind. The six stay here because api imports nothing above it and parsing
needs every model; a new kind's module under frameworks/ declares its own row and model and adds them
with ``register_kind`` (through ``trainop.frameworks.registry.register_framework``). Pure data and
models; no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from pydantic import Field

from trainop.api.common import Bool, Int32, JobSpec, KubeModel, ReplicaSpec, TrainingJob
from trainop.api.constants import CLEAN_NONE, CLEAN_POD_POLICIES
from trainop.api.errors import FieldError, forbidden, invalid, not_supported, required
from trainop.api.rules import at_least, copy_model, replica_specs_common, template_shape_ok, webhook_prelude


@dataclass(frozen=True, slots=True)
class KindInfo:
    """The static facts of one kind (§1.1): the six rows below, or a plugin's own for a new kind."""

    kind: str
    plural: str
    replica_map: str  # JSON key of the replica map, e.g. "pytorchReplicaSpecs"
    replica_types: tuple[str, ...]  # canonical keys, e.g. ("Master", "Worker")
    default_container: str
    port_name: str
    default_port: int
    default_restart_policy: str
    controller_name: str  # value of the operator-name label
    framework: str  # metrics label value (§6.6)
    scalable: bool  # has the scale subresource (§1.1)
    title: str = ""  # the framework as the CRD's description names it ("PaddlePaddle")
    # §1.4 step 4 of a kind with its own defaulting (MPI: Launcher 1, Worker 0): only these types are
    # defaulted, keys stay as written and no port is added (§9.13). Empty: 1 replica for every type,
    # keys normalised (worker → Worker) and the kind's port added to the default container.
    replica_defaults: tuple[tuple[str, int], ...] = ()
    # False: upstream has no webhook for the kind and validates it in the controller (§2.4), so no
    # C1 checks its name; trainop checks it as the API server would check a pod name.
    admission_webhook: bool = True
    ttl_event_noun: str = "Job"  # TTL deletion's Successful/FailedDelete<noun> (§4.9)
    scheduler_name_reason: str = "SetPodTemplateSchedulerName"  # §5's Warning for a foreign scheduler
    age_column_first: bool = False  # `kubectl get` prints Age before State (§1.1)
    # Kueue's integration for the kind (its Configuration's integrations.frameworks entry), "" when
    # Kueue has none: v0.17 integrates five v1 kinds; its MPIJob is mpi-operator's v2beta1 (issue 25).
    kueue_framework: str = ""
    # §3.2: one headless Service per replica. False: the kind has none (MPI: mpirun reaches the workers
    # through its rsh agent, §3.9).
    replica_services: bool = True
    # §4.5: core recreates a failed pod as its restart policy says. False: the kind's controller never
    # deletes its failed pods (MPI, §4.4: the launcher's own restartPolicy restarts it in place).
    restarts_failed_pods: bool = True

    @property
    def singular(self) -> str:
        return self.kind.lower()


class RDZVConf(KubeModel):
    key: str | None = None
    value: str | None = None


class ElasticPolicy(KubeModel):
    min_replicas: Int32 | None = None
    max_replicas: Int32 | None = None
    rdzv_backend: str | None = None
    rdzv_port: Int32 | None = None
    rdzv_host: str | None = None
    rdzv_id: str | None = None
    rdzv_conf: list[RDZVConf] | None = None
    standalone: Bool | None = None
    n_proc_per_node: Int32 | None = None
    max_restarts: Int32 | None = None
    metrics: list[dict[str, Any]] | None = None


class PaddleElasticPolicy(KubeModel):
    min_replicas: Int32 | None = None
    max_replicas: Int32 | None = None
    max_restarts: Int32 | None = None
    metrics: list[dict[str, Any]] | None = None


_Elastic = TypeVar("_Elastic", ElasticPolicy, PaddleElasticPolicy)
_NPROC_WORDS = ("auto", "cpu", "gpu")
_SUCCESS_POLICIES = ("", "AllWorkers")
# §1.3: PyTorch's nprocPerNode default.
DEFAULT_NPROC_PER_NODE = "auto"


def _default_elastic(elastic: _Elastic, replica_specs: dict[str, ReplicaSpec] | None) -> _Elastic:
    # §1.4 step 6: only max → min = max; only min → max = min; neither → both = Worker.replicas.
    if elastic.min_replicas is not None and elastic.max_replicas is not None:
        return elastic
    new = copy_model(elastic)
    if new.max_replicas is not None:
        new.min_replicas = new.max_replicas
    elif new.min_replicas is not None:
        new.max_replicas = new.min_replicas
    elif replica_specs is not None and "Worker" in replica_specs:
        # Upstream would panic without a Worker spec; the webhook requires one, so we leave both unset.
        new.min_replicas = new.max_replicas = replica_specs["Worker"].replicas
    return new


def _elastic_errors(ep: ElasticPolicy | PaddleElasticPolicy | None) -> list[FieldError]:
    if ep is None:
        return []
    errs = at_least("spec.elasticPolicy.minReplicas", ep.min_replicas, 1)
    errs += at_least("spec.elasticPolicy.maxReplicas", ep.max_replicas, 1)
    if ep.min_replicas is not None and ep.max_replicas is not None and ep.min_replicas > ep.max_replicas:
        errs.append(
            invalid(
                "spec.elasticPolicy.minReplicas",
                ep.min_replicas,
                f"must be less than or equal to spec.elasticPolicy.maxReplicas ({ep.max_replicas})",
            )
        )
    errs += at_least("spec.elasticPolicy.maxRestarts", ep.max_restarts, 0)
    return errs


def _elastic_max(ep: ElasticPolicy | PaddleElasticPolicy | None, rtype: str) -> int | None:
    if ep is None or rtype.casefold() != "worker":
        return None
    return ep.max_replicas


class PyTorchJobSpec(JobSpec):
    replica_field = "pytorch_replica_specs"
    pytorch_replica_specs: dict[str, ReplicaSpec] | None = None
    elastic_policy: ElasticPolicy | None = None
    nproc_per_node: str | None = None

    def default_fields(self) -> None:
        if self.elastic_policy is not None:
            self.elastic_policy = _default_elastic(self.elastic_policy, self.pytorch_replica_specs)
        # Step 7: nprocPerNode nil (and no deprecated elasticPolicy.nProcPerNode) → "auto".
        if self.nproc_per_node is None and (
            self.elastic_policy is None or self.elastic_policy.n_proc_per_node is None
        ):
            self.nproc_per_node = DEFAULT_NPROC_PER_NODE

    def upstream_errors(self, job: TrainingJob, old: TrainingJob | None) -> list[FieldError]:
        """Unlike upstream (§9.2) the managedBy update check sees the old job."""
        errs = webhook_prelude(job, old)
        elastic = self.elastic_policy
        if elastic is not None and "Worker" not in (self.pytorch_replica_specs or {}):
            message = "must be configured if elastic policy is used"
            errs.append(required("spec.pytorchReplicaSpecs[Worker]", message))
        if elastic is not None and elastic.n_proc_per_node is not None and self.nproc_per_node is not None:
            message = "must not be used with spec.nprocPerNode"
            errs.append(forbidden("spec.elasticPolicy.nProcPerNode", message))
        info = KIND_INFO[job.kind]
        errs += replica_specs_common(job, info, info.replica_types)
        for rtype, rs in job.replica_specs.items():
            if rtype == "Master":
                # v1.8+: nil is rejected too, since the webhook sees the undefaulted job (§9.1).
                if rs.replicas != 1:
                    errs.append(forbidden("spec.pytorchReplicaSpecs[Master].replicas", "must be 1"))
            elif rs.replicas is not None and rs.replicas < 1:
                errs.append(forbidden(f"spec.pytorchReplicaSpecs[{rtype}].replicas", "must be at least 1"))
        return errs

    def field_errors(self) -> list[FieldError]:
        errs: list[FieldError] = []
        value = self.nproc_per_node
        if value is not None and value not in _NPROC_WORDS and not (value.isdigit() and int(value) >= 1):
            message = 'must be "auto", "cpu", "gpu" or a positive integer'
            errs.append(invalid("spec.nprocPerNode", value, message))
        errs += _elastic_errors(self.elastic_policy)
        if self.elastic_policy is not None:
            port = self.elastic_policy.rdzv_port
            if port is not None and not 1 <= port <= 65535:
                message = "must be between 1 and 65535, inclusive"
                errs.append(invalid("spec.elasticPolicy.rdzvPort", port, message))
            errs += at_least("spec.elasticPolicy.nProcPerNode", self.elastic_policy.n_proc_per_node, 1)
        return errs

    def replica_count_errors(self, rtype: str, replicas: int, path: str) -> list[FieldError] | None:
        return []  # upstream's own rule already rejects it ("must be at least 1" / "must be 1")

    def deprecations(self) -> list[str]:
        if self.elastic_policy is not None and self.elastic_policy.n_proc_per_node is not None:
            return ["spec.elasticPolicy.nProcPerNode is deprecated, use spec.nprocPerNode instead"]  # §2.3
        return []

    def scaled_replicas(self, rtype: str) -> int | None:
        return _elastic_max(self.elastic_policy, rtype)


class TFJobSpec(JobSpec):
    replica_field = "tf_replica_specs"
    tf_replica_specs: dict[str, ReplicaSpec] | None = None
    success_policy: str | None = None
    enable_dynamic_worker: Bool | None = None

    def default_fields(self) -> None:
        # Step 2: successPolicy nil → "" (the default: success follows worker 0 / chief).
        if self.success_policy is None:
            self.success_policy = ""

    def upstream_errors(self, job: TrainingJob, old: TrainingJob | None) -> list[FieldError]:
        """No replica-type key check; at most one Chief or Master type."""
        errs = webhook_prelude(job, old)
        errs += replica_specs_common(job, KIND_INFO[job.kind], None)
        if sum(1 for rtype in job.replica_specs if rtype in ("Chief", "Master")) > 1:
            errs.append(forbidden("spec.tfReplicaSpecs", "must not have more than 1 Chief or Master role"))
        return errs

    def field_errors(self) -> list[FieldError]:
        if self.success_policy is not None and self.success_policy not in _SUCCESS_POLICIES:
            return [not_supported("spec.successPolicy", self.success_policy, _SUCCESS_POLICIES)]
        return []


class XGBoostJobSpec(JobSpec):
    replica_field = "xgb_replica_specs"
    xgb_replica_specs: dict[str, ReplicaSpec] | None = None

    def upstream_errors(self, job: TrainingJob, old: TrainingJob | None) -> list[FieldError]:
        """A Master with replicas set to exactly 1."""
        info = KIND_INFO[job.kind]
        errs = webhook_prelude(job, old) + replica_specs_common(job, info, info.replica_types)
        master = job.replica_specs.get("Master")
        if master is not None and master.replicas != 1:
            errs.append(forbidden("spec.xgbReplicaSpecs[Master].replicas", "must be 1"))
        if master is None:
            errs.append(required("spec.xgbReplicaSpecs[Master]", "must be present"))
        return errs

    def replica_count_errors(self, rtype: str, replicas: int, path: str) -> list[FieldError] | None:
        return [] if rtype == "Master" else None  # upstream's rule already says "must be 1"


class MPIJobSpec(JobSpec):
    replica_field = "mpi_replica_specs"
    mpi_replica_specs: dict[str, ReplicaSpec] | None = None
    slots_per_worker: Int32 | None = None
    clean_pod_policy: str | None = None  # deprecated; runPolicy.cleanPodPolicy wins (§1.4)
    main_container: str | None = None

    def main_container_name(self) -> str | None:
        return self.main_container

    def default_fields(self) -> None:
        # §1.4 step 1 for MPI: both nil → both None; then the controller syncs the two fields,
        # runPolicy.cleanPodPolicy winning when it is set.
        run_policy = self.run_policy
        assert run_policy is not None  # apply_defaults gives the copy its own RunPolicy first
        if run_policy.clean_pod_policy is None:
            run_policy.clean_pod_policy = (
                CLEAN_NONE if self.clean_pod_policy is None else self.clean_pod_policy
            )
        self.clean_pod_policy = run_policy.clean_pod_policy

    def upstream_errors(self, job: TrainingJob, old: TrainingJob | None) -> list[FieldError]:
        """MPIJob's in-controller rules (§2.4). Upstream stops at the first error and has no field
        path; we report every error, each under the path it concerns, with upstream's message."""
        specs = self.mpi_replica_specs
        if specs is None:
            return [FieldError("spec.mpiReplicaSpecs", "MPIReplicaSpecs is not valid")]
        errs: list[FieldError] = []

        def invalid_spec(path: str, message: str) -> None:
            errs.append(FieldError(path, f"MPIReplicaSpec is not valid: {message}"))

        for rtype, rs in specs.items():
            path = f"spec.mpiReplicaSpecs[{rtype}]"
            if not template_shape_ok(rs):
                continue  # reported by trainop's template shape rule
            if not rs.containers:
                errs.append(
                    FieldError(
                        f"{path}.template.spec.containers",
                        f"MPIReplicaSpecs is not valid: containers definition expected in {rtype}",
                    )
                )
                continue
            if rtype not in ("Launcher", "Worker"):
                errs.append(
                    FieldError(path, f"MPIReplicaType is {rtype} but must be one of [Launcher Worker]")
                )
                continue
            for i, container in enumerate(rs.containers):
                cpath = f"{path}.template.spec.containers[{i}]"
                for key, word in (("image", "Image"), ("name", "ImageName")):
                    if not container.get(key):
                        invalid_spec(f"{cpath}.{key}", f"{word} is undefined in the container of {rtype}")
            if rtype == "Launcher" and rs.replicas is not None and rs.replicas != 1:
                invalid_spec(f"{path}.replicas", "There must be only 1 launcher replica")
        if "Launcher" not in specs:
            invalid_spec("spec.mpiReplicaSpecs[Launcher]", "Master ReplicaSpec must be present")
        return errs

    def field_errors(self) -> list[FieldError]:
        errs: list[FieldError] = []
        if self.clean_pod_policy is not None and self.clean_pod_policy not in CLEAN_POD_POLICIES:
            errs.append(not_supported("spec.cleanPodPolicy", self.clean_pod_policy, CLEAN_POD_POLICIES))
        return errs + at_least("spec.slotsPerWorker", self.slots_per_worker, 1)

    def replica_count_errors(self, rtype: str, replicas: int, path: str) -> list[FieldError] | None:
        if rtype == "Launcher" or replicas == 0:
            return []  # 0 workers is MPI's default (§1.4); the launcher count is upstream's rule
        return [invalid(path, replicas, "must be greater than or equal to 0")]

    def deprecations(self) -> list[str]:
        if self.clean_pod_policy is not None:
            return ["spec.cleanPodPolicy is deprecated, use spec.runPolicy.cleanPodPolicy instead"]
        return []


class PaddleJobSpec(JobSpec):
    replica_field = "paddle_replica_specs"
    paddle_replica_specs: dict[str, ReplicaSpec] | None = None
    elastic_policy: PaddleElasticPolicy | None = None

    def default_fields(self) -> None:
        if self.elastic_policy is not None:
            self.elastic_policy = _default_elastic(self.elastic_policy, self.paddle_replica_specs)

    def upstream_errors(self, job: TrainingJob, old: TrainingJob | None) -> list[FieldError]:
        """Only the common ones (its container message quotes the name)."""
        info = KIND_INFO[job.kind]
        return webhook_prelude(job, old) + replica_specs_common(
            job, info, info.replica_types, quote_container=True
        )

    def field_errors(self) -> list[FieldError]:
        return _elastic_errors(self.elastic_policy)

    def scaled_replicas(self, rtype: str) -> int | None:
        return _elastic_max(self.elastic_policy, rtype)


class JAXJobSpec(JobSpec):
    replica_field = "jax_replica_specs"
    jax_replica_specs: dict[str, ReplicaSpec] | None = None

    def upstream_errors(self, job: TrainingJob, old: TrainingJob | None) -> list[FieldError]:
        """The common ones without managedBy (§9.3); updates see only the new job."""
        info = KIND_INFO[job.kind]
        return webhook_prelude(job, old, managed_by=False) + replica_specs_common(
            job, info, info.replica_types
        )


class PyTorchJob(TrainingJob):
    kind: Literal["PyTorchJob"] = "PyTorchJob"
    spec: PyTorchJobSpec = Field(default_factory=PyTorchJobSpec)


class TFJob(TrainingJob):
    kind: Literal["TFJob"] = "TFJob"
    spec: TFJobSpec = Field(default_factory=TFJobSpec)


class XGBoostJob(TrainingJob):
    kind: Literal["XGBoostJob"] = "XGBoostJob"
    spec: XGBoostJobSpec = Field(default_factory=XGBoostJobSpec)


class MPIJob(TrainingJob):
    kind: Literal["MPIJob"] = "MPIJob"
    spec: MPIJobSpec = Field(default_factory=MPIJobSpec)


class PaddleJob(TrainingJob):
    kind: Literal["PaddleJob"] = "PaddleJob"
    spec: PaddleJobSpec = Field(default_factory=PaddleJobSpec)


class JAXJob(TrainingJob):
    kind: Literal["JAXJob"] = "JAXJob"
    spec: JAXJobSpec = Field(default_factory=JAXJobSpec)


# Contract §1.1.
KIND_INFO: dict[str, KindInfo] = {
    "PyTorchJob": KindInfo(
        "PyTorchJob", "pytorchjobs", "pytorchReplicaSpecs", ("Master", "Worker"), "pytorch",
        "pytorchjob-port", 23456, "OnFailure", "pytorchjob-controller", "pytorch", True,
        title="PyTorch", kueue_framework="kubeflow.org/pytorchjob", ttl_event_noun="Pod",
    ),
    "TFJob": KindInfo(
        "TFJob", "tfjobs", "tfReplicaSpecs", ("PS", "Worker", "Chief", "Master", "Evaluator"), "tensorflow",
        "tfjob-port", 2222, "Never", "tfjob-controller", "tensorflow", False,
        title="TensorFlow", kueue_framework="kubeflow.org/tfjob",
    ),
    "XGBoostJob": KindInfo(
        "XGBoostJob", "xgboostjobs", "xgbReplicaSpecs", ("Master", "Worker"), "xgboost",
        "xgboostjob-port", 9999, "Never", "xgboostjob-controller", "xgboost", False,
        title="XGBoost", kueue_framework="kubeflow.org/xgboostjob",
    ),
    "MPIJob": KindInfo(
        "MPIJob", "mpijobs", "mpiReplicaSpecs", ("Launcher", "Worker"), "mpi",
        "mpi-port", 9999, "Never", "mpijob-controller", "mpi", False,
        title="MPI", replica_defaults=(("Launcher", 1), ("Worker", 0)), admission_webhook=False,
        scheduler_name_reason="SettedPodTemplateSchedulerName", age_column_first=True,
        replica_services=False, restarts_failed_pods=False,
    ),
    "PaddleJob": KindInfo(
        "PaddleJob", "paddlejobs", "paddleReplicaSpecs", ("Master", "Worker"), "paddle",
        "master", 36543, "OnFailure", "paddlejob-controller", "paddle", True,
        title="PaddlePaddle", kueue_framework="kubeflow.org/paddlejob", ttl_event_noun="Pod",
    ),
    "JAXJob": KindInfo(
        "JAXJob", "jaxjobs", "jaxReplicaSpecs", ("Worker",), "jax",
        "jaxjob-port", 6666, "Never", "jaxjob-controller", "jax", True,
        title="JAX", kueue_framework="kubeflow.org/jaxjob", ttl_event_noun="Pod",
    ),
}  # fmt: skip

JOB_MODELS: dict[str, type[TrainingJob]] = {
    model.model_fields["kind"].default: model
    for model in (PyTorchJob, TFJob, XGBoostJob, MPIJob, PaddleJob, JAXJob)
}

KIND_BY_PLURAL: dict[str, str] = {info.plural: k for k, info in KIND_INFO.items()}


def register_kind(info: KindInfo, model: type[TrainingJob]) -> None:
    """Add a kind a framework plugin declares (its row and its job model) to the tables above, so
    parsing, defaults, validation and CRDs know it. The six kinds are here already."""
    KIND_INFO[info.kind] = info
    JOB_MODELS[info.kind] = model
    KIND_BY_PLURAL[info.plural] = info.kind


def unregister_kind(kind: str) -> None:
    """Undo ``register_kind`` (a test's throw-away kind)."""
    info = KIND_INFO.pop(kind, None)
    JOB_MODELS.pop(kind, None)
    if info is not None:
        KIND_BY_PLURAL.pop(info.plural, None)


def kind_info(job_or_kind: TrainingJob | str) -> KindInfo:
    kind = job_or_kind if isinstance(job_or_kind, str) else job_or_kind.kind
    return KIND_INFO[kind]
