"""Admission validation of kubeflow.org/v1 jobs: upstream's rules (contract §2) plus trainop's own.

``validate_<kind>(job, old)`` are upstream's webhook rules (§2.2, §2.3) and MPI's in-controller rules
(§2.4), with upstream's field paths and messages. ``validate_trainop`` adds the checks users trip over
that upstream lacks (§9.14 and friends; listed in docs/compatibility.md). ``validate_job`` runs both.
Pure: jobs in, ``FieldError`` lists out; never raises on bad input and never mutates the job.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Mapping
from typing import Any

from trainop.api.common import KubeModel, ReplicaSpec, TrainingJob
from trainop.api.constants import (
    CLEAN_POD_POLICIES,
    LABEL_JOB_NAME,
    LABEL_KUEUE_QUEUE,
    MANAGED_BY_VALUES,
    RESTART_POLICIES,
)
from trainop.api.errors import (
    FieldError,
    InvalidJobError,
    forbidden,
    invalid,
    not_supported,
    required,
)
from trainop.api.failure_policy import validate_failure_policy
from trainop.api.kinds import (
    KIND_INFO,
    KindInfo,
    MPIJobSpec,
    PaddleJobSpec,
    PyTorchJobSpec,
    TFJobSpec,
)
from trainop.api.load import parse_job
from trainop.api.podschema import template_errors

# --- apimachinery's name rules (k8s.io/apimachinery/pkg/util/validation) -----------------------------

DNS1035_LABEL_MAX = 63
_DNS1035_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
_DNS1035_RE = re.compile(f"^{_DNS1035_FMT}$")
_DNS1035_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
    "character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for "
    f"validation is '{_DNS1035_FMT}')"
)
_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN_FMT = _DNS1123_LABEL_FMT + "(\\." + _DNS1123_LABEL_FMT + ")*"
_DNS1123_SUBDOMAIN_RE = re.compile(f"^{_DNS1123_SUBDOMAIN_FMT}$")
_DNS1123_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    f"'{_DNS1123_SUBDOMAIN_FMT}')"
)
LABEL_VALUE_MAX = 63
# The API server keeps generateName prefixes to 58 characters and appends 5 random ones.
_GENERATED_PREFIX_MAX = 58
_GENERATED_SUFFIX_LEN = 5


def _max_len_error(n: int) -> str:
    return f"must be no more than {n} characters"


def dns1035_label_errors(value: str) -> list[str]:
    """apimachinery's IsDNS1035Label: the reasons ``value`` is not a DNS-1035 label (empty when it is)."""
    errs = []
    if len(value.encode()) > DNS1035_LABEL_MAX:
        errs.append(_max_len_error(DNS1035_LABEL_MAX))
    if not _DNS1035_RE.match(value):
        errs.append(_DNS1035_MSG)
    return errs


# --- small helpers ---------------------------------------------------------------------------------


def _map_path(info: KindInfo) -> str:
    return f"spec.{info.replica_map}"


def _key_path(info: KindInfo, rtype: str) -> str:
    return f"{_map_path(info)}[{rtype}]"  # §2.1: map keys render as [Key]


def _containers_path(info: KindInfo, rtype: str) -> str:
    return f"{_key_path(info, rtype)}.template.spec.containers"


def _template_shape_ok(rs: ReplicaSpec) -> bool:
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


# --- upstream: rules shared by the webhooks (§2.2) ----------------------------------------------------


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


def _validate_replica_specs_common(
    job: TrainingJob, valid_types: tuple[str, ...] | None, *, quote_container: bool = False
) -> list[FieldError]:
    """C2 to C5 and the replica-type key check (``valid_types`` None: keys are not checked, as TF)."""
    info = KIND_INFO[job.kind]
    specs: dict[str, ReplicaSpec] | None = getattr(job.spec, type(job.spec).replica_field, None)
    if specs is None:
        return [required(_map_path(info), "must be required")]
    errs: list[FieldError] = []
    for rtype, rs in specs.items():
        containers_path = _containers_path(info, rtype)
        if valid_types is not None and rtype not in valid_types:
            errs.append(not_supported(_key_path(info, rtype), rtype, valid_types))
        if not _template_shape_ok(rs):
            continue  # reported by trainop's template shape rule
        containers = rs.containers
        if not containers:
            errs.append(required(containers_path, "must be specified"))
        has_default = False
        for i, container in enumerate(containers):
            if not container.get("image"):
                errs.append(required(f"{containers_path}[{i}].image", "must be required"))
            if container.get("name") == info.default_container:
                has_default = True
        if not has_default:
            name = f'"{info.default_container}"' if quote_container else info.default_container
            errs.append(required(containers_path, f"must have at least one container with name {name}"))
    return errs


