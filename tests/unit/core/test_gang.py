"""Gang scheduling (contract §5): the PodGroup built for a job, pod decoration, and what a reconcile
pass plans with a gang scheduler (create / update / delete the PodGroup, Volcano's admission gate)."""

from __future__ import annotations

from typing import Any

import pytest

from trainop.api.common import TrainingJob
from trainop.api.defaults import apply_defaults
from trainop.core.gang import (
    GangScheduler,
    build_pod_decoration,
    build_pod_group,
    compute_min_member,
    compute_min_resources,
    detect_pod_group_admitted,
)
from trainop.core.naming import build_owner_reference
from trainop.core.observed import Observed
from trainop.core.plan import Event
from trainop.core.reconcile import reconcile
from trainop.core.topology import ServiceTopology
from trainop.frameworks.registry import REGISTRY
from trainop.testing.builders import JobBuilder, mpi_job, pytorch_job, tf_job, written

from .harness import T0, describe_action

VOLCANO = GangScheduler("volcano")
PLUGINS = GangScheduler("scheduler-plugins-scheduler")


def requests(**res: str) -> dict[str, Any]:
    return {"resources": {"requests": res}}


def defaulted(b: JobBuilder) -> TrainingJob:
    return apply_defaults(b.uid("u1").namespace("ns").build())


def pt(**policy: Any) -> JobBuilder:
    b = (
        pytorch_job("pt").master(1).workers(3)
        .container("Master", **requests(cpu="2", memory="1Gi"))
        .container("Worker", **requests(cpu="500m", memory="512Mi", **{"nvidia.com/gpu": "1"}))
    )  # fmt: skip
    return b.run_policy(scheduling_policy=policy) if policy else b


@pytest.mark.parametrize(
    ("flag", "want"),
    [
        pytest.param("", None, id="off"),
        pytest.param("Volcano", GangScheduler("volcano"), id="volcano, any case"),
        pytest.param(
            "scheduler-plugins-scheduler", PLUGINS, id="scheduler-plugins: the value is the scheduler"
        ),
    ],
)
def test_from_flag(flag: str, want: GangScheduler | None) -> None:
    assert GangScheduler.from_flag(flag) == want


@pytest.mark.parametrize(
    ("job", "want"),
    [
        pytest.param(pt(), 4, id="sum of replicas"),
        pytest.param(pt(min_available=2), 2, id="minAvailable"),
        pytest.param(tf_job("t").chief(None).workers(2), 3, id="nil replicas count as 1"),
    ],
)
def test_min_member(job: JobBuilder, want: int) -> None:
    assert compute_min_member(defaulted(job)) == want


@pytest.mark.parametrize(
    ("job", "priorities", "want"),
    [
        pytest.param(
            pt(), None, {"cpu": "3500m", "memory": "2560Mi", "nvidia.com/gpu": "3"},
            id="every pod when minMember is all"
        ),
        pytest.param(
            pt(min_available=2), None, {"cpu": "2500m", "memory": "1536Mi", "nvidia.com/gpu": "1"},
            id="minAvailable: the master first (canonical order), then one worker",
        ),
        pytest.param(
            pt(min_available=2).template(lambda t: t["spec"].update(priorityClassName="high"), "Worker"),
            {"high": 1000},
            {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "2"},
            id="higher PriorityClass value first",
        ),
        pytest.param(
            pt(min_resources={"cpu": "10"}), None, {"cpu": "10"}, id="schedulingPolicy.minResources wins"
        ),
        pytest.param(
            pytorch_job("l").master(1).container("Master", resources={"limits": {"cpu": "1"}}), None,
            {"cpu": "1"},
            id="limits when requests is nil",
        ),
        pytest.param(pytorch_job("n").master(1), None, None, id="nothing requested"),
    ],
)  # fmt: skip
def test_min_resources(
    job: JobBuilder, priorities: dict[str, int] | None, want: dict[str, str] | None
) -> None:
    j = defaulted(job)
    assert compute_min_resources(j, compute_min_member(j), priorities) == want


def test_volcano_pod_group() -> None:
    job = defaulted(
        pt(min_available=2, queue="team-a", priority_class="high", schedule_timeout_seconds=60).annotations(
            {"a": "b"}
        )
    )
    assert build_pod_group(job, VOLCANO) == {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "pt", "namespace": "ns", "annotations": {"a": "b"}},
        "spec": {
            "minMember": 2,
            "queue": "team-a",
            "priorityClassName": "high",
            "minResources": {"cpu": "2500m", "memory": "1536Mi", "nvidia.com/gpu": "1"},
        },
    }


