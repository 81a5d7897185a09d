"""``ApiClient``: kubernetes.client's, also (de)serializing this SDK's ``KubeflowOrgV1*`` models.

kubeflow-training's generated ``ApiClient`` resolves model names in its own package; this one resolves
``KubeflowOrgV1*`` names here and leaves every other type to kubernetes.client. Importing this module
imports the Kubernetes client (``trainop.sdk`` loads it only when ``ApiClient`` is first used).
"""

from __future__ import annotations

import json
from typing import Any

from kubernetes import client
from kubernetes.client import rest
from kubernetes.client.configuration import Configuration
from kubernetes.client.exceptions import ApiException, ApiValueError

from trainop.sdk.models import build_model

__all__ = ["ApiClient", "ApiException", "ApiValueError", "Configuration", "rest"]


class ApiClient(client.ApiClient):  # type: ignore[misc]
    """``kubernetes.client.ApiClient`` that also knows ``KubeflowOrgV1PyTorchJob`` and friends."""

    def deserialize(self, response: Any, response_type: Any) -> Any:
        """``response.data`` (JSON text) → ``response_type``; our model names are built here."""
        if isinstance(response_type, str) and "KubeflowOrgV1" in response_type:
            try:
                data = json.loads(response.data)
            except ValueError:
                data = response.data
            return build_model(data, response_type)
        return super().deserialize(response, response_type)
