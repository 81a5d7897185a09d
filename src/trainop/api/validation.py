"""Admission validation of kubeflow.org/v1 jobs: upstream's rules (contract §2) plus trainop's own.

Upstream's webhook rules (§2.2, §2.3) and MPI's in-controller rules (§2.4) are each kind's spec hook
``upstream_errors`` (api/kinds.py, on api/rules.py's shared helpers), with upstream's field paths and
messages. ``validate_trainop`` adds the checks users trip over that upstream lacks (§9.14 and friends;
listed in docs/compatibility.md), a kind's own through its ``field_errors`` hook. ``validate_job`` runs
both; no kind is named here. Pure: jobs in, ``FieldError`` lists out; never raises on bad input and
never mutates the job.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from trainop.api.common import KubeModel, ReplicaSpec, TrainingJob
from trainop.api.constants import (
    CLEAN_POD_POLICIES,
    LABEL_JOB_NAME,
    LABEL_KUEUE_QUEUE,
    RESOURCE_NVIDIA_GPU,
    RESTART_POLICIES,
)
from trainop.api.errors import FieldError, InvalidJobError, invalid, not_supported
from trainop.api.failure_policy import build_failure_policy
from trainop.api.kinds import KIND_INFO
from trainop.api.load import parse_job
from trainop.api.names import DNS1123_SUBDOMAIN_MAX, DNS1123_SUBDOMAIN_MSG, DNS1123_SUBDOMAIN_RE
from trainop.api.podschema import join_path, template_errors, unknown_field_message
from trainop.api.rules import (
    DNS1035_LABEL_MAX,
    at_least,
    detect_queue_name,
    dns1035_label_errors,
    key_path,
    max_len_error,
)

# --- apimachinery's name rules (k8s.io/apimachinery/pkg/util/validation) -----------------------------

LABEL_VALUE_MAX = 63
# The API server keeps generateName prefixes to 58 characters and appends 5 random ones.
_GENERATED_PREFIX_MAX = 58
_GENERATED_SUFFIX_LEN = 5


# --- trainop's own rules -------------------------------------------------------------------------------


def validate_trainop(job: TrainingJob, old: TrainingJob | None = None) -> list[FieldError]:
    """Checks upstream lacks, each saying what to change (docs/compatibility.md, "## Validation")."""
    errs: list[FieldError] = []
    _walk_extras(job, "", errs)  # fields the models do not know
    errs += _validate_names(job)
    errs += _validate_queue_immutable(job, old)
    errs += _validate_kueue_queue_name(job, old)
    errs += _validate_run_policy(job)
    errs += _validate_replicas(job)
    errs += job.spec.field_errors()
    errs += build_failure_policy(job)[1]  # trainop.dev/ annotations (docs/failure-policy.md)
    errs += template_errors(job, reported=errs)  # core/v1 schema of every pod template (api/podschema.py)
    return errs


def _walk_extras(model: KubeModel, path: str, errs: list[FieldError]) -> None:
    """Fields the models do not know (outside pod templates and other opaque Kubernetes objects).
    The API server would prune them silently; a typo there usually means a setting is ignored."""
    fields = type(model).model_fields
    extra = model.__pydantic_extra__
    if extra:
        known = [f.alias or name for name, f in fields.items()]
        for key in extra:
            # An empty key is printed as podschema prints it, so the error still has a path.
            errs.append(FieldError(join_path(path, key or '""'), unknown_field_message(key, known)))
    for name, f in fields.items():
        if name == "template":
            continue  # a PodTemplateSpec: Kubernetes validates the pods built from it
        value = getattr(model, name)
        child = join_path(path, f.alias or name)
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
    if not KIND_INFO[job.kind].admission_webhook:
        return _validate_pod_name(path, name, value)
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
    for rtype, rs in job.replica_specs.items():
        count = rs.replicas if rs.replicas is not None else 1
        scaled = job.spec.scaled_replicas(rtype)
        if scaled is not None:
            count = max(count, scaled)
        if count < 1:
            continue
        candidate = f"{name}-{rtype.lower().replace('/', '-')}-{count - 1}"
        if longest is None or len(candidate) > len(longest):
            longest = candidate
    return longest


def _validate_pod_name(path: str, name: str, value: str) -> list[FieldError]:
    # A kind without upstream's webhook (MPIJob) has no C1; its name becomes pod names (DNS-1123
    # subdomains, which the API server checks for us on Kubernetes, not on the local backend) and the
    # job-name label value (63 max).
    errs: list[FieldError] = []
    if not DNS1123_SUBDOMAIN_RE.match(name):
        errs.append(invalid(path, value, DNS1123_SUBDOMAIN_MSG))
    if len(name.encode()) > LABEL_VALUE_MAX:
        over = len(name.encode()) - LABEL_VALUE_MAX
        errs.append(
            invalid(
                path,
                value,
                f"{max_len_error(LABEL_VALUE_MAX)}: it is the value of the {LABEL_JOB_NAME} label on "
                f"every pod; shorten it by {over} character{'s' if over > 1 else ''}",
            )
        )
    return errs


def _validate_queue_immutable(job: TrainingJob, old: TrainingJob | None) -> list[FieldError]:
    # The CRD's CEL transition rule (§1.2), which the API server evaluates only when both the old and
    # the new object set the field; repeated here for the local backend, with the API server's wording.
    old_sp = old.run_policy.scheduling_policy if old is not None else None
    new_sp = job.run_policy.scheduling_policy
    queues = (old_sp.queue if old_sp else None, new_sp.queue if new_sp else None)
    if None in queues or queues[0] == queues[1]:
        return []
    return [
        invalid(
            "spec.runPolicy.schedulingPolicy.queue",
            "string",
            "spec.runPolicy.schedulingPolicy.queue is immutable",
        )
    ]


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
        reasons = [max_len_error(DNS1123_SUBDOMAIN_MAX)] if len(value) > DNS1123_SUBDOMAIN_MAX else []
        if not DNS1123_SUBDOMAIN_RE.match(value):
            reasons.append(DNS1123_SUBDOMAIN_MSG)
        if reasons:
            errs.append(invalid(f"metadata.{where}[{LABEL_KUEUE_QUEUE}]", value, ",".join(reasons)))
    if old is not None and job.run_policy.suspend is not True:
        new_q, old_q = detect_queue_name(job), detect_queue_name(old)
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


def _validate_run_policy(job: TrainingJob) -> list[FieldError]:
    rp = job.spec.run_policy
    errs: list[FieldError] = []
    if rp is None:
        return errs
    if rp.clean_pod_policy is not None and rp.clean_pod_policy not in CLEAN_POD_POLICIES:
        errs.append(not_supported("spec.runPolicy.cleanPodPolicy", rp.clean_pod_policy, CLEAN_POD_POLICIES))
    errs += at_least("spec.runPolicy.ttlSecondsAfterFinished", rp.ttl_seconds_after_finished, 0)
    errs += at_least("spec.runPolicy.activeDeadlineSeconds", rp.active_deadline_seconds, 0)
    errs += at_least("spec.runPolicy.backoffLimit", rp.backoff_limit, 0)
    sp = rp.scheduling_policy
    if sp is not None:
        errs += at_least("spec.runPolicy.schedulingPolicy.minAvailable", sp.min_available, 0)
        errs += at_least(
            "spec.runPolicy.schedulingPolicy.scheduleTimeoutSeconds", sp.schedule_timeout_seconds, 0
        )
    return errs


def _validate_replicas(job: TrainingJob) -> list[FieldError]:
    """replicas 0 or negative, restartPolicy values and the template's shape, per replica type."""
    info = KIND_INFO[job.kind]
    errs: list[FieldError] = []
    for rtype, rs in job.replica_specs.items():
        path = key_path(info, rtype)
        errs += _replica_count_errors(job, rtype, rs, path)
        if rs.restart_policy and rs.restart_policy not in RESTART_POLICIES:
            errs.append(not_supported(f"{path}.restartPolicy", rs.restart_policy, RESTART_POLICIES))
        errs += _template_shape_errors(rs, f"{path}.template")
    return errs


