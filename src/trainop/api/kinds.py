"""The six kubeflow.org/v1 kinds: their spec models and the static facts of contract §1.1.

``KIND_INFO`` is the one table every layer reads (plural, replica types, default container and
port, default restart policy, controller name). Pure data and models; no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field

from trainop.api.common import Bool, Int32, JobSpec, KubeModel, ReplicaSpec, TrainingJob


@dataclass(frozen=True, slots=True)
class KindInfo:
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


class PyTorchJobSpec(JobSpec):
    replica_field = "pytorch_replica_specs"
    pytorch_replica_specs: dict[str, ReplicaSpec] | None = None
    elastic_policy: ElasticPolicy | None = None
    nproc_per_node: str | None = None


class TFJobSpec(JobSpec):
    replica_field = "tf_replica_specs"
    tf_replica_specs: dict[str, ReplicaSpec] | None = None
    success_policy: str | None = None
    enable_dynamic_worker: Bool | None = None


class XGBoostJobSpec(JobSpec):
    replica_field = "xgb_replica_specs"
    xgb_replica_specs: dict[str, ReplicaSpec] | None = None


class MPIJobSpec(JobSpec):
    replica_field = "mpi_replica_specs"
    mpi_replica_specs: dict[str, ReplicaSpec] | None = None
    slots_per_worker: Int32 | None = None
    clean_pod_policy: str | None = None  # deprecated; runPolicy.cleanPodPolicy wins (§1.4)
    main_container: str | None = None


class PaddleJobSpec(JobSpec):
    replica_field = "paddle_replica_specs"
    paddle_replica_specs: dict[str, ReplicaSpec] | None = None
    elastic_policy: PaddleElasticPolicy | None = None


class JAXJobSpec(JobSpec):
    replica_field = "jax_replica_specs"
    jax_replica_specs: dict[str, ReplicaSpec] | None = None


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
    ),
    "TFJob": KindInfo(
        "TFJob", "tfjobs", "tfReplicaSpecs", ("PS", "Worker", "Chief", "Master", "Evaluator"), "tensorflow",
        "tfjob-port", 2222, "Never", "tfjob-controller", "tensorflow", False,
    ),
    "XGBoostJob": KindInfo(
        "XGBoostJob", "xgboostjobs", "xgbReplicaSpecs", ("Master", "Worker"), "xgboost",
        "xgboostjob-port", 9999, "Never", "xgboostjob-controller", "xgboost", False,
    ),
    "MPIJob": KindInfo(
        "MPIJob", "mpijobs", "mpiReplicaSpecs", ("Launcher", "Worker"), "mpi",
        "mpi-port", 9999, "Never", "mpijob-controller", "mpi", False,
    ),
    "PaddleJob": KindInfo(
        "PaddleJob", "paddlejobs", "paddleReplicaSpecs", ("Master", "Worker"), "paddle",
        "master", 36543, "OnFailure", "paddlejob-controller", "paddle", True,
    ),
    "JAXJob": KindInfo(
        "JAXJob", "jaxjobs", "jaxReplicaSpecs", ("Worker",), "jax",
        "jaxjob-port", 6666, "Never", "jaxjob-controller", "jax", True,
    ),
}  # fmt: skip

JOB_MODELS: dict[str, type[TrainingJob]] = {
    "PyTorchJob": PyTorchJob,
    "TFJob": TFJob,
    "XGBoostJob": XGBoostJob,
    "MPIJob": MPIJob,
    "PaddleJob": PaddleJob,
    "JAXJob": JAXJob,
}

KIND_BY_PLURAL: dict[str, str] = {info.plural: k for k, info in KIND_INFO.items()}


def kind_info(job_or_kind: TrainingJob | str) -> KindInfo:
    kind = job_or_kind if isinstance(job_or_kind, str) else job_or_kind.kind
    return KIND_INFO[kind]
