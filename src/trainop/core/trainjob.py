"""The runtime resolver: TrainJob + (Cluster)TrainingRuntime + runtimePatches → the replicated jobs,
their order, their pods and the objects beside them. Pure: no I/O, no clock.

It follows Kubeflow Trainer v2.3.0's path from a runtime to a JobSet (pkg/runtime/core/
trainingruntime.go ``newRuntimeInfo``, pkg/runtime/framework/plugins/jobset/{jobset,builder}.go,
plugins/coscheduling): patches merged, ``resourcesPerNode`` merged into the trainer's ``node``
container, node counts, the ML policy's env (asked of the framework's ``MLPolicyPlugin``, which lives
in ``frameworks/<kind>.py`` beside the kubeflow.org/v1 plugin), initializer and trainer overrides,
then pods named ``<job>-<replicatedJob>-<jobIndex>-<podIndex>`` with JobSet's hostname, subdomain,
labels and completion-index annotation. Addresses come from a ``TrainJobTopology``, so the same env is
right on a cluster and on one machine.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Protocol, runtime_checkable

from trainop.api.constants import (
    ANCESTOR_DATASET_INITIALIZER,
    ANCESTOR_MODEL_INITIALIZER,
    ANCESTOR_TRAINER,
    ANNOTATION_JOB_COMPLETION_INDEX,
    ENV_STORAGE_URI,
    KIND_CLUSTER_TRAINING_RUNTIME,
    KIND_TRAINING_RUNTIME,
    LABEL_JOB_COMPLETION_INDEX,
    LABEL_JOB_INDEX,
    LABEL_JOBSET_NAME,
    LABEL_REPLICATED_JOB_NAME,
    LABEL_TRAINJOB_ANCESTOR,
    NODE,
    TRAINER_GROUP,
    VOLUME_INITIALIZER,
)
from trainop.api.errors import FieldError, invalid
from trainop.api.trainer import TrainingRuntime, TrainJob
from trainop.api.trainer_rules import default_runtime, default_trainjob
from trainop.core.gang import LABEL_PLUGINS_POD_GROUP, PLUGINS_API_VERSION, POD_GROUP_KIND, compute_quantity
from trainop.core.naming import build_owner_reference

# --- what the resolver produces -------------------------------------------------------------------------


@dataclass
class Step:
    """One replicated job of the runtime, as the TrainJob makes it: ``replicas`` child Jobs of
    ``count`` pods each (the Job's parallelism and completions), started once ``depends_on`` holds
    (JobSet's DependsOn: a named step ``Ready`` or ``Complete``)."""

    name: str
    ancestor: str | None
    replicas: int
    count: int
    depends_on: tuple[tuple[str, str], ...]
    template: dict[str, Any]  # the batch/v1 Job template: metadata + spec (with spec.template)

    @property
    def pod_template(self) -> dict[str, Any]:
        spec = self.template.setdefault("spec", {})
        tmpl: dict[str, Any] = spec.setdefault("template", {})
        return tmpl

    @property
    def pod_spec(self) -> dict[str, Any]:
        spec: dict[str, Any] = self.pod_template.setdefault("spec", {})
        return spec

    def container(self, name: str, *, init: bool = False) -> dict[str, Any] | None:
        items = self.pod_spec.get("initContainers" if init else "containers") or []
        return next((c for c in items if isinstance(c, dict) and c.get("name") == name), None)

    @property
    def backoff_limit(self) -> int:
        value = (self.template.get("spec") or {}).get("backoffLimit")
        return value if isinstance(value, int) and not isinstance(value, bool) else 0


@dataclass(frozen=True, slots=True)
class PodPlan:
    """One pod of a step: JobSet's and the Job controller's names, labels and annotation."""

    step: str
    job_index: int
    pod_index: int
    name: str  # = hostname: <job>-<replicatedJob>-<jobIndex>-<podIndex>
    pod: dict[str, Any]


class _StepLookup:
    steps: list[Step]

    def step(self, name: str) -> Step | None:
        return next((s for s in self.steps if s.name == name), None)

    def step_by_ancestor(self, ancestor: str) -> Step | None:
        return next((s for s in self.steps if s.ancestor == ancestor), None)


@dataclass
class ResolvedTrainJob(_StepLookup):
    job: TrainJob  # defaulted
    runtime: TrainingRuntime  # defaulted, as named by runtimeRef
    policy: str | None  # the mlPolicy source: torch, mpi, jax, xgboost …
    steps: list[Step]
    subdomain: str
    labels: dict[str, str]  # the JobSet template's metadata plus the patches' (propagated)
    annotations: dict[str, str]
    objects: list[dict[str, Any]] = field(default_factory=list)  # ConfigMaps, Secrets, PodGroup
    pod_labels: dict[str, str] = field(default_factory=dict)  # the scheduler's (coscheduling)
    success_operator: str = "All"
    success_targets: tuple[str, ...] = ()
    publish_not_ready: bool = False
    claims: dict[str, str] = field(default_factory=dict)  # claim template name -> PVC name

    def order(self) -> list[list[str]]:
        """The steps in waves: each wave's steps depend only on earlier waves (initializers before the
        trainer; MPI's launcher after its nodes)."""
        done: set[str] = set()
        waves: list[list[str]] = []
        deps = {s.name: s.depends_on for s in self.steps}
        left = list(deps)
        while left:
            wave = [n for n in left if all(d in done for d, _ in deps[n])]
            if not wave:  # a cycle or an unknown name; validation refuses both, keep the rest as one wave
                wave = list(left)
            waves.append(wave)
            done.update(wave)
            left = [n for n in left if n not in done]
        return waves

    def pods(self, step: str | None = None) -> list[PodPlan]:
        return [
            self._build_pod(s, ji, pi)
            for s in self.steps
            if step is None or s.name == step
            for ji in range(s.replicas)
            for pi in range(s.count)
        ]

    def _build_pod(self, step: Step, job_index: int, pod_index: int) -> PodPlan:
        job_name = self.job.name
        name = pod_name(job_name, step.name, job_index, pod_index)
        tmpl = copy.deepcopy(step.pod_template)
        meta = tmpl.get("metadata") or {}
        job_meta = step.template.get("metadata") or {}
        labels: dict[str, str] = {
            **(job_meta.get("labels") or {}),
            **(meta.get("labels") or {}),
            **self.pod_labels,
            LABEL_JOBSET_NAME: job_name,
            LABEL_REPLICATED_JOB_NAME: step.name,
            LABEL_JOB_INDEX: str(job_index),
            LABEL_JOB_COMPLETION_INDEX: str(pod_index),
        }
        annotations = {**(meta.get("annotations") or {}), ANNOTATION_JOB_COMPLETION_INDEX: str(pod_index)}
        spec = tmpl.get("spec") or {}
        spec["hostname"] = name
        spec["subdomain"] = self.subdomain
        spec.setdefault("restartPolicy", "Never")
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "namespace": self.job.namespace,
                "labels": labels,
                "annotations": annotations,
            },
            "spec": spec,
        }
        return PodPlan(step.name, job_index, pod_index, name, pod)

    def build_service(self) -> dict[str, Any]:
        """The headless Service behind the subdomain (JobSet's), selecting every pod of the job, so
        ``<pod>.<subdomain>`` resolves."""
        return {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": self.subdomain, "namespace": self.job.namespace},
            "spec": {
                "clusterIP": "None",
                "selector": {LABEL_JOBSET_NAME: self.job.name},
                "publishNotReadyAddresses": self.publish_not_ready,
            },
        }