def _webhook_prelude(
    job: TrainingJob, old: TrainingJob | None, *, managed_by: bool = True
) -> list[FieldError]:
    errs = _validate_name_dns1035(job)
    if managed_by:
        errs += _validate_managed_by(job, old)
    return errs


# --- upstream: one function per kind (§2.3, §2.4) -----------------------------------------------------


def validate_pytorch(job: TrainingJob, old: TrainingJob | None = None) -> list[FieldError]:
    """PyTorchJob webhook rules. Unlike upstream (§9.2) the managedBy update check sees the old job."""
    errs = _webhook_prelude(job, old)
    spec = job.spec
    if isinstance(spec, PyTorchJobSpec) and spec.elastic_policy is not None:
        if "Worker" not in (spec.pytorch_replica_specs or {}):
            errs.append(
                required("spec.pytorchReplicaSpecs[Worker]", "must be configured if elastic policy is used")
            )
        if spec.elastic_policy.n_proc_per_node is not None and spec.nproc_per_node is not None:
            errs.append(
                forbidden("spec.elasticPolicy.nProcPerNode", "must not be used with spec.nprocPerNode")
            )
    errs += _validate_replica_specs_common(job, KIND_INFO["PyTorchJob"].replica_types)
    for rtype, rs in job.replica_specs.items():
        if rtype == "Master":
            # v1.8+: nil is rejected too, since the webhook sees the undefaulted job (§9.1).
            if rs.replicas != 1:
                errs.append(forbidden("spec.pytorchReplicaSpecs[Master].replicas", "must be 1"))
        elif rs.replicas is not None and rs.replicas < 1:
            errs.append(forbidden(f"spec.pytorchReplicaSpecs[{rtype}].replicas", "must be at least 1"))
    return errs


def validate_tensorflow(job: TrainingJob, old: TrainingJob | None = None) -> list[FieldError]:
    """TFJob webhook rules: no replica-type key check; at most one Chief or Master type."""
    errs = _webhook_prelude(job, old)
    errs += _validate_replica_specs_common(job, None)
    if sum(1 for rtype in job.replica_specs if rtype in ("Chief", "Master")) > 1:
        errs.append(forbidden("spec.tfReplicaSpecs", "must not have more than 1 Chief or Master role"))
    return errs


def validate_xgboost(job: TrainingJob, old: TrainingJob | None = None) -> list[FieldError]:
    """XGBoostJob webhook rules: a Master with replicas set to exactly 1."""
    errs = _webhook_prelude(job, old)
    errs += _validate_replica_specs_common(job, KIND_INFO["XGBoostJob"].replica_types)
    master = job.replica_specs.get("Master")
    if master is not None and master.replicas != 1:
        errs.append(forbidden("spec.xgbReplicaSpecs[Master].replicas", "must be 1"))
    if master is None:
        errs.append(required("spec.xgbReplicaSpecs[Master]", "must be present"))
    return errs


def validate_paddle(job: TrainingJob, old: TrainingJob | None = None) -> list[FieldError]:
    """PaddleJob webhook rules: only the common ones (its container message quotes the name)."""
    errs = _webhook_prelude(job, old)
    errs += _validate_replica_specs_common(job, KIND_INFO["PaddleJob"].replica_types, quote_container=True)
    return errs


