"""trainop's Python SDK: kubeflow-training's ``TrainingClient`` API over the local or Kubernetes backend.

``from kubeflow.training import X`` becomes ``from trainop.sdk import X`` (``TrainingClient``,
``constants``, the ``KubeflowOrgV1*`` models); ``from trainop import TrainingClient`` works too.
Importing this package loads no Kubernetes client: the backend is loaded by the constructor.
"""

from trainop.sdk import constants
from trainop.sdk.client import TrainingClient
from trainop.sdk.errors import (
    AlreadyExistsError,
    InvalidJobError,
    JobFailedError,
    NotFoundError,
    SDKError,
    WaitTimeoutError,
)
from trainop.sdk.models import (
    KubeflowOrgV1ElasticPolicy,
    KubeflowOrgV1JAXJob,
    KubeflowOrgV1JAXJobSpec,
    KubeflowOrgV1JobCondition,
    KubeflowOrgV1JobStatus,
    KubeflowOrgV1MPIJob,
    KubeflowOrgV1MPIJobSpec,
    KubeflowOrgV1PaddleElasticPolicy,
    KubeflowOrgV1PaddleJob,
    KubeflowOrgV1PaddleJobSpec,
    KubeflowOrgV1PyTorchJob,
    KubeflowOrgV1PyTorchJobSpec,
    KubeflowOrgV1RDZVConf,
    KubeflowOrgV1ReplicaSpec,
    KubeflowOrgV1ReplicaStatus,
    KubeflowOrgV1RunPolicy,
    KubeflowOrgV1SchedulingPolicy,
    KubeflowOrgV1TFJob,
    KubeflowOrgV1TFJobSpec,
    KubeflowOrgV1XGBoostJob,
    KubeflowOrgV1XGBoostJobSpec,
    KubeObject,
)

__all__ = [
    "AlreadyExistsError",
    "InvalidJobError",
    "JobFailedError",
    "KubeObject",
    "KubeflowOrgV1ElasticPolicy",
    "KubeflowOrgV1JAXJob",
    "KubeflowOrgV1JAXJobSpec",
    "KubeflowOrgV1JobCondition",
    "KubeflowOrgV1JobStatus",
    "KubeflowOrgV1MPIJob",
    "KubeflowOrgV1MPIJobSpec",
    "KubeflowOrgV1PaddleElasticPolicy",
    "KubeflowOrgV1PaddleJob",
    "KubeflowOrgV1PaddleJobSpec",
    "KubeflowOrgV1PyTorchJob",
    "KubeflowOrgV1PyTorchJobSpec",
    "KubeflowOrgV1RDZVConf",
    "KubeflowOrgV1ReplicaSpec",
    "KubeflowOrgV1ReplicaStatus",
    "KubeflowOrgV1RunPolicy",
    "KubeflowOrgV1SchedulingPolicy",
    "KubeflowOrgV1TFJob",
    "KubeflowOrgV1TFJobSpec",
    "KubeflowOrgV1XGBoostJob",
    "KubeflowOrgV1XGBoostJobSpec",
    "NotFoundError",
    "SDKError",
    "TrainingClient",
    "WaitTimeoutError",
    "constants",
]