def pod_name(job: str, step: str, job_index: int, pod_index: int) -> str:
    """``<job>-<replicatedJob>-<jobIndex>-<podIndex>``: the pod hostname JobSet's Indexed Jobs give."""
    return f"{job}-{step}-{job_index}-{pod_index}"


# --- how replicas address each other ------------------------------------------------------------------


class TrainJobTopology(Protocol):
    def host(self, job: str, step: str, job_index: int, pod_index: int) -> str:
        """The address peers use to reach that pod."""
        ...

    def port(self, job: str, step: str, job_index: int, pod_index: int, declared: int) -> int: ...


@dataclass(frozen=True, slots=True)
class JobSetTopology:
    """A cluster: ``<pod hostname>.<subdomain>``, where upstream's plugins assume the subdomain is the
    TrainJob's name (torch.go, jax.go, xgboost.go write ``<job>-node-0-0.<job>``)."""

    def host(self, job: str, step: str, job_index: int, pod_index: int) -> str:
        return f"{pod_name(job, step, job_index, pod_index)}.{job}"

    def port(self, job: str, step: str, job_index: int, pod_index: int, declared: int) -> int:
        return declared


@dataclass(frozen=True, slots=True)
class LoopbackTrainJobTopology:
    """One machine: every pod on 127.0.0.1, with the ports the local backend allocated."""

    ports: Mapping[tuple[str, int, int], int] = field(default_factory=dict)
    address: str = "127.0.0.1"

    def host(self, job: str, step: str, job_index: int, pod_index: int) -> str:
        return self.address

    def port(self, job: str, step: str, job_index: int, pod_index: int, declared: int) -> int:
        return self.ports.get((step, job_index, pod_index), declared)