def validate_jax(job: TrainingJob, old: TrainingJob | None = None) -> list[FieldError]:
    """JAXJob webhook rules: the common ones without managedBy (§9.3); updates see only the new job."""
    errs = _webhook_prelude(job, old, managed_by=False)
    errs += _validate_replica_specs_common(job, KIND_INFO["JAXJob"].replica_types)
    return errs


def validate_mpi(job: TrainingJob, old: TrainingJob | None = None) -> list[FieldError]:
    """MPIJob's in-controller rules (§2.4). Upstream stops at the first error and has no field path;
    we report every error, each under the path it concerns, with upstream's message."""
    specs: dict[str, ReplicaSpec] | None = getattr(job.spec, "mpi_replica_specs", None)
    if specs is None:
        return [FieldError("spec.mpiReplicaSpecs", "MPIReplicaSpecs is not valid")]
    errs: list[FieldError] = []
    for rtype, rs in specs.items():
        path = f"spec.mpiReplicaSpecs[{rtype}]"
        if not _template_shape_ok(rs):
            continue  # reported by trainop's template shape rule
        if not rs.containers:
            errs.append(
                FieldError(
                    f"{path}.template.spec.containers",
                    f"MPIReplicaSpecs is not valid: containers definition expected in {rtype}",
                )
            )
            continue
        if rtype not in ("Launcher", "Worker"):
            errs.append(FieldError(path, f"MPIReplicaType is {rtype} but must be one of [Launcher Worker]"))
            continue
        for i, container in enumerate(rs.containers):
            cpath = f"{path}.template.spec.containers[{i}]"
            if not container.get("image"):
                errs.append(
                    FieldError(
                        f"{cpath}.image",
                        f"MPIReplicaSpec is not valid: Image is undefined in the container of {rtype}",
                    )
                )
            if not container.get("name"):
                errs.append(
                    FieldError(
                        f"{cpath}.name",
                        f"MPIReplicaSpec is not valid: ImageName is undefined in the container of {rtype}",
                    )
                )
        if rtype == "Launcher" and rs.replicas is not None and rs.replicas != 1:
            errs.append(
                FieldError(
                    f"{path}.replicas", "MPIReplicaSpec is not valid: There must be only 1 launcher replica"
                )
            )
    if "Launcher" not in specs:
        errs.append(
            FieldError(
                "spec.mpiReplicaSpecs[Launcher]",
                "MPIReplicaSpec is not valid: Master ReplicaSpec must be present",
            )
        )
    return errs


UPSTREAM_VALIDATORS: dict[str, Callable[[TrainingJob, TrainingJob | None], list[FieldError]]] = {
    "PyTorchJob": validate_pytorch,
    "TFJob": validate_tensorflow,
    "XGBoostJob": validate_xgboost,
    "MPIJob": validate_mpi,
    "PaddleJob": validate_paddle,
    "JAXJob": validate_jax,
}


# --- trainop's own rules -------------------------------------------------------------------------------


def validate_trainop(job: TrainingJob, old: TrainingJob | None = None) -> list[FieldError]:
    """Checks upstream lacks, each saying what to change (docs/compatibility.md, "## Validation")."""
    errs = _validate_unknown_fields(job)
    errs += _validate_names(job)
    errs += _validate_queue_immutable(job, old)
    errs += _validate_kueue_queue_name(job, old)
    errs += _validate_run_policy(job)
    errs += _validate_replicas(job)
    errs += _validate_kind_fields(job)
    errs += validate_failure_policy(job)  # trainop.dev/ annotations (docs/failure-policy.md)
    errs += template_errors(job, reported=errs)  # core/v1 schema of every pod template (api/podschema.py)
    return errs


def _validate_unknown_fields(job: TrainingJob) -> list[FieldError]:
    """Fields the models do not know (outside pod templates and other opaque Kubernetes objects).
    The API server would prune them silently; a typo there usually means a setting is ignored."""
    errs: list[FieldError] = []
    _walk_extras(job, "", errs)
    return errs


