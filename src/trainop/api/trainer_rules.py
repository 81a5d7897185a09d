"""Parse, default and validate trainer.kubeflow.org/v1alpha1 objects, with field-path errors.

Defaults and the checks that need no runtime are here: the CRD's schema rules (minimums, lengths,
enums) and CEL rules, with the API server's messages (kubeflow/trainer@v2.3.0 trainjob_types.go,
trainingruntime_types.go), and the TrainingRuntime webhook (pkg/webhooks/trainingruntime_webhook.go).
What depends on the runtime a TrainJob names (initializer jobs, runtime patches, each policy's
reserved env) is checked by the resolver in ``trainop.core.trainjob``. Pure: no I/O.
"""

from __future__ import annotations

import re
from typing import Any

from trainop.api.common import KubeModel
from trainop.api.constants import (
    ANCESTOR_DATASET_INITIALIZER,
    ANCESTOR_MODEL_INITIALIZER,
    ANCESTOR_TRAINER,
    KIND_CLUSTER_TRAINING_RUNTIME,
    KIND_TRAINJOB,
    MANAGED_BY_TRAINJOB_CONTROLLER,
    NODE,
    TRAINER_API_VERSION,
    TRAINER_GROUP,
    TRAINER_KINDS,
    TRAINJOB_MANAGED_BY_VALUES,
)
from trainop.api.errors import FieldError, InvalidJobError, invalid, not_supported, render_value
from trainop.api.load import parse_model
from trainop.api.names import DNS1123_SUBDOMAIN_MAX, DNS1123_SUBDOMAIN_MSG, DNS1123_SUBDOMAIN_RE
from trainop.api.rules import copy_model
from trainop.api.trainer import (
    TRAINER_MODELS,
    CoschedulingPolicy,
    MLPolicy,
    MPIPolicy,
    PodGroupPolicy,
    ReplicatedJob,
    RuntimeRef,
    TrainingRuntime,
    TrainingRuntimeSpec,
    TrainJob,
    TrainJobSpec,
)

DEFAULT_MPI_IMPLEMENTATION = "OpenMPI"
MPI_IMPLEMENTATIONS = ("OpenMPI", "")  # the CRD's enum; Intel and MPICH are declared but refused
DEFAULT_SSH_AUTH_MOUNT_PATH = "/root/.ssh"
DEFAULT_SCHEDULE_TIMEOUT_SECONDS = 60
MAX_RUNTIME_PATCHES = 16
MAX_ENV = 128
# The webhook's expectedContainerNames: the container each ancestor's job must hold.
ANCESTOR_CONTAINERS = {
    ANCESTOR_TRAINER: NODE,
    ANCESTOR_MODEL_INITIALIZER: ANCESTOR_MODEL_INITIALIZER,
    ANCESTOR_DATASET_INITIALIZER: ANCESTOR_DATASET_INITIALIZER,
}
_RFC1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://.+$")


def is_trainer_object(obj: Any) -> bool:
    """Whether ``obj`` (a manifest dict) is one of the trainer.kubeflow.org kinds."""
    return isinstance(obj, dict) and obj.get("kind") in TRAINER_KINDS


def parse_trainer_object(obj: dict[str, Any]) -> TrainJob | TrainingRuntime:
    """A TrainJob, TrainingRuntime or ClusterTrainingRuntime manifest → its model (not defaulted)."""
    model = parse_model(TRAINER_MODELS[str(obj.get("kind"))], obj, TRAINER_API_VERSION)
    assert isinstance(model, TrainJob | TrainingRuntime)
    return model


# --- defaults ---------------------------------------------------------------------------------------


def default_trainjob(job: TrainJob) -> TrainJob:
    """The CRD's schema defaults: runtimeRef apiGroup and kind, suspend false, managedBy the
    TrainJob controller. Returns a copy; ``job`` is left alone."""
    out = copy_model(job)
    spec = copy_model(job.spec)
    out.spec = spec
    ref = copy_model(spec.runtime_ref) if spec.runtime_ref is not None else RuntimeRef()
    if ref.api_group is None:
        ref.api_group = TRAINER_GROUP
    if ref.kind is None:
        ref.kind = KIND_CLUSTER_TRAINING_RUNTIME
    spec.runtime_ref = ref
    if spec.suspend is None:
        spec.suspend = False
    if spec.managed_by is None:
        spec.managed_by = MANAGED_BY_TRAINJOB_CONTROLLER
    return out


