"""trainop: Kubeflow kubeflow.org/v1 training jobs on one machine or on Kubernetes."""

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from trainop.sdk.client import TrainingClient


def __getattr__(name: str) -> Any:
    # `from trainop import TrainingClient` loads the SDK on first use, so `import trainop` stays cheap.
    if name == "TrainingClient":
        from trainop.sdk.client import TrainingClient

        return TrainingClient
    raise AttributeError(f"module 'trainop' has no attribute {name!r}")


__all__ = ["TrainingClient", "__version__"]