@pytest.mark.parametrize(
    ("queue", "existing", "want"),
    [
        pytest.param(None, None, "default", id="default queue"),
        pytest.param("a", {"spec": {"queue": "b"}}, "b", id="an existing PodGroup's queue wins"),
        pytest.param("a", {"spec": {"queue": ""}}, "a", id="an empty existing queue does not"),
    ],
)
def test_volcano_queue(queue: str | None, existing: dict[str, Any] | None, want: str) -> None:
    job = defaulted(pt(queue=queue) if queue else pt())
    assert build_pod_group(job, VOLCANO, existing)["spec"]["queue"] == want


def test_scheduler_plugins_pod_group() -> None:
    job = defaulted(
        pt(min_available=2, queue="ignored", priority_class="ignored", schedule_timeout_seconds=60)
    )
    assert build_pod_group(job, PLUGINS) == {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": "pt", "namespace": "ns"},
        "spec": {
            "minMember": 2,
            "scheduleTimeoutSeconds": 60,
            "minResources": {"cpu": "2500m", "memory": "1536Mi", "nvidia.com/gpu": "1"},
        },
    }


@pytest.mark.parametrize(
    ("gang", "kind", "template_scheduler", "want_pod", "want_event"),
    [
        pytest.param(
            VOLCANO, "PyTorchJob", None,
            {"metadata": {"annotations": {"scheduling.k8s.io/group-name": "j",
                                          "volcano.sh/task-spec": "worker"}},
             "spec": {"schedulerName": "volcano"}},
            None, id="volcano",
        ),
        pytest.param(
            PLUGINS, "PyTorchJob", None,
            {"metadata": {"labels": {"scheduling.x-k8s.io/pod-group": "j"}},
             "spec": {"schedulerName": "scheduler-plugins-scheduler"}},
            None, id="scheduler-plugins",
        ),
        pytest.param(
            PLUGINS, "PyTorchJob", "other",
            {"metadata": {"labels": {"scheduling.x-k8s.io/pod-group": "j"}},
             "spec": {"schedulerName": "other"}},
            Event("Warning", "SetPodTemplateSchedulerName",
                  "Another scheduler is specified when gang-scheduling is enabled and it will not be "
                  "overwritten",
                  key="SetPodTemplateSchedulerName/Worker"),
            id="another scheduler is kept, with a warning",
        ),
        pytest.param(
            PLUGINS, "MPIJob", "other",
            {"metadata": {"labels": {"scheduling.x-k8s.io/pod-group": "j"}},
             "spec": {"schedulerName": "other"}},
            Event("Warning", "SettedPodTemplateSchedulerName",
                  "Another scheduler is specified when gang-scheduling is enabled and it will not be "
                  "overwritten",
                  key="SettedPodTemplateSchedulerName/Worker"),
            id="MPI's reason",
        ),
    ],
)  # fmt: skip
def test_pod_decoration(
    gang: GangScheduler,
    kind: str,
    template_scheduler: str | None,
    want_pod: dict[str, Any],
    want_event: Event | None,
) -> None:
    job = defaulted(mpi_job("j").launcher(1).workers(1) if kind == "MPIJob" else pytorch_job("j").workers(1))
    pod: dict[str, Any] = {"metadata": {}, "spec": {}}
    if template_scheduler:
        pod["spec"]["schedulerName"] = template_scheduler
    assert build_pod_decoration(pod, gang, job, "Worker") == want_event
    assert pod == want_pod


@pytest.mark.parametrize(
    ("pg", "want"),
    [
        pytest.param(None, False, id="none yet"),
        pytest.param({"status": {}}, False, id="no phase"),
        pytest.param({"status": {"phase": "Pending"}}, False, id="Pending"),
        pytest.param({"status": {"phase": "Inqueue"}}, True, id="Inqueue"),
        pytest.param({"status": {"phase": "Running"}}, True, id="Running"),
    ],
)
def test_volcano_admission(pg: dict[str, Any] | None, want: bool) -> None:
    assert detect_pod_group_admitted(pg) is want


# --- a reconcile pass with a gang scheduler ----------------------------------------------------------


def run(job: TrainingJob, gang: GangScheduler, pod_groups: list[dict[str, Any]] | None = None) -> Any:
    observed = Observed(job, [], [], {"PodGroup": pod_groups} if pod_groups is not None else {})
    return reconcile(job, observed, REGISTRY.get(job.kind), ServiceTopology(), T0, gang=gang)


def stored_pg(job: TrainingJob, gang: GangScheduler, phase: str | None = None, **spec: Any) -> dict[str, Any]:
    pg = build_pod_group(apply_defaults(job), gang)
    pg["metadata"]["ownerReferences"] = [build_owner_reference(job)]
    pg["spec"].update(spec)
    if phase:
        pg["status"] = {"phase": phase}
    return pg


def raw(b: JobBuilder) -> TrainingJob:
    return b.uid("u1").namespace("ns").build()


