"""CustomResourceDefinitions for the six kinds, generated from the pydantic models (contract §1.1, §1.2).

``build_crd(kind)`` and ``build_trainer_crd(kind)`` are pure. The schemas are structural; pod templates and
other Kubernetes-owned objects are kept opaque (``x-kubernetes-preserve-unknown-fields``), so each CRD
stays far below the 256 KiB that client-side ``kubectl apply`` can store in its annotation.
``python -m trainop.api.crds <outdir>`` (``make crds``) writes them; that entry point is the only I/O here.
"""

from __future__ import annotations

import copy
import sys
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

import yaml

from trainop.api.constants import (
    GROUP,
    KIND_CLUSTER_TRAINING_RUNTIME,
    KIND_TRAINING_RUNTIME,
    KIND_TRAINJOB,
    MANAGED_BY_TRAINJOB_CONTROLLER,
    TRAINER_GROUP,
    TRAINER_VERSION,
    VERSION,
)
from trainop.api.kinds import JOB_MODELS, KIND_INFO, KindInfo
from trainop.api.trainer import TRAINER_MODELS

HEADER = "# Generated from the trainop.api models by `make crds` (python -m trainop.api.crds); do not edit.\n"
KUSTOMIZATION = "kustomization.yaml"

# A Kubernetes resource.Quantity, as apimachinery's OpenAPI marks it.
_QUANTITY: dict[str, Any] = {
    "anyOf": [{"type": "integer"}, {"type": "string"}],
    "pattern": r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))"
    r"(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$",
    "x-kubernetes-int-or-string": True,
}
_OPAQUE: dict[str, Any] = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}

# Descriptions for `kubectl explain`, by path (``*`` = any map key). Our wording, upstream's facts.
_DESCRIPTIONS: dict[str, str] = {
    "spec": "The desired state of the job.",
    "status": "The observed state of the job, written by the operator.",
    "spec.runPolicy": "Policies that apply to the whole job: cleanup, retries, deadlines, gang scheduling.",
    "spec.runPolicy.cleanPodPolicy": "Which pods to delete once the job finishes: All, Running or None "
    "(the default).",
    "spec.runPolicy.ttlSecondsAfterFinished": "Seconds after completion before the job is deleted; unset "
    "keeps it.",
    "spec.runPolicy.activeDeadlineSeconds": "Seconds after startTime before a running job is failed.",
    "spec.runPolicy.backoffLimit": "How many pod restarts or failures are tolerated before the job fails.",
    "spec.runPolicy.suspend": "While true the job has no pods; setting it deletes running pods.",
    "spec.runPolicy.managedBy": (
        "The controller that reconciles this job: kubeflow.org/training-operator (the default) or "
        "kueue.x-k8s.io/multikueue. Immutable."
    ),
    "spec.runPolicy.schedulingPolicy": "Gang-scheduling settings passed on to Volcano or scheduler-plugins.",
    "spec.runPolicy.schedulingPolicy.queue": "The queue the job's pod group is placed in. Immutable.",
    "spec.*ReplicaSpecs": "Replica type (for example Master, Worker) to the pods of that type.",
    "spec.*ReplicaSpecs.*.replicas": "Number of pods of this type; defaults to 1 (MPIJob Worker: 0).",
    "spec.*ReplicaSpecs.*.restartPolicy": (
        "Always, OnFailure, Never or ExitCode (restart only on retryable exit codes); overrides the "
        "template's restartPolicy."
    ),
    "spec.*ReplicaSpecs.*.template": "The PodTemplateSpec every pod of this type is created from.",
    "spec.elasticPolicy": "Elastic training: the worker count may vary between minReplicas and maxReplicas.",
    "spec.nprocPerNode": "Processes per pod for torchrun: auto, cpu, gpu or an integer. Defaults to auto.",
    "spec.successPolicy": 'When the job succeeds: "" (chief or worker 0 finishes) or AllWorkers.',
    "spec.enableDynamicWorker": "Lets workers join and leave (TF_CONFIG without a fixed cluster spec).",
    "spec.slotsPerWorker": "MPI slots per worker in the hostfile; defaults to 1.",
    "spec.cleanPodPolicy": "Deprecated: use spec.runPolicy.cleanPodPolicy, which wins when both are set.",
    "spec.mainContainer": "The container kubectl exec targets in worker pods.",
    "status.conditions": "The job's condition history; the last one is its current state.",
    "status.replicaStatuses": "Pod counts per replica type.",
}


