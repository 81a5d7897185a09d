"""Test helpers for the plugin tests: a pod as core would hand it to ``customize_pod``."""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

from trainop.api.common import TrainingJob
from trainop.api.constants import LABEL_REPLICA_TYPE
from trainop.api.defaults import apply_defaults
from trainop.core.pods import detect_label, detect_name, detect_phase
from trainop.core.topology import Topology
from trainop.frameworks.base import PodView, ReplicaCounts
from trainop.frameworks.registry import REGISTRY
from trainop.testing.builders import JobBuilder


def defaulted(builder: JobBuilder) -> TrainingJob:
    """Plugins always see the defaulted job (§1.4)."""
    return apply_defaults(builder.build())


def with_pods(counts: dict[str, ReplicaCounts], pods: list[dict[str, Any]]) -> dict[str, ReplicaCounts]:
    """Each type's counts with its pods (by their replica-type label), as core hands them over."""
    return {
        rtype: replace(
            c,
            pods=tuple(
                PodView(p, detect_name(p), detect_phase(p))
                for p in pods
                if detect_label(p, LABEL_REPLICA_TYPE) == rtype.lower()
            ),
        )
        for rtype, c in counts.items()
    }


def observed(job: TrainingJob, pods: list[dict[str, Any]]) -> dict[str, ReplicaCounts]:
    """Every replica type of ``job`` with its pods (the counts left at zero)."""
    return with_pods({rtype: ReplicaCounts(0, 0, 0, 0, "") for rtype in job.replica_specs}, pods)


def fresh_pod(job: TrainingJob, rtype: str, index: int) -> dict[str, Any]:
    """Name, labels and restartPolicy set, spec taken from the template (a shallow copy, so a plugin
    that mutated nested objects in place would corrupt the job and the tests would see it)."""
    plugin = REGISTRY.get(job.kind)
    rs = job.replica_specs[rtype]
    spec = dict(rs.template.get("spec") or {})
    spec["restartPolicy"] = "Never" if rs.restart_policy == "ExitCode" else rs.restart_policy
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": plugin.pod_name(job, rtype, index),
            "namespace": job.namespace,
            "labels": plugin.pod_labels(job, rtype, index),
        },
        "spec": spec,
    }


def customized(job: TrainingJob, rtype: str, index: int, topology: Topology) -> dict[str, Any]:
    before = copy.deepcopy(job.to_dict())
    pod = fresh_pod(job, rtype, index)
    REGISTRY.get(job.kind).customize_pod(job, rtype, index, pod, topology)
    assert job.to_dict() == before, "customize_pod changed the job's template"
    return pod


def container_env(
    job: TrainingJob, rtype: str, index: int, topology: Topology, container: int = 0
) -> list[Any]:
    """The full env list of one container of the customised pod (user env first, then injected)."""
    pod = customized(job, rtype, index, topology)
    env: list[Any] = pod["spec"]["containers"][container].get("env", [])
    return env
