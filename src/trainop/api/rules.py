"""The admission rules every kind's webhook shares (contract §2.2) and the small helpers a kind's own
rules and defaults are written with (``trainop.api.kinds`` spec hooks, a plugin's own spec model).

Pure: jobs in, ``FieldError`` lists out; never mutates its input (``copy_model`` makes the copies).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, TypeVar

from pydantic import BaseModel

from trainop.api.common import ReplicaSpec, TrainingJob
from trainop.api.constants import LABEL_KUEUE_QUEUE, MANAGED_BY_VALUES
from trainop.api.errors import FieldError, invalid, not_supported, required

if TYPE_CHECKING:
    from trainop.api.kinds import KindInfo

# apimachinery's IsDNS1035Label (k8s.io/apimachinery/pkg/util/validation).
DNS1035_LABEL_MAX = 63
_DNS1035_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
_DNS1035_RE = re.compile(f"^{_DNS1035_FMT}$")
_DNS1035_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
    "character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for "
    f"validation is '{_DNS1035_FMT}')"
)

_Model = TypeVar("_Model", bound=BaseModel)


def max_len_error(n: int) -> str:
    return f"must be no more than {n} characters"


def dns1035_label_errors(value: str) -> list[str]:
    """apimachinery's IsDNS1035Label: the reasons ``value`` is not a DNS-1035 label (empty when it is)."""
    errs = []
    if len(value.encode()) > DNS1035_LABEL_MAX:
        errs.append(max_len_error(DNS1035_LABEL_MAX))
    if not _DNS1035_RE.match(value):
        errs.append(_DNS1035_MSG)
    return errs


def map_path(info: KindInfo) -> str:
    return f"spec.{info.replica_map}"


def key_path(info: KindInfo, rtype: str) -> str:
    return f"{map_path(info)}[{rtype}]"  # §2.1: map keys render as [Key]


def template_shape_ok(rs: ReplicaSpec) -> bool:
    """True when template.spec.containers is a list of mappings (or absent), so rules can read it."""
    spec = rs.template.get("spec")
    if spec is None:
        return True
    if not isinstance(spec, dict):
        return False
    containers = spec.get("containers")
    return containers is None or (
        isinstance(containers, list) and all(isinstance(c, dict) for c in containers)
    )


def at_least(path: str, value: int | None, floor: int) -> list[FieldError]:
    if value is None or value >= floor:
        return []
    return [invalid(path, value, f"must be greater than or equal to {floor}")]


def _validate_name_dns1035(job: TrainingJob) -> list[FieldError]:
    # C1. A name the API server will generate (generateName, no name) is checked by trainop's rules.
    name = job.metadata.name
    if not name and job.metadata.generate_name:
        return []
    errs = dns1035_label_errors(name or "")
    if errs:
        return [invalid("metadata.name", name or "", "should match: " + ",".join(errs))]
    return []


def _validate_managed_by(job: TrainingJob, old: TrainingJob | None) -> list[FieldError]:
    # C7 (on update, first, as upstream orders it) then C6.
    errs: list[FieldError] = []
    new_value = job.run_policy.managed_by
    if old is not None and old.run_policy.managed_by != new_value:
        errs.append(invalid("spec.runPolicy.managedBy", new_value, "field is immutable"))
    if new_value is not None and new_value not in MANAGED_BY_VALUES:
        errs.append(not_supported("spec.runPolicy.managedBy", new_value, MANAGED_BY_VALUES))
    return errs


def webhook_prelude(
    job: TrainingJob, old: TrainingJob | None, *, managed_by: bool = True
) -> list[FieldError]:
    """C1 (the name), then C7/C6 (managedBy) unless the kind's webhook skips them (JAX, §9.3)."""
    errs = _validate_name_dns1035(job)
    if managed_by:
        errs += _validate_managed_by(job, old)
    return errs


def replica_specs_common(
    job: TrainingJob, info: KindInfo, valid_types: tuple[str, ...] | None, *, quote_container: bool = False
) -> list[FieldError]:
    """C2 to C5 and the replica-type key check (``valid_types`` None: keys are not checked, as TF)."""
    specs: dict[str, ReplicaSpec] | None = getattr(job.spec, type(job.spec).replica_field, None)
    if specs is None:
        return [required(map_path(info), "must be required")]
    errs: list[FieldError] = []
    for rtype, rs in specs.items():
        cpath = f"{key_path(info, rtype)}.template.spec.containers"
        if valid_types is not None and rtype not in valid_types:
            errs.append(not_supported(key_path(info, rtype), rtype, valid_types))
        if not template_shape_ok(rs):
            continue  # reported by trainop's template shape rule
        containers = rs.containers
        if not containers:
            errs.append(required(cpath, "must be specified"))
        has_default = False
        for i, container in enumerate(containers):
            if not container.get("image"):
                errs.append(required(f"{cpath}[{i}].image", "must be required"))
            if container.get("name") == info.default_container:
                has_default = True
        if not has_default:
            name = f'"{info.default_container}"' if quote_container else info.default_container
            errs.append(required(cpath, f"must have at least one container with name {name}"))
    return errs


def detect_queue_name(job: TrainingJob) -> str:
    """Kueue's QueueName: the label, else the deprecated annotation of the same key ("" when neither)."""
    for values in (job.metadata.labels, job.metadata.annotations):
        value = (values or {}).get(LABEL_KUEUE_QUEUE)
        if value:
            return str(value)
    return ""


def copy_model(model: _Model) -> _Model:
    """A shallow copy of a pydantic model: what ``model_copy()`` makes, at a third of its cost (defaults
    run several times per reconcile pass). Nested models, lists and dicts are shared, not copied."""
    new = model.__class__.__new__(model.__class__)
    extra = model.__pydantic_extra__
    private = model.__pydantic_private__
    object.__setattr__(new, "__dict__", model.__dict__.copy())
    object.__setattr__(new, "__pydantic_extra__", None if extra is None else extra.copy())
    object.__setattr__(new, "__pydantic_fields_set__", model.__pydantic_fields_set__.copy())
    object.__setattr__(new, "__pydantic_private__", None if private is None else private.copy())
    return new
