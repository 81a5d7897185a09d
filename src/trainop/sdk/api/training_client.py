"""kubeflow-training's ``api.training_client`` module: ``TrainingClient`` and the names it imported.

Importing it imports the Kubernetes client (``ApiClient``); ``trainop.sdk`` itself does not.
"""

from kubernetes.client.rest import ApiException

from trainop.sdk import constants, models, utils
from trainop.sdk.api_client import ApiClient
from trainop.sdk.client import TrainingClient, logger, status_logger

# Upstream imports these from kubeflow.storage_initializer.constants (where train() mounts them).
from trainop.sdk.finetune import VOLUME_PATH_DATASET, VOLUME_PATH_MODEL

__all__ = [
    "VOLUME_PATH_DATASET",
    "VOLUME_PATH_MODEL",
    "ApiClient",
    "ApiException",
    "TrainingClient",
    "constants",
    "logger",
    "models",
    "status_logger",
    "utils",
]