# --- what a framework plugin contributes -------------------------------------------------------------


@dataclass
class PolicyContext(_StepLookup):
    """What an ML policy reads and edits: the defaulted job and runtime, the steps being built (their
    ``count`` and templates are the policy's to change) and the topology."""

    job: TrainJob
    runtime: TrainingRuntime
    steps: list[Step]
    topology: TrainJobTopology
    objects: list[dict[str, Any]] = field(default_factory=list)

    def trainer_container(self) -> dict[str, Any] | None:
        step = self.step_by_ancestor(ANCESTOR_TRAINER)
        return step.container(NODE) if step is not None else None

    def resources_per_node(self) -> dict[str, Any]:
        """The trainer's ``resourcesPerNode``, else the runtime's ``node`` container resources
        (runtime.ExtractResourcePerNodeFromRuntime)."""
        trainer = self.job.spec.trainer
        if trainer is not None and trainer.resources_per_node is not None:
            return trainer.resources_per_node
        for rjob in self.runtime.spec.replicated_jobs:
            if rjob.name == NODE or rjob.ancestor == ANCESTOR_TRAINER:
                for c in rjob.containers():
                    if c.get("name") == NODE and isinstance(c.get("resources"), dict):
                        res: dict[str, Any] = c["resources"]
                        return res
        return {}

    def gpus_per_node(self) -> int:
        return count_gpus(self.resources_per_node())

    def trainer_env(self) -> list[dict[str, Any]]:
        trainer = self.job.spec.trainer
        return list(trainer.env or []) if trainer is not None else []


@runtime_checkable
class MLPolicyPlugin(Protocol):
    """A framework's Trainer v2 side: the ``mlPolicy`` source it serves, its admission rules for a
    TrainJob on such a runtime, and what it does to the steps (counts, env, ports, volumes, objects)."""

    ml_policy: str

    def trainjob_errors(self, ctx: PolicyContext) -> list[FieldError]: ...

    def enforce_ml_policy(self, ctx: PolicyContext) -> None: ...


class MLPolicies(Protocol):
    def ml_policy(self, name: str) -> MLPolicyPlugin | None: ...


# --- env and list helpers (apply.UpsertEnvVars and friends) -----------------------------------------


def upsert_env(container: dict[str, Any], entries: Sequence[Mapping[str, Any]]) -> None:
    """Set each entry by name: replaced where the name exists (keeping its place), appended otherwise."""
    env = container.setdefault("env", [])
    for entry in entries:
        upsert_named(env, entry)


