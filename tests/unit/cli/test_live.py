"""``trainop run``'s live view, computed from job, pods, processes and log tails: phase counts,
restarts and why a replica waits; the crash-loop notice; the failure summary; the leftover note;
the ending of a job deleted elsewhere."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from trainop.backends.local.store import ProcessRow
from trainop.cli.live import (
    Exit,
    ReplicaView,
    build_failure_summary,
    build_gone_lines,
    build_leftover_note,
    build_replica_views,
    build_restart_notice,
    build_status_lines,
    compute_state,
    detect_failed_replica,
    detect_first_restarts,
    detect_leftovers,
)
from trainop.testing.builders import FIXED_TIME, JobBuilder, pod, pytorch_job

T0 = datetime.fromisoformat(FIXED_TIME.replace("Z", "+00:00")).timestamp()
GPU_MSG = (
    "0/1 nodes are available: insufficient nvidia.com/gpu: pod gpu-worker-0 needs 1, 0 of 1 are free "
    "(1 in use by running jobs); it starts when enough are released"
)


def job2() -> JobBuilder:
    return pytorch_job("gpu").master(1).workers(2).command(["python", "train.py"])


def crash_looping(p: dict[str, Any], code: int = 2, delay: int = 4) -> dict[str, Any]:
    """The pod as the runner reports a container waiting out its back-off after exiting ``code``."""
    cs = p["status"]["containerStatuses"][0]
    cs["state"] = {
        "waiting": {
            "reason": "CrashLoopBackOff",
            "message": f"back-off {delay}s restarting failed container=pytorch pod={p['metadata']['name']}",
        }
    }
    cs["lastState"] = {
        "terminated": {"exitCode": code, "reason": "Error", "startedAt": FIXED_TIME, "finishedAt": FIXED_TIME}
    }
    p["status"]["phase"] = "Running"
    return p


@pytest.mark.parametrize(
    ("job", "pods", "want"),
    [
        pytest.param(
            job2(),
            [],
            ["PyTorchJob gpu: Submitted  3s", "  Master  0/1 Running", "  Worker  0/2 Running"],
            id="just submitted: Submitted, not Pending then Created",
        ),
        pytest.param(
            job2().condition("Created").condition("Running"),
            [
                pod(job2(), "Master", 0).running().build(),
                pod(job2(), "Worker", 0).running().build(),
                pod(job2(), "Worker", 1)
                .phase("Pending")
                .no_container_statuses()
                .condition("PodScheduled", "False", "Unschedulable", GPU_MSG)
                .build(),
            ],
            [
                "PyTorchJob gpu: Running  3s",
                "  Master  1/1 Running",
                "  Worker  1/2 Running, 1 Pending",
                f"    worker-1: waiting for GPUs: {GPU_MSG}",
            ],
            id="the GPU wait, in the scheduler's words",
        ),
        pytest.param(
            job2().condition("Created").condition("Running"),
            [
                pod(job2(), "Master", 0).running().build(),
                crash_looping(pod(job2(), "Worker", 0).restart_count(3).build()),
                pod(job2(), "Worker", 1).pending().build(),
            ],
            [
                "PyTorchJob gpu: Running  3s",
                "  Master  1/1 Running",
                "  Worker  0/2 Running, 1 CrashLoopBackOff, 1 Pending · 3 restarts",
                "    worker-0: CrashLoopBackOff: back-off 4s (restarts in 3s), last exit 2 (Error)",
                "    worker-1: ContainerCreating",
            ],
            id="restarts counted; a back-off says until when and why",
        ),
        pytest.param(
            job2().condition("Created").condition("Running"),
            [
                pod(job2(), "Master", 0).running().build(),
                {
                    **pod(job2(), "Worker", 0).pending().build(),
                    "status": {
                        "phase": "Pending",
                        "message": 'MountVolume.SetUp failed for volume "cfg": configmap "cfg" not found',
                    },
                },
            ],
            [
                "PyTorchJob gpu: Running  3s",
                "  Master  1/1 Running",
                "  Worker  0/2 Running, 1 Pending, 1 not created",
                '    worker-0: MountVolume.SetUp failed for volume "cfg": configmap "cfg" not found',
            ],
            id="a pending reason; replicas not created yet",
        ),
        pytest.param(
            job2()
            .condition("Created")
            .condition("Succeeded")
            .status(replica_statuses={"Master": {"succeeded": 1}, "Worker": {"succeeded": 2}}),
            [],
            [
                "PyTorchJob gpu: Succeeded  3s",
                "  Master  0/1 Running (1 finished, pods removed)",
                "  Worker  0/2 Running (2 finished, pods removed)",
            ],
            id="finished, pods cleaned up",
        ),
    ],
)
def test_status_lines(job: JobBuilder, pods: list[dict[str, Any]], want: list[str]) -> None:
    assert build_status_lines(job.build(), pods, elapsed=3.2, now=T0 + 1) == want


def test_first_restart_is_noticed_once_with_exit_code_and_last_lines() -> None:
    job = job2().build()
    pods = [
        crash_looping(pod(job2(), "Worker", 0).restart_count(1).build()),
        pod(job2(), "Master", 0).running().build(),
    ]
    views = build_replica_views(job, pods, T0)
    first = detect_first_restarts(frozenset(), views)
    again = detect_first_restarts(frozenset(v.label for v in first), views)
    notice = build_restart_notice(first[0], "OnFailure", ["loading", "python: can't open file 'missing.py'"])
    assert ([v.label for v in first], again, notice) == (
        ["worker-0"],
        [],
        [
            "worker-0 restarted (restart 1, restartPolicy OnFailure): exit code 2 (Error); its last lines:",
            "  worker-0 | loading",
            "  worker-0 | python: can't open file 'missing.py'",
        ],
    )


def proc(
    pod_name: str, attempt: int, code: int | None, finished: float | None, started: float = 0.0
) -> ProcessRow:
    return ProcessRow(
        "uid", pod_name, "pytorch", attempt, "puid", False, 1, 1, "b", started, finished, code, "/x"
    )


# What a replica running ``torchrun --nproc-per-node 2`` prints when its rank 1 raises (torch 2.15).
TORCHRUN_OUTPUT = [
    "W1127 17:22:03.774000 23779 torch/distributed/run.py:982] *****************************************",
    "rank 0 starting",
    "rank 1 starting",
    "Traceback (most recent call last):",
    '  File "/w/fail.py", line 6, in <module>',
    '    raise ValueError("bad batch")',
    "ValueError: bad batch",
    "W1127 17:22:04.419000 23779 torch/distributed/elastic/multiprocessing/api.py:1028] Sending process "
    "23909 closing signal SIGTERM",
    "E1127 17:22:04.421000 23779 torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: 1) "
    "local_rank: 1 (pid: 23910) of binary: /usr/bin/python3",
    "Traceback (most recent call last):",
    '  File "/usr/bin/torchrun", line 6, in <module>',
    "    sys.exit(main())",
    "    raise ChildFailedError(",
    "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
    "============================================================",
    "fail.py FAILED",
    "------------------------------------------------------------",
    "Failures:",
    "[1]:",
    "  rank      : 0 (local_rank: 0)",
    "  exitcode  : -15 (pid: 23909)  (SIGTERM)",
    "  error_file: <N/A>",
    "------------------------------------------------------------",
    "Root Cause (first observed failure):",
    "[0]:",
    "  time      : 2026-11-27_17:22:04",
    "  host      : localhost",
    "  rank      : 1 (local_rank: 1)",
    "  exitcode  : 1 (pid: 23910) ",
    "  error_file: <N/A>",
    "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html",
    "============================================================",
]


@pytest.mark.parametrize(
    ("processes", "views", "tails", "want"),
    [
        pytest.param(
            [
                proc("gpu-master-0", 0, 143, 20.0),
                proc("gpu-worker-0", 0, 2, 5.0),
                proc("gpu-worker-0", 1, 2, 10.0),
                proc("gpu-worker-1", 0, 0, 3.0),
            ],
            [ReplicaView("worker-0", "Worker", "Failed", 1, "", Exit(2, "Error"))],
            {"worker-0": ["x" * 3, "FileNotFoundError: data.csv"]},
            [
                "  PyTorchJobFailed: PyTorchJob gpu is failed because 1 Worker replica(s) failed.",
                "  worker-0 failed first: exit code 2 (Error), after 1 restart; 1 other replica ended "
                "non-zero after it; its last lines:",
                "  worker-0 | xxx",
                "  worker-0 | FileNotFoundError: data.csv",
                "  details: trainop describe gpu; output: trainop logs gpu --replica worker-0",
            ],
            id="the replica that failed first, its exit code, restarts and last lines",
        ),
        pytest.param(
            [proc("gpu-master-0", 0, 137, 4.0)],
            [],
            {},
            [
                "  PyTorchJobFailed: PyTorchJob gpu is failed because 1 Worker replica(s) failed.",
                "  master-0 failed first: exit code 137 (killed by SIGKILL); it printed nothing",
                "  details: trainop describe gpu; output: trainop logs gpu --replica master-0",
            ],
            id="a killed replica, pods gone: the signal named from the exit code",
        ),
        pytest.param(
            [proc("gpu-master-0", 0, 1, 4.0)],
            [],
            {"master-0": None},
            [
                "  PyTorchJobFailed: PyTorchJob gpu is failed because 1 Worker replica(s) failed.",
                "  master-0 failed first: exit code 1 (Error); its output is not available (the cluster "
                "serves no logs for its pod)",
                "  details: trainop describe gpu; output: trainop logs gpu --replica master-0",
            ],
            id="a cluster serving no logs: not 'it printed nothing'",
        ),
        pytest.param(
            [
                proc("gpu-worker-0", 0, None, None),
                proc("gpu-master-0", 0, 2, T0 - 3, started=T0 - 4),
                proc("gpu-master-0", 1, 2, T0 - 1, started=T0 - 2),
                proc("gpu-master-0", 2, None, None, started=T0 + 1),
            ],
            [ReplicaView("master-0", "Master", "Running", 2, "", Exit(2, "Error"))],
            {"master-0": ["python: can't open file 'missing.py'"]},
            [
                "  PyTorchJobFailed: PyTorchJob gpu is failed because 1 Worker replica(s) failed.",
                "  master-0 failed first: exit code 2 (Error), after 2 restarts; its last lines:",
                "  master-0 | python: can't open file 'missing.py'",
                "  details: trainop describe gpu; output: trainop logs gpu --replica master-0",
            ],
            id="a crash loop restarted after the job failed: its last run before the end is the one",
        ),
        pytest.param(
            [proc("gpu-master-0", 0, 1, 4.0)],
            [],
            {"master-0": TORCHRUN_OUTPUT},
            [
                "  PyTorchJobFailed: PyTorchJob gpu is failed because 1 Worker replica(s) failed.",
                "  master-0 failed first: its rank 1 (local rank 1) ended with exit code 1 (Error) under "
                "torchrun; its last lines:",
                "  master-0 | Traceback (most recent call last):",
                '  master-0 |   File "/w/fail.py", line 6, in <module>',
                '  master-0 |     raise ValueError("bad batch")',
                "  master-0 | ValueError: bad batch",
                "  details: trainop describe gpu; output: trainop logs gpu --replica master-0",
            ],
            id="under torchrun: the failing rank's own lines and exit code, not torchrun's footer",
        ),
    ],
)
def test_failure_summary(
    processes: list[ProcessRow], views: list[ReplicaView], tails: dict[str, list[str] | None], want: list[str]
) -> None:
    job = (
        job2()
        .condition("Failed", message="PyTorchJob gpu is failed because 1 Worker replica(s) failed.")
        .build()
    )
    assert build_failure_summary(job, processes, views, tails) == want


def test_leftover_note_names_the_replicas_and_the_command() -> None:
    job = job2().condition("Succeeded").build()
    assert build_leftover_note(job, ["worker-0", "worker-1"], " -n team") == [
        "note: 2 replicas still running after the job Succeeded (cleanPodPolicy: None): worker-0, "
        "worker-1; they run until they exit, as pods do. Stop them: trainop delete gpu -n team"
    ]
    assert build_leftover_note(job, []) == []


def test_a_crash_looping_replica_is_left_running_whether_or_not_its_process_is_up() -> None:
    """cleanPodPolicy None leaves a crash-looping pod to its restartPolicy: it is named as left running
    (and as crash-looping) from its pod, not from whether its process happens to run at this moment."""
    job = job2().restart_policy("OnFailure").condition("Failed").build()
    views = [
        ReplicaView("master-0", "Master", "CrashLoopBackOff", 2, "", Exit(2, "Error")),
        ReplicaView("worker-0", "Worker", "Running", 0, "", None),
        ReplicaView("worker-1", "Worker", "Succeeded", 0, "", Exit(0, "Completed")),
        ReplicaView("worker-2", "Worker", "Terminating", 0, "", None),
    ]
    for running in (["worker-0"], ["master-0", "worker-0"], ["master-0", "worker-0", "worker-2"]):
        left = detect_leftovers(views, running)
        assert left == ["master-0", "worker-0"], running
    assert build_leftover_note(job, left, "", views) == [
        "note: 2 replicas still running after the job Failed (cleanPodPolicy: None): master-0 (in "
        "CrashLoopBackOff: restartPolicy OnFailure restarts it), worker-0; they run until they exit, as pods "
        "do. Stop them: trainop delete gpu"
    ]


@pytest.mark.parametrize(
    ("job", "want"),
    [
        pytest.param(
            job2().condition("Created").condition("Running"),
            "PyTorchJob gpu was deleted by another command while Running, after 7.0s: its replicas were "
            "stopped and its record and logs removed",
            id="deleted while running",
        ),
        pytest.param(
            job2().run_policy(ttlSecondsAfterFinished=0).condition("Succeeded"),
            "PyTorchJob gpu Succeeded; then it was deleted (ttlSecondsAfterFinished: 0) after 7.0s",
            id="removed by its TTL once finished",
        ),
    ],
)
def test_gone_lines(job: JobBuilder, want: str) -> None:
    assert build_gone_lines(job.build(), 7.0) == [want]


def test_state_before_any_condition_is_submitted() -> None:
    assert compute_state(job2().build()) == "Submitted"


def test_failed_replica_is_the_first_to_fail_by_its_last_run_before_the_end() -> None:
    views = [ReplicaView("worker-1", "Worker", "Failed", 0, "", Exit(3, "Error", "disk full"))]
    runs = [
        proc("gpu-worker-0", 0, 1, 9.0),  # a later restart (started after the end) does not count
        proc("gpu-worker-0", 1, 4, 30.0, started=21.0),
        proc("gpu-worker-1", 0, 3, 8.0),
        proc("gpu-master-0", 0, None, None),
        proc("other-0", 0, 0, 2.0),
    ]
    assert detect_failed_replica("gpu", runs, views, finished=20.0) == (
        "worker-1",
        "gpu-worker-1",
        Exit(3, "Error", "disk full"),
        1,
    )
    # Without the end: every container's newest run; a view whose exit differs is not used.
    assert detect_failed_replica("gpu", runs[:2], views) == ("worker-0", "gpu-worker-0", Exit(4, "Error"), 0)
    assert detect_failed_replica("gpu", runs[3:], views) is None


@pytest.mark.parametrize(
    ("built", "want"),
    [
        pytest.param(pod(job2(), "Worker", 0).running().deleting().build(), "Terminating", id="deleting"),
        pytest.param(
            pod(job2(), "Worker", 0)
            .phase("Pending")
            .condition("PodScheduled", "False", "Unschedulable", "0/1 nodes: too many pods")
            .build(),
            "Unschedulable: 0/1 nodes: too many pods",
            id="unschedulable, not for GPUs",
        ),
        pytest.param(
            pod(job2(), "Worker", 0)
            .phase("Pending")
            .condition("PodScheduled", "False", "Unschedulable")
            .build(),
            "Unschedulable",
            id="unschedulable without a message",
        ),
        pytest.param(
            pod(job2(), "Worker", 0).phase("Pending").waiting("ErrImagePull", "no such image").build(),
            "ErrImagePull: no such image",
            id="a pending container's wait, with its message",
        ),
        pytest.param(
            pod(job2(), "Worker", 0).phase("Running").waiting("ContainerCreating").build(),
            "",
            id="a running pod's plain wait is not shown",
        ),
        pytest.param(pod(job2(), "Worker", 0).failed(1).build(), "", id="finished pods do not wait"),
    ],
)
def test_wait_reasons(built: dict[str, Any], want: str) -> None:
    (view,) = build_replica_views(job2().build(), [built], T0)
    assert view.waiting == want
