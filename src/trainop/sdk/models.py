"""kubeflow-training's model names over trainop's pydantic models (contract §7.1), plus object views.

``KubeflowOrgV1PyTorchJob`` and friends subclass the API models, so ``get_job`` results pass both
``isinstance`` checks and keep snake_case attributes (``job.status.conditions[0].type``). They also
accept ``kubernetes.client`` model objects where upstream did (``metadata=V1ObjectMeta(...)``,
``template=V1PodTemplateSpec(...)``). ``V1*`` names resolve to ``kubernetes.client`` when it is
installed, as upstream re-exported them. Pure: no I/O.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from datetime import date, datetime
from typing import Any

from pydantic import BaseModel, model_validator
from pydantic.alias_generators import to_camel

from trainop.api import common, kinds
from trainop.api.common import KubeModel


def build_plain(value: Any) -> Any:
    """Any model object (ours, ``kubernetes.client``'s, lightkube's, a view) → plain Kubernetes JSON.

    ``kubernetes.client`` models up to client 36 carry ``attribute_map`` (attribute → JSON key) and
    ``openapi_types``; their ``to_dict()`` keeps snake_case keys, so the map is walked instead (what
    upstream's ``ApiClient.sanitize_for_serialization`` does before a POST). From client 37 they are
    pydantic models whose aliases are the JSON keys. Unset (None) model fields are dropped.
    """
    if value is None or isinstance(value, str | bool | int | float):
        return value
    if isinstance(value, KubeModel):
        return value.to_dict()
    if isinstance(value, BaseModel):
        return value.model_dump(by_alias=True, exclude_none=True, mode="json")
    if isinstance(value, KubeObject):
        return value.to_dict()
    if isinstance(value, datetime):
        return value.isoformat().replace("+00:00", "Z")
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, Mapping):
        return {str(k): build_plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [build_plain(v) for v in value]
    attribute_map = getattr(value, "attribute_map", None)
    openapi_types = getattr(value, "openapi_types", None)
    if isinstance(attribute_map, Mapping) and isinstance(openapi_types, Mapping):
        out: dict[str, Any] = {}
        for attr in openapi_types:
            v = getattr(value, attr, None)
            if v is not None:
                out[str(attribute_map.get(attr, attr))] = build_plain(v)
        return out
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):  # lightkube models and other camelCase dataclasses
        return build_plain(to_dict())
    raise TypeError(f"cannot turn a {type(value).__name__} into Kubernetes JSON")


def _is_foreign(value: Any) -> bool:
    """A model object that is not ours: ``kubernetes.client`` models (plain classes up to client 36,
    pydantic models from 37 on), lightkube dataclasses. Pydantic would reject them in our fields."""
    if isinstance(value, KubeModel | str | bytes | Mapping | list | tuple | datetime | date) or value is None:
        return False
    return (
        isinstance(value, BaseModel)
        or hasattr(value, "attribute_map")
        or callable(getattr(value, "to_dict", None))
    )


def _coerce(value: Any) -> Any:
    if _is_foreign(value):
        return build_plain(value)
    if isinstance(value, dict):
        return {k: _coerce(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_coerce(v) for v in value]
    return value


class _AcceptsClientModels(KubeModel):
    """Turns ``kubernetes.client``-style objects given to a constructor into plain JSON first."""

    @model_validator(mode="before")
    @classmethod
    def _from_client_models(cls, data: Any) -> Any:
        if _is_foreign(data):
            return build_plain(data)
        if isinstance(data, dict):
            return {k: _coerce(v) for k, v in data.items()}
        return data


# --- common types (§7.1) ---
class KubeflowOrgV1RunPolicy(common.RunPolicy, _AcceptsClientModels):
    pass


class KubeflowOrgV1SchedulingPolicy(common.SchedulingPolicy, _AcceptsClientModels):
    pass


class KubeflowOrgV1ReplicaSpec(common.ReplicaSpec, _AcceptsClientModels):
    pass


class KubeflowOrgV1JobCondition(common.JobCondition, _AcceptsClientModels):
    pass


class KubeflowOrgV1ReplicaStatus(common.ReplicaStatus, _AcceptsClientModels):
    pass


class KubeflowOrgV1JobStatus(common.JobStatus, _AcceptsClientModels):
    pass


class KubeflowOrgV1RDZVConf(kinds.RDZVConf, _AcceptsClientModels):
    pass


class KubeflowOrgV1ElasticPolicy(kinds.ElasticPolicy, _AcceptsClientModels):
    pass


class KubeflowOrgV1PaddleElasticPolicy(kinds.PaddleElasticPolicy, _AcceptsClientModels):
    pass


# --- specs ---
class KubeflowOrgV1PyTorchJobSpec(kinds.PyTorchJobSpec, _AcceptsClientModels):
    pass


class KubeflowOrgV1TFJobSpec(kinds.TFJobSpec, _AcceptsClientModels):
    pass


class KubeflowOrgV1XGBoostJobSpec(kinds.XGBoostJobSpec, _AcceptsClientModels):
    pass


class KubeflowOrgV1MPIJobSpec(kinds.MPIJobSpec, _AcceptsClientModels):
    pass


class KubeflowOrgV1PaddleJobSpec(kinds.PaddleJobSpec, _AcceptsClientModels):
    pass


class KubeflowOrgV1JAXJobSpec(kinds.JAXJobSpec, _AcceptsClientModels):
    pass


# --- jobs ---
class KubeflowOrgV1PyTorchJob(kinds.PyTorchJob, _AcceptsClientModels):
    pass


class KubeflowOrgV1TFJob(kinds.TFJob, _AcceptsClientModels):
    pass


class KubeflowOrgV1XGBoostJob(kinds.XGBoostJob, _AcceptsClientModels):
    pass


class KubeflowOrgV1MPIJob(kinds.MPIJob, _AcceptsClientModels):
    pass


class KubeflowOrgV1PaddleJob(kinds.PaddleJob, _AcceptsClientModels):
    pass


class KubeflowOrgV1JAXJob(kinds.JAXJob, _AcceptsClientModels):
    pass


# Kind → the model class get_job/list_jobs return (a subclass of trainop.api.kinds.JOB_MODELS[kind]).
SDK_JOB_MODELS: dict[str, type[common.TrainingJob]] = {
    "PyTorchJob": KubeflowOrgV1PyTorchJob,
    "TFJob": KubeflowOrgV1TFJob,
    "XGBoostJob": KubeflowOrgV1XGBoostJob,
    "MPIJob": KubeflowOrgV1MPIJob,
    "PaddleJob": KubeflowOrgV1PaddleJob,
    "JAXJob": KubeflowOrgV1JAXJob,
}

JOB_MODELS_TYPE = (
    KubeflowOrgV1PyTorchJob
    | KubeflowOrgV1TFJob
    | KubeflowOrgV1XGBoostJob
    | KubeflowOrgV1MPIJob
    | KubeflowOrgV1PaddleJob
    | KubeflowOrgV1JAXJob
)


class KubeObject(Mapping[str, Any]):
    """A read-only view of a Kubernetes JSON object (a Pod, an Event) with upstream-style attributes.

    ``pod.metadata.name``, ``pod.status.container_statuses[0].state.terminated.exit_code`` and the
    camelCase spelling both work; an unset field reads as None, as on ``kubernetes.client`` models.
    ``to_dict()`` gives the JSON back; ``pod["metadata"]["name"]`` works too.

    >>> KubeObject({"status": {"containerStatuses": [{"restartCount": 2}]}}).status.container_statuses[0].restart_count
    2
    """

    __slots__ = ("_data",)

    def __init__(self, data: Mapping[str, Any]) -> None:
        self._data = dict(data)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        for key in (name, to_camel(name)):
            if key in self._data:
                return _view(self._data[key])
        return None

    def __getitem__(self, key: str) -> Any:
        return _view(self._data[key])

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, KubeObject):
            return self._data == other._data
        return isinstance(other, Mapping) and self._data == dict(other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"KubeObject({self._data!r})"

    def to_dict(self) -> dict[str, Any]:
        """The object as Kubernetes JSON (camelCase keys)."""
        return self._data


def _view(value: Any) -> Any:
    if isinstance(value, Mapping):
        return KubeObject(value)
    if isinstance(value, list):
        return [_view(v) for v in value]
    return value


def __getattr__(name: str) -> Any:
    """``V1Container`` etc.: upstream's models module re-exported every ``kubernetes.client`` model."""
    if name.startswith("V1") or name.startswith("V2"):
        try:
            client = importlib.import_module("kubernetes.client")
        except ImportError:
            raise AttributeError(
                f"{name} comes from the Kubernetes Python client; install it with `pip install kubernetes` "
                "(or pass plain dicts instead)"
            ) from None
        return getattr(client, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