def default_runtime(runtime: TrainingRuntime) -> TrainingRuntime:
    """The CRD's schema defaults of a runtime: MPI's numProcPerNode 1, OpenMPI, /root/.ssh,
    runLauncherAsNode false; coscheduling's 60 s timeout. ``mlPolicy.numNodes`` stays unset (the
    code reads it as 1). Returns a copy."""
    out = copy_model(runtime)
    spec = copy_model(runtime.spec)
    out.spec = spec
    if spec.ml_policy is not None and spec.ml_policy.mpi is not None:
        policy = copy_model(spec.ml_policy)
        mpi = copy_model(policy.mpi) if policy.mpi is not None else MPIPolicy()
        if mpi.num_proc_per_node is None:
            mpi.num_proc_per_node = 1
        if mpi.mpi_implementation is None:
            mpi.mpi_implementation = DEFAULT_MPI_IMPLEMENTATION
        if mpi.ssh_auth_mount_path is None:
            mpi.ssh_auth_mount_path = DEFAULT_SSH_AUTH_MOUNT_PATH
        if mpi.run_launcher_as_node is None:
            mpi.run_launcher_as_node = False
        policy.mpi = mpi
        spec.ml_policy = policy
    pgp = spec.pod_group_policy
    if pgp is not None and pgp.coscheduling is not None and pgp.coscheduling.schedule_timeout_seconds is None:
        new_pgp: PodGroupPolicy = copy_model(pgp)
        new_pgp.coscheduling = CoschedulingPolicy(schedule_timeout_seconds=DEFAULT_SCHEDULE_TIMEOUT_SECONDS)
        spec.pod_group_policy = new_pgp
    return out


# --- validation ---------------------------------------------------------------------------------------


def _min(path: str, value: int, low: int) -> FieldError:
    return invalid(path, value, f"{path} in body should be greater than or equal to {low}")


def _cel(path: str, type_name: str, message: str) -> FieldError:
    """A CEL rule's failure as the API server reports it: the value is the type's name."""
    return FieldError(path, f"Invalid value: {render_value(type_name)}: {message}")


def _too_long(path: str, value: str, limit: int) -> list[FieldError]:
    if len(value.encode()) > limit:
        return [FieldError(path, f"Too long: may not be more than {limit} bytes")]
    return []


def _too_many(path: str, items: list[Any] | None, limit: int) -> list[FieldError]:
    if items is not None and len(items) > limit:
        return [FieldError(path, f"Too many: {len(items)}: must have at most {limit} items")]
    return []


def validate_trainjob(job: TrainJob, old: TrainJob | None = None) -> list[FieldError]:
    """The TrainJob CRD's rules (schema and CEL), on the undefaulted job; ``old`` adds the
    immutability rules of an update."""
    errs: list[FieldError] = []
    name = job.metadata.name or job.metadata.generate_name or ""
    if job.metadata.name is not None or job.metadata.generate_name is None:
        if not _RFC1035.match(name):
            errs.append(_cel("", "object", "metadata.name must match RFC 1035 DNS label format"))
        if len(name) > 63:
            errs.append(_cel("", "object", "metadata.name must be no more than 63 characters"))
    errs += validate_trainjob_spec(job.spec)
    if old is not None:
        errs += _immutable(job.spec, old.spec)
    return errs


def validate_trainjob_spec(spec: TrainJobSpec) -> list[FieldError]:
    """The TrainJob CRD's schema and CEL rules on ``spec``, field by field, in upstream's order."""
    errs = _runtime_ref_errors(spec)
    if spec.active_deadline_seconds is not None and spec.active_deadline_seconds < 1:
        errs.append(_min("spec.activeDeadlineSeconds", spec.active_deadline_seconds, 1))
    if spec.managed_by is not None:
        errs += _too_long("spec.managedBy", spec.managed_by, 253)
        if spec.managed_by not in TRAINJOB_MANAGED_BY_VALUES:
            errs.append(
                _cel(
                    "spec.managedBy",
                    "string",
                    "ManagedBy must be trainer.kubeflow.org/trainjob-controller or kueue.x-k8s.io/multikueue "
                    "if set",
                )
            )
    return errs + _trainer_errors(spec) + _initializer_errors(spec) + _runtime_patch_errors(spec)


def _runtime_ref_errors(spec: TrainJobSpec) -> list[FieldError]:
    ref = spec.runtime_ref
    if ref is None:
        return [FieldError("spec.runtimeRef", "Required value")]
    errs: list[FieldError] = []
    if ref.name is None:
        errs.append(FieldError("spec.runtimeRef.name", "Required value"))
    elif ref.name == "":
        errs.append(
            invalid(
                "spec.runtimeRef.name", "", "spec.runtimeRef.name in body should be at least 1 chars long"
            )
        )
    for field, value in (("name", ref.name), ("apiGroup", ref.api_group), ("kind", ref.kind)):
        if value is not None:
            errs += _too_long(f"spec.runtimeRef.{field}", value, 253)
    return errs


