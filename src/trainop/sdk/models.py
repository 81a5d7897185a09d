"""kubeflow-training's models (contract §7.1): the same classes, attributes and ``to_dict()``.

``KubeflowOrgV1PyTorchJob`` and friends are OpenAPI-style classes like upstream's generated ones:
``openapi_types``/``attribute_map``, properties over ``_<attr>``, snake_case ``to_dict()``; nested
Kubernetes objects are ``kubernetes.client`` models (imported lazily). Validation stays in
``trainop.api`` (pydantic): the client converts at this boundary. Pure: no I/O.
"""

from __future__ import annotations

import importlib
import inspect
import pprint
import re
import sys
from collections.abc import Iterator, Mapping
from datetime import date, datetime
from functools import cache, partial
from types import ModuleType
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel
from pydantic.alias_generators import to_camel

from trainop.api.common import KubeModel


class _Validation:
    """The one attribute upstream's models read from their ``Configuration``."""

    def __init__(self, client_side_validation: bool) -> None:
        self.client_side_validation = client_side_validation


# Upstream builds a Configuration per model only to read this flag; one shared object serves.
_VALIDATING = _Validation(True)
# Objects read back from a backend are taken as they are: the server's data is authoritative, and a
# field an older model marks required must not make get_job fail (see docs/sdk.md).
_LENIENT = _Validation(False)


def _field(name: str, required: bool) -> property:
    """A model attribute stored in ``_<name>``: upstream's generated property and setter (a required
    field refuses None while client-side validation is on)."""
    private = f"_{name}"

    def get(self: Any) -> Any:
        return getattr(self, private)

    def set_(self: Any, value: Any) -> None:
        config = getattr(self, "local_vars_configuration", _VALIDATING)
        if required and value is None and getattr(config, "client_side_validation", True):
            raise ValueError(f"Invalid value for `{name}`, must not be `None`")
        setattr(self, private, value)

    return property(get, set_, doc=f"The {name} of this model.")


def _model_init(fields: Iterator[str], defaults: Mapping[str, Any]) -> Any:
    """An ``__init__`` with the signature upstream generates: ``self``, then each field and
    ``local_vars_configuration``, by position or by name, None by default (else ``defaults``')."""
    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    params = [
        inspect.Parameter(n, kind, default=defaults.get(n)) for n in (*fields, "local_vars_configuration")
    ]
    sig = inspect.Signature([inspect.Parameter("self", kind), *params])

    def __init__(self: OpenAPIModel, *args: Any, **kwargs: Any) -> None:
        bound = sig.bind(self, *args, **kwargs)  # a TypeError for an unknown or repeated argument
        bound.apply_defaults()
        self._init(bound.arguments)

    __init__.__signature__ = sig  # type: ignore[attr-defined]
    return __init__


class OpenAPIModel:
    """Base of the ``KubeflowOrgV1*`` models: upstream's generated model behaviour in one place."""

    openapi_types: ClassVar[dict[str, str]] = {}
    attribute_map: ClassVar[dict[str, str]] = {}
    _required: ClassVar[tuple[str, ...]] = ()
    _defaults: ClassVar[dict[str, Any]] = {}  # a field's default where upstream's is not None
    discriminator: Any
    local_vars_configuration: Any

    # Each field is a property made from ``openapi_types`` (__init_subclass__); every model also
    # declares its fields as ``Any`` attributes, so that a type checker (ours, and a user's: the
    # package is typed) refuses a misspelt one and an editor completes them.
    if TYPE_CHECKING:

        def __init__(self, *args: Any, **kwargs: Any) -> None: ...

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Each model's properties, ``attribute_map`` (the camelCase JSON keys) and ``__init__``."""
        super().__init_subclass__(**kwargs)
        for attr in cls.openapi_types:
            setattr(cls, attr, _field(attr, attr in cls._required))
        cls.attribute_map = {attr: to_camel(attr) for attr in cls.openapi_types}
        cls.__init__ = _model_init(iter(cls.openapi_types), cls._defaults)  # type: ignore[method-assign]

    def _init(self, args: Mapping[str, Any]) -> None:
        config = args.get("local_vars_configuration")
        self.local_vars_configuration = _VALIDATING if config is None else config
        for attr in self.openapi_types:
            setattr(self, f"_{attr}", None)
        self.discriminator = None
        for attr in self.openapi_types:
            # Upstream's __init__ always runs a required field's setter, so a missing one raises.
            if args[attr] is not None or attr in self._required:
                setattr(self, attr, args[attr])

    def to_dict(self) -> dict[str, Any]:
        """The model's properties as a dict, snake_case keys, nested models as dicts (upstream's)."""
        result: dict[str, Any] = {}
        for attr in self.openapi_types:
            value = getattr(self, attr)
            if isinstance(value, list):
                result[attr] = [x.to_dict() if hasattr(x, "to_dict") else x for x in value]
            elif hasattr(value, "to_dict"):
                result[attr] = value.to_dict()
            elif isinstance(value, dict):
                result[attr] = {k: v.to_dict() if hasattr(v, "to_dict") else v for k, v in value.items()}
            else:
                result[attr] = value
        return result

    def to_str(self) -> str:
        """The string representation of the model."""
        return pprint.pformat(self.to_dict())

    def __repr__(self) -> str:
        return self.to_str()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, type(self)):
            return False
        return self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]