def build_crd(kind: str) -> dict[str, Any]:
    """The apiextensions.k8s.io/v1 CustomResourceDefinition for ``kind``."""
    info = KIND_INFO[kind]
    model = JOB_MODELS[kind]
    raw = model.model_json_schema(by_alias=True, mode="validation")
    schema = _Converter(raw.get("$defs", {})).convert(raw, "")
    schema["description"] = f"A {kind}: distributed {info.title} training (kubeflow.org/v1)."
    props = schema["properties"]
    props["metadata"] = {"type": "object"}  # the API server owns ObjectMeta's schema
    props["spec"]["required"] = [info.replica_map]  # §1.1: only the replica map is required
    schema.pop("required", None)

    subresources: dict[str, Any] = {"status": {}}
    if info.scalable:
        subresources["scale"] = {
            "specReplicasPath": f".spec.{info.replica_map}.Worker.replicas",
            "statusReplicasPath": ".status.replicaStatuses.Worker.active",
            "labelSelectorPath": ".status.replicaStatuses.Worker.selector",
        }
    version = {
        "name": VERSION,
        "served": True,
        "storage": True,
        # §1.1: some kinds (MPIJob) list Age first.
        "additionalPrinterColumns": [_AGE, _STATE] if info.age_column_first else [_STATE, _AGE],
        "schema": {"openAPIV3Schema": schema},
        "subresources": subresources,
    }
    return _crd(GROUP, kind, info.plural, info.singular, "Namespaced", version)


_STATE = {"jsonPath": ".status.conditions[-1:].type", "name": "State", "type": "string"}
_AGE = {"jsonPath": ".metadata.creationTimestamp", "name": "Age", "type": "date"}


def _crd(
    group: str, kind: str, plural: str, singular: str, scope: str, version: dict[str, Any]
) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "names": {"kind": kind, "listKind": f"{kind}List", "plural": plural, "singular": singular},
            "scope": scope,
            "versions": [version],
        },
    }


def _render(crd: dict[str, Any]) -> str:
    """A CRD as YAML text: sorted keys, so the output is byte-for-byte stable."""
    return (
        HEADER
        + "---\n"
        + yaml.safe_dump(crd, sort_keys=True, default_flow_style=False, width=110, allow_unicode=True)
    )


def crd_filename(info: KindInfo) -> str:
    return f"{GROUP}_{info.plural}.yaml"  # upstream's file names


# --- trainer.kubeflow.org/v1alpha1 (Kubeflow Trainer v2) ---------------------------------------------