def upsert_named(items: list[Any], entry: Mapping[str, Any], key: str = "name") -> None:
    for i, old in enumerate(items):
        if isinstance(old, dict) and old.get(key) == entry.get(key):
            items[i] = dict(entry)
            return
    items.append(dict(entry))


def upsert_port(container: dict[str, Any], port: int) -> None:
    ports = container.setdefault("ports", [])
    if not any(isinstance(p, dict) and p.get("containerPort") == port for p in ports):
        ports.append({"containerPort": port})


def field_ref_env(name: str, path: str) -> dict[str, Any]:
    return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": path}}}


def count_gpus(resources: Mapping[str, Any]) -> int:
    """runtime.GetNumGPUPerNode: the first resource whose name holds "gpu", requests before limits."""
    return _count_resource(resources, lambda key: "gpu" in key.lower())


def count_cpus(resources: Mapping[str, Any]) -> int:
    """torch.getNumCPUPerNode: the CPU request rounded up, else the limit, else 0."""
    return _count_resource(resources, lambda key: key == "cpu")


def _count_resource(resources: Mapping[str, Any], match: Callable[[str], bool]) -> int:
    """The first resource ``match`` accepts, rounded up: in the requests, else (0 there) the limits."""
    for part in ("requests", "limits"):
        amounts = resources.get(part)
        amounts = amounts if isinstance(amounts, dict) else {}
        got = next((_ceil(v) for k, v in amounts.items() if match(str(k))), 0)
        if got:
            return got
    return 0


def _ceil(value: Any) -> int:
    if value is None or isinstance(value, bool):
        return 0
    try:
        q = compute_quantity(str(value))
    except ValueError:
        return 0
    return int(q.to_integral_value(rounding="ROUND_CEILING")) if q > 0 else 0


# --- the resolver ----------------------------------------------------------------------------------------


class RuntimeResolutionError(ValueError):
    """The TrainJob cannot be built on its runtime; ``errors`` carry field paths (upstream's webhook)."""

    def __init__(self, errors: list[FieldError]) -> None:
        self.errors = errors
        super().__init__("; ".join(str(e) for e in errors))


def find_runtime(job: TrainJob, runtimes: Sequence[TrainingRuntime]) -> TrainingRuntime:
    """The runtime ``spec.runtimeRef`` names (a TrainingRuntime only from the job's namespace), or
    upstream's admission error naming what to create."""
    ref = job.spec.runtime_ref
    name = ref.name if ref is not None else None
    group = (ref.api_group if ref is not None else None) or TRAINER_GROUP
    kind = (ref.kind if ref is not None else None) or KIND_CLUSTER_TRAINING_RUNTIME
    if group != TRAINER_GROUP or kind not in (KIND_CLUSTER_TRAINING_RUNTIME, KIND_TRAINING_RUNTIME):
        raise RuntimeResolutionError([FieldError("", f"unsupported runtime: {kind}.{group}")])
    for rt in runtimes:
        in_scope = kind == KIND_CLUSTER_TRAINING_RUNTIME or rt.namespace == job.namespace
        if rt.kind == kind and rt.name == name and in_scope:
            return rt
    if kind == KIND_CLUSTER_TRAINING_RUNTIME:
        path, what, scope = "spec.RuntimeRef", "clusterTrainingRuntime", ""
    else:
        path, what, scope = "spec.runtimeRef", "trainingRuntime", f" in namespace {job.namespace!r}"
    notfound = f'{kind.lower()}s.{TRAINER_GROUP} "{name}" not found{scope}'
    value = ref.to_dict() if ref is not None else None
    raise RuntimeResolutionError(
        [invalid(path, value, f"{notfound}: specified {what} must be created before the TrainJob is created")]
    )