def _walk_extras(model: KubeModel, path: str, errs: list[FieldError]) -> None:
    fields = type(model).model_fields
    extra = model.__pydantic_extra__
    if extra:
        known = [f.alias or name for name, f in fields.items()]
        for key in extra:
            errs.append(FieldError(_join(path, key), _unknown_field_message(key, known)))
    for name, f in fields.items():
        if name == "template":
            continue  # a PodTemplateSpec: Kubernetes validates the pods built from it
        value = getattr(model, name)
        child = _join(path, f.alias or name)
        if isinstance(value, KubeModel):
            _walk_extras(value, child, errs)
        elif isinstance(value, dict):
            for key, item in value.items():
                if isinstance(item, KubeModel):
                    _walk_extras(item, f"{child}[{key}]", errs)
        elif isinstance(value, list):
            for i, item in enumerate(value):
                if isinstance(item, KubeModel):
                    _walk_extras(item, f"{child}[{i}]", errs)


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _unknown_field_message(key: str, known: list[str]) -> str:
    folded = {k.casefold(): k for k in known}
    guess = folded.get(key.replace("_", "").replace("-", "").casefold())
    if guess is None:
        close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
        guess = close[0] if close else None
    head = "Unsupported field: Kubernetes would drop it"
    if guess is not None:
        return f'{head}; did you mean "{guess}"?'
    return f"{head}; the fields here are " + ", ".join(f'"{k}"' for k in sorted(known))


def _effective_name(job: TrainingJob) -> tuple[str, str]:
    """(path, name) of the job's name; a generateName prefix stands in for the name the API server
    will make (prefix cut to 58 characters plus 5 random ones), as 'x'."""
    if job.metadata.name or not job.metadata.generate_name:
        return "metadata.name", job.metadata.name or ""
    prefix = job.metadata.generate_name[:_GENERATED_PREFIX_MAX]
    return "metadata.generateName", prefix + "x" * _GENERATED_SUFFIX_LEN


def _validate_names(job: TrainingJob) -> list[FieldError]:
    path, name = _effective_name(job)
    value = job.metadata.name or job.metadata.generate_name or ""
    if job.kind == "MPIJob":
        return _validate_mpi_name(path, name, value)
    if path == "metadata.name" and dns1035_label_errors(name):
        return []  # upstream's C1 already reports it
    if path == "metadata.generateName":
        bad = [e for e in dns1035_label_errors(name) if not e.startswith("must be no more")]
        if bad:
            return [invalid(path, value, "should match: " + ",".join(bad))]
    longest = _longest_replica_name(job, name)
    if longest is None or len(longest) <= DNS1035_LABEL_MAX:
        return []
    over = len(longest) - DNS1035_LABEL_MAX
    return [
        invalid(
            path,
            value,
            f'the pod and Service name "{longest}" would be {len(longest)} characters, over the '
            f"{DNS1035_LABEL_MAX} a DNS-1035 label allows; shorten {path} by {over} "
            f"character{'s' if over > 1 else ''}",
        )
    ]


def _longest_replica_name(job: TrainingJob, name: str) -> str | None:
    """The longest ``<job>-<rt>-<i>`` the job will create (§3.1), counting elastic scale-up."""
    longest: str | None = None
    spec = job.spec
    for rtype, rs in job.replica_specs.items():
        count = rs.replicas if rs.replicas is not None else 1
        if (
            isinstance(spec, PyTorchJobSpec | PaddleJobSpec)
            and rtype.casefold() == "worker"
            and spec.elastic_policy is not None
            and spec.elastic_policy.max_replicas is not None
        ):
            count = max(count, spec.elastic_policy.max_replicas)
        if count < 1:
            continue
        candidate = f"{name}-{rtype.lower().replace('/', '-')}-{count - 1}"
        if longest is None or len(candidate) > len(longest):
            longest = candidate
    return longest


def _validate_mpi_name(path: str, name: str, value: str) -> list[FieldError]:
    # MPIJob has no webhook; its name becomes pod names (DNS-1123 subdomains, which the API server
    # checks for us on Kubernetes, not on the local backend) and the job-name label value (63 max).
    errs: list[FieldError] = []
    if not _DNS1123_SUBDOMAIN_RE.match(name):
        errs.append(invalid(path, value, _DNS1123_SUBDOMAIN_MSG))
    if len(name.encode()) > LABEL_VALUE_MAX:
        over = len(name.encode()) - LABEL_VALUE_MAX
        errs.append(
            invalid(
                path,
                value,
                f"{_max_len_error(LABEL_VALUE_MAX)}: it is the value of the {LABEL_JOB_NAME} label on every pod; "
                f"shorten it by {over} character{'s' if over > 1 else ''}",
            )
        )
    return errs


