"""YuniKorn gang scheduling (issue 25): what ``--gang-scheduler-name=yunikorn`` puts on every pod.

YuniKorn's contract, which these tests check the pods against (its scheduler is not built here):
apache/yunikorn-site docs/user_guide/labels_and_annotations_in_yunikorn.md (1.6+: labels
``yunikorn.apache.org/app-id`` and ``yunikorn.apache.org/queue``), docs/user_guide/gang_scheduling.md
(annotations ``yunikorn.apache.org/task-group-name`` and ``yunikorn.apache.org/task-groups``, the full
list on every pod; ``schedulingPolicyParameters``), and yunikorn-k8shim pkg/cache/gang_utils.go
``GetTaskGroupsFromAnnotation``: a group needs a name, a minResource and minMember >= 1.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from trainop.api.common import TrainingJob
from trainop.core.gang import GangScheduler
from trainop.core.observed import Observed
from trainop.core.reconcile import reconcile
from trainop.core.topology import ServiceTopology
from trainop.frameworks.registry import REGISTRY
from trainop.testing.builders import JobBuilder, pytorch_job, tf_job, written

from .harness import T0, describe_action

YUNIKORN = GangScheduler("yunikorn")
APP_ID = "yunikorn.apache.org/app-id"
QUEUE = "yunikorn.apache.org/queue"
GROUP = "yunikorn.apache.org/task-group-name"
GROUPS = "yunikorn.apache.org/task-groups"
POLICY = "yunikorn.apache.org/schedulingPolicyParameters"
SPOT = {"key": "spot", "operator": "Exists", "effect": "NoSchedule"}


def pods_of(job: TrainingJob) -> dict[str, dict[str, Any]]:
    plan = reconcile(
        job, Observed(job, [], [], {}), REGISTRY.get(job.kind), ServiceTopology(), T0, gang=YUNIKORN
    )
    return {
        written(a)["metadata"]["name"]: written(a) for a in plan.actions if describe_action(a)[1] == "Pod"
    }


def job_of(b: JobBuilder) -> TrainingJob:
    return b.uid("0b8c-uid").namespace("ns").build()


def pt(**policy: Any) -> JobBuilder:
    b = pytorch_job("j").master(1).workers(3)
    b = b.template(
        lambda t: t["spec"]["containers"][0].update(resources={"requests": {"cpu": "2", "memory": "1Gi"}})
    )
    return b.run_policy(scheduling_policy=policy) if policy else b


def groups(pod: dict[str, Any]) -> list[dict[str, Any]]:
    return list(json.loads(pod["metadata"]["annotations"][GROUPS]))


def group(name: str) -> Callable[[dict[str, Any]], Any]:
    return lambda pod: next((g for g in groups(pod) if g["name"] == name), None)


def field(name: str, key: str) -> Callable[[dict[str, Any]], Any]:
    return lambda pod: (group(name)(pod) or {}).get(key)


def label(key: str) -> Callable[[dict[str, Any]], Any]:
    return lambda pod: pod["metadata"].get("labels", {}).get(key)


def annotation(key: str) -> Callable[[dict[str, Any]], Any]:
    return lambda pod: pod["metadata"].get("annotations", {}).get(key)


@pytest.mark.parametrize(
    ("flag", "want"),
    [
        pytest.param("yunikorn", YUNIKORN, id="yunikorn"),
        pytest.param("YuniKorn", YUNIKORN, id="any case"),
    ],
)
def test_from_flag(flag: str, want: GangScheduler) -> None:
    got = GangScheduler.from_flag(flag)
    assert got == want
    assert got is not None and got.yunikorn and not got.pod_group and not got.volcano


@pytest.mark.parametrize(
    ("job", "pod", "get", "want"),
    [
        pytest.param(pt(), "j-worker-1", lambda p: p["spec"]["schedulerName"], "yunikorn",
                     id="schedulerName"),
        pytest.param(pt(), "j-master-0", label(APP_ID), "0b8c-uid", id="app-id: the job's uid"),
        pytest.param(pt(queue="root.sandbox"), "j-worker-0", label(QUEUE), "root.sandbox",
                     id="queue: schedulingPolicy.queue"),
        pytest.param(pt(), "j-worker-0", label(QUEUE), None, id="queue: none without schedulingPolicy.queue"),
        pytest.param(pt(), "j-master-0", annotation(GROUP), "master", id="task-group-name: master"),
        pytest.param(pt(), "j-worker-2", annotation(GROUP), "worker", id="task-group-name: worker"),
        pytest.param(pt(), "j-master-0", lambda p: [g["name"] for g in groups(p)], ["master", "worker"],
                     id="task-groups: one per replica type, canonical order"),
        pytest.param(pt(), "j-worker-0", field("worker", "minMember"), 3, id="minMember: replicas"),
        pytest.param(pt(min_available=2), "j-worker-0", field("worker", "minMember"), 1,
                     id="minMember: minAvailable handed out master first"),
        pytest.param(pt(min_available=1), "j-worker-0", group("worker"), None,
                     id="minAvailable leaves workers none: no worker group (minMember 0 is refused)"),
        pytest.param(pt(min_available=1), "j-worker-0", annotation(GROUP), None,
                     id="... and the worker pods name no group"),
        pytest.param(pt(), "j-master-0", field("master", "minResource"), {"cpu": "2", "memory": "1Gi"},
                     id="minResource: one pod's requests"),
        pytest.param(
            pytorch_job("j").master(1)
            .container("Master", name="side", resources={"requests": {"cpu": "500m"}})
            .template(lambda t: t["spec"]["containers"][0].update(resources={"limits": {"cpu": "1"}})),
            "j-master-0", field("master", "minResource"), {"cpu": "1500m"},
            id="minResource: containers summed, limits where no requests",
        ),
        pytest.param(pytorch_job("j").master(1), "j-master-0", field("master", "minResource"), {},
                     id="minResource: present (empty) without requests, as YuniKorn requires"),
        pytest.param(pt().template(lambda t: t["spec"].update(nodeSelector={"pool": "a100"}), "Worker"),
                     "j-master-0", field("worker", "nodeSelector"), {"pool": "a100"}, id="nodeSelector"),
        pytest.param(pt(), "j-master-0", field("worker", "nodeSelector"), None, id="nodeSelector: none"),
        pytest.param(pt().template(lambda t: t["spec"].update(tolerations=[SPOT])), "j-worker-0",
                     field("master", "tolerations"), [SPOT], id="tolerations"),
        pytest.param(pt(schedule_timeout_seconds=90), "j-worker-0", annotation(POLICY),
                     "placeholderTimeoutInSeconds=90",
                     id="schedulingPolicyParameters: scheduleTimeoutSeconds"),
        pytest.param(pt(), "j-worker-0", annotation(POLICY), None, id="schedulingPolicyParameters: none"),
        pytest.param(tf_job("j").chief(None).workers(2), "j-chief-0",
                     lambda p: [(g["name"], g["minMember"]) for g in groups(p)],
                     [("worker", 2), ("chief", 1)],
                     id="TFJob: nil replicas count as 1, TF's canonical order"),
    ],
)  # fmt: skip
def test_yunikorn_field(job: JobBuilder, pod: str, get: Callable[[dict[str, Any]], Any], want: Any) -> None:
    assert get(pods_of(job_of(job))[pod]) == want


def test_yunikorn_gang_of_one_master_and_three_workers() -> None:
    """Every object of the pass, one by one: no PodGroup; each pod carries the app, the queue, the
    same full task-group list and its own group."""
    job = job_of(pt(queue="root.train").template(lambda t: t["spec"].update(tolerations=[SPOT]), "Worker"))
    plan = reconcile(
        job, Observed(job, [], [], {}), REGISTRY.get(job.kind), ServiceTopology(), T0, gang=YUNIKORN
    )
    assert [describe_action(a) for a in plan.actions] == [
        ("create", "Pod", "j-master-0"), ("create", "Service", "j-master-0"),
        ("create", "Pod", "j-worker-0"), ("create", "Pod", "j-worker-1"), ("create", "Pod", "j-worker-2"),
        ("create", "Service", "j-worker-0"), ("create", "Service", "j-worker-1"),
        ("create", "Service", "j-worker-2"),
    ]  # fmt: skip
    want_groups = [
        {"name": "master", "minMember": 1, "minResource": {"cpu": "2", "memory": "1Gi"}},
        {
            "name": "worker",
            "minMember": 3,
            "minResource": {"cpu": "2", "memory": "1Gi"},
            "tolerations": [SPOT],
        },
    ]
    for action in plan.actions:
        obj = written(action)
        if obj["kind"] != "Pod":
            assert not any(k.startswith("yunikorn.apache.org/") for k in obj["metadata"].get("labels", {}))
            continue
        rtype = obj["metadata"]["labels"]["training.kubeflow.org/replica-type"]
        labels = {k: v for k, v in obj["metadata"]["labels"].items() if k.startswith("yunikorn.apache.org/")}
        annotations = {
            k: v for k, v in obj["metadata"]["annotations"].items() if k.startswith("yunikorn.apache.org/")
        }
        assert obj["spec"]["schedulerName"] == "yunikorn"
        assert labels == {APP_ID: "0b8c-uid", QUEUE: "root.train"}
        assert set(annotations) == {GROUP, GROUPS}
        assert annotations[GROUP] == rtype
        assert json.loads(annotations[GROUPS]) == want_groups
    annotations_seen = {
        written(a)["metadata"]["annotations"][GROUPS] for a in plan.actions if written(a)["kind"] == "Pod"
    }
    assert len(annotations_seen) == 1  # byte for byte the same list on every pod


def test_yunikorn_plans_no_pod_group_on_finish() -> None:
    job = job_of(pytorch_job("j").master(1).condition("Created").condition("Succeeded"))
    plan = reconcile(
        job, Observed(job, [], [], {}), REGISTRY.get(job.kind), ServiceTopology(), T0, gang=YUNIKORN
    )
    assert all(describe_action(a)[1] != "PodGroup" for a in plan.actions)
    assert all(e.reason != "JobTerminated" for e in plan.events)


def test_a_template_scheduler_is_kept_with_upstreams_warning() -> None:
    job = job_of(pt().template(lambda t: t["spec"].update(schedulerName="other")))
    plan = reconcile(
        job, Observed(job, [], [], {}), REGISTRY.get(job.kind), ServiceTopology(), T0, gang=YUNIKORN
    )
    pod = next(written(a) for a in plan.actions if written(a)["kind"] == "Pod")
    assert pod["spec"]["schedulerName"] == "other"
    assert "SetPodTemplateSchedulerName" in {e.reason for e in plan.events}
