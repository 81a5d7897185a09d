"""trainop's Python SDK: kubeflow-training's public names over the local or Kubernetes backend.

``from kubeflow.training import X`` becomes ``from trainop.sdk import X`` for every name upstream's
package exports (``TrainingClient``, ``constants``, ``utils``, the ``KubeflowOrgV1*`` models and lists,
``ApiClient``/``Configuration``/``ApiException``…); docs/sdk.md lists the few module names that differ.
Importing this package loads no Kubernetes client: those names and the backend load it on first use.
"""

from __future__ import annotations

import importlib
from typing import Any

from trainop.sdk import constants, models, utils
from trainop.sdk.client import TrainingClient
from trainop.sdk.errors import (
    AlreadyExistsError,
    InvalidJobError,
    JobFailedError,
    NotFoundError,
    SDKError,
    WaitTimeoutError,
)
from trainop.sdk.models import *  # noqa: F403 (upstream's models: every KubeflowOrgV1* class)

# Upstream's names that come from kubernetes.client: loaded when first read (the client is slow to import).
_LAZY_NAMES = {
    "ApiClient": "api_client",
    "Configuration": "configuration",
    "ApiException": "exceptions",
    "ApiKeyError": "exceptions",
    "ApiTypeError": "exceptions",
    "ApiValueError": "exceptions",
    "OpenApiException": "exceptions",
}
_LAZY_MODULES = ("api", "api_client", "configuration", "exceptions", "rest")

__all__ = [
    "AlreadyExistsError",
    "InvalidJobError",
    "JobFailedError",
    "NotFoundError",
    "SDKError",
    "TrainingClient",
    "WaitTimeoutError",
    "constants",
    "models",
    "utils",
    *models.__all__,  # the KubeflowOrgV1* models and KubeObject
    *_LAZY_NAMES,
    *_LAZY_MODULES,
]


def __getattr__(name: str) -> Any:
    if name in _LAZY_NAMES:
        value = getattr(importlib.import_module(f"{__name__}.{_LAZY_NAMES[name]}"), name)
    elif name in _LAZY_MODULES:
        value = importlib.import_module(f"{__name__}.{name}")
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