def _validate_queue_immutable(job: TrainingJob, old: TrainingJob | None) -> list[FieldError]:
    # The CRD's CEL transition rule (§1.2), which the API server evaluates only when both the old and
    # the new object set the field; repeated here for the local backend, with the API server's wording.
    if old is None:
        return []
    old_sp, new_sp = old.run_policy.scheduling_policy, job.run_policy.scheduling_policy
    if old_sp is None or new_sp is None or old_sp.queue is None or new_sp.queue is None:
        return []
    if old_sp.queue == new_sp.queue:
        return []
    return [
        invalid(
            "spec.runPolicy.schedulingPolicy.queue",
            "string",
            "spec.runPolicy.schedulingPolicy.queue is immutable",
        )
    ]


_DNS1123_SUBDOMAIN_MAX = 253


def _validate_kueue_queue_name(job: TrainingJob, old: TrainingJob | None) -> list[FieldError]:
    """Kueue's job webhook (pkg/controller/jobframework/validation.go), which a cluster without Kueue
    never runs: ``kueue.x-k8s.io/queue-name`` (a label, or the deprecated annotation of the same key)
    must name a LocalQueue, a DNS-1123 subdomain; on update it may change only while the new job is
    suspended (Kueue moves a job between queues before it admits it, never after)."""
    errs: list[FieldError] = []
    for where, values in (("labels", job.metadata.labels), ("annotations", job.metadata.annotations)):
        value = (values or {}).get(LABEL_KUEUE_QUEUE)
        if value is None:
            continue
        reasons = [_max_len_error(_DNS1123_SUBDOMAIN_MAX)] if len(value) > _DNS1123_SUBDOMAIN_MAX else []
        if not _DNS1123_SUBDOMAIN_RE.match(value):
            reasons.append(_DNS1123_SUBDOMAIN_MSG)
        if reasons:
            errs.append(invalid(f"metadata.{where}[{LABEL_KUEUE_QUEUE}]", value, ",".join(reasons)))
    if old is not None and job.run_policy.suspend is not True:
        new_q, old_q = _kueue_queue(job), _kueue_queue(old)
        if new_q != old_q:
            errs.append(
                invalid(
                    f"metadata.labels[{LABEL_KUEUE_QUEUE}]",
                    new_q,
                    "field is immutable; to move the job to another queue, suspend it "
                    "(spec.runPolicy.suspend: true) in the same update",
                )
            )
    return errs


def _kueue_queue(job: TrainingJob) -> str:
    """Kueue's QueueName: the label, else the deprecated annotation ("" when neither is set)."""
    for values in (job.metadata.labels, job.metadata.annotations):
        if (values or {}).get(LABEL_KUEUE_QUEUE):
            return (values or {})[LABEL_KUEUE_QUEUE]
    return ""


def _at_least(path: str, value: int | None, floor: int) -> list[FieldError]:
    if value is None or value >= floor:
        return []
    return [invalid(path, value, f"must be greater than or equal to {floor}")]


def _validate_run_policy(job: TrainingJob) -> list[FieldError]:
    rp = job.spec.run_policy
    errs: list[FieldError] = []
    if rp is None:
        return errs
    if rp.clean_pod_policy is not None and rp.clean_pod_policy not in CLEAN_POD_POLICIES:
        errs.append(not_supported("spec.runPolicy.cleanPodPolicy", rp.clean_pod_policy, CLEAN_POD_POLICIES))
    errs += _at_least("spec.runPolicy.ttlSecondsAfterFinished", rp.ttl_seconds_after_finished, 0)
    errs += _at_least("spec.runPolicy.activeDeadlineSeconds", rp.active_deadline_seconds, 0)
    errs += _at_least("spec.runPolicy.backoffLimit", rp.backoff_limit, 0)
    sp = rp.scheduling_policy
    if sp is not None:
        errs += _at_least("spec.runPolicy.schedulingPolicy.minAvailable", sp.min_available, 0)
        errs += _at_least(
            "spec.runPolicy.schedulingPolicy.scheduleTimeoutSeconds", sp.schedule_timeout_seconds, 0
        )
    return errs


