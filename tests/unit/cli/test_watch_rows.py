"""``get -w``: after the table, a row only when something it shows changed; the clock moving ``AGE``
and a restart's ``(5s ago)`` on is not a change (kubectl's watch prints on events, not on time)."""

from __future__ import annotations

import io
from typing import Any

import pytest

from trainop.cli.format import build_pod_row
from trainop.cli.listing import POD_COLUMNS, Table, watch_rows

T0 = 1_800_000_000.0


def restarted_pod(restarts: int = 1, status: str = "running") -> dict[str, Any]:
    state = (
        {"running": {"startedAt": "2027-01-15T08:00:05Z"}}
        if status == "running"
        else {"waiting": {"reason": "CrashLoopBackOff"}}
    )
    return {
        "metadata": {"name": "j-master-0", "creationTimestamp": "2027-01-15T08:00:00Z"},
        "spec": {"containers": [{"name": "pytorch"}]},
        "status": {
            "phase": "Running",
            "containerStatuses": [
                {
                    "name": "pytorch",
                    "ready": status == "running",
                    "restartCount": restarts,
                    "state": state,
                    "lastState": {"terminated": {"exitCode": 1, "finishedAt": "2027-01-15T08:00:04Z"}},
                }
            ],
        },
    }


def watched(pods_over_time: list[dict[str, Any]]) -> list[str]:
    """What ``get pods -w`` prints while the pod goes through ``pods_over_time``, a second apart."""
    out = io.StringIO()
    table = Table(POD_COLUMNS, out)
    frames = iter(enumerate(pods_over_time))

    def snapshot() -> dict[tuple[str, str], list[str]]:
        try:
            i, pod = next(frames)
        except StopIteration:
            raise KeyboardInterrupt from None
        return {("default", "j-master-0"): build_pod_row(pod, T0 + i)}

    first = snapshot()
    table.print_rows(list(first.values()), header=True)
    with pytest.raises(KeyboardInterrupt):
        watch_rows(snapshot, table, lambda r: r, first, lambda r: r[:4], poll=0.0)
    return [line.split()[2] for line in out.getvalue().splitlines()[1:]]


@pytest.mark.parametrize(
    ("pods", "want"),
    [
        pytest.param([restarted_pod()] * 4, ["Running"], id="a restarted pod, nothing changes: one row"),
        pytest.param(
            [restarted_pod(), restarted_pod(), restarted_pod(2, "waiting")],
            ["Running", "CrashLoopBackOff"],
            id="its next crash: a row",
        ),
    ],
)
def test_get_w_prints_a_row_only_when_something_shown_changed(
    pods: list[dict[str, Any]], want: list[str]
) -> None:
    assert watched(pods) == want