def test_pass_creates_the_pod_group_before_the_pods() -> None:
    plan = run(raw(pytorch_job("j").master(1).workers(1)), PLUGINS)
    assert [describe_action(a) for a in plan.actions][:2] == [
        ("create", "PodGroup", "j"),
        ("create", "Pod", "j-master-0"),
    ]
    pg = plan.actions[0].obj
    assert pg["metadata"]["ownerReferences"] == [build_owner_reference(raw(pytorch_job("j")))]
    pod = plan.actions[1].obj
    assert pod["spec"]["schedulerName"] == "scheduler-plugins-scheduler"
    assert pod["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] == "j"


@pytest.mark.parametrize(
    ("phase", "want"),
    [
        pytest.param(None, [], id="no phase yet: no pod"),
        pytest.param("Pending", [], id="Pending: no pod"),
        pytest.param("Inqueue", [("create", "Pod", "j-master-0"), ("create", "Service", "j-master-0")],
                     id="admitted: pods"),
    ],
)  # fmt: skip
def test_volcano_creates_no_pod_until_admitted(phase: str | None, want: list[tuple[str, ...]]) -> None:
    job = raw(pytorch_job("j").master(1))
    plan = run(job, VOLCANO, [stored_pg(job, VOLCANO, phase)])
    assert [describe_action(a) for a in plan.actions] == want


def test_changed_min_available_updates_the_pod_group() -> None:
    job = raw(pytorch_job("j").master(1).workers(9).run_policy(scheduling_policy={"min_available": 2}))
    stored = stored_pg(job, PLUGINS, "Pending", minMember=10)
    stored["metadata"]["resourceVersion"] = "42"
    plan = run(job, PLUGINS, [stored])
    got = [describe_action(a) for a in plan.actions]
    assert got[0] == ("update", "PodGroup", "j")
    assert plan.actions[0].obj["spec"]["minMember"] == 2
    assert plan.actions[0].obj["status"] == {"phase": "Pending"}  # kept if the CRD has no status subresource
    assert plan.actions[0].obj["metadata"]["resourceVersion"] == "42"  # no unconditional update of a CR


@pytest.mark.parametrize(
    ("job", "want_events"),
    [
        pytest.param(
            pytorch_job("j").master(1).condition("Created").condition("Succeeded"),
            [("Normal", "JobTerminated", "Job has been terminated. Deleting PodGroup")],
            id="finished",
        ),
        pytest.param(pytorch_job("j").master(1).suspend(), [], id="suspended"),
    ],
)
def test_pod_group_deleted_on_finish_and_suspend(
    job: JobBuilder, want_events: list[tuple[str, str, str]]
) -> None:
    j = raw(job)
    plan = run(j, VOLCANO, [stored_pg(j, VOLCANO, "Running")])
    assert ("delete", "PodGroup", "j") in [describe_action(a) for a in plan.actions]
    got = [(e.type, e.reason, e.message) for e in plan.events if e.reason == "JobTerminated"]
    assert got == want_events
    deleting = next(a for a in plan.actions if describe_action(a) == ("delete", "PodGroup", "j"))
    assert deleting.done == Event("Normal", "SuccessfulDeletePodGroup", "Deleted PodGroup: j")


def test_without_a_gang_scheduler_nothing_changes() -> None:
    job = raw(pytorch_job("j").master(1))
    observed = Observed(job, [], [], {})
    plan = reconcile(job, observed, REGISTRY.get(job.kind), ServiceTopology(), T0)
    assert all(describe_action(a)[1] != "PodGroup" for a in plan.actions)
    assert "schedulerName" not in written(plan.actions[0])["spec"]


def test_observed_priority_classes_order_min_resources() -> None:
    """The backend hands PriorityClasses in ``extras``; the higher-valued type's pods count first."""
    job = raw(
        pytorch_job("j").master(1).workers(3)
        .container("Master", **requests(cpu="2"))
        .container("Worker", **requests(cpu="1"))
        .template(lambda t: t["spec"].update(priorityClassName="high"), "Worker")
        .run_policy(scheduling_policy={"min_available": 2})
    )  # fmt: skip
    classes = [{"metadata": {"name": "high"}, "value": 1000}, {"metadata": {"name": "low"}, "value": 1}]
    observed = Observed(job, [], [], {"PriorityClass": classes})
    plan = reconcile(job, observed, REGISTRY.get(job.kind), ServiceTopology(), T0, gang=PLUGINS)
    assert written(plan.actions[0])["spec"]["minResources"] == {
        "cpu": "2"
    }  # two workers, not master + worker


@pytest.mark.parametrize("text", ["1.2.3Mi", "Mi", "1.2.3", "", "lots"])
def test_a_malformed_quantity_is_a_value_error(text: str) -> None:
    # A binary suffix on a malformed number raised decimal.InvalidOperation, which callers that catch
    # ValueError (the TrainJob resolver's resource sums) let out.
    from trainop.core.gang import compute_quantity

    with pytest.raises(ValueError, match="invalid resource quantity"):
        compute_quantity(text)