_TRAINER_NAMES = {  # kind -> (plural, singular, scope)
    KIND_TRAINJOB: ("trainjobs", "trainjob", "Namespaced"),
    KIND_TRAINING_RUNTIME: ("trainingruntimes", "trainingruntime", "Namespaced"),
    KIND_CLUSTER_TRAINING_RUNTIME: ("clustertrainingruntimes", "clustertrainingruntime", "Cluster"),
}
_IMMUTABLE = {"rule": "self == oldSelf", "message": "field is immutable"}
# Schema extras of upstream's CRDs (kubeflow/trainer@v2.3.0 trainjob_types.go and
# trainingruntime_types.go markers): defaults the API server persists, bounds and CEL rules.
_TRAINER_EXTRAS: dict[str, dict[str, Any]] = {
    "spec.runtimeRef": {"required": ["name"], "x-kubernetes-validations": [_IMMUTABLE]},
    "spec.runtimeRef.name": {"minLength": 1, "maxLength": 253},
    "spec.runtimeRef.apiGroup": {"default": TRAINER_GROUP, "maxLength": 253},
    "spec.runtimeRef.kind": {"default": KIND_CLUSTER_TRAINING_RUNTIME, "maxLength": 253},
    "spec.initializer": {"x-kubernetes-validations": [_IMMUTABLE]},
    "spec.trainer": {"x-kubernetes-validations": [_IMMUTABLE]},
    "spec.trainer.numNodes": {"minimum": 0},
    "spec.trainer.numProcPerNode": {
        "x-kubernetes-validations": [
            {"rule": "self >= 1", "message": "numProcPerNode must be greater than or equal to 1"}
        ]
    },
    "spec.suspend": {"default": False},
    "spec.activeDeadlineSeconds": {"minimum": 1, "x-kubernetes-validations": [_IMMUTABLE]},
    "spec.managedBy": {
        "default": MANAGED_BY_TRAINJOB_CONTROLLER,
        "maxLength": 253,
        "x-kubernetes-validations": [
            {
                "rule": "self in ['trainer.kubeflow.org/trainjob-controller', 'kueue.x-k8s.io/multikueue']",
                "message": "ManagedBy must be trainer.kubeflow.org/trainjob-controller or "
                "kueue.x-k8s.io/multikueue if set",
            },
            _IMMUTABLE,
        ],
    },
    "spec.runtimePatches": {
        "maxItems": 16,
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["manager"],
    },
    "spec.runtimePatches[]": {"required": ["manager"]},
    "spec.runtimePatches[].manager": {"minLength": 1, "maxLength": 253},
    "spec.mlPolicy": {
        "x-kubernetes-validations": [
            {
                "rule": "[has(self.torch), has(self.mpi), has(self.jax), has(self.xgboost),has(self.flux)]"
                ".filter(x, x).size() <= 1",
                "message": "Only one of the policy can be configured",
            }
        ]
    },
    "spec.mlPolicy.mpi.numProcPerNode": {
        "default": 1,
        "x-kubernetes-validations": [
            {"rule": "self >= 1", "message": "NumProcPerNode in mpiPolicy must be >= 1"}
        ],
    },
    "spec.mlPolicy.mpi.mpiImplementation": {"default": "OpenMPI", "enum": ["OpenMPI", ""]},
    "spec.mlPolicy.mpi.sshAuthMountPath": {"default": "/root/.ssh", "maxLength": 4096},
    "spec.mlPolicy.mpi.runLauncherAsNode": {"default": False},
    "spec.podGroupPolicy.coscheduling.scheduleTimeoutSeconds": {"default": 60},
    # JobSet fields the models do not list (startupPolicy, volumeClaimPolicies …) are kept.
    "spec.template.spec": {"x-kubernetes-preserve-unknown-fields": True},
    # JobSet's own schema defaults (jobset_types.go markers), which upstream's CRDs carry too.
    "spec.template.spec.replicatedJobs[].groupName": {"default": "default"},
    "spec.template.spec.replicatedJobs[].replicas": {"default": 1},
}


def _trainer_extras(schema: dict[str, Any], kind: str) -> None:
    for path, extra in _TRAINER_EXTRAS.items():
        node: dict[str, Any] | None = schema
        for part in path.replace("[]", ".[]").split("."):
            if node is None:
                break
            node = node.get("items") if part == "[]" else (node.get("properties") or {}).get(part)
        if node is not None:
            node.update(copy.deepcopy(extra))
    if kind == KIND_TRAINJOB:
        schema["properties"]["spec"]["required"] = ["runtimeRef"]


def build_trainer_crd(kind: str) -> dict[str, Any]:
    """The CustomResourceDefinition of a trainer.kubeflow.org/v1alpha1 kind (TrainJob or a runtime)."""
    plural, singular, scope = _TRAINER_NAMES[kind]
    model = TRAINER_MODELS[kind]
    raw = model.model_json_schema(by_alias=True, mode="validation")
    schema = _Converter(raw.get("$defs", {}), descriptions=False).convert(raw, "")
    schema.pop("required", None)
    props = schema["properties"]
    props["metadata"] = {"type": "object"}
    props["apiVersion"] = {"type": "string"}
    props["kind"] = {"type": "string"}
    _trainer_extras(schema, kind)
    if kind == KIND_TRAINJOB:
        schema["x-kubernetes-validations"] = [
            {
                "rule": "self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",
                "message": "metadata.name must match RFC 1035 DNS label format",
            },
            {
                "rule": "size(self.metadata.name) <= 63",
                "message": "metadata.name must be no more than 63 characters",
            },
        ]
    version: dict[str, Any] = {
        "name": TRAINER_VERSION,
        "served": True,
        "storage": True,
        "schema": {"openAPIV3Schema": schema},
    }
    if kind == KIND_TRAINJOB:
        version["additionalPrinterColumns"] = [_STATE, _AGE]
        version["subresources"] = {"status": {}}
    return _crd(TRAINER_GROUP, kind, plural, singular, scope, version)


def trainer_crd_filename(kind: str) -> str:
    return f"{TRAINER_GROUP}_{_TRAINER_NAMES[kind][0]}.yaml"