def _trainer_errors(spec: TrainJobSpec) -> list[FieldError]:
    trainer = spec.trainer
    if trainer is None:
        return []
    errs: list[FieldError] = []
    if trainer.num_nodes is not None and trainer.num_nodes < 0:
        errs.append(_min("spec.trainer.numNodes", trainer.num_nodes, 0))
    if trainer.num_proc_per_node is not None and trainer.num_proc_per_node < 1:
        errs.append(
            _cel(
                "spec.trainer.numProcPerNode", "integer", "numProcPerNode must be greater than or equal to 1"
            )
        )
    if trainer.image is not None:
        errs += _too_long("spec.trainer.image", trainer.image, 500)
    errs += _too_many("spec.trainer.command", trainer.command, 128)
    errs += _too_many("spec.trainer.args", trainer.args, 128)
    return errs + _env_errors("spec.trainer.env", trainer.env)


def _initializer_errors(spec: TrainJobSpec) -> list[FieldError]:
    init = spec.initializer
    errs: list[FieldError] = []
    for part, source in (("dataset", init.dataset), ("model", init.model)) if init is not None else ():
        if source is None:
            continue
        path = f"spec.initializer.{part}"
        uri = source.storage_uri
        if uri is not None:
            errs += _too_long(f"{path}.storageUri", uri, 2048)
        if uri and not _URI.match(uri):
            message = "storageUri may be empty, or it must be a valid URI (scheme://...)"
            errs.append(_cel(f"{path}.storageUri", "string", message))
        errs += _env_errors(f"{path}.env", source.env)
    return errs


def _runtime_patch_errors(spec: TrainJobSpec) -> list[FieldError]:
    patches = spec.runtime_patches or []
    errs = _too_many("spec.runtimePatches", patches, MAX_RUNTIME_PATCHES)
    seen: set[str] = set()
    for i, patch in enumerate(patches):
        path = f"spec.runtimePatches[{i}].manager"
        if patch.manager is None:
            errs.append(FieldError(path, "Required value"))
            continue
        if patch.manager == "":
            errs.append(invalid(path, "", f"{path} in body should be at least 1 chars long"))
            continue
        errs += _domain_prefixed_path("spec.runtimePatches.manager", patch.manager)
        if patch.manager in seen:
            message = f'Duplicate value: {{"manager":{render_value(patch.manager)}}}'
            errs.append(FieldError(f"spec.runtimePatches[{i}]", message))
        seen.add(patch.manager)
    return errs


def _env_errors(path: str, env: list[Any] | None) -> list[FieldError]:
    """``env`` is a list map keyed by name: at most ``MAX_ENV`` entries, each with a name, names unique."""
    errs = _too_many(path, env, MAX_ENV)
    seen: set[str] = set()
    for i, entry in enumerate(env or []):
        name = entry.get("name") if isinstance(entry, dict) else None
        if not isinstance(name, str) or not name:
            errs.append(FieldError(f"{path}[{i}].name", "Required value"))
            continue
        if name in seen:
            errs.append(FieldError(f"{path}[{i}]", f'Duplicate value: {{"name":{render_value(name)}}}'))
        seen.add(name)
    return errs


def _domain_prefixed_path(path: str, value: str) -> list[FieldError]:
    """apimachinery's IsDomainPrefixedPath: ``<dns-1123 subdomain>/<path>``."""
    host, sep, rest = value.partition("/")
    if not sep or not host:
        return [invalid(path, value, 'must be a domain-prefixed path (such as "acme.io/foo")')]
    errs = []
    if not DNS1123_SUBDOMAIN_RE.match(host) or len(host) > DNS1123_SUBDOMAIN_MAX:
        errs.append(invalid(path, host, DNS1123_SUBDOMAIN_MSG))
    if not re.fullmatch(r"[A-Za-z0-9/\-._~%!$&'()*+,;=:]+", rest or "/"):
        errs.append(invalid(path, value, "Segment of the path must be valid path characters"))
    return errs


def _immutable(new: TrainJobSpec, old: TrainJobSpec) -> list[FieldError]:
    errs: list[FieldError] = []
    for field, alias, type_name in (
        ("runtime_ref", "runtimeRef", "object"),
        ("initializer", "initializer", "object"),
        ("trainer", "trainer", "object"),
        ("active_deadline_seconds", "activeDeadlineSeconds", "integer"),
        ("managed_by", "managedBy", "string"),
    ):
        if _dump(getattr(new, field)) != _dump(getattr(old, field)):
            errs.append(_cel(f"spec.{alias}", type_name, "field is immutable"))
    return errs


def _dump(value: Any) -> Any:
    return value.to_dict() if isinstance(value, KubeModel) else value


