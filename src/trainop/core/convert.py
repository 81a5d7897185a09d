"""kubeflow.org/v1 job → Trainer v2 TrainJob on the matching runtime, with a note for every field that
has no v2 equivalent. Pure: no I/O.

What is per framework (which runtime, which replica's template becomes the trainer, nodes, processes
per node, how the command must start) is the framework plugin's ``TrainJobConversion`` capability;
everything else is shared here: the trainer container's image, command, args, env and resources;
the pod template's scheduling and volume fields as a runtime patch; runPolicy's suspend, deadline and
managedBy. A kind without the capability (TFJob, PaddleJob: Trainer v2 has no runtime for them,
kubeflow/trainer#2699) is refused with that reason. docs/v1-to-v2.md lists the mapping field by field.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from trainop.api.common import TrainingJob
from trainop.api.constants import (
    KIND_CLUSTER_TRAINING_RUNTIME,
    KIND_TRAINJOB,
    MANAGED_BY_MULTIKUEUE,
    NODE,
    TRAINER_API_VERSION,
)

PATCH_MANAGER = "trainer.kubeflow.org/trainop-convert"
# Pod spec fields a runtime patch may set (TrainJob spec.runtimePatches[].…PodSpecPatch).
PATCHABLE_POD_FIELDS = (
    "serviceAccountName",
    "volumes",
    "initContainers",
    "imagePullSecrets",
    "securityContext",
    "nodeSelector",
    "affinity",
    "tolerations",
    "schedulingGates",
    "terminationGracePeriodSeconds",
)
# Container fields that carry over: to spec.trainer, or (volumeMounts, securityContext) to the patch.
TRAINER_CONTAINER_FIELDS = ("name", "image", "command", "args", "env", "resources")
PATCH_CONTAINER_FIELDS = ("volumeMounts", "securityContext")
# Container fields that do not matter to a TrainJob (the runtime opens its own port, 29500).
IGNORED_CONTAINER_FIELDS = ("ports", "imagePullPolicy")


@dataclass(frozen=True, slots=True)
class ConvertedTrainer:
    """A plugin's answer: which runtime, whose template, how many nodes and processes."""

    runtime: str
    template_type: str  # the replica type whose template becomes the trainer's
    container: str  # the container in that template
    num_nodes: int
    num_proc_per_node: int | None = None
    command_prefix: tuple[str, ...] = ()  # put before the command unless it already starts so
    keeps_command_when: tuple[str, ...] = ()  # first words that already do the launcher's job
    notes: tuple[str, ...] = ()
    dropped_types: tuple[str, ...] = ()  # replica types whose template the notes already account for


@runtime_checkable
class TrainJobConversion(Protocol):
    """A kubeflow.org/v1 plugin that has a Trainer v2 runtime to convert its jobs to."""

    def convert_to_trainjob(self, job: TrainingJob) -> ConvertedTrainer: ...


@dataclass
class Conversion:
    trainjob: dict[str, Any]
    notes: list[str] = field(default_factory=list)


class NoTrainJobEquivalentError(ValueError):
    """The kind has no Trainer v2 runtime; the message says why and what to do."""


def build_trainjob(job: TrainingJob, plugin: object) -> Conversion:
    """``job`` (as written, not defaulted) as a TrainJob manifest plus the notes on what did not carry."""
    if not isinstance(plugin, TrainJobConversion):
        raise NoTrainJobEquivalentError(
            f"{job.kind} has no Kubeflow Trainer v2 runtime (Trainer v2 runs torch, MPI, JAX and XGBoost; "
            "TensorFlow and Paddle are not carried over, kubeflow/trainer#2699): keep it a "
            f"{job.kind}, or rewrite the training as a torch, JAX or XGBoost script"
        )
    conv = plugin.convert_to_trainjob(job)
    notes = list(conv.notes)
    rs = job.replica_specs.get(conv.template_type)
    template = copy.deepcopy(rs.template) if rs is not None else {}
    containers = [c for c in (template.get("spec") or {}).get("containers") or [] if isinstance(c, dict)]
    main = next(
        (c for c in containers if c.get("name") == conv.container), containers[0] if containers else {}
    )
    trainer = _build_trainer(main, conv, notes)
    notes += _dropped_container_notes(main, containers)
    notes += _other_templates(job, conv)
    spec: dict[str, Any] = {
        "runtimeRef": {
            "apiGroup": TRAINER_API_VERSION.split("/")[0],
            "kind": KIND_CLUSTER_TRAINING_RUNTIME,
            "name": conv.runtime,
        },
        "trainer": trainer,
    }
    patch = _runtime_patch(template, main, notes)
    if patch is not None:
        spec["runtimePatches"] = [patch]
    notes += _run_policy(job, spec)
    kept = ("name", "generateName", "namespace", "labels", "annotations")
    meta = {k: v for k, v in job.metadata.to_dict().items() if k in kept and v}
    return Conversion(
        trainjob={"apiVersion": TRAINER_API_VERSION, "kind": KIND_TRAINJOB, "metadata": meta, "spec": spec},
        notes=notes,
    )