def render_kustomization() -> str:
    files = sorted(
        [crd_filename(info) for info in KIND_INFO.values()]
        + [trainer_crd_filename(kind) for kind in _TRAINER_NAMES]
    )
    body = yaml.safe_dump(
        {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization", "resources": files},
        sort_keys=True,
        default_flow_style=False,
    )
    return HEADER + body


def build_files() -> dict[str, str]:
    """File name → content for the whole manifests/crds directory."""
    files = {crd_filename(KIND_INFO[kind]): _render(build_crd(kind)) for kind in KIND_INFO}
    files.update({trainer_crd_filename(kind): _render(build_trainer_crd(kind)) for kind in _TRAINER_NAMES})
    files[KUSTOMIZATION] = render_kustomization()
    return files


class _Converter:
    """pydantic JSON schema → a structural OpenAPI v3 schema as Kubernetes wants it: ``$ref``s inlined,
    ``Optional`` unwrapped, every node typed, no ``additionalProperties`` beside ``properties``."""

    def __init__(self, defs: dict[str, Any], *, descriptions: bool = True) -> None:
        self.defs = defs
        self.descriptions = descriptions

    def convert(self, node: dict[str, Any], path: str) -> dict[str, Any]:
        if "$ref" in node:
            return self.convert(self.defs[node["$ref"].rsplit("/", 1)[-1]], path)
        if "anyOf" in node:
            options = [o for o in node["anyOf"] if o.get("type") != "null"]
            if len(options) != 1:
                raise ValueError(f"{path}: a union of several types has no structural schema")
            return self.convert(options[0], path)
        out = self._override(path)
        if out is None:
            out = self._convert_typed(node, path)
        description = _description(path) if self.descriptions else None
        if description:
            out["description"] = description
        return out

    def _override(self, path: str) -> dict[str, Any] | None:
        leaf = path.rsplit(".", 1)[-1]
        if leaf == "template" and "ReplicaSpecs." in path:
            return dict(_OPAQUE)
        if path.endswith("schedulingPolicy.minResources"):
            return {"type": "object", "additionalProperties": dict(_QUANTITY)}
        if path.endswith("schedulingPolicy.queue"):
            # §1.2: upstream's CEL transition rule, on the queue field itself.
            return {
                "type": "string",
                "x-kubernetes-validations": [
                    {
                        "rule": "self == oldSelf",
                        "message": "spec.runPolicy.schedulingPolicy.queue is immutable",
                    }
                ],
            }
        if path == "spec.runPolicy.suspend":
            return {"type": "boolean", "default": False}  # §1.2: a schema default the API server persists
        return None

    def _convert_typed(self, node: dict[str, Any], path: str) -> dict[str, Any]:
        kind = node.get("type")
        if "const" in node or "enum" in node:
            kind = kind or "string"
        if kind == "object" or "properties" in node:
            return self._convert_object(node, path)
        if kind == "array":
            return {"type": "array", "items": self.convert(node.get("items", {}), path + "[]")}
        if kind in ("integer", "string", "boolean", "number"):
            out: dict[str, Any] = {"type": kind}
            fmt = node.get("format")  # int32/int64, date-time; a string's other formats are not Kubernetes'
            if fmt is not None and (kind == "integer" or fmt == "date-time"):
                out["format"] = fmt
            return out
        if not node:
            return dict(_OPAQUE)  # Any: kept as written
        raise ValueError(f"{path}: no structural schema for {node!r}")

    def _convert_object(self, node: dict[str, Any], path: str) -> dict[str, Any]:
        props = node.get("properties")
        if props:
            out: dict[str, Any] = {
                "type": "object",
                "properties": {k: self.convert(v, f"{path}.{k}" if path else k) for k, v in props.items()},
            }
            required = sorted(node.get("required", []))
            if required:
                out["required"] = required
            return out
        extra = node.get("additionalProperties")
        if isinstance(extra, dict) and extra:
            return {"type": "object", "additionalProperties": self.convert(extra, path + ".*")}
        return dict(_OPAQUE)  # dict[str, Any]: a Kubernetes object we do not model


def _description(path: str) -> str | None:
    if path in _DESCRIPTIONS:
        return _DESCRIPTIONS[path]
    parts = path.split(".")
    for pattern, text in _DESCRIPTIONS.items():
        pp = pattern.split(".")
        if len(pp) == len(parts) and all(map(fnmatchcase, parts, pp)):
            return text
    return None


def write_crds(outdir: str | Path) -> list[Path]:
    """Write every CRD and the kustomization into ``outdir``; returns the paths written."""
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in build_files().items():
        path = out / name
        path.write_text(text)
        written.append(path)
    return written


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m trainop.api.crds <outdir>", file=sys.stderr)
        return 2
    for path in write_crds(argv[0]):
        print(f"wrote {path} ({path.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
