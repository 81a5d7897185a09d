"""Whole-job restart, failure rules and start deadlines through several reconcile passes (the real
core, a tiny world moved by the test; docs/failure-policy.md)."""

from __future__ import annotations

import json

import pytest

from trainop.testing.builders import job_builder, pytorch_job

from .harness import World, created, describe_action, ts

PT = "PyTorchJob"
ALL = ["a-master-0", "a-worker-0", "a-worker-1", "a-worker-2"]
RULES = json.dumps(
    [
        {"name": "bug", "action": "FailJob", "onExitCodes": {"operator": "In", "values": [1, 2]}},
        {"name": "oom", "action": "RestartJob", "onExitCodes": {"operator": "In", "values": [137]}},
        {"action": "Ignore", "onReasons": ["Evicted"]},
    ]
)


def world(annotations: dict[str, str], restart_policy: str = "OnFailure", kind: str = PT) -> World:
    b = job_builder(kind, "a").master(1).workers(3) if kind != PT else pytorch_job("a").master(1).workers(3)
    w = World(b.restart_policy(restart_policy).annotations(annotations).build())
    w.reconcile()
    return w


def running(w: World) -> World:
    w.set_all("Running")
    w.advance(10)
    w.reconcile()
    return w


def actions(w: World) -> list[tuple[str, ...]]:
    return [describe_action(a) for a in w.plans[-1].actions]


def crash_in_place(w: World, name: str, code: int, reason: str = "Error") -> None:
    """The kubelet restarted ``name``'s container after it exited with ``code`` (OnFailure)."""
    pod = w.pods[name]
    pod["status"] = {
        "phase": "Running",
        "containerStatuses": [
            {
                "name": "pytorch",
                "restartCount": 1,
                "state": {"running": {"startedAt": ts(w.now)}},
                "lastState": {"terminated": {"exitCode": code, "reason": reason, "finishedAt": ts(w.now)}},
            }
        ],
    }


def attempts(w: World) -> dict[str, str | None]:
    return {n: p["metadata"]["labels"].get("trainop.dev/restart-attempt") for n, p in sorted(w.pods.items())}


def conditions(w: World) -> list[tuple[str, str, str]]:
    return [
        (c.type, c.status, c.reason or "") for c in (w.job.status.conditions if w.job.status else None) or []
    ]


def cond_message(w: World, ctype: str) -> str:
    for c in (w.job.status.conditions if w.job.status else None) or []:
        if c.type == ctype:
            return c.message or ""
    return ""


def events(w: World) -> list[tuple[str, str, str]]:
    return [(e.type, e.reason, e.message) for e in w.plans[-1].events if e.reason != "ExitedWithCode"]


def test_a_job_without_the_annotations_gets_no_restart_label() -> None:
    plain = world({})
    annotated = world({"trainop.dev/max-restarts": "2"})
    assert (attempts(plain), attempts(annotated)) == (
        dict.fromkeys(ALL),
        dict.fromkeys(ALL, "0"),
    )


