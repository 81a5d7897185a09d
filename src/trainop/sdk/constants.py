"""kubeflow-training's constants module (contract §7.2), so ``constants.X`` in notebook code keeps working.

Names and values are upstream's; label and condition names come from ``trainop.api.constants`` so the
SDK and the operator cannot drift. Deliberate difference (§9.12): ``JAXJOB_REPLICA_TYPES`` is a tuple.
``STORAGE_INITIALIZER_VOLUME_MOUNT`` (a ``kubernetes.client`` model) is built on first use. Pure data.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import types
from typing import Any, Final, Union

from trainop.api import constants as _api
from trainop.api.kinds import KIND_INFO as _KIND_INFO
from trainop.sdk import models

# Upstream's module is kubeflow.training.constants.constants: `from ….constants import constants` and
# `import ….constants.constants` work here too (the import system finds the name in sys.modules).
constants = sys.modules[__name__]
sys.modules[f"{__name__}.constants"] = constants

DEFAULT_TIMEOUT: Final = 120
DEFAULT_PIP_INDEX_URL: Final = "https://pypi.org/simple"
DEFAULT_NAMESPACE: Final = "default"
ISTIO_SIDECAR_INJECTION: Final = _api.ANNOTATION_ISTIO_INJECT

GROUP: Final = _api.GROUP
VERSION: Final = _api.VERSION
API_VERSION: Final = _api.API_VERSION

POD_KIND: Final = "Pod"
POD_PHASE_PENDING: Final = "Pending"

JOB_CONDITION_CREATED: Final = _api.COND_CREATED
JOB_CONDITION_RUNNING: Final = _api.COND_RUNNING
JOB_CONDITION_RESTARTING: Final = _api.COND_RESTARTING
JOB_CONDITION_SUCCEEDED: Final = _api.COND_SUCCEEDED
JOB_CONDITION_FAILED: Final = _api.COND_FAILED
# Upstream's set has no Suspended: wait_for_job_conditions accepts exactly these five (§7.3).
JOB_CONDITIONS: Final = {
    JOB_CONDITION_CREATED,
    JOB_CONDITION_RUNNING,
    JOB_CONDITION_RESTARTING,
    JOB_CONDITION_SUCCEEDED,
    JOB_CONDITION_FAILED,
}
CONDITION_STATUS_TRUE: Final = "True"

JOB_NAME_LABEL: Final = _api.LABEL_JOB_NAME
JOB_ROLE_LABEL: Final = _api.LABEL_JOB_ROLE
JOB_ROLE_MASTER: Final = _api.JOB_ROLE_MASTER
REPLICA_TYPE_LABEL: Final = _api.LABEL_REPLICA_TYPE
REPLICA_INDEX_LABEL: Final = _api.LABEL_REPLICA_INDEX
LOCAL_QUEUE_LABEL: Final = _api.LABEL_KUEUE_QUEUE

REPLICA_TYPE_CHIEF: Final = "Chief"
REPLICA_TYPE_PS: Final = "PS"
REPLICA_TYPE_MASTER: Final = "Master"
REPLICA_TYPE_WORKER: Final = "Worker"
REPLICA_TYPE_SCHEDULER: Final = "Scheduler"
REPLICA_TYPE_SERVER: Final = "Server"
REPLICA_TYPE_LAUNCHER: Final = "Launcher"

# Train API (LLM fine-tuning) names, kept for code that reads them.
STORAGE_INITIALIZER: Final = "storage-initializer"
# kubeflow.storage_initializer.constants: where the init container mounts the model and dataset volume.
INIT_CONTAINER_MOUNT_PATH: Final = "/workspace"
PVC_DEFAULT_SIZE: Final = "10Gi"
PVC_DEFAULT_ACCESS_MODES: Final = ["ReadWriteOnce", "ReadOnlyMany"]
STORAGE_INITIALIZER_IMAGE: Final = os.getenv(
    "STORAGE_INITIALIZER_IMAGE", "ghcr.io/kubeflow/training-v1/storage-initializer"
)
TRAINER_TRANSFORMER_IMAGE: Final = os.getenv(
    "TRAINER_TRANSFORMER_IMAGE", "ghcr.io/kubeflow/training-v1/trainer-huggingface"
)

# --- per kind ---
TFJOB_KIND: Final = "TFJob"
TFJOB_MODEL: Final = "KubeflowOrgV1TFJob"
TFJOB_PLURAL: Final = _KIND_INFO[TFJOB_KIND].plural
TFJOB_CONTAINER: Final = _KIND_INFO[TFJOB_KIND].default_container
TFJOB_REPLICA_TYPES: Final = ("ps", "chief", "worker")
TFJOB_BASE_IMAGE: Final = "docker.io/tensorflow/tensorflow:2.9.1"
TFJOB_BASE_IMAGE_GPU: Final = "docker.io/tensorflow/tensorflow:2.9.1-gpu"

PYTORCHJOB_KIND: Final = "PyTorchJob"
PYTORCHJOB_MODEL: Final = "KubeflowOrgV1PyTorchJob"
PYTORCHJOB_PLURAL: Final = _KIND_INFO[PYTORCHJOB_KIND].plural
PYTORCHJOB_CONTAINER: Final = _KIND_INFO[PYTORCHJOB_KIND].default_container
PYTORCHJOB_REPLICA_TYPES: Final = ("master", "worker")
PYTORCHJOB_BASE_IMAGE: Final = "docker.io/pytorch/pytorch:2.1.2-cuda11.8-cudnn8-runtime"

XGBOOSTJOB_KIND: Final = "XGBoostJob"
XGBOOSTJOB_MODEL: Final = "KubeflowOrgV1XGBoostJob"
XGBOOSTJOB_PLURAL: Final = _KIND_INFO[XGBOOSTJOB_KIND].plural
XGBOOSTJOB_CONTAINER: Final = _KIND_INFO[XGBOOSTJOB_KIND].default_container
XGBOOSTJOB_REPLICA_TYPES: Final = ("master", "worker")

MPIJOB_KIND: Final = "MPIJob"
MPIJOB_MODEL: Final = "KubeflowOrgV1MPIJob"
MPIJOB_PLURAL: Final = _KIND_INFO[MPIJOB_KIND].plural
MPIJOB_CONTAINER: Final = _KIND_INFO[MPIJOB_KIND].default_container
MPIJOB_REPLICA_TYPES: Final = ("launcher", "worker")

PADDLEJOB_KIND: Final = "PaddleJob"
PADDLEJOB_MODEL: Final = "KubeflowOrgV1PaddleJob"
PADDLEJOB_PLURAL: Final = _KIND_INFO[PADDLEJOB_KIND].plural
PADDLEJOB_CONTAINER: Final = _KIND_INFO[PADDLEJOB_KIND].default_container
PADDLEJOB_REPLICA_TYPES: Final = ("master", "worker")
PADDLEJOB_BASE_IMAGE: Final = "docker.io/paddlepaddle/paddle:2.4.0rc0-gpu-cuda11.2-cudnn8.1-trt8.0"

JAXJOB_KIND: Final = "JAXJob"
JAXJOB_MODEL: Final = "KubeflowOrgV1JAXJob"
JAXJOB_PLURAL: Final = _KIND_INFO[JAXJOB_KIND].plural
JAXJOB_CONTAINER: Final = _KIND_INFO[JAXJOB_KIND].default_container
# §9.12: upstream's value is the plain string "worker", which turns membership into a substring test.
JAXJOB_REPLICA_TYPES: Final = ("worker",)
JAXJOB_BASE_IMAGE: Final = "ghcr.io/kubeflow/training-v1/jaxjob-dist-spmd-mnist:latest"

ENTRYPOINT_TORCH: Final = "torchrun"
ENTRYPOINT_PYTHON: Final = "python -u"
DEFAULT_COMMAND: Final = ["bash", "-c"]

# Upstream's placeholder base images (§9.12) are kept verbatim: code that prints them sees what it saw before.
JOB_PARAMETERS: Final[dict[str, dict[str, str]]] = {
    kind: {
        "model": f"KubeflowOrgV1{kind}",
        "plural": _KIND_INFO[kind].plural,
        "container": _KIND_INFO[kind].default_container,
        "base_image": base_image,
    }
    for kind, base_image in (
        (TFJOB_KIND, TFJOB_BASE_IMAGE),
        (PYTORCHJOB_KIND, PYTORCHJOB_BASE_IMAGE),
        (XGBOOSTJOB_KIND, "TODO"),
        (MPIJOB_KIND, "TODO"),
        (PADDLEJOB_KIND, PADDLEJOB_BASE_IMAGE),
        (JAXJOB_KIND, "JAXJOB_BASE_IMAGE"),
    )
}

JOB_MODELS: Final = tuple(p["model"] for p in JOB_PARAMETERS.values())

# Union type of all Job models (upstream's annotation type for create_job, get_job …).
JOB_MODELS_TYPE = Union[  # noqa: UP007 (upstream's spelling: a typing.Union object)
    models.KubeflowOrgV1TFJob,
    models.KubeflowOrgV1PyTorchJob,
    models.KubeflowOrgV1XGBoostJob,
    models.KubeflowOrgV1MPIJob,
    models.KubeflowOrgV1PaddleJob,
    models.KubeflowOrgV1JAXJob,
]

# Every replica type some kind has, lower case (the label value); get_job_pods accepts any case (§9.12 fix).
REPLICA_TYPES: Final = tuple(
    dict.fromkeys(rt.lower() for info in _KIND_INFO.values() for rt in info.replica_types)
)


# ``from trainop.sdk.constants import *`` brings what upstream's brings, STORAGE_INITIALIZER_VOLUME_MOUNT
# included (a star import reads ``__all__`` through ``__getattr__``; without ``__all__`` it would skip
# a name built on first use). That name needs the kubernetes client, as upstream's does.
__all__ = [
    name
    for name, value in list(globals().items())
    if not name.startswith("_") and name.isupper() and not isinstance(value, types.FunctionType)
]
try:
    _HAS_KUBERNETES = importlib.util.find_spec("kubernetes") is not None
except ImportError:  # an import hook that refuses it: not installed, as far as we are concerned
    _HAS_KUBERNETES = False
if _HAS_KUBERNETES:
    __all__.append("STORAGE_INITIALIZER_VOLUME_MOUNT")


def __getattr__(name: str) -> Any:
    # A kubernetes.client model, as upstream's; built on first use so importing the SDK stays cheap.
    if name == "STORAGE_INITIALIZER_VOLUME_MOUNT":
        mount = models.V1VolumeMount(name=STORAGE_INITIALIZER, mount_path=INIT_CONTAINER_MOUNT_PATH)
        globals()[name] = mount
        return mount
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
