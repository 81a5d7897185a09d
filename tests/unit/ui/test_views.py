"""The web view's pure parts: list rows, one job's page, progress series, and the progress contract's
body both ways (what training code sends, what the local endpoint accepts)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from trainop.api.constants import LABEL_KUEUE_QUEUE
from trainop.backends.base import JobEvent
from trainop.cli.selectors import parse_selector
from trainop.core.progress import ProgressError, check_trainer_status
from trainop.testing.builders import pod, pytorch_job
from trainop.trainer_progress import build_trainer_status
from trainop.ui.views import build_job_page, build_job_row, build_progress, select_rows

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def _metrics(**values: Any) -> dict[str, Any]:
    return {"metrics": [{"name": k, "value": str(v)} for k, v in values.items()]}


@pytest.mark.parametrize(
    ("posts", "want"),
    [
        pytest.param(
            [
                ("0", 1.0, _metrics(loss=2.0, epoch=1)),
                ("1", 1.1, _metrics(loss=2.1, epoch=1)),
                ("0", 2.0, _metrics(loss=1.0, epoch=2)),
            ],
            {"x": "epoch", "series": {"loss": {"0": [(1.0, 2.0), (2.0, 1.0)], "1": [(1.0, 2.1)]}}},
            id="x from the epoch metric, one curve per rank",
        ),
        pytest.param(
            [("0", 1.0, _metrics(loss=2.0, epoch=1)), ("0", 1.5, _metrics(loss=1.5, epoch=1))],
            {"x": "epoch", "series": {"loss": {"0": [(1.0, 1.5)]}}},
            id="a later post for the same epoch replaces the earlier: one point per epoch per rank",
        ),
        pytest.param(
            [("", 1.0, _metrics(loss=3)), ("", 2.0, _metrics(loss=2))],
            {"x": "report", "series": {"loss": {"?": [(1.0, 3.0), (2.0, 2.0)]}}},
            id="without an epoch or step the x is the post's number",
        ),
        pytest.param(
            [("0", 1.0, _metrics(loss="nan", note="warming up", totalEpochs=5, currentEpoch=1, acc=0.5))],
            {"x": "currentEpoch", "series": {"acc": {"0": [(1.0, 0.5)]}}},
            id="not plotted: NaN, text, totals and the x itself",
        ),
        pytest.param(
            [
                (
                    "",
                    1.0,
                    _metrics(loss=2.5, total_steps=10, current_step=2, current_epoch=0.4, learning_rate=1e-4),
                )
            ],
            {
                "x": "current_step",
                "series": {"loss": {"?": [(2.0, 2.5)]}, "learning_rate": {"?": [(2.0, 1e-4)]}},
            },
            id="transformers' KubeflowCallback: its step is the x",
        ),
        pytest.param([], {"x": "report", "series": {}}, id="nothing posted"),
    ],
)
def test_build_progress(posts: list[Any], want: dict[str, Any]) -> None:
    got = build_progress(posts)
    assert {"x": got["x"], "series": got["series"]} == want
    assert got["latest"] == (dict(posts[-1][2]) if posts else None)


def test_trainer_status_body_is_upstreams_shape() -> None:
    got = build_trainer_status(
        percentage=45.7, remaining_seconds=-3, metrics={"loss": 0.25, "epoch": 2}, now=NOW
    )
    assert got == {
        "trainerStatus": {
            "lastUpdatedTime": "2026-01-02T03:04:05Z",
            "progressPercentage": 45,
            "estimatedRemainingSeconds": 0,
            "metrics": [{"name": "loss", "value": "0.25"}, {"name": "epoch", "value": "2"}],
        }
    }
    assert check_trainer_status(got) == got["trainerStatus"]  # what we send, our endpoint takes


@pytest.mark.parametrize(
    ("body", "error"),
    [
        pytest.param([], 'a "trainerStatus" object', id="not an object"),
        pytest.param(
            {"trainerStatus": {"progressPercentage": 101}},
            "trainerStatus.progressPercentage: must be an integer 0 to 100",
            id="over 100",
        ),
        pytest.param(
            {"trainerStatus": {"progressPercentage": True}},
            "trainerStatus.progressPercentage",
            id="a bool is no integer",
        ),
        pytest.param(
            {"trainerStatus": {"estimatedRemainingSeconds": -1}},
            "trainerStatus.estimatedRemainingSeconds: must be an integer >= 0",
            id="negative seconds",
        ),
        pytest.param(
            {"trainerStatus": {"metrics": {"loss": 1}}},
            "trainerStatus.metrics: must be a list",
            id="metrics as a map",
        ),
        pytest.param(
            {"trainerStatus": {"metrics": [{"name": "", "value": "1"}]}},
            "trainerStatus.metrics[0].name",
            id="no name",
        ),
        pytest.param(
            {"trainerStatus": {"metrics": [{"name": "loss", "value": 0.4}]}},
            "trainerStatus.metrics[0].value: must be a string (upstream serializes numbers as strings",
            id="a number value",
        ),
    ],
)
def test_a_post_off_the_contract_names_its_field(body: Any, error: str) -> None:
    with pytest.raises(ProgressError) as info:
        check_trainer_status(body)
    assert error in str(info.value)


def test_job_row_counts_restarts_and_reads_the_queue() -> None:
    job = pytorch_job("a").master(1).workers(2).labels(**{LABEL_KUEUE_QUEUE: "team-a", "x": "1"}).build()
    pods = [pod(job, "Worker", 0).running().restart_count(2).build(), pod(job, "Worker", 1).running().build()]
    row = build_job_row(job, pods)
    assert (row["restarts"], row["queue"], row["total"], row["labels"]) == (
        2,
        "team-a",
        3,
        {LABEL_KUEUE_QUEUE: "team-a", "x": "1"},
    )
    assert build_job_row(job, None)["restarts"] is None  # pods unreadable: unknown, not 0


def test_select_rows_by_kind_and_label() -> None:
    rows = [
        {"kind": "PyTorchJob", "labels": {"a": "1"}, "n": 1},
        {"kind": "TFJob", "labels": {"a": "2"}, "n": 2},
    ]
    assert [r["n"] for r in select_rows(rows, "tfjob", None)] == [2]
    assert [r["n"] for r in select_rows(rows, None, parse_selector("a in (1)"))] == [1]
    assert [r["n"] for r in select_rows(rows, None, None)] == [1, 2]


def test_job_page_shows_each_replica_and_says_what_it_could_not_read() -> None:
    job = pytorch_job("a").master(1).workers(1).build()
    pods = [
        pod(job, "Master", 0).running().build(),
        pod(job, "Worker", 0)
        .waiting("CrashLoopBackOff", "back-off 10s restarting failed container")
        .restart_count(3)
        .build(),
    ]
    events = [JobEvent("Warning", "BackOff", "Back-off restarting failed container", 4, 1.0, 2.0)]
    page = build_job_page(job, pods, events, 100.0)
    replicas = {r["name"]: r for r in page["replicas"]}
    assert replicas["master-0"]["phase"] == "Running"
    assert replicas["worker-0"]["phase"] == "CrashLoopBackOff" and replicas["worker-0"]["restarts"] == 3
    assert replicas["worker-0"]["waiting"].startswith("CrashLoopBackOff: back-off 10s")
    assert page["events"][0]["reason"] == "BackOff"
    hidden = build_job_page(job, None, None, 100.0, {"replicas": "pods is forbidden"})
    assert (hidden["replicas"], hidden["events"], hidden["errors"]) == (
        None,
        None,
        {"replicas": "pods is forbidden"},
    )