def resolve_trainjob(
    job: TrainJob,
    runtime: TrainingRuntime,
    policies: MLPolicies,
    topology: TrainJobTopology | None = None,
) -> ResolvedTrainJob:
    """Build the TrainJob on ``runtime``: raises RuntimeResolutionError with upstream's field errors
    when the pair is not admissible (initializer jobs missing, patches naming unknown jobs, reserved
    env, …)."""
    job = default_trainjob(job)
    runtime = default_runtime(runtime)
    ml = runtime.spec.ml_policy
    sources = ml.sources() if ml is not None else []
    policy_name = sources[0] if sources else None
    plugin = policies.ml_policy(policy_name) if policy_name is not None else None
    errors = detect_runtime_errors(job, runtime)
    jobset_spec, labels, annotations = build_patched_jobset(job, runtime)
    steps = [
        _build_step(rjob, ml.num_nodes if ml is not None else None)
        for rjob in jobset_spec.get("replicatedJobs") or []
    ]
    ctx = PolicyContext(job=job, runtime=runtime, steps=steps, topology=topology or JobSetTopology())
    errors += _policy_errors(ctx, plugin, policy_name)
    if errors:
        raise RuntimeResolutionError(errors)
    if plugin is not None:
        plugin.enforce_ml_policy(ctx)
    network = jobset_spec.get("network") or {}
    success = jobset_spec.get("successPolicy") or {}
    resolved = ResolvedTrainJob(
        job=job,
        runtime=runtime,
        policy=policy_name,
        steps=steps,
        subdomain=network.get("subdomain") or job.name,
        labels=labels,
        annotations=annotations,
        objects=ctx.objects,
        success_operator=str(success.get("operator") or "All"),
        success_targets=tuple(success.get("targetReplicatedJobs") or ()),
        publish_not_ready=bool(network.get("publishNotReadyAddresses")),
    )
    _apply_initializers(job, steps)
    _apply_trainer(job, runtime, steps)
    for step in steps:  # SyncParallelCount
        spec = step.template.setdefault("spec", {})
        spec["parallelism"] = step.count
        spec["completions"] = step.count
    _apply_claims(resolved, jobset_spec.get("volumeClaimPolicies") or [])
    _apply_pod_group(resolved)
    return resolved


def build_patched_jobset(
    job: TrainJob, runtime: TrainingRuntime
) -> tuple[dict[str, Any], dict[str, str], dict[str, str]]:
    """The runtime's JobSet spec with the TrainJob's runtimePatches merged in order, and the labels and
    annotations of its template's metadata and the patches'."""
    template = runtime.spec.template
    jobset_spec = template.spec.to_dict() if template is not None and template.spec is not None else {}
    meta = template.metadata if template is not None else None
    labels = dict((meta.labels or {}) if meta is not None else {})
    annotations = dict((meta.annotations or {}) if meta is not None else {})
    for patch in job.spec.runtime_patches or []:
        tmpl = patch.training_runtime_spec.template if patch.training_runtime_spec else None
        if tmpl is not None and tmpl.metadata is not None:
            labels.update(tmpl.metadata.labels or {})
            annotations.update(tmpl.metadata.annotations or {})
        if tmpl is not None and tmpl.spec is not None:
            jobset_spec = merge_jobset_patch(jobset_spec, tmpl.spec.to_dict())
    return jobset_spec, labels, annotations


def _policy_errors(
    ctx: PolicyContext, plugin: MLPolicyPlugin | None, policy_name: str | None
) -> list[FieldError]:
    if plugin is not None:
        return plugin.trainjob_errors(ctx)
    if policy_name is None:
        return []
    return [
        FieldError(
            "spec.runtimeRef",
            f"the runtime's mlPolicy.{policy_name} has no framework plugin in trainop: "
            "use a runtime with torch, mpi, jax or xgboost",
        )
    ]