def _validate_replicas(job: TrainingJob) -> list[FieldError]:
    """replicas 0 or negative, restartPolicy values and the template's shape, per replica type."""
    info = KIND_INFO[job.kind]
    errs: list[FieldError] = []
    for rtype, rs in job.replica_specs.items():
        path = _key_path(info, rtype)
        errs += _replica_count_errors(job.kind, rtype, rs, path)
        if rs.restart_policy and rs.restart_policy not in RESTART_POLICIES:
            errs.append(not_supported(f"{path}.restartPolicy", rs.restart_policy, RESTART_POLICIES))
        errs += _template_shape_errors(rs, f"{path}.template")
    return errs


def _replica_count_errors(kind: str, rtype: str, rs: ReplicaSpec, path: str) -> list[FieldError]:
    n = rs.replicas
    if n is None or n >= 1:
        return []
    if kind == "PyTorchJob" or (kind == "XGBoostJob" and rtype == "Master"):
        return []  # upstream's own rule already rejects it ("must be at least 1" / "must be 1")
    if kind == "MPIJob":
        if rtype == "Launcher" or n == 0:
            return []  # 0 workers is MPI's default (§1.4); the launcher count is upstream's rule
        return [invalid(f"{path}.replicas", n, "must be greater than or equal to 0")]
    advice = "must be at least 1"
    if n == 0:
        advice += f"; to run no {rtype} pods, remove {path} instead"
    return [invalid(f"{path}.replicas", n, advice)]


def _template_shape_errors(rs: ReplicaSpec, path: str) -> list[FieldError]:
    """What upstream's typed PodTemplateSpec schema rejected and our opaque template would let through,
    limited to the parts trainop reads (containers, names, images, ports)."""
    spec = rs.template.get("spec")
    if spec is None:
        return []
    if not isinstance(spec, dict):
        return [invalid(f"{path}.spec", spec, "must be an object (a PodSpec)")]
    containers = spec.get("containers")
    if containers is None:
        return []
    cpath = f"{path}.spec.containers"
    if not isinstance(containers, list):
        return [invalid(cpath, containers, "must be a list of containers")]
    errs: list[FieldError] = []
    for i, container in enumerate(containers):
        if not isinstance(container, dict):
            errs.append(invalid(f"{cpath}[{i}]", container, "must be an object (a Container)"))
            continue
        for key in ("name", "image"):
            if key in container and not isinstance(container[key], str):
                errs.append(invalid(f"{cpath}[{i}].{key}", container[key], "must be a string"))
        ports = container.get("ports")
        if ports is None:
            continue
        if not isinstance(ports, list):
            errs.append(invalid(f"{cpath}[{i}].ports", ports, "must be a list of ports"))
            continue
        for j, port in enumerate(ports):
            ppath = f"{cpath}[{i}].ports[{j}]"
            if not isinstance(port, dict):
                errs.append(invalid(ppath, port, "must be an object (a ContainerPort)"))
                continue
            number = port.get("containerPort")
            if number is None:
                errs.append(FieldError(f"{ppath}.containerPort", "Required value"))
            elif not isinstance(number, int) or isinstance(number, bool):
                errs.append(invalid(f"{ppath}.containerPort", number, "must be an integer"))
            elif not 1 <= number <= 65535:
                errs.append(
                    invalid(f"{ppath}.containerPort", number, "must be between 1 and 65535, inclusive")
                )
            if "name" in port and not isinstance(port["name"], str):
                errs.append(invalid(f"{ppath}.name", port["name"], "must be a string"))
    return errs


_NPROC_WORDS = ("auto", "cpu", "gpu")
_SUCCESS_POLICIES = ("", "AllWorkers")


