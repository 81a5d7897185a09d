"""The explicit registry of framework plugins: ``REGISTRY.get(kind)`` and ``REGISTRY.kinds()``.

Importing this module only constructs the six plugins with upstream's default operator flags; a
backend that takes other flags (init-container image, kubectl-delivery image) builds its own with
``build_registry``. Pure: no I/O.
"""

from __future__ import annotations

from trainop.frameworks.base import FrameworkPlugin
from trainop.frameworks.jax import JAXPlugin
from trainop.frameworks.mpi import DEFAULT_KUBECTL_DELIVERY_IMAGE, MPIPlugin
from trainop.frameworks.paddle import PaddlePlugin
from trainop.frameworks.pytorch import (
    DEFAULT_INIT_CONTAINER_IMAGE,
    DEFAULT_INIT_CONTAINER_MAX_TRIES,
    PyTorchPlugin,
)
from trainop.frameworks.tensorflow import TFPlugin
from trainop.frameworks.xgboost import XGBoostPlugin


class UnknownKindError(KeyError):
    """No plugin for this kind; the message lists the kinds that exist."""


class Registry:
    def __init__(self, plugins: list[FrameworkPlugin]) -> None:
        self._plugins: dict[str, FrameworkPlugin] = {p.info.kind: p for p in plugins}

    def get(self, kind: str) -> FrameworkPlugin:
        plugin = self._plugins.get(kind)
        if plugin is None:
            raise UnknownKindError(
                f"no framework plugin for kind {kind!r}; known kinds: {', '.join(self.kinds())}"
            )
        return plugin

    def kinds(self) -> list[str]:
        return list(self._plugins)

    def __contains__(self, kind: object) -> bool:
        return kind in self._plugins


def build_registry(
    *,
    pytorch_init_container_image: str = DEFAULT_INIT_CONTAINER_IMAGE,
    pytorch_init_container_max_tries: int = DEFAULT_INIT_CONTAINER_MAX_TRIES,
    mpi_kubectl_delivery_image: str = DEFAULT_KUBECTL_DELIVERY_IMAGE,
) -> Registry:
    """All six kinds, with the operator flags of §6.4 as parameters."""
    return Registry(
        [
            PyTorchPlugin(pytorch_init_container_image, pytorch_init_container_max_tries),
            TFPlugin(),
            XGBoostPlugin(),
            MPIPlugin(mpi_kubectl_delivery_image),
            PaddlePlugin(),
            JAXPlugin(),
        ]
    )


REGISTRY = build_registry()