@pytest.mark.parametrize("strategy", ["Recreate", "BlockingRecreate"])
def test_one_worker_exits_137_once_every_replica_is_recreated_then_the_job_succeeds(strategy: str) -> None:
    w = running(
        world(
            {
                "trainop.dev/failure-policy": RULES,
                "trainop.dev/max-restarts": "3",
                "trainop.dev/restart-strategy": strategy,
            }
        )
    )
    crash_in_place(w, "a-worker-2", 137, "OOMKilled")
    w.advance(5)
    plan = w.reconcile()
    restart = (actions(w), conditions(w), events(w), plan.metrics)
    message = (
        "PyTorchJob a is restarting every replica because pod a-worker-2 (Worker) exited with code 137 and "
        'was restarted in place (reason OOMKilled) (rule 1 "oom"; restart 1 of at most 3).'
    )
    # The old pods linger, terminating; a-worker-0 is gone already.
    for name in ("a-master-0", "a-worker-1", "a-worker-2"):
        w.terminate(name)
    w.advance(1)
    w.reconcile()
    while_terminating = actions(w)
    for name in ("a-master-0", "a-worker-1", "a-worker-2"):
        del w.pods[name]
    w.reconcile()
    after = actions(w)
    labels = attempts(w)
    running(w)
    at_running = conditions(w)
    w.set_phase("a-master-0", "Succeeded", exit_code=0)
    w.advance(10)
    w.reconcile()
    assert (
        restart,
        while_terminating,
        after,
        labels,
        at_running,
        conditions(w),
        cond_message(w, "JobRestarts"),
    ) == (
        (
            [("delete", "Pod", n) for n in ALL],
            [
                ("Created", "True", "PyTorchJobCreated"),
                ("JobRestarts", "True", "PyTorchJobRestarted"),
                ("Restarting", "True", "PyTorchJobRestarting"),
            ],
            [("Warning", "PyTorchJobRestarting", message)],
            ["jobs_restarted"],
        ),
        # Recreate: a replica whose old pod is gone comes back at once; BlockingRecreate waits for all.
        [] if strategy == "BlockingRecreate" else [("create", "Pod", "a-worker-0")],
        [("create", "Pod", n) for n in ALL if strategy == "BlockingRecreate" or n != "a-worker-0"],
        dict.fromkeys(ALL, "1"),
        [
            ("Created", "True", "PyTorchJobCreated"),
            ("JobRestarts", "True", "PyTorchJobRestarted"),
            ("Running", "True", "PyTorchJobRunning"),
        ],
        [
            ("Created", "True", "PyTorchJobCreated"),
            ("JobRestarts", "True", "PyTorchJobRestarted"),
            ("Running", "False", "PyTorchJobRunning"),
            ("Succeeded", "True", "PyTorchJobSucceeded"),
        ],
        "1 whole-job restart(s), 1 counted toward maxRestarts 3; the last because pod a-worker-2 (Worker) "
        "exited with code 137 and was restarted in place (reason OOMKilled)",
    )


def test_an_old_pod_seen_again_before_its_deletion_is_deleted_not_counted() -> None:
    """A cache that lags shows the failed pod of attempt 0 again after the restart was written."""
    w = running(world({"trainop.dev/failure-policy": RULES, "trainop.dev/max-restarts": "3"}, "Never"))
    w.set_phase("a-worker-2", "Failed", exit_code=137)
    stale = dict(w.pods["a-worker-2"])
    w.reconcile()
    w.pods["a-worker-2"] = stale  # the same old pod, no deletionTimestamp yet
    plan = w.reconcile()
    assert (actions(w), plan.metrics, cond_message(w, "JobRestarts").split(";")[0]) == (
        [("delete", "Pod", "a-worker-2"), *[("create", "Pod", n) for n in ALL if n != "a-worker-2"]],
        [],
        "1 whole-job restart(s), 1 counted toward maxRestarts 3",
    )


def test_failjob_rule_fails_at_once() -> None:
    w = running(world({"trainop.dev/failure-policy": RULES, "trainop.dev/max-restarts": "3"}, "ExitCode"))
    w.set_phase("a-master-0", "Failed", exit_code=2)
    w.advance(3)
    plan = w.reconcile()
    message = (
        "Job a has failed because pod a-master-0 (Master) exited with code 2 (reason Error), which rule "
        '0 "bug" '
        "fails the job (FailJob)"
    )
    assert (actions(w), conditions(w), events(w), plan.metrics, w.job.status.completion_time is not None) == (  # type: ignore[union-attr]
        [],  # cleanPodPolicy None (the default) keeps the pods, as for backoffLimit (§4.7)
        [
            ("Created", "True", "PyTorchJobCreated"),
            ("Running", "False", "PyTorchJobRunning"),
            ("Failed", "True", "PyTorchJobFailedByRule"),
        ],
        [("Warning", "PyTorchJobFailedByRule", message)],
        ["jobs_failed"],
        True,
    )


def test_past_max_restarts_the_job_fails_with_the_reason() -> None:
    w = running(world({"trainop.dev/failure-policy": RULES, "trainop.dev/max-restarts": "1"}, "Never"))
    w.set_phase("a-worker-1", "Failed", exit_code=137)
    w.reconcile()  # restart 1
    w.reconcile()  # all recreated
    running(w)
    w.set_phase("a-worker-1", "Failed", exit_code=137)
    w.advance(1)
    w.reconcile()
    message = (
        "Job a has failed because it has reached the maximum of 1 whole-job restart(s) "
        "(trainop.dev/max-restarts) and pod a-worker-1 (Worker) exited with code 137 (reason Error)"
    )
    assert (conditions(w), events(w), actions(w)) == (
        [
            ("Created", "True", "PyTorchJobCreated"),
            ("JobRestarts", "True", "PyTorchJobRestarted"),
            ("Running", "False", "PyTorchJobRunning"),
            ("Failed", "True", "PyTorchJobMaxRestartsExceeded"),
        ],
        [("Warning", "PyTorchJobMaxRestartsExceeded", message)],
        # the other pods are stopped (cleanPodPolicy None notwithstanding), as torchrun gives up
        [("delete", "Pod", n) for n in ALL if n != "a-worker-1"],
    )