def validate_runtime(runtime: TrainingRuntime) -> list[FieldError]:
    """A (Cluster)TrainingRuntime's CRD rules and its validating webhook (undefaulted)."""
    errs: list[FieldError] = []
    spec: TrainingRuntimeSpec = runtime.spec
    if spec.ml_policy is not None:
        errs += _ml_policy_errors(spec.ml_policy)
    pgp = spec.pod_group_policy
    if pgp is not None and pgp.coscheduling is not None and pgp.volcano is not None:
        errs.append(_cel("spec.podGroupPolicy", "object", "Only one of the policy can be configured"))
    template = spec.template
    jobs = (
        template.spec.replicated_jobs if template is not None and template.spec is not None else None
    ) or []
    names: set[str] = set()
    for i, rjob in enumerate(jobs):
        path = f"spec.template.spec.replicatedJobs[{i}]"
        if rjob.name in names:
            errs.append(FieldError(f"{path}.name", f"Duplicate value: {render_value(rjob.name)}"))
        names.add(rjob.name)
        errs += _ancestor_errors(path, rjob)
    return errs + _depends_on_errors(jobs)


def _ancestor_errors(path: str, rjob: ReplicatedJob) -> list[FieldError]:
    """A job labelled as an initializer or the trainer runs once, and has that step's container."""
    ancestor = rjob.ancestor
    if ancestor not in ANCESTOR_CONTAINERS:
        return []
    errs: list[FieldError] = []
    replicas = rjob.replicas if rjob.replicas is not None else 1
    if replicas != 1:
        errs.append(invalid(f"{path}.replicas", replicas, "always must be 1"))
    if not any(c.get("name") == ANCESTOR_CONTAINERS[ancestor] for c in rjob.containers()):
        errs.append(
            invalid(
                f"{path}.template.spec.template.spec.containers",
                rjob.pod_spec.get("containers"),
                f"must contain the required container for the ancestor: {ancestor}",
            )
        )
    return errs


def _depends_on_errors(jobs: list[ReplicatedJob]) -> list[FieldError]:
    """dependsOn names a job listed before it, with status Ready or Complete."""
    errs: list[FieldError] = []
    before: set[str] = set()
    for i, rjob in enumerate(jobs):
        for j, dep in enumerate(rjob.depends_on or []):
            dpath = f"spec.template.spec.replicatedJobs[{i}].dependsOn[{j}]"
            if dep.status not in ("Ready", "Complete"):
                errs.append(not_supported(f"{dpath}.status", dep.status, ["Ready", "Complete"]))
            if dep.name not in before:
                message = "must name a replicated job of this runtime listed before it"
                errs.append(invalid(f"{dpath}.name", dep.name, message))
        before.add(rjob.name)
    return errs


def _ml_policy_errors(policy: MLPolicy) -> list[FieldError]:
    errs: list[FieldError] = []
    if len(policy.sources()) > 1:
        errs.append(_cel("spec.mlPolicy", "object", "Only one of the policy can be configured"))
    mpi = policy.mpi
    if mpi is not None:
        errs += _nproc_errors("mpi", mpi.num_proc_per_node)
        if mpi.mpi_implementation is not None and mpi.mpi_implementation not in MPI_IMPLEMENTATIONS:
            path = "spec.mlPolicy.mpi.mpiImplementation"
            errs.append(not_supported(path, mpi.mpi_implementation, MPI_IMPLEMENTATIONS))
        if mpi.ssh_auth_mount_path is not None:
            errs += _too_long("spec.mlPolicy.mpi.sshAuthMountPath", mpi.ssh_auth_mount_path, 4096)
    if policy.flux is not None:
        errs += _nproc_errors("flux", policy.flux.num_proc_per_node)
    torch = policy.torch
    message = (
        "containerNames must not include the main node container because PET_* envs are always injected "
        "into it"
    )
    for i, target in enumerate(torch.env_injection.targets or []) if torch and torch.env_injection else ():
        if NODE in (target.container_names or []):
            path = f"spec.mlPolicy.torch.envInjection.targets[{i}].containerNames"
            errs.append(_cel(path, "list", message))
    return errs


def _nproc_errors(source: str, value: int | None) -> list[FieldError]:
    if value is None or value >= 1:
        return []
    message = f"NumProcPerNode in {source}Policy must be >= 1"
    return [_cel(f"spec.mlPolicy.{source}.numProcPerNode", "integer", message)]


def load_trainer_object(obj: dict[str, Any]) -> TrainJob | TrainingRuntime:
    """Parse and validate one trainer.kubeflow.org manifest; raises InvalidJobError with every error."""
    model = parse_trainer_object(obj)
    errs = validate_trainjob(model) if isinstance(model, TrainJob) else validate_runtime(model)
    if errs:
        raise InvalidJobError(errs, kind=model.kind, name=model.metadata.name or "")
    return model


__all__ = [
    "KIND_TRAINJOB",
    "default_runtime",
    "default_trainjob",
    "is_trainer_object",
    "load_trainer_object",
    "parse_trainer_object",
    "validate_runtime",
    "validate_trainjob",
]
