"""``TrainingClient.train()``'s objects: kubeflow-training 1.9.4's PVC and PyTorchJob for a fine-tuning
call, built as Kubernetes JSON field for field (its ``training_client.train`` and ``utils``), and the
parameter classes of ``kubeflow.storage_initializer`` for code that has no kubeflow-training installed.

Upstream's own parameter objects are accepted as they are (recognised by class name and fields), so
code written for kubeflow-training only changes its ``TrainingClient`` import. Pure: no backend here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import import_module, metadata
from typing import Any

from trainop.sdk import constants
from trainop.sdk.funcjob import build_env, build_resources
from trainop.sdk.utils import SetEncoder  # upstream's: a set → a list, a class → its name

# Upstream's trainer arguments point into the volume the storage initializer filled.
VOLUME_PATH_MODEL = constants.INIT_CONTAINER_MOUNT_PATH + "/model"
VOLUME_PATH_DATASET = constants.INIT_CONTAINER_MOUNT_PATH + "/dataset"
# Beyond upstream (docs/finetune.md): the trainer names the client's library versions when it refuses
# a TrainingArguments or LoraConfig key its own versions do not know.
ENV_CLIENT_VERSIONS = "TRAINOP_CLIENT_VERSIONS"
CLIENT_VERSION_DISTS = ("transformers", "peft")
MODEL_PARAMS = "HuggingFaceModelParams"
DATASET_PARAMS = {"HuggingFaceDatasetParams": "hf", "S3DatasetParams": "s3"}


@dataclass
class HuggingFaceModelParams:
    """kubeflow.storage_initializer.hugging_face.HuggingFaceModelParams: the model to fine-tune
    (``hf://org/name``, ``file:///dir`` or a directory) and its transformers Auto class."""

    model_uri: str
    transformer_type: Any
    access_token: str | None = None
    num_labels: int | None = None

    def __post_init__(self) -> None:
        if self.model_uri == "" or self.model_uri is None:
            raise ValueError("model_uri cannot be empty.")


@dataclass
class HuggingFaceTrainerParams:
    """kubeflow.storage_initializer.hugging_face.HuggingFaceTrainerParams: TrainingArguments + LoraConfig."""

    training_parameters: Any = field(
        default_factory=lambda: import_module("transformers").TrainingArguments()
    )
    lora_config: Any = field(default_factory=lambda: import_module("peft").LoraConfig())


@dataclass
class HuggingFaceDatasetParams:
    """kubeflow.storage_initializer.hugging_face.HuggingFaceDatasetParams: a hub dataset or a local
    directory of json/csv/parquet/arrow files (trainop's initializer reads those too)."""

    repo_id: str
    access_token: str | None = None
    split: str | None = None

    def __post_init__(self) -> None:
        if self.repo_id == "" or self.repo_id is None:
            raise ValueError("repo_id is None")


@dataclass
class S3DatasetParams:
    """kubeflow.storage_initializer.s3.S3DatasetParams: every object under ``file_key``."""

    endpoint_url: str
    bucket_name: str
    file_key: str
    region_name: str | None = None
    access_key: str | None = None
    secret_key: str | None = None

    def __post_init__(self) -> None:
        if self.bucket_name is None or self.endpoint_url is None or self.file_key is None:
            raise ValueError("bucket_name or endpoint_url or file_key is None")


def detect_providers(model: Any, dataset: Any) -> tuple[str, str]:
    """("hf", "hf"|"s3") for upstream's parameter objects or ours; upstream's ValueError otherwise."""
    if type(model).__name__ != MODEL_PARAMS:
        raise ValueError(f"Invalid model provider parameters {model}")
    dp = DATASET_PARAMS.get(type(dataset).__name__)
    if dp is None:
        raise ValueError(f"Invalid dataset provider parameters {dataset}")
    return "hf", dp


def type_name(transformer_type: Any) -> str:
    return transformer_type if isinstance(transformer_type, str) else str(transformer_type.__name__)


def build_client_versions() -> str:
    parts = []
    for dist in CLIENT_VERSION_DISTS:
        try:
            parts.append(f"{dist}={metadata.version(dist)}")
        except metadata.PackageNotFoundError:
            continue
    return " ".join(parts)


def build_pvc(name: str, namespace: str, storage_config: Mapping[str, Any]) -> dict[str, Any]:
    """utils.get_pvc_spec: the PVC the storage initializer fills, named like the job."""
    spec: dict[str, Any] = {
        "accessModes": list(storage_config.get("access_modes") or constants.PVC_DEFAULT_ACCESS_MODES),
        "resources": {"requests": {"storage": storage_config.get("size") or constants.PVC_DEFAULT_SIZE}},
    }
    if storage_config.get("storage_class") is not None:
        spec["storageClassName"] = storage_config["storage_class"]
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def _container(name: str, image: str, args: list[str], env: Any, resources: Any = None) -> dict[str, Any]:
    """utils.get_container_spec with the storage volume mounted at /workspace."""
    mount = {"name": constants.STORAGE_INITIALIZER, "mountPath": constants.INIT_CONTAINER_MOUNT_PATH}
    out: dict[str, Any] = {"name": name, "image": image, "args": args, "volumeMounts": [mount]}
    env_list = build_env(env) if env else None
    if env_list:
        out["env"] = env_list
    res = build_resources(resources)
    if res is not None:
        out["resources"] = res
    return out


def build_train_job(
    *,
    name: str,
    namespace: str,
    labels: Mapping[str, str] | None,
    annotations: Mapping[str, str] | None,
    num_workers: int,
    num_procs_per_worker: int,
    resources_per_worker: Any,
    model_provider_parameters: Any,
    dataset_provider_parameters: Any,
    trainer_parameters: Any,
    init_env_vars: Any,
    env_vars: Any,
) -> dict[str, Any]:
    """training_client.train's PyTorchJob: a Master with the storage-initializer init container and
    ``num_workers - 1`` Workers, each running the trainer image with upstream's arguments."""
    mp, dp = detect_providers(model_provider_parameters, dataset_provider_parameters)
    init = _container(
        constants.STORAGE_INITIALIZER,
        constants.STORAGE_INITIALIZER_IMAGE,
        [
            "--model_provider",
            mp,
            "--model_provider_parameters",
            json.dumps(model_provider_parameters.__dict__, cls=SetEncoder),
            "--dataset_provider",
            dp,
            "--dataset_provider_parameters",
            json.dumps(dataset_provider_parameters.__dict__),
        ],
        init_env_vars,
    )
    versions = build_client_versions()
    trainer_env = build_env(env_vars) or []
    if versions and not any(e.get("name") == ENV_CLIENT_VERSIONS for e in trainer_env):
        trainer_env.append({"name": ENV_CLIENT_VERSIONS, "value": versions})
    trainer = _container(
        constants.JOB_PARAMETERS[constants.PYTORCHJOB_KIND]["container"],
        constants.TRAINER_TRANSFORMER_IMAGE,
        [
            "--model_uri",
            model_provider_parameters.model_uri,
            "--transformer_type",
            type_name(model_provider_parameters.transformer_type),
            "--num_labels",
            str(model_provider_parameters.num_labels),
            "--model_dir",
            VOLUME_PATH_MODEL,
            "--dataset_dir",
            VOLUME_PATH_DATASET,
            "--lora_config",
            json.dumps(trainer_parameters.lora_config.to_dict(), cls=SetEncoder),
            "--training_parameters",
            json.dumps(trainer_parameters.training_parameters.to_dict()),
        ],
        trainer_env,
        resources_per_worker,
    )
    volume = {"name": constants.STORAGE_INITIALIZER, "persistentVolumeClaim": {"claimName": name}}

    def template(with_init: bool) -> dict[str, Any]:
        spec: dict[str, Any] = {"containers": [trainer], "volumes": [volume]}
        if with_init:
            spec = {"initContainers": [init], **spec}
        return {"metadata": {"annotations": {constants.ISTIO_SIDECAR_INJECTION: "false"}}, "spec": spec}

    replicas: dict[str, Any] = {constants.REPLICA_TYPE_MASTER: {"replicas": 1, "template": template(True)}}
    if num_workers > 1:
        replicas[constants.REPLICA_TYPE_WORKER] = {"replicas": num_workers - 1, "template": template(False)}
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if labels is not None:
        meta["labels"] = dict(labels)
    if annotations is not None:
        meta["annotations"] = dict(annotations)
    return {
        "apiVersion": constants.API_VERSION,
        "kind": constants.PYTORCHJOB_KIND,
        "metadata": meta,
        # cleanPodPolicy None (Python's) is left out of upstream's JSON, like every unset field.
        "spec": {
            "runPolicy": {},
            "pytorchReplicaSpecs": replicas,
            "nprocPerNode": str(num_procs_per_worker),
        },
    }
