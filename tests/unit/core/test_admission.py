"""Local gang admission (issue 11): what a job's gang asks for, how TRAINOP_PRIORITY_CLASSES ranks
it, and whether it starts now: all its GPUs at once, priority first, then queue, then creation."""

from __future__ import annotations

from typing import Any

import pytest

from trainop.api.defaults import apply_defaults
from trainop.core.admission import (
    Admission,
    GangRequest,
    build_gang_request,
    build_queue_order,
    compute_admission,
    compute_gang_gpus,
    compute_priority,
    detect_ahead,
    parse_priority_classes,
)
from trainop.testing.builders import JobBuilder, mpi_job, pytorch_job


def request(
    name: str,
    gpus: int = 2,
    *,
    priority: int = 0,
    priority_class: str = "",
    queue: str = "default",
    created_at: float = 0.0,
    pods: int = 2,
    error: str = "",
) -> GangRequest:
    return GangRequest(
        uid=f"uid-{name}",
        job=f"default/{name}",
        pods=pods,
        gpus=gpus,
        priority=priority,
        priority_class=priority_class,
        queue=queue,
        created_at=created_at,
        error=error,
    )


@pytest.mark.parametrize(
    ("text", "want"),
    [
        pytest.param(None, ({}, ""), id="unset: no local classes"),
        pytest.param("high=1000, low=-10,", ({"high": 1000, "low": -10}, ""), id="name=integer pairs"),
        pytest.param(
            "high=1000,low",
            (
                {},
                'TRAINOP_PRIORITY_CLASSES: "low" is not name=integer; write it like '
                "TRAINOP_PRIORITY_CLASSES=high=1000,low=-10 and resubmit the job",
            ),
            id="an entry without a value says which and how to write it",
        ),
        pytest.param(
            "high=much",
            (
                {},
                'TRAINOP_PRIORITY_CLASSES: "high=much" is not name=integer; write it like '
                "TRAINOP_PRIORITY_CLASSES=high=1000,low=-10 and resubmit the job",
            ),
            id="a value that is not an integer",
        ),
    ],
)
def test_parse_priority_classes(text: str | None, want: tuple[dict[str, int], str]) -> None:
    assert parse_priority_classes(text) == want


@pytest.mark.parametrize(
    ("name", "want"),
    [
        pytest.param(None, 0, id="no class: 0, as a pod without one"),
        pytest.param("high", 1000, id="a local class"),
        pytest.param("system-node-critical", 2_000_001_000, id="Kubernetes' built-in class"),
        pytest.param("unknown", 0, id="a class this machine does not define: 0"),
    ],
)
def test_compute_priority(name: str | None, want: int) -> None:
    assert compute_priority(name, {"high": 1000}) == want


def gpu_job(b: JobBuilder) -> Any:
    return apply_defaults(b.uid("u").build())


@pytest.mark.parametrize(
    ("job", "want"),
    [
        pytest.param(
            pytorch_job("a").master(1).workers(3).gpu("Master", 1).gpu("Worker", 2),
            (4, 7),
            id="no minAvailable: every replica, every GPU",
        ),
        pytest.param(
            pytorch_job("a")
            .master(1)
            .workers(3)
            .gpu("Worker", 2)
            .run_policy(scheduling_policy={"min_available": 2}),
            (2, 2),
            id="minAvailable 2: the Master first (no GPU), then one Worker",
        ),
        pytest.param(
            pytorch_job("a")
            .master(1)
            .workers(3)
            .gpu("Worker", 2)
            .run_policy(scheduling_policy={"min_available": 2, "min_resources": {"nvidia.com/gpu": "5"}}),
            (2, 5),
            id="minResources names the GPUs outright",
        ),
        pytest.param(mpi_job("a").launcher(1).workers(2).gpu("Worker", 1), (3, 2), id="MPI: launcher first"),
        pytest.param(pytorch_job("a").master(1).workers(1), (2, 0), id="no GPU anywhere"),
    ],
)
def test_compute_gang_gpus(job: JobBuilder, want: tuple[int, int]) -> None:
    assert compute_gang_gpus(gpu_job(job)) == want


