"""The explicit registry of framework plugins: ``REGISTRY.get(kind)`` and ``REGISTRY.kinds()``.

Importing this module only constructs the six plugins with upstream's default operator flags; a
backend that takes other flags (init-container image, kubectl-delivery image) builds its own with
``build_registry``. A seventh kind is one new module under ``frameworks/`` (its ``KindInfo`` row, its
job model and its plugin) added to ``build_registry``'s list, or, at run time, handed to
``register_framework``. Pure: no I/O.
"""

from __future__ import annotations

from trainop.api.common import TrainingJob
from trainop.api.kinds import register_kind, unregister_kind
from trainop.api.trainer import register_ml_policy_source, unregister_ml_policy_source
from trainop.core.trainjob import MLPolicyPlugin
from trainop.frameworks.base import FrameworkPlugin
from trainop.frameworks.jax import JAXPlugin, JAXPolicy
from trainop.frameworks.mpi import DEFAULT_KUBECTL_DELIVERY_IMAGE, MPIPlugin, MPIPolicy
from trainop.frameworks.paddle import PaddlePlugin
from trainop.frameworks.pytorch import (
    DEFAULT_INIT_CONTAINER_IMAGE,
    DEFAULT_INIT_CONTAINER_MAX_TRIES,
    PyTorchPlugin,
    TorchPolicy,
)
from trainop.frameworks.tensorflow import TFPlugin
from trainop.frameworks.xgboost import XGBoostPlugin, XGBoostPolicy


class UnknownKindError(KeyError):
    """No plugin for this kind; the message lists the kinds that exist."""


class Registry:
    """The kubeflow.org/v1 plugins by kind, and the Trainer v2 ML policies by ``mlPolicy`` source
    (``torch``, ``mpi`` …): one framework module serves both APIs."""

    def __init__(self, plugins: list[FrameworkPlugin], policies: list[MLPolicyPlugin] | None = None) -> None:
        self._plugins: dict[str, FrameworkPlugin] = {p.info.kind: p for p in plugins}
        self._policies: dict[str, MLPolicyPlugin] = {p.ml_policy: p for p in policies or []}

    def ml_policy(self, name: str) -> MLPolicyPlugin | None:
        return self._policies.get(name)

    def register_ml_policy(self, policy: MLPolicyPlugin) -> None:
        self._policies[policy.ml_policy] = policy

    def unregister_ml_policy(self, name: str) -> None:
        self._policies.pop(name, None)

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

    def plugins(self) -> list[FrameworkPlugin]:
        return list(self._plugins.values())

    def register(self, plugin: FrameworkPlugin) -> None:
        self._plugins[plugin.info.kind] = plugin

    def unregister(self, kind: str) -> None:
        self._plugins.pop(kind, None)


# Kinds added at run time by ``register_framework``: every registry built afterwards has them too.
_REGISTERED: dict[str, FrameworkPlugin] = {}
_REGISTERED_POLICIES: dict[str, MLPolicyPlugin] = {}


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
            *_REGISTERED.values(),
        ],
        [TorchPolicy(), MPIPolicy(), JAXPolicy(), XGBoostPolicy(), *_REGISTERED_POLICIES.values()],
    )


REGISTRY = build_registry()


def register_framework(
    plugin: FrameworkPlugin, model: type[TrainingJob], policy: MLPolicyPlugin | None = None
) -> None:
    """Add a kind beyond the six: its ``KindInfo`` row and job model to the api tables (parsing,
    defaults, validation, CRDs) and its plugin to ``REGISTRY`` and every later ``build_registry``;
    with ``policy``, also its Trainer v2 ``mlPolicy`` source."""
    register_kind(plugin.info, model)
    _REGISTERED[plugin.info.kind] = plugin
    REGISTRY.register(plugin)
    if policy is not None:
        register_ml_policy_source(policy.ml_policy)
        _REGISTERED_POLICIES[policy.ml_policy] = policy
        REGISTRY.register_ml_policy(policy)


def unregister_framework(kind: str, policy: str | None = None) -> None:
    """Undo ``register_framework`` (a test's throw-away kind)."""
    _REGISTERED.pop(kind, None)
    REGISTRY.unregister(kind)
    unregister_kind(kind)
    if policy is not None:
        _REGISTERED_POLICIES.pop(policy, None)
        REGISTRY.unregister_ml_policy(policy)
        unregister_ml_policy_source(policy)
