"""kubeflow-training's ``rest`` module: kubernetes.client's, which upstream's generated one copies.

Importing it imports the Kubernetes client; ``trainop.sdk`` itself loads it only on first use.
"""

from kubernetes.client.rest import (
    ApiException,
    ApiValueError,
    RESTClientObject,
    RESTResponse,
    logger,
)

__all__ = [
    "ApiException",
    "ApiValueError",
    "RESTClientObject",
    "RESTResponse",
    "logger",
]
