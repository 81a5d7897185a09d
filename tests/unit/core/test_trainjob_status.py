"""A TrainJob's reconcile pass without JobSet: pods by step order, conditions with upstream's and
JobSet's reasons, jobsStatus, suspend/resume and activeDeadlineSeconds (core/trainjob_status.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from trainop.api.trainer import TrainingRuntime, TrainJob
from trainop.api.trainer_rules import parse_trainer_object
from trainop.core.trainjob import ResolvedTrainJob, resolve_trainjob
from trainop.core.trainjob_status import reconcile_trainjob
from trainop.frameworks.registry import REGISTRY

RUNTIMES_DIR = Path(__file__).resolve().parents[3] / "manifests" / "runtimes"
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def resolved(runtime: str, status: dict[str, Any] | None = None, **spec: Any) -> ResolvedTrainJob:
    rt = parse_trainer_object(yaml.safe_load((RUNTIMES_DIR / f"{runtime}.yaml").read_text()))
    assert isinstance(rt, TrainingRuntime)
    doc: dict[str, Any] = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "j", "namespace": "ns", "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"runtimeRef": {"name": runtime}, **spec},
    }
    if status:
        doc["status"] = status
    job = parse_trainer_object(doc)
    assert isinstance(job, TrainJob)
    return resolve_trainjob(job, rt, REGISTRY)


def pod(name: str, step: str, phase: str, ready: bool | None = None, job_index: int = 0) -> dict[str, Any]:
    status: dict[str, Any] = {"phase": phase}
    if ready is not None:
        status["conditions"] = [{"type": "Ready", "status": "True" if ready else "False"}]
    return {
        "metadata": {
            "name": name,
            "labels": {
                "jobset.sigs.k8s.io/replicatedjob-name": step,
                "jobset.sigs.k8s.io/job-index": str(job_index),
            },
        },
        "status": status,
    }


def conditions(status: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(c["type"], c["status"], c["reason"]) for c in status.get("conditions") or []]


def test_a_new_torch_job_creates_every_node_and_the_service() -> None:
    plan = reconcile_trainjob(resolved("torch-distributed", trainer={"numNodes": 2}), [], T0)
    assert [p["metadata"]["name"] for p in plan.create_pods] == ["j-node-0-0", "j-node-0-1"]
    assert [o["kind"] for o in plan.create_objects] == ["Service"]
    assert plan.status == {
        "jobsStatus": [{"name": "node", "ready": 0, "succeeded": 0, "failed": 0, "active": 0, "suspended": 0}]
    }


def test_initializers_first_then_the_trainer() -> None:
    spec = {"initializer": {"dataset": {"storageUri": "hf://a/b"}, "model": {"storageUri": "hf://c/d"}}}
    r = resolved("torch-distributed-with-initializers", trainer={"numNodes": 2}, **spec)
    first = reconcile_trainjob(r, [], T0)
    assert [p["metadata"]["name"] for p in first.create_pods] == [
        "j-dataset-initializer-0-0",
        "j-model-initializer-0-0",
    ]
    half = [
        pod("j-dataset-initializer-0-0", "dataset-initializer", "Succeeded"),
        pod("j-model-initializer-0-0", "model-initializer", "Running"),
    ]
    assert reconcile_trainjob(r, half, T0).create_pods == []
    both = [half[0], pod("j-model-initializer-0-0", "model-initializer", "Succeeded")]
    assert [p["metadata"]["name"] for p in reconcile_trainjob(r, both, T0).create_pods] == [
        "j-node-0-0",
        "j-node-0-1",
    ]


def test_mpi_launcher_waits_for_ready_nodes() -> None:
    r = resolved("deepspeed-distributed", trainer={"numNodes": 3, "command": ["mpirun", "x"]})
    nodes = [
        pod("j-node-0-0", "node", "Running", ready=True),
        pod("j-node-0-1", "node", "Running", ready=False),
    ]
    assert reconcile_trainjob(r, nodes, T0).create_pods == []
    nodes[1] = pod("j-node-0-1", "node", "Running", ready=True)
    plan = reconcile_trainjob(r, nodes, T0)
    assert [p["metadata"]["name"] for p in plan.create_pods] == ["j-launcher-0-0"]
    assert {o["kind"] for o in plan.create_objects} == {"Secret", "ConfigMap", "Service"}
    done = [*nodes, pod("j-launcher-0-0", "launcher", "Succeeded")]
    finished = reconcile_trainjob(r, done, T0)
    assert conditions(finished.status) == [("Complete", "True", "AllJobsCompleted")]
    assert finished.delete_pods == ["j-node-0-0", "j-node-0-1"], (
        "the sshd nodes go once the launcher succeeded"
    )


@pytest.mark.parametrize(
    ("phases", "want", "delete"),
    [
        pytest.param(
            ["Succeeded", "Succeeded"],
            [("Complete", "True", "AllJobsCompleted")],
            [],
            id="all nodes succeeded",
        ),
        pytest.param(
            ["Running", "Failed"], [("Failed", "True", "FailedJobs")], ["j-node-0-0"], id="a failing node"
        ),
        pytest.param(["Succeeded", "Running"], [], [], id="still running"),
    ],
)
def test_terminal_conditions(phases: list[str], want: list[tuple[str, str, str]], delete: list[str]) -> None:
    r = resolved("torch-distributed", trainer={"numNodes": 2})
    pods = [pod(f"j-node-0-{i}", "node", ph) for i, ph in enumerate(phases)]
    plan = reconcile_trainjob(r, pods, T0)
    assert conditions(plan.status) == want
    assert plan.delete_pods == delete
    if want and want[0][0] == "Failed":
        assert plan.status["conditions"][0]["message"] == "jobset failed due to one or more job failures"
        assert plan.status["jobsStatus"][0]["failed"] == 1


def test_suspend_and_resume() -> None:
    r = resolved("torch-distributed", trainer={"numNodes": 2}, suspend=True)
    plan = reconcile_trainjob(r, [pod("j-node-0-0", "node", "Running")], T0)
    assert conditions(plan.status) == [("Suspended", "True", "Suspended")]
    assert (plan.delete_pods, plan.create_pods) == (["j-node-0-0"], [])
    assert plan.status["jobsStatus"][0]["suspended"] == 1
    later = T0 + timedelta(seconds=30)
    r2 = resolved("torch-distributed", status=plan.status, trainer={"numNodes": 2}, suspend=False)
    resumed = reconcile_trainjob(r2, [], later)
    assert conditions(resumed.status) == [("Suspended", "False", "Resumed")]
    assert resumed.status["conditions"][0]["message"] == "TrainJob is resumed"
    assert resumed.status["conditions"][0]["lastTransitionTime"] == "2026-01-01T00:00:30Z"
    assert len(resumed.create_pods) == 2


def test_active_deadline_counts_from_creation_or_resume() -> None:
    r = resolved("torch-distributed", trainer={"numNodes": 1}, activeDeadlineSeconds=60)
    early = reconcile_trainjob(r, [], T0 + timedelta(seconds=20))
    assert early.requeue_after == 40 and conditions(early.status) == []
    late = reconcile_trainjob(r, [pod("j-node-0-0", "node", "Running")], T0 + timedelta(seconds=61))
    assert conditions(late.status) == [("Failed", "True", "DeadlineExceeded")]
    assert late.status["conditions"][0]["message"] == "TrainJob exceeded its active deadline"
    assert late.delete_pods == ["j-node-0-0"]
    resumed_at = {
        "conditions": [
            {
                "type": "Suspended",
                "status": "False",
                "reason": "Resumed",
                "message": "",
                "lastTransitionTime": "2026-01-01T00:01:00Z",
            }
        ]
    }
    r2 = resolved("torch-distributed", status=resumed_at, trainer={"numNodes": 1}, activeDeadlineSeconds=60)
    assert reconcile_trainjob(r2, [], T0 + timedelta(seconds=90)).requeue_after == 30


def test_a_finished_job_stays_finished() -> None:
    done = {
        "conditions": [
            {
                "type": "Complete",
                "status": "True",
                "reason": "AllJobsCompleted",
                "message": "",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            }
        ]
    }
    r = resolved("torch-distributed", status=done, trainer={"numNodes": 2})
    plan = reconcile_trainjob(r, [pod("j-node-0-0", "node", "Succeeded")], T0)
    assert plan.create_pods == [] and conditions(plan.status) == [("Complete", "True", "AllJobsCompleted")]


# --- JobSet's failurePolicy.maxRestarts (jobset pkg/controllers/failure_policy.go, no rules) ------------


def restarting(max_restarts: int, restarts: int | None = None) -> ResolvedTrainJob:
    raw = yaml.safe_load((RUNTIMES_DIR / "torch-distributed.yaml").read_text())
    raw["spec"]["template"]["spec"]["failurePolicy"] = {"maxRestarts": max_restarts}
    rt = parse_trainer_object(raw)
    meta: dict[str, Any] = {"name": "j", "namespace": "ns", "creationTimestamp": "2026-01-01T00:00:00Z"}
    if restarts is not None:
        meta["annotations"] = {"trainop.dev/jobset-restarts": str(restarts)}
    job = parse_trainer_object(
        {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "TrainJob",
            "metadata": meta,
            "spec": {"runtimeRef": {"name": "torch-distributed"}, "trainer": {"numNodes": 2}},
        }
    )
    assert isinstance(rt, TrainingRuntime) and isinstance(job, TrainJob)
    return resolve_trainjob(job, rt, REGISTRY)


def attempt(p: dict[str, Any], n: int) -> dict[str, Any]:
    p["metadata"]["labels"]["jobset.sigs.k8s.io/restart-attempt"] = str(n)
    return p


def test_pods_carry_the_restart_attempt() -> None:
    plan = reconcile_trainjob(restarting(2, restarts=1), [], T0)
    for p in plan.create_pods:
        assert p["metadata"]["labels"]["jobset.sigs.k8s.io/restart-attempt"] == "1"
        assert p["metadata"]["annotations"]["jobset.sigs.k8s.io/restart-attempt"] == "1"


def test_a_failed_node_restarts_every_pod_while_restarts_are_left() -> None:
    pods = [attempt(pod("j-node-0-0", "node", "Failed"), 0), attempt(pod("j-node-0-1", "node", "Running"), 0)]
    plan = reconcile_trainjob(restarting(2), pods, T0)
    assert plan.restarts == 1
    assert sorted(plan.delete_pods) == ["j-node-0-0", "j-node-0-1"]
    assert plan.create_pods == [] and conditions(plan.status) == []


def test_stale_pods_go_before_the_next_attempt_starts() -> None:
    """JobSet deletes the Jobs of earlier attempts (restart-attempt < status.restarts) and creates the
    new ones; here the names are the same, so a name is free again only once its old pod is gone."""
    r = restarting(2, restarts=1)
    stale = [attempt(pod("j-node-0-0", "node", "Failed"), 0)]
    plan = reconcile_trainjob(r, stale, T0)
    assert plan.delete_pods == ["j-node-0-0"]
    assert [p["metadata"]["name"] for p in plan.create_pods] == ["j-node-0-1"]
    assert conditions(plan.status) == [] and plan.restarts is None


def test_the_last_allowed_restart_spent_fails_with_jobsets_reason() -> None:
    pods = [attempt(pod("j-node-0-0", "node", "Failed"), 2), attempt(pod("j-node-0-1", "node", "Running"), 2)]
    plan = reconcile_trainjob(restarting(2, restarts=2), pods, T0)
    assert plan.restarts is None
    assert conditions(plan.status) == [("Failed", "True", "ReachedMaxRestarts")]
    assert plan.status["conditions"][0]["message"] == "jobset failed due to reaching max number of restarts"
    assert plan.delete_pods == ["j-node-0-1"]


def test_max_restarts_zero_fails_at_once_with_jobsets_reason() -> None:
    plan = reconcile_trainjob(restarting(0), [attempt(pod("j-node-0-0", "node", "Failed"), 0)], T0)
    assert conditions(plan.status) == [("Failed", "True", "ReachedMaxRestarts")]
