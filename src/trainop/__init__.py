"""trainop: Kubeflow kubeflow.org/v1 training jobs on one machine or on Kubernetes."""

from __future__ import annotations

# No import at run time: the command's start-up reaches its stop-signal handling (trainop.cli) sooner.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from trainop.sdk.client import TrainingClient

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    # `from trainop import TrainingClient` loads the SDK on first use, so `import trainop` stays cheap.
    if name == "TrainingClient":
        from trainop.sdk.client import TrainingClient

        return TrainingClient
    raise AttributeError(f"module 'trainop' has no attribute {name!r}")


__all__ = ["TrainingClient", "__version__"]
