"""kubelet restart semantics on the local backend: OnFailure restarts a container in place (same pod,
restartCount + 1, lastState); ExitCode with a retryable code (≥ 128) has the core recreate the pod."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from local_harness import condition, pod, wait_for

from trainop.backends.local.api import LocalBackend
from trainop.testing.builders import pytorch_job

pytestmark = pytest.mark.integration


def test_on_failure_restarts_the_container_in_place(backend: LocalBackend, tmp_path: Path) -> None:
    marker = tmp_path / "failed-once"
    # Worker 1 fails on its first attempt only; everyone then runs until the master ends.
    worker = (
        f'echo "attempt of $RANK"; if [ "$RANK" = 2 ] && [ ! -f {marker} ]; then touch {marker}; '
        "exit 1; fi; sleep 3"
    )
    manifest = (
        pytorch_job("inplace")
        .master(1)
        .workers(2)
        .restart_policy("OnFailure")
        .command(["sh", "-c", "sleep 6"], "Master")
        .command(["sh", "-c", worker], "Worker")
        .build_dict()
    )
    backend.submit(manifest)
    first = wait_for(lambda: pod(backend, "inplace", "inplace-worker-1"), "worker-1 to exist")
    restarted = wait_for(
        lambda: (
            (p := pod(backend, "inplace", "inplace-worker-1"))
            and p["status"].get("containerStatuses")
            and p["status"]["containerStatuses"][0]["restartCount"] == 1
            and "running" in p["status"]["containerStatuses"][0]["state"]
            and p
        ),
        "worker-1 to run again after its restart",
    )
    status = restarted["status"]["containerStatuses"][0]
    got = {
        "same pod": restarted["metadata"]["uid"] == first["metadata"]["uid"],
        "phase": restarted["status"]["phase"],
        "restartCount": status["restartCount"],
        "last exit": (
            status["lastState"]["terminated"]["exitCode"],
            status["lastState"]["terminated"]["reason"],
        ),
    }
    assert got == {"same pod": True, "phase": "Running", "restartCount": 1, "last exit": (1, "Error")}

    done = backend.wait("inplace", ["Succeeded", "Failed"], timeout=60)
    assert condition(done, "Succeeded") is not None
    current = [line.text for line in backend.logs("inplace", replica="worker-1")]
    previous = [line.text for line in backend.logs("inplace", replica="worker-1", previous=True)]
    assert (previous, current) == (["attempt of 2"], ["attempt of 2"])


def add_pod_uid_env(template: dict[str, Any]) -> None:
    container = template["spec"]["containers"][0]
    container.setdefault("env", []).append(
        {"name": "POD_UID", "valueFrom": {"fieldRef": {"fieldPath": "metadata.uid"}}}
    )


def test_exit_code_137_recreates_the_pod(backend: LocalBackend, tmp_path: Path) -> None:
    marker = tmp_path / "killed-once"
    # "$$$$": the kubelet turns "$$" into "$" in commands (and so does the local backend).
    worker = f"echo $POD_UID; if [ ! -f {marker} ]; then touch {marker}; kill -9 $$$$; fi; sleep 1"
    manifest = (
        pytorch_job("retry")
        .master(1)
        .workers(1)
        .restart_policy("ExitCode")
        .command(["sh", "-c", "sleep 4"], "Master")
        .command(["sh", "-c", worker], "Worker")
        .template(add_pod_uid_env, "Worker")
        .build_dict()
    )
    backend.submit(manifest)
    done = backend.wait("retry", ["Succeeded", "Failed"], timeout=60)
    details = backend.describe("retry")
    uids = [
        [line.text for line in backend.logs("retry", replica="worker-0", previous=previous)]
        for previous in (True, False)
    ]
    conditions = (done.status.conditions if done.status else None) or []
    got = {
        "state": [c.type for c in conditions if c.status == "True"][-1],
        "restarting seen": any(e.reason == "PyTorchJobRestarting" for e in details.events),
        "exit 137 seen": any(
            e.message == "Pod: default.retry-worker-0 exited with code 137" for e in details.events
        ),
        "a new pod (uid) ran the second attempt": len(uids[0]) == len(uids[1]) == 1 and uids[0] != uids[1],
    }
    want = {
        "state": "Succeeded",
        "restarting seen": True,
        "exit 137 seen": True,
        "a new pod (uid) ran the second attempt": True,
    }
    assert got == want