def test_build_gang_request() -> None:
    job = apply_defaults(
        pytorch_job("a")
        .namespace("team")
        .master(1)
        .workers(1)
        .gpu("Worker", 1)
        .run_policy(scheduling_policy={"priority_class": "high", "queue": "research"})
        .build()
    )
    got = build_gang_request(job, "uid-a", 5.0, {"TRAINOP_PRIORITY_CLASSES": "high=1000"})
    want = GangRequest("uid-a", "team/a", 2, 1, 1000, "high", "research", 5.0, "")
    assert got == want
    bad = build_gang_request(job, "uid-a", 5.0, {"TRAINOP_PRIORITY_CLASSES": "high"})
    assert (bad.priority, bad.error.startswith('TRAINOP_PRIORITY_CLASSES: "high" is not')) == (0, True)


@pytest.mark.parametrize(
    ("other", "job", "want"),
    [
        pytest.param(request("o", priority=10, created_at=9), request("j"), True, id="higher priority"),
        pytest.param(request("o", priority=-1, created_at=0), request("j", created_at=9), False, id="lower"),
        pytest.param(request("o", created_at=1), request("j", created_at=2), True, id="same queue, earlier"),
        pytest.param(request("o", created_at=3), request("j", created_at=2), False, id="same queue, later"),
        pytest.param(
            request("o", queue="other", created_at=1),
            request("j", created_at=2),
            False,
            id="another queue at the same priority does not hold it up",
        ),
    ],
)
def test_detect_ahead(other: GangRequest, job: GangRequest, want: bool) -> None:
    assert detect_ahead(other, job) is want


def test_build_queue_order_priority_then_queue_then_creation() -> None:
    waiting = [
        request("late", created_at=3),
        request("b-queue", queue="b", created_at=0),
        request("high", priority=5, created_at=9),
        request("early", created_at=1),
    ]
    assert [r.job for r in build_queue_order(waiting)] == [
        "default/high",
        "default/b-queue",
        "default/early",
        "default/late",
    ]


INVENTORY = ("0", "1", "2", "3")


@pytest.mark.parametrize(
    ("job", "waiting", "held", "want"),
    [
        pytest.param(request("j"), [], {}, Admission(True), id="free GPUs, nobody waiting: admitted"),
        pytest.param(
            request("j", gpus=4),
            [],
            {"0": "default/x"},
            Admission(
                False,
                "gang of 2 pods needs 4 GPUs at once, 3 of 4 are free (held by default/x: 1); its pods "
                "start together when enough are released",
            ),
            id="not enough free: all or nothing, naming who holds them",
        ),
        pytest.param(
            request("j"),
            [request("hi", priority=1000, priority_class="high", created_at=5)],
            {},
            Admission(
                False,
                "gang of 2 pods needs 2 GPUs at once and waits behind default/hi (priorityClass high = 1000, "
                "queue default), which needs 2 GPUs and starts first",
            ),
            id="a higher priority waits: it goes first even on free GPUs",
        ),
        pytest.param(
            request("j", created_at=5),
            [request("early", created_at=1)],
            {},
            Admission(
                False,
                "gang of 2 pods needs 2 GPUs at once and waits behind default/early (priority 0, queue "
                "default), which needs 2 GPUs and starts first",
            ),
            id="same priority and queue: first come first served",
        ),
        pytest.param(
            request("j", created_at=5),
            [request("other", queue="b", created_at=1)],
            {},
            Admission(True),
            id="another queue at the same priority: not held up",
        ),
        pytest.param(
            request("j", priority=10),
            [request("low", created_at=0)],
            {"0": "default/x", "1": "default/x"},
            Admission(True),
            id="a lower priority waiting does not hold it up",
        ),
        pytest.param(
            request("j", created_at=5),
            [request("huge", gpus=9, created_at=0), request("bad", error="x", created_at=0)],
            {},
            Admission(True),
            id="a job that can never fit or cannot be ranked holds nobody up",
        ),
        pytest.param(
            request("j", gpus=5),
            [],
            {},
            Admission(
                False,
                "gang of 2 pods needs 5 GPUs at once, more than this machine has (4): lower "
                "spec.runPolicy.schedulingPolicy.minAvailable or the replicas' nvidia.com/gpu limits",
            ),
            id="more than the machine has: says what to change",
        ),
        pytest.param(
            request("j", error="TRAINOP_PRIORITY_CLASSES: bad"),
            [],
            {},
            Admission(
                False,
                "gang of 2 pods needs 2 GPUs at once and cannot be queued: TRAINOP_PRIORITY_CLASSES: bad",
            ),
            id="a malformed priority mapping: waits, saying why",
        ),
    ],
)
def test_compute_admission(
    job: GangRequest, waiting: list[GangRequest], held: dict[str, str], want: Admission
) -> None:
    assert compute_admission(job, waiting, INVENTORY, held) == want