# --- the models (names, types and JSON keys as kubeflow-training 1.9.4 has them) ---


def _job_types(spec: str) -> dict[str, str]:
    return {
        "api_version": "str",
        "kind": "str",
        "metadata": "V1ObjectMeta",
        "spec": spec,
        "status": "KubeflowOrgV1JobStatus",
    }


def _spec_types(replica_specs: str, **fields: str) -> dict[str, str]:
    """A kind's spec: replica specs, run policy and its own ``fields``, in upstream's (sorted) order."""
    types = {replica_specs: "dict(str, KubeflowOrgV1ReplicaSpec)", "run_policy": "KubeflowOrgV1RunPolicy"}
    return dict(sorted({**types, **fields}.items()))


def _list_types(item: str) -> dict[str, str]:
    return {"api_version": "str", "items": f"list[{item}]", "kind": "str", "metadata": "V1ListMeta"}


class _JobModel(OpenAPIModel):
    """A kind's job model (``openapi_types``: ``_job_types(<the kind's spec model>)``)."""

    api_version: Any
    kind: Any
    metadata: Any
    spec: Any
    status: Any


class _JobListModel(OpenAPIModel):
    """A kind's list model (``openapi_types``: ``_list_types(<the kind's job model>)``)."""

    _required: ClassVar[tuple[str, ...]] = ("items",)
    api_version: Any
    items: Any
    kind: Any
    metadata: Any


class KubeflowOrgV1ElasticPolicy(OpenAPIModel):
    openapi_types: ClassVar[dict[str, str]] = {
        "max_replicas": "int",
        "max_restarts": "int",
        "metrics": "list[K8sIoApiAutoscalingV2MetricSpec]",
        "min_replicas": "int",
        "n_proc_per_node": "int",
        "rdzv_backend": "str",
        "rdzv_conf": "list[KubeflowOrgV1RDZVConf]",
        "rdzv_host": "str",
        "rdzv_id": "str",
        "rdzv_port": "int",
        "standalone": "bool",
    }
    max_replicas: Any
    max_restarts: Any
    metrics: Any
    min_replicas: Any
    n_proc_per_node: Any
    rdzv_backend: Any
    rdzv_conf: Any
    rdzv_host: Any
    rdzv_id: Any
    rdzv_port: Any
    standalone: Any


class KubeflowOrgV1JAXJob(_JobModel):
    openapi_types = _job_types("KubeflowOrgV1JAXJobSpec")


class KubeflowOrgV1JAXJobList(_JobListModel):
    openapi_types = _list_types("KubeflowOrgV1JAXJob")


class KubeflowOrgV1JAXJobSpec(OpenAPIModel):
    openapi_types = _spec_types("jax_replica_specs")
    _required: ClassVar[tuple[str, ...]] = ("jax_replica_specs", "run_policy")
    jax_replica_specs: Any
    run_policy: Any


