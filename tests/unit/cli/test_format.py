"""``trainop get pods``' STATUS column, as kubectl's printPod writes it."""

from __future__ import annotations

from typing import Any

import pytest

from trainop.cli.format import format_pod_status


def _cs(state: dict[str, Any], ready: bool = False) -> dict[str, Any]:
    return {"name": "c", "ready": ready, "state": state}


def _term(code: int, reason: str = "") -> dict[str, Any]:
    return {"terminated": {"exitCode": code, **({"reason": reason} if reason else {})}}


def _wait(reason: str) -> dict[str, Any]:
    return {"waiting": {"reason": reason}}


RUNNING = {"running": {"startedAt": "2026-01-01T00:00:00Z"}}


@pytest.mark.parametrize(
    ("pod", "want"),
    [
        pytest.param({}, "Pending", id="no status yet"),
        pytest.param({"status": {"phase": "Running", "containerStatuses": [_cs(RUNNING, True)]}}, "Running"),
        pytest.param({"status": {"phase": "Failed", "reason": "Evicted"}}, "Evicted", id="the pod's reason"),
        pytest.param(
            {"status": {"phase": "Pending", "initContainerStatuses": [_cs(_wait("ErrImagePull"))]}},
            "Init:ErrImagePull",
            id="an init container waits on something",
        ),
        pytest.param(
            {"status": {"initContainerStatuses": [_cs(_wait("PodInitializing")), _cs(_wait("x"))]}},
            "Init:0/2",
            id="an init container about to start: its position",
        ),
        pytest.param(
            {"status": {"initContainerStatuses": [_cs(_term(0, "Completed")), _cs(RUNNING)]}},
            "Init:1/2",
            id="the first init container done, the second running",
        ),
        pytest.param(
            {"status": {"initContainerStatuses": [_cs(_term(3))], "containerStatuses": [_cs(RUNNING, True)]}},
            "Init:ExitCode:3",
            id="an init container failed without a reason",
        ),
        pytest.param(
            {"status": {"initContainerStatuses": [_cs(_term(1, "Error"))]}}, "Init:Error", id="init failed"
        ),
        pytest.param(
            {
                "status": {
                    "phase": "Running",
                    "initContainerStatuses": [_cs(_term(0, "Completed"))],
                    "containerStatuses": [_cs(_wait("CrashLoopBackOff"))],
                }
            },
            "CrashLoopBackOff",
            id="init done: the container's wait",
        ),
        pytest.param(
            {"status": {"phase": "Failed", "containerStatuses": [_cs(_term(137))]}},
            "ExitCode:137",
            id="a container ended without a reason",
        ),
        pytest.param(
            {"status": {"phase": "Running", "containerStatuses": [_cs(_wait("A")), _cs(_term(1, "Error"))]}},
            "A",
            id="the first container's state wins",
        ),
        pytest.param(
            {
                "status": {
                    "phase": "Running",
                    "containerStatuses": [_cs(RUNNING, True), _cs(_term(0, "Completed"))],
                }
            },
            "Running",
            id="Completed while another container runs and is ready",
        ),
        pytest.param(
            {"status": {"phase": "Running", "containerStatuses": [_cs(RUNNING), _cs(_term(0, "Completed"))]}},
            "Completed",
            id="Completed while another container runs unready",
        ),
        pytest.param(
            {
                "metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z"},
                "status": {"phase": "Running", "containerStatuses": [_cs(RUNNING, True)]},
            },
            "Terminating",
            id="being deleted",
        ),
    ],
)
def test_pod_status(pod: dict[str, Any], want: str) -> None:
    assert format_pod_status(pod) == want