def _replica_count_errors(job: TrainingJob, rtype: str, rs: ReplicaSpec, path: str) -> list[FieldError]:
    n = rs.replicas
    if n is None or n >= 1:
        return []
    own = job.spec.replica_count_errors(rtype, n, f"{path}.replicas")
    if own is not None:
        return own  # the kind's own rule (upstream already rejects it, or 0 is its default)
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


# --- entry points ----------------------------------------------------------------------------------


def validate_job(job: TrainingJob, old: TrainingJob | None = None) -> list[FieldError]:
    """Every error in ``job`` (undefaulted, as users wrote it): upstream's rules, then trainop's.
    ``old`` is the stored job on an update."""
    return job.spec.upstream_errors(job, old) + validate_trainop(job, old)


def validation_warnings(job: TrainingJob) -> list[str]:
    """Admission warnings (accepted, but worth saying): the deprecated fields the kind's spec sets, and
    resource names that look like a typo of a well-known one."""
    return job.spec.deprecations() + _resource_name_warnings(job)


# Resource names a node commonly offers. An extended resource name is free-form (the API server takes
# any qualified name), so a typo such as nvidia.com/gpus is accepted and its pod never scheduled.
_KNOWN_RESOURCES = (
    "cpu",
    "memory",
    "ephemeral-storage",
    RESOURCE_NVIDIA_GPU,
    "amd.com/gpu",
    "google.com/tpu",
)


def _resource_name_warnings(job: TrainingJob) -> list[str]:
    out = []
    for path, name in _resource_names(job):
        meant = _meant_resource(name)
        if meant is not None:
            out.append(
                f'{path}[{name}]: no node offers "{name}" (extended resource names are free-form, so it '
                f'is accepted, and the pod would wait for it forever on a cluster); did you mean "{meant}"?'
            )
    return out


def _resource_names(job: TrainingJob) -> Iterator[tuple[str, str]]:
    """(path of the map, name) of every resource name in the replicas' limits and requests."""
    info = KIND_INFO[job.kind]
    for rtype, rs in job.replica_specs.items():
        spec = rs.template.get("spec")
        for field in ("initContainers", "containers"):
            containers = spec.get(field) if isinstance(spec, dict) else None
            for i, c in enumerate(containers if isinstance(containers, list) else []):
                resources = c.get("resources") if isinstance(c, dict) else None
                for part in ("limits", "requests"):
                    names = resources.get(part) if isinstance(resources, dict) else None
                    path = f"{key_path(info, rtype)}.template.spec.{field}[{i}].resources.{part}"
                    yield from ((path, str(n)) for n in (names if isinstance(names, dict) else {}))


def _meant_resource(name: str) -> str | None:
    """The well-known resource ``name`` is likely a typo of (another case, a letter or two off); None
    when it is one, or is not close to any."""
    import difflib

    if name in _KNOWN_RESOURCES or name.startswith("hugepages-"):
        return None
    close = difflib.get_close_matches(name.lower(), _KNOWN_RESOURCES, n=1, cutoff=0.85)
    return close[0] if close else None


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
