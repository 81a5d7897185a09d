"""``trainop run``'s feed of a cluster job (backends/kubernetes/jobs.py's ClusterFeed), from the pods it
last read: which replicas still run, which container runs there were (for the failure summary) and
the last lines kept per replica. No request is made: the pods and lines are given."""

from __future__ import annotations

import collections
from typing import Any

from trainop.api.load import parse_job
from trainop.backends.kubernetes.jobs import ClusterFeed, PodRun
from trainop.testing.builders import pytorch_job


def _pod(name: str, **state: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "status": {"containerStatuses": [{"name": "pytorch", "restartCount": 0, "state": state}]},
    }


def _feed(pods: list[dict[str, Any]]) -> ClusterFeed:
    feed = ClusterFeed(None, parse_job(pytorch_job("j").master(1).workers(2).build_dict()))  # type: ignore[arg-type]
    feed._pods = pods
    return feed


PODS = [
    _pod("j-master-0", running={}),
    _pod("j-worker-0", terminated={"exitCode": 1, "finishedAt": "2026-01-01T00:00:00Z"}),
    _pod("j-worker-1", waiting={"reason": "ContainerCreating"}),
]


def test_running_replicas_are_those_with_a_running_container() -> None:
    assert _feed(PODS).running_replicas() == ["master-0"]


def test_runs_are_the_started_containers() -> None:
    assert _feed(PODS).runs() == [
        PodRun("j-master-0", "pytorch", 0, None, None, None),
        PodRun("j-worker-0", "pytorch", 0, 1, None, 1767225600.0),
    ]


def test_tails_prefer_the_default_container() -> None:
    feed = _feed(PODS)
    feed._kept = {
        ("worker-0", "init"): collections.deque(["init line"]),
        ("worker-0", "pytorch"): collections.deque(["a", "b"]),
        ("master-0", "pytorch"): collections.deque(["m"]),
    }
    assert feed.tails({"worker-0"}, {"pytorch"}, finished_only=True) == {"worker-0": ["a", "b"]}


def test_a_replica_whose_logs_the_cluster_does_not_serve_has_no_tail_rather_than_an_empty_one() -> None:
    feed = _feed(PODS)
    feed._no_logs = {"j-worker-0"}
    feed._kept = {("master-0", "pytorch"): collections.deque(["m"])}
    assert feed.tails({"worker-0", "master-0", "worker-1"}, {"pytorch"}, finished_only=True) == {
        "worker-0": None,
        "master-0": ["m"],
    }