def _apply_claims(resolved: ResolvedTrainJob, policies: list[Any]) -> None:
    """JobSet's volumeClaimPolicies: one PersistentVolumeClaim ``<template>-<job>`` per claim template,
    and a volume of the template's name on every pod that mounts it without declaring it."""
    for policy in policies:
        for tmpl in (policy.get("templates") or []) if isinstance(policy, dict) else []:
            name = str((tmpl.get("metadata") or {}).get("name") or "")
            if not name:
                continue
            claim = f"{name}-{resolved.job.name}"
            resolved.claims[name] = claim
            resolved.objects.append(
                {
                    "apiVersion": "v1",
                    "kind": "PersistentVolumeClaim",
                    "metadata": {
                        "name": claim,
                        "namespace": resolved.job.namespace,
                        "ownerReferences": [build_owner_reference(resolved.job)],
                    },
                    "spec": copy.deepcopy(tmpl.get("spec") or {}),
                }
            )
            for step in resolved.steps:
                mounted = any(
                    isinstance(m, dict) and m.get("name") == name
                    for c in iter_containers(step.pod_template)
                    for m in c.get("volumeMounts") or []
                )
                volumes = step.pod_spec.setdefault("volumes", [])
                if mounted and not any(isinstance(v, dict) and v.get("name") == name for v in volumes):
                    volumes.append({"name": name, "persistentVolumeClaim": {"claimName": claim}})


def _build_step(rjob: Mapping[str, Any], num_nodes: int | None) -> Step:
    template = copy.deepcopy(rjob.get("template") or {})
    meta = template.get("metadata") or {}
    ancestor = (meta.get("labels") or {}).get(LABEL_TRAINJOB_ANCESTOR)
    spec = template.get("spec") or {}
    parallelism = spec.get("parallelism")
    count = parallelism if isinstance(parallelism, int) and not isinstance(parallelism, bool) else 1
    if ancestor == ANCESTOR_TRAINER:
        count = num_nodes if num_nodes is not None else 1
    replicas = rjob.get("replicas")
    return Step(
        name=str(rjob.get("name")),
        ancestor=ancestor if isinstance(ancestor, str) else None,
        replicas=replicas if isinstance(replicas, int) and not isinstance(replicas, bool) else 1,
        count=count,
        depends_on=tuple((str(d.get("name")), str(d.get("status"))) for d in rjob.get("dependsOn") or []),
        template=template,
    )


def _apply_initializers(job: TrainJob, steps: list[Step]) -> None:
    """builder.Initializer: one replica; ``STORAGE_URI``, env and the Secret's envFrom on the
    initializer container."""
    init = job.spec.initializer
    for step in steps:
        if step.ancestor not in (ANCESTOR_DATASET_INITIALIZER, ANCESTOR_MODEL_INITIALIZER):
            continue
        step.replicas = 1
        source = None
        if init is not None:
            source = init.dataset if step.ancestor == ANCESTOR_DATASET_INITIALIZER else init.model
        container = step.container(step.ancestor)
        if source is None or container is None:
            continue
        if source.storage_uri is not None:
            upsert_env(container, [{"name": ENV_STORAGE_URI, "value": source.storage_uri}])
        upsert_env(container, source.env or [])
        if source.secret_ref is not None:
            container.setdefault("envFrom", []).append({"secretRef": {"name": source.secret_ref.get("name")}})


def _apply_trainer(job: TrainJob, runtime: TrainingRuntime, steps: list[Step]) -> None:
    """builder.Trainer: one replica; image, command and args of the ``node`` container; the trainer's
    env and ``resourcesPerNode`` (limits and requests merged key by key; not without an mlPolicy),
    also on MPI's ``node`` step when the launcher runs as a node."""
    trainer = job.spec.trainer
    ml = runtime.spec.ml_policy
    launcher_as_node = ml is not None and ml.mpi is not None and bool(ml.mpi.run_launcher_as_node)
    for step in steps:
        is_trainer = step.ancestor == ANCESTOR_TRAINER
        if is_trainer:
            step.replicas = 1
        container = step.container(NODE)
        if (
            container is None
            or trainer is None
            or not (is_trainer or (launcher_as_node and step.name == NODE))
        ):
            continue
        if is_trainer:
            if trainer.image is not None:
                container["image"] = trainer.image
            if trainer.command is not None:
                container["command"] = list(trainer.command)
            if trainer.args is not None:
                container["args"] = list(trainer.args)
        upsert_env(container, trainer.env or [])
        if ml is not None and trainer.resources_per_node is not None:
            res = container.setdefault("resources", {})
            for part in ("limits", "requests"):
                extra = trainer.resources_per_node.get(part)
                if isinstance(extra, dict):
                    res[part] = {**(res.get(part) or {}), **extra}


