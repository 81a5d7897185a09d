"""setCondition's rules (contract §4.1), compared as whole condition lists."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from trainop.api.common import JobStatus
from trainop.core.status import (
    build_condition,
    build_replica_status,
    compute_succeeded_fixup,
    detect_condition_kept,
    set_condition,
)

T0 = datetime(2024, 1, 1, tzinfo=UTC)
T1 = T0 + timedelta(seconds=30)


def c(
    ctype: str, status: str = "True", reason: str | None = None, msg: str = "m", at: datetime = T0
) -> dict[str, Any]:
    """A condition as JSON; ``at`` is both timestamps unless a test builds the dict itself."""
    stamp = at.strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "type": ctype,
        "status": status,
        "reason": reason if reason is not None else f"PyTorchJob{ctype}",
        "message": msg,
        "lastUpdateTime": stamp,
        "lastTransitionTime": stamp,
    }


def status_of(*conds: dict[str, Any]) -> JobStatus:
    return JobStatus.model_validate({"conditions": list(conds)})


@pytest.mark.parametrize(
    ("before", "new", "want", "want_changed"),
    [
        pytest.param([], c("Created", at=T1), [c("Created", at=T1)], True, id="first condition is appended"),
        pytest.param(
            [c("Created"), c("Running")],
            c("Running", msg="other message", at=T1),
            [c("Created"), c("Running")],
            False,
            id="same type, status and reason is a no-op: message and timestamps kept",
        ),
        pytest.param(
            [c("Running", reason="PyTorchJobRunning"), c("Created")],
            c("Running", reason="PyTorchJobOther", msg="n", at=T1),
            [
                c("Created"),
                {
                    **c("Running", reason="PyTorchJobOther", msg="n", at=T1),
                    "lastTransitionTime": "2024-01-01T00:00:00Z",
                },
            ],
            True,
            id="same type and status, new reason: lastTransitionTime kept, moved to the end",
        ),
        pytest.param(
            [c("Created"), c("Restarting")],
            c("Running", at=T1),
            [c("Created"), c("Running", at=T1)],
            True,
            id="Running removes Restarting",
        ),
        pytest.param(
            [c("Created"), c("Running")],
            c("Restarting", at=T1),
            [c("Created"), c("Restarting", at=T1)],
            True,
            id="Restarting removes Running",
        ),
        pytest.param(
            [c("Created"), c("Running", msg="running")],
            c("Succeeded", at=T1),
            [c("Created"), c("Running", "False", msg="running"), c("Succeeded", at=T1)],
            True,
            id="Succeeded flips Running to False keeping its reason, message and timestamps",
        ),
        pytest.param(
            [c("Created"), c("Running")],
            c("Failed", at=T1),
            [c("Created"), c("Running", "False"), c("Failed", at=T1)],
            True,
            id="Failed flips Running to False",
        ),
        pytest.param(
            [c("Created"), c("Running", "False"), c("Failed")],
            c("Running", at=T1),
            [c("Created"), c("Running", "False"), c("Failed")],
            False,
            id="Failed is terminal: nothing changes any more",
        ),
        pytest.param(
            [c("Created"), c("Failed", "False")],
            c("Running", at=T1),
            [c("Created"), c("Failed", "False"), c("Running", at=T1)],
            True,
            id="only a True Failed is terminal",
        ),
        pytest.param(
            [c("Suspended"), c("Created")],
            c("Suspended", "False", reason="PyTorchJobResumed", at=T1),
            [c("Created"), c("Suspended", "False", reason="PyTorchJobResumed", at=T1)],
            True,
            id="a status change replaces the condition and stamps a new transition",
        ),
    ],
)
def test_set_condition(
    before: list[dict[str, Any]], new: dict[str, Any], want: list[dict[str, Any]], want_changed: bool
) -> None:
    status = status_of(*before)
    # What a pass checks first, to skip building a condition that would change nothing.
    kept = detect_condition_kept(status, new["type"], new["status"], new["reason"])
    cond = build_condition(new["type"], new["status"], new["reason"], new["message"], T1)
    changed = set_condition(status, cond)
    assert (status.to_dict().get("conditions"), changed, kept) == (want, want_changed, not want_changed)


def test_set_condition_leaves_the_input_conditions_alone() -> None:
    original = status_of(c("Created"), c("Running"))
    before = original.to_dict()
    copy = original.model_copy(update={"conditions": list(original.conditions or [])})
    set_condition(copy, build_condition("Succeeded", "True", "PyTorchJobSucceeded", "done", T1))
    assert original.to_dict() == before


@pytest.mark.parametrize(
    ("counts", "selector", "want"),
    [
        pytest.param(
            (0, 0, 0), None, {}, id="no pods: an empty entry, zero counts omitted as Go writes them"
        ),
        pytest.param(
            (2, 1, 0), "s", {"active": 2, "succeeded": 1, "selector": "s"}, id="counts and selector"
        ),
    ],
)
def test_build_replica_status(
    counts: tuple[int, int, int], selector: str | None, want: dict[str, Any]
) -> None:
    assert build_replica_status(*counts, selector).to_dict() == want


def test_succeeded_fixup_moves_active_into_succeeded() -> None:
    status = JobStatus.model_validate(
        {
            "replicaStatuses": {
                "Master": {"succeeded": 1},
                "Worker": {"active": 2, "succeeded": 1, "selector": "s"},
            }
        }
    )
    compute_succeeded_fixup(status)
    assert status.to_dict() == {
        "replicaStatuses": {"Master": {"succeeded": 1}, "Worker": {"succeeded": 3, "selector": "s"}}
    }