class KubeflowOrgV1JobCondition(OpenAPIModel):
    openapi_types: ClassVar[dict[str, str]] = {
        "last_transition_time": "datetime",
        "last_update_time": "datetime",
        "message": "str",
        "reason": "str",
        "status": "str",
        "type": "str",
    }
    _defaults: ClassVar[dict[str, Any]] = {"status": "", "type": ""}
    _required: ClassVar[tuple[str, ...]] = ("status", "type")
    last_transition_time: Any
    last_update_time: Any
    message: Any
    reason: Any
    status: Any
    type: Any


class KubeflowOrgV1JobStatus(OpenAPIModel):
    openapi_types: ClassVar[dict[str, str]] = {
        "completion_time": "datetime",
        "conditions": "list[KubeflowOrgV1JobCondition]",
        "last_reconcile_time": "datetime",
        "replica_statuses": "dict(str, KubeflowOrgV1ReplicaStatus)",
        "start_time": "datetime",
    }
    completion_time: Any
    conditions: Any
    last_reconcile_time: Any
    replica_statuses: Any
    start_time: Any


class KubeflowOrgV1MPIJob(_JobModel):
    openapi_types = _job_types("KubeflowOrgV1MPIJobSpec")


class KubeflowOrgV1MPIJobList(_JobListModel):
    openapi_types = _list_types("KubeflowOrgV1MPIJob")


class KubeflowOrgV1MPIJobSpec(OpenAPIModel):
    openapi_types = _spec_types(
        "mpi_replica_specs", clean_pod_policy="str", main_container="str", slots_per_worker="int"
    )
    _required: ClassVar[tuple[str, ...]] = ("mpi_replica_specs",)
    clean_pod_policy: Any
    main_container: Any
    mpi_replica_specs: Any
    run_policy: Any
    slots_per_worker: Any


class KubeflowOrgV1PaddleElasticPolicy(OpenAPIModel):
    openapi_types: ClassVar[dict[str, str]] = {
        "max_replicas": "int",
        "max_restarts": "int",
        "metrics": "list[K8sIoApiAutoscalingV2MetricSpec]",
        "min_replicas": "int",
    }
    max_replicas: Any
    max_restarts: Any
    metrics: Any
    min_replicas: Any


class KubeflowOrgV1PaddleJob(_JobModel):
    openapi_types = _job_types("KubeflowOrgV1PaddleJobSpec")


class KubeflowOrgV1PaddleJobList(_JobListModel):
    openapi_types = _list_types("KubeflowOrgV1PaddleJob")


class KubeflowOrgV1PaddleJobSpec(OpenAPIModel):
    openapi_types = _spec_types("paddle_replica_specs", elastic_policy="KubeflowOrgV1PaddleElasticPolicy")
    _required: ClassVar[tuple[str, ...]] = ("paddle_replica_specs", "run_policy")
    elastic_policy: Any
    paddle_replica_specs: Any
    run_policy: Any


class KubeflowOrgV1PyTorchJob(_JobModel):
    openapi_types = _job_types("KubeflowOrgV1PyTorchJobSpec")


class KubeflowOrgV1PyTorchJobList(_JobListModel):
    openapi_types = _list_types("KubeflowOrgV1PyTorchJob")


class KubeflowOrgV1PyTorchJobSpec(OpenAPIModel):
    openapi_types = _spec_types(
        "pytorch_replica_specs", elastic_policy="KubeflowOrgV1ElasticPolicy", nproc_per_node="str"
    )
    _required: ClassVar[tuple[str, ...]] = ("pytorch_replica_specs", "run_policy")
    elastic_policy: Any
    nproc_per_node: Any
    pytorch_replica_specs: Any
    run_policy: Any


class KubeflowOrgV1RDZVConf(OpenAPIModel):
    openapi_types: ClassVar[dict[str, str]] = {
        "key": "str",
        "value": "str",
    }
    key: Any
    value: Any