def _apply_pod_group(resolved: ResolvedTrainJob) -> None:
    """plugins/coscheduling: a scheduler-plugins PodGroup named after the job, every pod counted, and
    its label on every pod. (Volcano's PodGroup is built the same way with its own API.)"""
    pgp = resolved.runtime.spec.pod_group_policy
    if pgp is None or pgp.coscheduling is None:
        return
    members = 0
    totals: dict[str, Decimal] = {}
    for step in resolved.steps:
        members += step.count
        for c in step.pod_spec.get("containers") or []:
            for name, value in ((c.get("resources") or {}).get("requests") or {}).items():
                try:
                    totals[name] = totals.get(name, Decimal(0)) + compute_quantity(str(value)) * step.count
                except ValueError:
                    continue
    resolved.pod_labels[LABEL_PLUGINS_POD_GROUP] = resolved.job.name
    resolved.objects.append(
        {
            "apiVersion": PLUGINS_API_VERSION,
            "kind": POD_GROUP_KIND,
            "metadata": {
                "name": resolved.job.name,
                "namespace": resolved.job.namespace,
                "ownerReferences": [build_owner_reference(resolved.job)],
            },
            "spec": {
                "minMember": members,
                "minResources": {k: _format_decimal(v) for k, v in sorted(totals.items())},
                "scheduleTimeoutSeconds": pgp.coscheduling.schedule_timeout_seconds,
            },
        }
    )


def _format_decimal(value: Decimal) -> str:
    if value == value.to_integral_value():
        return str(int(value))
    milli = value * 1000
    return f"{int(milli)}m" if milli == milli.to_integral_value() else str(value)


# --- admission rules that need the runtime (plugins/jobset Validate) ----------------------------------


def detect_runtime_errors(job: TrainJob, runtime: TrainingRuntime) -> list[FieldError]:
    """The jobset plugin's checks: the initializer jobs a TrainJob configures exist with their
    container and the ``initializer`` volume mount; runtime patches name jobs and containers that
    exist, and set no env on the ``node`` and initializer containers."""
    containers: dict[str, dict[str, dict[str, Any]]] = {
        rjob.name: {str(c.get("name")): c for c in [*rjob.containers(init=True), *rjob.containers()]}
        for rjob in runtime.spec.replicated_jobs
    }
    return _initializer_errors(job, containers) + _patch_errors(job, containers)


def _initializer_errors(
    job: TrainJob, containers: Mapping[str, Mapping[str, dict[str, Any]]]
) -> list[FieldError]:
    ref = job.spec.runtime_ref.to_dict() if job.spec.runtime_ref is not None else None
    init = job.spec.initializer
    errs: list[FieldError] = []
    for part, step, configured in (
        ("datasetConfig", ANCESTOR_DATASET_INITIALIZER, init is not None and init.dataset is not None),
        ("modelConfig", ANCESTOR_MODEL_INITIALIZER, init is not None and init.model is not None),
    ):
        message = _initializer_problem(part, step, containers) if configured else None
        if message is not None:
            errs.append(invalid("spec.runtimeRef", ref, message))
    return errs


def _initializer_problem(
    part: str, step: str, containers: Mapping[str, Mapping[str, dict[str, Any]]]
) -> str | None:
    if step not in containers:
        return f"must have {step} job when trainJob is configured with input {part}"
    if step not in containers[step]:
        return f"must have container with name - {step} in the {step} job"
    mounts = containers[step][step].get("volumeMounts") or []
    if any(isinstance(m, dict) and m.get("name") == VOLUME_INITIALIZER for m in mounts):
        return None
    return f"must have volumeMount with name - {VOLUME_INITIALIZER} in container {step} of the {step} job"