def test_no_whole_job_restart_allowed_fails_at_the_first_failure_and_stops_the_rest() -> None:
    w = running(world({"trainop.dev/max-restarts": "0"}, "Never"))
    w.set_phase("a-worker-0", "Failed", exit_code=7)
    w.reconcile()
    message = (
        "Job a has failed because pod a-worker-0 (Worker) exited with code 7 (reason Error) "
        "(trainop.dev/max-restarts 0: no whole-job restart)"
    )
    assert (events(w), actions(w)) == (
        [("Warning", "PyTorchJobMaxRestartsExceeded", message)],
        [("delete", "Pod", n) for n in ALL if n != "a-worker-0"],
    )


def test_ignore_restarts_without_counting() -> None:
    w = running(world({"trainop.dev/failure-policy": RULES, "trainop.dev/max-restarts": "0"}, "Never"))
    w.pods["a-worker-0"]["status"] = {"phase": "Failed", "reason": "Evicted"}
    w.reconcile()
    assert (actions(w), cond_message(w, "JobRestarts"), conditions(w)[-1]) == (
        [("delete", "Pod", n) for n in ALL],
        "1 whole-job restart(s), 0 counted toward maxRestarts 0; the last because pod a-worker-0 "
        "(Worker) failed (reason Evicted)",
        ("Restarting", "True", "PyTorchJobRestarting"),
    )


def test_unmatched_failure_keeps_the_replicas_own_restart_policy() -> None:
    """Exit 3 matches no rule: ExitCode treats it as permanent (§4.5), exactly as without rules."""
    with_rules = running(world({"trainop.dev/failure-policy": RULES}, "ExitCode"))
    without = running(world({}, "ExitCode"))
    for w in (with_rules, without):
        w.set_phase("a-worker-0", "Failed", exit_code=3)
        w.reconcile()
    assert (actions(with_rules), conditions(with_rules)) == (actions(without), conditions(without))


def test_max_restarts_alone_restarts_on_any_failure() -> None:
    w = running(world({"trainop.dev/max-restarts": "2"}, "Never"))
    w.set_phase("a-master-0", "Failed", exit_code=1)
    w.reconcile()
    assert actions(w) == [("delete", "Pod", n) for n in ALL]


def test_startup_deadline_fails_a_job_whose_pod_never_starts() -> None:
    w = world({"trainop.dev/startup-deadline-seconds": "60"})
    for name in ALL:
        w.pods[name]["metadata"]["creationTimestamp"] = ts(0)
    for name in ALL[:3]:
        w.set_phase(name, "Running")
    w.pods["a-worker-2"]["status"] = {
        "phase": "Pending",
        "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/3 nodes"}
        ],
    }
    w.advance(20)
    waiting = w.reconcile()
    w.advance(40)
    w.reconcile()
    message = (
        "Job a has failed because pod a-worker-2 did not start within 60s "
        "(trainop.dev/startup-deadline-seconds): PodScheduled is False: Unschedulable: 0/3 nodes"
    )
    assert (waiting.requeue_after, conditions(w)[-1], events(w)) == (
        40.0,
        ("Failed", "True", "PyTorchJobStartupDeadlineExceeded"),
        [
            ("Warning", "Unschedulable", "Error pod a-worker-2 condition message: 0/3 nodes"),  # §6.3
            ("Warning", "PyTorchJobStartupDeadlineExceeded", message),
        ],
    )