class KubeflowOrgV1ReplicaSpec(OpenAPIModel):
    openapi_types: ClassVar[dict[str, str]] = {
        "replicas": "int",
        "restart_policy": "str",
        "template": "V1PodTemplateSpec",
    }
    replicas: Any
    restart_policy: Any
    template: Any


class KubeflowOrgV1ReplicaStatus(OpenAPIModel):
    openapi_types: ClassVar[dict[str, str]] = {
        "active": "int",
        "failed": "int",
        "label_selector": "V1LabelSelector",
        "selector": "str",
        "succeeded": "int",
    }
    active: Any
    failed: Any
    label_selector: Any
    selector: Any
    succeeded: Any


class KubeflowOrgV1RunPolicy(OpenAPIModel):
    openapi_types: ClassVar[dict[str, str]] = {
        "active_deadline_seconds": "int",
        "backoff_limit": "int",
        "clean_pod_policy": "str",
        "managed_by": "str",
        "scheduling_policy": "KubeflowOrgV1SchedulingPolicy",
        "suspend": "bool",
        "ttl_seconds_after_finished": "int",
    }
    active_deadline_seconds: Any
    backoff_limit: Any
    clean_pod_policy: Any
    managed_by: Any
    scheduling_policy: Any
    suspend: Any
    ttl_seconds_after_finished: Any


class KubeflowOrgV1SchedulingPolicy(OpenAPIModel):
    openapi_types: ClassVar[dict[str, str]] = {
        "min_available": "int",
        "min_resources": "dict(str, Quantity)",
        "priority_class": "str",
        "queue": "str",
        "schedule_timeout_seconds": "int",
    }
    min_available: Any
    min_resources: Any
    priority_class: Any
    queue: Any
    schedule_timeout_seconds: Any


class KubeflowOrgV1TFJob(_JobModel):
    openapi_types = _job_types("KubeflowOrgV1TFJobSpec")


class KubeflowOrgV1TFJobList(_JobListModel):
    openapi_types = _list_types("KubeflowOrgV1TFJob")


class KubeflowOrgV1TFJobSpec(OpenAPIModel):
    openapi_types = _spec_types("tf_replica_specs", enable_dynamic_worker="bool", success_policy="str")
    _required: ClassVar[tuple[str, ...]] = ("run_policy", "tf_replica_specs")
    enable_dynamic_worker: Any
    run_policy: Any
    success_policy: Any
    tf_replica_specs: Any


class KubeflowOrgV1XGBoostJob(_JobModel):
    openapi_types = _job_types("KubeflowOrgV1XGBoostJobSpec")


class KubeflowOrgV1XGBoostJobList(_JobListModel):
    openapi_types = _list_types("KubeflowOrgV1XGBoostJob")


class KubeflowOrgV1XGBoostJobSpec(OpenAPIModel):
    openapi_types = _spec_types("xgb_replica_specs")
    _required: ClassVar[tuple[str, ...]] = ("run_policy", "xgb_replica_specs")
    run_policy: Any
    xgb_replica_specs: Any


# --- the kind tables the client reads ---

# Kind → the model class get_job/list_jobs return.
SDK_JOB_MODELS: dict[str, type[OpenAPIModel]] = {
    "TFJob": KubeflowOrgV1TFJob,
    "PyTorchJob": KubeflowOrgV1PyTorchJob,
    "XGBoostJob": KubeflowOrgV1XGBoostJob,
    "MPIJob": KubeflowOrgV1MPIJob,
    "PaddleJob": KubeflowOrgV1PaddleJob,
    "JAXJob": KubeflowOrgV1JAXJob,
}


def generated_module_name(model: str) -> str:
    """``KubeflowOrgV1PyTorchJob`` → ``kubeflow_org_v1_py_torch_job``: the file openapi-generator wrote
    each upstream model to (``XGBoost`` → ``xg_boost``, ``JAXJob`` → ``jax_job``)."""
    words = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", model.removeprefix("KubeflowOrgV1"))
    return "kubeflow_org_v1_" + re.sub(r"([a-z\d])([A-Z])", r"\1_\2", words).lower()