def _validate_kind_fields(job: TrainingJob) -> list[FieldError]:
    spec = job.spec
    errs: list[FieldError] = []
    if isinstance(spec, PyTorchJobSpec):
        value = spec.nproc_per_node
        if value is not None and value not in _NPROC_WORDS and not (value.isdigit() and int(value) >= 1):
            errs.append(
                invalid("spec.nprocPerNode", value, 'must be "auto", "cpu", "gpu" or a positive integer')
            )
    if isinstance(spec, PyTorchJobSpec | PaddleJobSpec) and spec.elastic_policy is not None:
        ep = spec.elastic_policy
        errs += _at_least("spec.elasticPolicy.minReplicas", ep.min_replicas, 1)
        errs += _at_least("spec.elasticPolicy.maxReplicas", ep.max_replicas, 1)
        if ep.min_replicas is not None and ep.max_replicas is not None and ep.min_replicas > ep.max_replicas:
            errs.append(
                invalid(
                    "spec.elasticPolicy.minReplicas",
                    ep.min_replicas,
                    f"must be less than or equal to spec.elasticPolicy.maxReplicas ({ep.max_replicas})",
                )
            )
        errs += _at_least("spec.elasticPolicy.maxRestarts", ep.max_restarts, 0)
        if isinstance(spec, PyTorchJobSpec) and spec.elastic_policy is not None:
            port = spec.elastic_policy.rdzv_port
            if port is not None and not 1 <= port <= 65535:
                errs.append(
                    invalid("spec.elasticPolicy.rdzvPort", port, "must be between 1 and 65535, inclusive")
                )
            errs += _at_least("spec.elasticPolicy.nProcPerNode", spec.elastic_policy.n_proc_per_node, 1)
    if (
        isinstance(spec, TFJobSpec)
        and spec.success_policy is not None
        and spec.success_policy not in _SUCCESS_POLICIES
    ):
        errs.append(not_supported("spec.successPolicy", spec.success_policy, _SUCCESS_POLICIES))
    if isinstance(spec, MPIJobSpec):
        if spec.clean_pod_policy is not None and spec.clean_pod_policy not in CLEAN_POD_POLICIES:
            errs.append(not_supported("spec.cleanPodPolicy", spec.clean_pod_policy, CLEAN_POD_POLICIES))
        errs += _at_least("spec.slotsPerWorker", spec.slots_per_worker, 1)
    return errs


# --- entry points ----------------------------------------------------------------------------------


def validate_job(job: TrainingJob, old: TrainingJob | None = None) -> list[FieldError]:
    """Every error in ``job`` (undefaulted, as users wrote it): upstream's rules, then trainop's.
    ``old`` is the stored job on an update."""
    return UPSTREAM_VALIDATORS[job.kind](job, old) + validate_trainop(job, old)


def validation_warnings(job: TrainingJob) -> list[str]:
    """Admission warnings (accepted, but worth saying): deprecated fields."""
    spec = job.spec
    warnings: list[str] = []
    if (
        isinstance(spec, PyTorchJobSpec)
        and spec.elastic_policy is not None
        and spec.elastic_policy.n_proc_per_node is not None
    ):
        warnings.append(
            "spec.elasticPolicy.nProcPerNode is deprecated, use spec.nprocPerNode instead"
        )  # §2.3
    if isinstance(spec, MPIJobSpec) and spec.clean_pod_policy is not None:
        warnings.append("spec.cleanPodPolicy is deprecated, use spec.runPolicy.cleanPodPolicy instead")
    return warnings


def validate_for_apply(
    obj: TrainingJob | Mapping[str, Any], old: TrainingJob | None = None
) -> list[FieldError]:
    """What the CLI and the webhook run on a submitted manifest: parse errors (wrong types, unknown kind)
    if it does not parse, else ``validate_job``. Same ``FieldError`` format either way."""
    if isinstance(obj, TrainingJob):
        job = obj
    else:
        try:
            job = parse_job(dict(obj))
        except InvalidJobError as exc:
            return exc.errors
    return validate_job(job, old)