def test_image_pull_back_off_fails_after_the_start_error_deadline() -> None:
    w = world({"trainop.dev/start-error-deadline-seconds": "30"})
    for name in ALL:
        w.pods[name]["metadata"]["creationTimestamp"] = ts(0)
    w.set_all("Running")
    w.pods["a-worker-1"]["status"] = {
        "phase": "Pending",
        "containerStatuses": [
            {
                "name": "pytorch",
                "restartCount": 0,
                "state": {"waiting": {"reason": "ImagePullBackOff", "message": "Back-off pulling image"}},
            }
        ],
    }
    w.advance(10)
    first = w.reconcile()
    w.advance(20)
    w.reconcile()
    assert (first.requeue_after, conditions(w)[-1], events(w)[-1][2]) == (
        20.0,
        ("Failed", "True", "PyTorchJobStartErrorDeadlineExceeded"),
        "Job a has failed because pod a-worker-1 container pytorch has been in ImagePullBackOff for 30s "
        "(trainop.dev/start-error-deadline-seconds): Back-off pulling image",
    )


def test_invalid_annotation_past_admission_is_a_warning_and_nothing_else() -> None:
    w = World(pytorch_job("a").master(1).workers(1).annotations({"trainop.dev/max-restarts": "-1"}).build())
    plan = w.reconcile()
    assert (plan.actions, [(e.type, e.reason, e.message) for e in plan.events], plan.status.to_dict()) == (
        [],
        [
            (
                "Warning",
                "PyTorchJobFailedValidation",
                "PyTorchJob failed validation because metadata.annotations[trainop.dev/max-restarts]: "
                'Invalid value: "-1": '
                "must be an integer of at least 0, as a string",
            )
        ],
        {"conditions": [created(PT)]},
    )


@pytest.mark.parametrize("kind", ["PyTorchJob", "XGBoostJob", "PaddleJob"])
def test_master_worker_kinds_restart_every_replica(kind: str) -> None:
    w = World(
        job_builder(kind, "a")
        .master(1)
        .workers(2)
        .restart_policy("Never")
        .annotations({"trainop.dev/max-restarts": "1"})
        .build()
    )
    w.reconcile()
    running(w)
    names = sorted(w.pods)
    w.set_phase(names[-1], "Failed", exit_code=137)
    w.reconcile()
    deleted = actions(w)
    w.reconcile()
    assert (deleted, actions(w), set(attempts(w).values())) == (
        [("delete", "Pod", n) for n in names],
        [("create", "Pod", n) for n in names],
        {"1"},
    )


def test_pods_carry_the_effective_policy_render_shows() -> None:
    w = world({"trainop.dev/max-restarts": "2", "trainop.dev/startup-deadline-seconds": "300"})
    plain = world({})
    assert (
        {
            n: json.loads(p["metadata"]["annotations"]["trainop.dev/effective-failure-policy"])
            for n, p in w.pods.items()
        },
        [p["metadata"].get("annotations") for p in plain.pods.values()],
    ) == (
        {
            name: {
                "rules": [{"name": "default", "action": "RestartJob"}],
                "unmatched": "UseRestartPolicy",
                "maxRestarts": 2,
                "restartStrategy": "Recreate",
                "startupDeadlineSeconds": 300,
            }
            for name in ALL
        },
        [None] * 4,
    )


@pytest.mark.parametrize(
    ("kind", "types"),
    [
        pytest.param("TFJob", {"Chief": 1, "Worker": 2}, id="TFJob"),
        pytest.param("JAXJob", {"Worker": 3}, id="JAXJob"),
        pytest.param("MPIJob", {"Launcher": 1, "Worker": 2}, id="MPIJob"),
    ],
)
def test_other_kinds_restart_every_replica(kind: str, types: dict[str, int]) -> None:
    b = job_builder(kind, "a")
    for rtype, n in types.items():
        b = b.replicas(rtype, n, restart_policy="Never")
    w = World(b.annotations({"trainop.dev/max-restarts": "1"}).build())
    for _ in range(3):  # MPI creates its launcher once the workers run
        w.reconcile()
        w.set_all("Running")
    names = sorted(w.pods)
    w.set_phase(names[0], "Failed", exit_code=137)
    w.reconcile()
    deleted = sorted(a[2] for a in actions(w) if a[0] == "delete" and a[1] == "Pod")
    for _ in range(2):
        w.reconcile()
        w.set_all("Running")
    assert (deleted, sorted(w.pods), set(attempts(w).values()), cond_message(w, "JobRestarts")[:43]) == (
        names,
        names,
        {"1"},
        "1 whole-job restart(s), 1 counted toward ma",
    )