def _register_generated_modules() -> None:
    """Upstream's per-model modules, so ``from kubeflow.training.models.kubeflow_org_v1_py_torch_job
    import KubeflowOrgV1PyTorchJob`` keeps working with ``trainop.sdk``: each holds its one class and is
    found by the import system in ``sys.modules`` (this module is not a package)."""
    module = sys.modules[__name__]
    for name, value in list(vars(module).items()):
        if name.startswith("KubeflowOrgV1") and isinstance(value, type):
            sub = ModuleType(f"{__name__}.{generated_module_name(name)}", f"Upstream's module of {name}.")
            setattr(sub, name, value)
            sub.__all__ = [name]  # type: ignore[attr-defined]
            sys.modules[sub.__name__] = sub
            setattr(module, generated_module_name(name), sub)


_register_generated_modules()

# The public names: upstream's models (the kubernetes.client names come through __getattr__) and
# KubeObject; the builders below are the SDK's own.
__all__ = [
    "KubeObject",
    "KubeflowOrgV1ElasticPolicy",
    "KubeflowOrgV1JAXJob",
    "KubeflowOrgV1JAXJobList",
    "KubeflowOrgV1JAXJobSpec",
    "KubeflowOrgV1JobCondition",
    "KubeflowOrgV1JobStatus",
    "KubeflowOrgV1MPIJob",
    "KubeflowOrgV1MPIJobList",
    "KubeflowOrgV1MPIJobSpec",
    "KubeflowOrgV1PaddleElasticPolicy",
    "KubeflowOrgV1PaddleJob",
    "KubeflowOrgV1PaddleJobList",
    "KubeflowOrgV1PaddleJobSpec",
    "KubeflowOrgV1PyTorchJob",
    "KubeflowOrgV1PyTorchJobList",
    "KubeflowOrgV1PyTorchJobSpec",
    "KubeflowOrgV1RDZVConf",
    "KubeflowOrgV1ReplicaSpec",
    "KubeflowOrgV1ReplicaStatus",
    "KubeflowOrgV1RunPolicy",
    "KubeflowOrgV1SchedulingPolicy",
    "KubeflowOrgV1TFJob",
    "KubeflowOrgV1TFJobList",
    "KubeflowOrgV1TFJobSpec",
    "KubeflowOrgV1XGBoostJob",
    "KubeflowOrgV1XGBoostJobList",
    "KubeflowOrgV1XGBoostJobSpec",
]


# --- JSON → models (upstream's ApiClient.deserialize) ---

_NATIVE: dict[str, Any] = {
    "int": int,
    "long": int,
    "float": float,
    "str": str,
    "bool": bool,
    "date": date,
    "datetime": datetime,
    "object": object,
}
# Type names upstream's models use that kubernetes.client has no class for: upstream's deserializer
# fails on them (a job with elastic metrics or minResources cannot be read back); we read them.
_ALIASES: dict[str, str] = {"K8sIoApiAutoscalingV2MetricSpec": "V2MetricSpec", "Quantity": "object"}


@cache
def kube_client() -> ModuleType | None:
    """``kubernetes.client``, imported on first use (it takes a while), or None when not installed."""
    try:
        return importlib.import_module("kubernetes.client")
    except ImportError:
        return None


def _resolve(name: str) -> Any:
    name = _ALIASES.get(name, name)
    if name in _NATIVE:
        return _NATIVE[name]
    own = globals().get(name)
    if isinstance(own, type) and issubclass(own, OpenAPIModel):
        return own
    client = kube_client()
    return getattr(client, name, None) if client is not None else None


