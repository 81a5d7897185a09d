"""MPI on one machine: the ConfigMap volume is materialised, /etc/mpi paths are rewritten to it, and
the rsh agent that replaces kubexec.sh runs a command in a worker replica's context (its env and
working directory), the way ``kubectl exec`` does on Kubernetes (contract §3.9)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from local_harness import condition

from trainop.backends.local.api import LocalBackend
from trainop.testing.builders import mpi_job

pytestmark = pytest.mark.integration

# Wait for worker-1 to be exec-able (the launcher does not wait for workers, §3.9), then use it.
LAUNCHER = (
    "for i in $(seq 1 200); do /etc/mpi/kubexec.sh agent-worker-1 true 2>/dev/null && break; sleep "
    "0.1; done; cat /etc/mpi/hostfile; "
    "/etc/mpi/kubexec.sh agent-worker-1 'echo ctx=$POD_NAME dir=`pwd` "
    "launcher_env=${OMPI_MCA_plm_rsh_agent:-unset}'; "
    "/etc/mpi/kubexec.sh agent-worker-9 true || echo unknown replica refused"
)


def worker_context(template: dict[str, Any]) -> None:
    container = template["spec"]["containers"][0]
    container.pop("command", None)  # MPI workers default to `sleep 365d` (§3.9)
    container["workingDir"] = "work"
    container["env"] = [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]


def test_rsh_agent_runs_commands_in_a_worker_context(backend: LocalBackend, tmp_path: Path) -> None:
    (tmp_path / "work").mkdir()
    manifest = (
        mpi_job("agent")
        .launcher(1)
        .workers(2)
        .command(["sh", "-c", LAUNCHER], "Launcher")
        .template(worker_context, "Worker")
        .run_policy(clean_pod_policy="Running")
        .build_dict()
    )
    backend.submit(manifest, base_dir=tmp_path)
    job = backend.wait("agent", ["Succeeded", "Failed"], timeout=90)
    lines = [line.text for line in backend.logs("agent", replica="launcher")]
    got = {"succeeded": condition(job, "Succeeded") is not None, "launcher output": lines}
    want = {
        "succeeded": True,
        "launcher output": [
            "agent-worker-0 slots=1",
            "agent-worker-1 slots=1",
            f"ctx=agent-worker-1 dir={tmp_path / 'work'} launcher_env=unset",
            "trainop rsh agent: replica agent-worker-9 of this job is not running on this machine",
            "unknown replica refused",
        ],
    }
    assert got == want