def _build_trainer(main: dict[str, Any], conv: ConvertedTrainer, notes: list[str]) -> dict[str, Any]:
    """``spec.trainer`` from the chosen container and the plugin's node counts (a note when the
    command now runs under the runtime's launcher)."""
    trainer: dict[str, Any] = {}
    if main.get("image"):
        trainer["image"] = main["image"]
    command = [str(a) for a in main.get("command") or []]
    if command and conv.command_prefix and command[0] not in conv.keeps_command_when:
        notes.append(
            f"command: {command[0]!r} ran once per pod with the operator's rank variables; under the "
            f"{conv.runtime} runtime it runs under {' '.join(conv.command_prefix)}, which gives each process "
            "the same variables"
        )
        command = [*conv.command_prefix, *command]
    if command:
        trainer["command"] = command
    if main.get("args"):
        trainer["args"] = [str(a) for a in main["args"]]
    trainer["numNodes"] = conv.num_nodes
    if conv.num_proc_per_node is not None:
        trainer["numProcPerNode"] = conv.num_proc_per_node
    for key, field_name in (("env", "env"), ("resources", "resourcesPerNode")):
        if main.get(key):
            trainer[field_name] = main[key]
    return trainer


def _dropped_container_notes(main: dict[str, Any], containers: list[dict[str, Any]]) -> list[str]:
    notes = [
        f"container {main.get('name')}: {key} has no TrainJob field; it is dropped"
        for key in sorted(set(main) - set(TRAINER_CONTAINER_FIELDS) - set(PATCH_CONTAINER_FIELDS))
        if key not in IGNORED_CONTAINER_FIELDS
    ]
    notes += [
        f"container {other.get('name')}: sidecar containers have no TrainJob field; it is dropped"
        for other in containers
        if other is not main
    ]
    return notes


def _other_templates(job: TrainingJob, conv: ConvertedTrainer) -> list[str]:
    chosen = job.replica_specs.get(conv.template_type)
    out = []
    for rtype, rs in job.replica_specs.items():
        if rtype == conv.template_type or rtype in conv.dropped_types or chosen is None:
            continue
        if _comparable(rs.template) != _comparable(chosen.template):
            out.append(
                f"{rtype}: its pod template differs from {conv.template_type}'s; a TrainJob has one template "
                f"for every node, so {conv.template_type}'s is used"
            )
        if rs.restart_policy not in (None, chosen.restart_policy):
            out.append(f"{rtype}: restartPolicy {rs.restart_policy} has no TrainJob field")
    if chosen is not None and chosen.restart_policy not in (None, "Never"):
        out.append(
            f"{conv.template_type}: restartPolicy {chosen.restart_policy} has no TrainJob field (a runtime's "
            "Job template decides; a failed node fails the TrainJob)"
        )
    return out


def _comparable(template: dict[str, Any]) -> Any:
    spec = copy.deepcopy(template.get("spec") or {})
    for c in spec.get("containers") or []:
        if isinstance(c, dict):
            c.pop("ports", None)
    return spec


def _runtime_patch(template: dict[str, Any], main: dict[str, Any], notes: list[str]) -> dict[str, Any] | None:
    """The pod template's patchable fields as one runtime patch on the ``node`` replicated job."""
    pod_spec = template.get("spec") or {}
    patch_spec: dict[str, Any] = {
        k: copy.deepcopy(pod_spec[k]) for k in PATCHABLE_POD_FIELDS if k in pod_spec
    }
    node = {k: copy.deepcopy(main[k]) for k in PATCH_CONTAINER_FIELDS if k in main}
    if node:
        patch_spec["containers"] = [{"name": NODE, **node}]
    for key in sorted(set(pod_spec) - set(PATCHABLE_POD_FIELDS) - {"containers", "restartPolicy"}):
        notes.append(f"pod spec: {key} is not among the fields a runtime patch may set; it is dropped")
    pod_meta = {
        k: v for k, v in (template.get("metadata") or {}).items() if k in ("labels", "annotations") and v
    }
    pod = {key: part for key, part in (("metadata", pod_meta), ("spec", patch_spec)) if part}
    if not pod:
        return None
    return {
        "manager": PATCH_MANAGER,
        "trainingRuntimeSpec": {
            "template": {
                "spec": {"replicatedJobs": [{"name": NODE, "template": {"spec": {"template": pod}}}]}
            }
        },
    }


def _run_policy(job: TrainingJob, spec: dict[str, Any]) -> list[str]:
    rp = job.spec.run_policy
    if rp is None:
        return []
    notes = []
    if rp.suspend is not None:
        spec["suspend"] = rp.suspend
    if rp.active_deadline_seconds is not None:
        spec["activeDeadlineSeconds"] = rp.active_deadline_seconds
    if rp.managed_by == MANAGED_BY_MULTIKUEUE:
        spec["managedBy"] = MANAGED_BY_MULTIKUEUE
    if rp.backoff_limit is not None:
        notes.append(
            f"runPolicy.backoffLimit {rp.backoff_limit}: no TrainJob field (the runtime's Job templates set "
            "backoffLimit; JobSet's failurePolicy.maxRestarts restarts the whole job)"
        )
    if rp.clean_pod_policy is not None:
        notes.append(f"runPolicy.cleanPodPolicy {rp.clean_pod_policy}: no TrainJob field")
    if rp.ttl_seconds_after_finished is not None:
        notes.append("runPolicy.ttlSecondsAfterFinished: no TrainJob field")
    if rp.scheduling_policy is not None:
        notes.append(
            "runPolicy.schedulingPolicy: no TrainJob field; gang scheduling is the runtime's podGroupPolicy "
            "(coscheduling or volcano)"
        )
    return notes