def _parse_datetime(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    try:  # what kubernetes.client parses with, so the tzinfo reads the same (tzutc())
        from dateutil.parser import parse

        return parse(value)
    except ImportError:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return value


def _as(klass: type, data: Any) -> Any:
    try:
        return klass(data)
    except (TypeError, ValueError):
        return data


def _parse_date(value: Any) -> Any:
    parsed = _parse_datetime(value)
    return parsed.date() if isinstance(parsed, datetime) else parsed


# How a JSON value becomes each leaf type (a value that does not fit is kept as it is).
_LEAVES: dict[Any, Any] = {
    object: lambda data: data,
    **{t: partial(_as, t) for t in (int, float, str, bool)},
    datetime: _parse_datetime,
    date: _parse_date,
}


def build_model(data: Any, klass: Any) -> Any:
    """Kubernetes JSON → ``klass`` (a type name such as ``"V1Pod"``, ``"list[V1EnvVar]"``, or a class).

    ``KubeflowOrgV1*`` names are ours, ``V1*`` names ``kubernetes.client``'s; without that package
    nested objects become ``KubeObject`` views. Values that do not fit the type are kept as they are.
    """
    if data is None:
        return None
    if isinstance(klass, str):
        if klass.startswith(("list[", "dict(")):
            return _build_collection(data, klass)
        klass = _resolve(klass)
    if klass in _LEAVES:
        return _LEAVES[klass](data)
    return _build_object(data, klass) if isinstance(data, Mapping) else data


def _build_collection(data: Any, klass: str) -> Any:
    """``list[T]`` or ``dict(str, T)``: each item built as ``T``."""
    if klass.startswith("list["):
        return [build_model(d, klass[5:-1]) for d in data] if isinstance(data, list) else data
    match = re.match(r"dict\(([^,]*), (.*)\)", klass)
    sub = match.group(2) if match else "object"
    return {k: build_model(v, sub) for k, v in data.items()} if isinstance(data, Mapping) else data


def _build_object(data: Mapping[str, Any], klass: Any) -> Any:
    """A model class (upstream's, by its ``openapi_types``; or pydantic's) from an object's JSON;
    without a class, a ``KubeObject`` view."""
    types = getattr(klass, "openapi_types", None)
    amap = getattr(klass, "attribute_map", None)
    if isinstance(types, Mapping) and isinstance(amap, Mapping):
        kwargs = {attr: build_model(data[amap[attr]], t) for attr, t in types.items() if amap[attr] in data}
        try:
            return klass(**kwargs, local_vars_configuration=_LENIENT)
        except TypeError:  # a model class without upstream's configuration argument
            return klass(**kwargs)
    validate = getattr(klass, "model_validate", None)  # kubernetes.client from 37 (pydantic models)
    if callable(validate):
        return validate(dict(data))
    return KubeObject(data)


def build_job_model(obj: Mapping[str, Any]) -> Any:
    """A job's JSON → its ``KubeflowOrgV1*`` model (by ``kind``)."""
    return build_model(obj, SDK_JOB_MODELS[str(obj.get("kind"))])


# --- models → JSON (upstream's ApiClient.sanitize_for_serialization) ---


def build_plain(value: Any) -> Any:
    """Any model object (ours, ``kubernetes.client``'s, lightkube's, a view) → plain Kubernetes JSON.

    Models with ``attribute_map`` and ``openapi_types`` (ours, upstream's, ``kubernetes.client`` up to
    client 36) are walked by that map, as upstream's ``sanitize_for_serialization`` does before a POST;
    from client 37 they are pydantic models whose aliases are the JSON keys. Unset (None) model fields
    are dropped.
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


class KubeObject(Mapping[str, Any]):
    """A read-only view of a Kubernetes JSON object, used where ``kubernetes.client`` is not installed.

    ``pod.metadata.name``, ``pod.status.container_statuses[0].state.terminated.exit_code`` and the
    camelCase spelling both work; an unset field reads as None, as on ``kubernetes.client`` models.
    ``to_dict()`` gives the JSON back; ``pod["metadata"]["name"]`` works too.

    >>> pod = KubeObject({"status": {"containerStatuses": [{"restartCount": 2}]}})
    >>> pod.status.container_statuses[0].restart_count
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
    """``V1Pod``, ``V1ObjectMeta`` …: upstream's models module star-imports ``kubernetes.client``."""
    if name.startswith("__"):
        raise AttributeError(name)
    client = kube_client()
    if client is None:
        raise AttributeError(
            f"{name} comes from the Kubernetes Python client; install it with `pip install kubernetes` "
            "(or pass plain dicts instead)"
        )
    try:
        return getattr(client, name)
    except AttributeError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
