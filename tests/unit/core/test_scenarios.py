"""Several reconcile passes in a row, the world moved between them by the test (contract §4.3).

Each pass's Plan is applied to a small in-memory world (``World``); the checks read the whole
condition list, the actions and the requeue the core asked for.
"""

from __future__ import annotations

from typing import Any

from trainop.testing.builders import pytorch_job

from .harness import World, cond, created, describe_action, replica_statuses, summary, ts

PT = "PyTorchJob"
ALL = ["a-master-0", "a-worker-0", "a-worker-1"]


def actions(world: World) -> list[tuple[str, ...]]:
    return [describe_action(a) for a in world.plans[-1].actions]


def started(**run_policy: Any) -> World:
    """A PyTorchJob (Master 1 + Worker 2) reconciled once, its pods created and now running."""
    b = pytorch_job("a").master(1).workers(2)
    world = World(b.run_policy(**run_policy).build() if run_policy else b.build())
    world.reconcile()
    world.set_all("Running")
    world.advance(10)
    world.reconcile()
    return world


def test_re_reconcile_is_idempotent() -> None:
    world = World(pytorch_job("a").master(1).workers(2).build())
    first = world.reconcile()
    second = world.reconcile()  # the created pods are observed, still Pending
    world.set_all("Running")
    world.advance(5)
    third = world.reconcile()
    fourth = world.reconcile()
    assert (
        len(first.actions),
        (second.actions, second.status_changed, second.events),
        (third.actions, third.status_changed),
        (fourth.actions, fourth.status_changed, fourth.events, fourth.metrics),
        world.job.status.to_dict() if world.job.status else None,
    ) == (
        6,
        ([], False, []),
        ([], True),
        ([], False, [], []),
        {
            "conditions": [created(PT), cond("Running", kind=PT, msg="PyTorchJob a is running.", t=5)],
            "replicaStatuses": replica_statuses(PT, Master={"active": 1}, Worker={"active": 2}),
            "startTime": ts(0),
        },
    )


def test_on_failure_restart_recreates_the_pod_and_running_replaces_restarting() -> None:
    world = started()
    world.set_phase("a-worker-0", "Failed", exit_code=1)
    world.advance(10)
    world.reconcile()
    restarted = (actions(world), world.conditions())
    # A graceful deletion: the pod lingers, Failed and terminating. No status churn meanwhile.
    world.terminate("a-worker-0")
    world.advance(1)
    lingering = world.reconcile()
    del world.pods["a-worker-0"]
    world.reconcile()
    recreated = actions(world)
    world.set_phase("a-worker-0", "Running")
    world.reconcile()
    assert (
        restarted,
        (lingering.actions, lingering.status_changed, lingering.metrics),
        recreated,
        world.conditions(),
    ) == (
        ([("delete", "Pod", "a-worker-0")], [("Created", "True"), ("Restarting", "True")]),
        ([], False, []),
        [("create", "Pod", "a-worker-0")],
        [("Created", "True"), ("Running", "True")],
    )


def test_suspend_then_resume() -> None:
    world = started(active_deadline_seconds=1000)
    world.set_run_policy(suspend=True)
    world.advance(20)
    suspended = world.reconcile()
    again = world.reconcile()
    world.set_run_policy(suspend=False)
    world.advance(70)  # resumed at t=100
    resumed = world.reconcile()
    created_on_resume = actions(world)
    world.set_all("Running")
    world.reconcile()
    assert (
        [describe_action(a)[:2] for a in suspended.actions].count(("delete", "Pod")),
        [describe_action(a)[:2] for a in suspended.actions].count(("delete", "Service")),
        (again.actions, again.status_changed, [e.reason for e in again.events]),
        ([e.reason for e in resumed.events], resumed.requeue_after),
        sorted(n for _, kind, n in created_on_resume if kind == "Pod"),
        world.job.status.to_dict() if world.job.status else None,
    ) == (
        3,
        3,
        ([], False, ["PyTorchJobSuspended"]),
        (["PyTorchJobResumed"], 1000.0),
        ALL,
        {
            "conditions": [
                created(PT),
                cond(
                    "Suspended",
                    "False",
                    kind=PT,
                    msg="PyTorchJob a is resumed.",
                    t=100,
                    reason="PyTorchJobResumed",
                ),
                cond("Running", kind=PT, msg="PyTorchJob a is running.", t=100),
            ],
            "replicaStatuses": replica_statuses(PT, Master={"active": 1}, Worker={"active": 2}),
            "startTime": ts(100),
        },
    )


def test_deadline_fires_when_the_requeue_comes_due() -> None:
    world = started(active_deadline_seconds=60)
    first_requeue = world.plans[-1].requeue_after
    world.advance(first_requeue or 0)
    fired = world.reconcile()
    assert (
        first_requeue,
        summary(fired)["events"],
        world.conditions(),
        world.job.status and world.job.status.to_dict().get("completionTime"),
    ) == (
        50.0,
        [
            (
                "Normal",
                "PyTorchJobFailed",
                "Job a has failed because it was active longer than specified deadline",
            )
        ],
        [("Created", "True"), ("Running", "False"), ("Failed", "True")],
        ts(60),
    )


def test_ttl_zero_deletes_the_job_on_the_pass_after_it_finished() -> None:
    world = started(ttl_seconds_after_finished=0, clean_pod_policy="All")
    world.set_phase("a-master-0", "Succeeded", exit_code=0)
    world.advance(5)
    finished = world.reconcile()
    end_state = world.conditions()
    deleted = world.reconcile()
    assert (
        end_state,
        [e.reason for e in finished.events],
        finished.requeue_after,
        finished.status_changed,
        [describe_action(a) for a in deleted.actions],
        deleted.status_changed,
        world.job_deleted,
    ) == (
        [("Created", "True"), ("Running", "False"), ("Succeeded", "True")],
        ["ExitedWithCode", "PyTorchJobSucceeded"],
        0.0,
        True,
        [("delete-job", "SuccessfulDeletePod")],
        False,
        True,
    )


def test_failed_stays_failed_whatever_the_pods_do_next() -> None:
    world = started()
    world.set_run_policy(backoff_limit=0)
    world.set_phase("a-worker-1", "Failed", exit_code=1)
    world.advance(5)
    world.reconcile()
    after_failure = world.conditions()
    world.pods["a-worker-1"]["status"] = {"phase": "Running"}
    world.set_all("Succeeded", exit_code=0)
    world.advance(5)
    later = world.reconcile()
    assert (after_failure, world.conditions(), later.actions, later.status_changed) == (
        [("Created", "True"), ("Running", "False"), ("Failed", "True")],
        [("Created", "True"), ("Running", "False"), ("Failed", "True")],
        [],
        False,
    )