def _patch_errors(job: TrainJob, containers: Mapping[str, Mapping[str, dict[str, Any]]]) -> list[FieldError]:
    patches = [p.to_dict() for p in job.spec.runtime_patches or []]
    messages: list[str] = []
    for patch in job.spec.runtime_patches or []:
        tmpl = patch.training_runtime_spec.template if patch.training_runtime_spec else None
        for rpatch in (tmpl.spec.replicated_jobs or []) if tmpl is not None and tmpl.spec is not None else []:
            name = rpatch.name or ""
            if name not in containers:
                messages.append("must not have replicated job that doesn't exist in the runtime job template")
                continue
            messages += _patch_container_problems(name, _patch_pod_spec(rpatch) or {}, containers[name])
    return [invalid("spec.runtimePatches", patches, m) for m in messages]


def _patch_container_problems(name: str, pspec: Mapping[str, Any], known: Mapping[str, Any]) -> list[str]:
    out = [
        f"must not have initContainer that doesn't exist in the runtime job {name}"
        for c in pspec.get("initContainers") or []
        if c.get("name") not in known
    ]
    for c in pspec.get("containers") or []:
        if c.get("name") not in known:
            out.append(f"must not have container that doesn't exist in the runtime job {name}")
        elif c.get("env") and c.get("name") in (
            ANCESTOR_DATASET_INITIALIZER,
            ANCESTOR_MODEL_INITIALIZER,
            NODE,
        ):
            out.append(
                f"must not have envs for the {ANCESTOR_DATASET_INITIALIZER}, "
                f"{ANCESTOR_MODEL_INITIALIZER}, {NODE} containers"
            )
    return out


def _patch_pod_spec(rpatch: Any) -> dict[str, Any] | None:
    t = rpatch.template
    if t is None or t.spec is None or t.spec.template is None:
        return None
    spec = t.spec.template.spec
    return spec if isinstance(spec, dict) else None


def reserved_env_error(job: TrainJob, reserved: Sequence[str]) -> list[FieldError]:
    """torch's and MPI's rule: one error on ``spec.trainer.env`` listing the reserved names it sets,
    sorted, in Go's ``%v`` form."""
    trainer = job.spec.trainer
    if trainer is None:
        return []
    found = sorted({str(e.get("name")) for e in trainer.env or [] if e.get("name") in reserved})
    if not found:
        return []
    return [
        invalid(
            "spec.trainer.env",
            trainer.env,
            f"must not have reserved envs, invalid envs configured: [{' '.join(found)}]",
        )
    ]


# --- runtime patches: a strategic merge of the fields managers may set -------------------------------

# Lists merged by key in a Kubernetes strategic merge patch (the others are replaced).
_MERGE_KEYS = {
    "replicatedJobs": "name",
    "containers": "name",
    "initContainers": "name",
    "env": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "imagePullSecrets": "name",
    "schedulingGates": "name",
    "ports": "containerPort",
}


def merge_jobset_patch(base: Mapping[str, Any], patch: Mapping[str, Any]) -> dict[str, Any]:
    """``patch`` over ``base`` as a strategic merge patch with JobSet's and core/v1's list keys."""
    out = copy.deepcopy(dict(base))
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge_jobset_patch(out[key], value)
        elif isinstance(value, list) and key in _MERGE_KEYS and isinstance(out.get(key), list):
            out[key] = _merge_list(out[key], value, _MERGE_KEYS[key])
        else:
            out[key] = copy.deepcopy(value)
    return out


def _merge_list(base: list[Any], patch: list[Any], key: str) -> list[Any]:
    out = copy.deepcopy(base)
    for item in patch:
        if not isinstance(item, dict):
            continue
        for i, old in enumerate(out):
            if isinstance(old, dict) and old.get(key) == item.get(key):
                out[i] = merge_jobset_patch(old, item)
                break
        else:
            out.append(copy.deepcopy(item))
    return out


def iter_containers(pod: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    spec = pod.get("spec") or {}
    for c in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
        if isinstance(c, dict):
            yield c
