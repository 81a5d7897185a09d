"""Reading observed Pods and building desired Pods and headless Services (contract §3.1, §3.2, §4.5).

Observed objects are Kubernetes JSON dicts and are only read here; built objects are fresh dicts.
Pure: no I/O. Plugins add their env vars and files through ``customize_pod``.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from trainop.api.common import ReplicaSpec, TrainingJob
from trainop.api.constants import (
    EXIT_CODE_UNSET,
    LABEL_REPLICA_INDEX,
    RESTART_EXIT_CODE,
    RESTART_NEVER,
)
from trainop.api.defaults import default_container
from trainop.api.kinds import KindInfo
from trainop.core.naming import build_owner_reference, build_replica_labels

PHASE_PENDING = "Pending"
PHASE_RUNNING = "Running"
PHASE_SUCCEEDED = "Succeeded"
PHASE_FAILED = "Failed"

_EMPTY: dict[str, Any] = {}


def detect_phase(pod: Mapping[str, Any] | None) -> str:
    return str(((pod or _EMPTY).get("status") or _EMPTY).get("phase") or "")


def detect_deleting(obj: dict[str, Any]) -> bool:
    """The object has a deletionTimestamp (terminating); core never acts on it again."""
    return bool((obj.get("metadata") or _EMPTY).get("deletionTimestamp"))


def detect_name(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or _EMPTY).get("name") or "")


def detect_pod_fields(pod: dict[str, Any], label: str) -> tuple[str, str, bool, str | None]:
    """(name, phase, deleting, the value of label ``label``): what a pass reads of every pod, in one
    look-up (``detect_name``, ``detect_phase``, ``detect_deleting``, ``detect_label``)."""
    meta = pod.get("metadata") or _EMPTY
    value = (meta.get("labels") or _EMPTY).get(label)
    return (
        str(meta.get("name") or ""),
        str((pod.get("status") or _EMPTY).get("phase") or ""),
        bool(meta.get("deletionTimestamp")),
        value if isinstance(value, str) else None,
    )


def detect_uid(obj: dict[str, Any]) -> str:
    return str((obj.get("metadata") or _EMPTY).get("uid") or "")


def detect_label(obj: Mapping[str, Any], key: str) -> str | None:
    labels = (obj.get("metadata") or _EMPTY).get("labels") or _EMPTY
    value = labels.get(key)
    return value if isinstance(value, str) else None


def detect_index(obj: Mapping[str, Any]) -> int | None:
    """The replica-index label as an int; None when absent or not a non-negative integer
    (upstream logs such pods and leaves them alone)."""
    raw = detect_label(obj, LABEL_REPLICA_INDEX)
    if raw is None or not raw.isdigit():
        return None
    return int(raw)


def detect_exit_code(pod: Mapping[str, Any], container: str) -> int:
    """The exit code of ``container`` if it has terminated, else the 0xbeef sentinel (§4.5)."""
    code = EXIT_CODE_UNSET
    for cs in (pod.get("status") or _EMPTY).get("containerStatuses") or ():
        if cs.get("name") != container:
            continue
        terminated = (cs.get("state") or _EMPTY).get("terminated")
        if terminated is not None:
            code = int(terminated.get("exitCode") or 0)
    return code


def compute_restart_count(pod: dict[str, Any]) -> int:
    """The sum of restartCount over init and regular containers (§4.6 rule b)."""
    status = pod.get("status") or _EMPTY
    total = 0
    for key in ("initContainerStatuses", "containerStatuses"):
        for cs in status.get(key) or ():
            total += int(cs.get("restartCount") or 0)
    return total


def build_pod(
    job: TrainingJob,
    info: KindInfo,
    rtype: str,
    index: int,
    spec: ReplicaSpec,
    *,
    name: str,
    labels: dict[str, str],
) -> tuple[dict[str, Any], bool]:
    """The Pod for replica ``rtype``/``index`` before the plugin customises it (§3.1).

    Labels: the template's, then the operator's ``labels`` (which win; the plugin's ``pod_labels``).
    Annotations and finalizers come from the template; no other template metadata does. Exactly one
    ownerReference. ``restartPolicy`` comes from the replica spec (ExitCode → Never). Returns the pod
    and whether the template set its own restartPolicy (the caller records the warning).
    """
    template = spec.template
    tmeta = template.get("metadata") or _EMPTY
    merged: dict[str, str] = dict(tmeta.get("labels") or _EMPTY)
    merged.update(labels)
    meta: dict[str, Any] = {"name": name, "namespace": job.namespace, "labels": merged}
    if tmeta.get("annotations"):
        meta["annotations"] = dict(tmeta["annotations"])
    if tmeta.get("finalizers"):
        meta["finalizers"] = list(tmeta["finalizers"])
    meta["ownerReferences"] = [build_owner_reference(job)]
    pod_spec: dict[str, Any] = copy.deepcopy(template.get("spec") or {})
    template_set_policy = bool(pod_spec.get("restartPolicy"))
    policy = spec.restart_policy or info.default_restart_policy
    pod_spec["restartPolicy"] = RESTART_NEVER if policy == RESTART_EXIT_CODE else policy
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": pod_spec}, template_set_policy


def build_service_ports(spec: ReplicaSpec, info: KindInfo) -> list[dict[str, Any]] | None:
    """Every port of the default-named container as ``{name, port}`` (§3.2); None when no container
    has the default name (upstream: "failed to find the port")."""
    container = default_container(spec, info)
    if container is None:
        return None
    ports = container.get("ports") or ()
    return [{"name": p.get("name"), "port": p.get("containerPort")} for p in ports if isinstance(p, dict)]


def build_service(
    job: TrainingJob, info: KindInfo, rtype: str, index: int, *, name: str, ports: list[dict[str, Any]]
) -> dict[str, Any]:
    """The headless Service of replica ``rtype``/``index`` (§3.2): labels = selector, clusterIP None."""
    labels = build_replica_labels(info, job.name, rtype, index)
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": name,
            "namespace": job.namespace,
            "labels": labels,
            "ownerReferences": [build_owner_reference(job)],
        },
        "spec": {"clusterIP": "None", "selector": dict(labels), "ports": [dict(p) for p in ports]},
    }
