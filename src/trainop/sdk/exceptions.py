"""kubeflow-training's ``exceptions`` module: kubernetes.client's, which upstream's generated one copies.

Importing it imports the Kubernetes client; ``trainop.sdk`` itself loads it only on first use.
"""

from kubernetes.client.exceptions import (
    ApiException,
    ApiKeyError,
    ApiTypeError,
    ApiValueError,
    OpenApiException,
    render_path,
)

__all__ = [
    "ApiException",
    "ApiKeyError",
    "ApiTypeError",
    "ApiValueError",
    "OpenApiException",
    "render_path",
]
