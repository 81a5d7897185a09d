"""trainop's failure policy on the local backend (docs/failure-policy.md), the same core rules over the
pod statuses the runner reports: the DDP demo with one replica SIGKILLed mid-training restarts every
replica, resumes from its checkpoint and ends with the same accuracy line as an undisturbed run; a
command that cannot start and a GPU that never frees fail the job at their deadlines."""

from __future__ import annotations

import json
import os
import re
import signal
import sys
from pathlib import Path
from typing import Any

import pytest
from local_harness import condition, pod, wait_for

from trainop.backends.local.api import LocalBackend
from trainop.testing.builders import pytorch_job

pytestmark = pytest.mark.integration

DDP = Path(__file__).resolve().parents[3] / "examples" / "pytorch" / "ddp-digits" / "train.py"
RESTART_ON_KILL = json.dumps(
    [{"name": "killed", "action": "RestartJob", "onExitCodes": {"operator": "In", "values": [137]}}]
)


def ddp_job(name: str, env: dict[str, str], annotations: dict[str, str] | None = None) -> dict[str, Any]:
    pytest.importorskip("torch", reason="make e2e-deps installs torch into .venv")
    b = pytorch_job(name).master(1).workers(2).command([sys.executable, str(DDP)])
    for k, v in env.items():
        b = b.env(k, v)
    if annotations:
        b = b.annotations(annotations)
    return b.build_dict()


def lines(backend: LocalBackend, job: str, replica: str = "master-0") -> list[str]:
    return [line.text for line in backend.logs(job, replica=replica)]


def final_line(texts: list[str]) -> str:
    return next((t for t in texts if t.startswith("final test accuracy")), "")


def test_ddp_demo_killed_replica_restarts_the_whole_job_and_resumes_from_its_checkpoint(
    backend: LocalBackend, tmp_path: Path
) -> None:
    epochs = "6"
    backend.submit(ddp_job("base", {"EPOCHS": epochs, "CHECKPOINT": str(tmp_path / "base.pt")}))
    base = backend.wait("base", ["Succeeded", "Failed"], timeout=300)
    assert condition(base, "Succeeded") is not None, lines(backend, "base")
    want = final_line(lines(backend, "base"))

    annotations = {"trainop.dev/failure-policy": RESTART_ON_KILL, "trainop.dev/max-restarts": "2"}
    env = {"EPOCHS": epochs, "CHECKPOINT": str(tmp_path / "ckpt.pt"), "PAUSE_AFTER_EPOCH": "1"}
    backend.submit(ddp_job("kill", env, annotations))
    wait_for(
        lambda: any(t.startswith("epoch  2/") for t in lines(backend, "kill")), "epoch 2 done", timeout=240
    )
    worker = pod(backend, "kill", "kill-worker-1")
    assert worker is not None
    old_uids = {p["metadata"]["uid"] for p in backend.pods("kill")}
    pid = int(worker["status"]["containerStatuses"][0]["containerID"].removeprefix("local://"))
    os.kill(pid, signal.SIGKILL)  # exit code 137, as a runtime reports a SIGKILL
    done = backend.wait("kill", ["Succeeded", "Failed"], timeout=300)
    texts = lines(backend, "kill")
    restarts = next(
        (c for c in (done.status.conditions if done.status else None) or [] if c.type == "JobRestarts"), None
    )
    resumed = next((t for t in texts if t.startswith("resumed from")), "")
    got = {
        "succeeded": condition(done, "Succeeded") is not None,
        "every pod new": not ({p["metadata"]["uid"] for p in backend.pods("kill")} & old_uids),
        "restarts": (restarts.message or "").split(";")[0] if restarts else None,
        "because": bool(
            restarts and "pod kill-worker-1 (Worker) exited with code 137" in (restarts.message or "")
        ),
        "resumed": re.fullmatch(rf"resumed from {re.escape(env['CHECKPOINT'])} after epoch [2-5]", resumed)
        is not None,
        "final": final_line(texts),
    }
    assert got == {
        "succeeded": True,
        "every pod new": True,
        "restarts": "1 whole-job restart(s), 1 counted toward maxRestarts 2",
        "because": True,
        "resumed": True,
        "final": want,
    }, texts
    assert want.startswith("final test accuracy: 0.9")


def test_a_command_that_cannot_start_fails_the_job_at_the_start_error_deadline(backend: LocalBackend) -> None:
    manifest = (
        pytorch_job("nocmd").master(1).workers(1)
        .command(["sleep", "60"], "Master")
        .command(["trainop-no-such-command-xyz"], "Worker")
        .annotations({"trainop.dev/start-error-deadline-seconds": "2"})
        .build_dict()
    )  # fmt: skip
    backend.submit(manifest)
    done = backend.wait("nocmd", ["Failed"], timeout=60)
    failed = condition(done, "Failed")
    assert (failed.reason, failed.message) == (
        "PyTorchJobStartErrorDeadlineExceeded",
        "Job nocmd has failed because pod nocmd-worker-0 container pytorch has been in StartError for 2s "
        "(trainop.dev/start-error-deadline-seconds): failed to start container 'pytorch': exec: "
        '"trainop-no-such-command-xyz": executable file not found in $PATH',
    )


def test_a_replica_waiting_for_a_gpu_past_the_startup_deadline_fails_the_job(
    backend: LocalBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    manifest = (
        pytorch_job("nogpu").master(1)
        .command(["sleep", "60"])
        .gpu("Master", 1)
        .annotations({"trainop.dev/startup-deadline-seconds": "2"})
        .build_dict()
    )  # fmt: skip
    monkeypatch.setenv("TRAINOP_GPUS", "")  # no GPU on this "node"
    backend.submit(manifest)
    done = backend.wait("nogpu", ["Failed"], timeout=60)
    failed = condition(done, "Failed")
    assert (failed.reason, failed.message.split(": PodScheduled")[0]) == (
        "PyTorchJobStartupDeadlineExceeded",
        "Job nogpu has failed because pod nogpu-master-0 did not start within 2s "
        "(trainop.dev/startup-deadline-seconds)",
    ), failed.message
