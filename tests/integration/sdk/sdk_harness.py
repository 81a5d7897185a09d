"""The SDK scenario harness: ``SDKEnv``, so each scenario runs unchanged on both backends.

Local: a TrainingClient on a fresh ``$TRAINOP_HOME``; replicas are real processes whose command decides
their fate. Kubernetes: the test control plane (``k8s_env``) with the CRDs and trainop's operator
running, a fresh namespace per test; kwok decides pod fates from the ``sim.trainop.dev/*`` annotations.
Each job the harness builds carries both, so one definition works on either backend.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from trainop.sdk import TrainingClient
from trainop.testing.testenv import SIM_EXIT_CODE, SIM_OUTCOME, SIM_RUN_DURATION

REPO = Path(__file__).resolve().parents[3]
CRD_DIR = REPO / "manifests" / "crds"

# The torchrun scenario needs torch in this interpreter; missing, it fails with this command.
TORCH_INSTALL = f"{sys.executable} -m pip install -e '{REPO}[torch]'   (or: make .venv/.stamp-extra-torch)"


def wait_until(
    check: Callable[[], Any], timeout: float = 60.0, what: str = "condition", interval: float = 0.2
) -> Any:
    """Poll ``check`` until it returns something truthy; fail the test with ``what`` on timeout."""
    deadline = time.monotonic() + timeout
    while True:
        got = check()
        if got:
            return got
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:g}s waiting for {what} (last: {got!r})")
        time.sleep(interval)


def replica_code(lines: list[str], pause_s: float, exit_code: int) -> str:
    """Python for one replica: print each line (tagged with the replica's RANK), pausing between them."""
    return (
        "import os, sys, time\n"
        f"for i, line in enumerate({lines!r}):\n"
        f"    if i: time.sleep({pause_s})\n"
        "    print(f\"{line} rank={os.environ.get('RANK')}\", flush=True)\n"
        f"sys.exit({exit_code})\n"
    )


@dataclass
class SDKEnv:
    """What a scenario needs: the client, and builders for jobs that behave the same on both backends."""

    backend: str
    client: TrainingClient
    namespace: str
    k8s: Any = None  # the K8sEnv on Kubernetes
    created: list[tuple[str, str]] = field(default_factory=list)

    def job(
        self,
        name: str,
        *,
        workers: int = 0,
        lines: tuple[str, ...] = ("hello",),
        pause_s: float = 0.3,
        exit_code: int = 0,
        forever: bool = False,
    ) -> dict[str, Any]:
        """A PyTorchJob (restartPolicy Never): each replica prints ``lines`` then exits ``exit_code``.

        ``forever``: the replicas keep running (no kwok outcome; a long sleep locally).
        """
        run_s = max(1.0, pause_s * len(lines))
        annotations: dict[str, str] = {}
        if not forever:
            annotations = {
                SIM_OUTCOME: "succeed" if exit_code == 0 else "fail",
                SIM_RUN_DURATION: f"{run_s:g}s",
                SIM_EXIT_CODE: str(exit_code),
            }
        code = replica_code(list(lines), pause_s, exit_code)
        if forever:
            code = "import time\nprint('running', flush=True)\ntime.sleep(600)\n"
        template = {
            "metadata": {"annotations": annotations},
            "spec": {
                "containers": [
                    {
                        "name": "pytorch",
                        "image": "docker.io/library/python:3.11",
                        "command": ["python", "-u", "-c", code],
                    }
                ]
            },
        }
        specs: dict[str, Any] = {"Master": {"replicas": 1, "restartPolicy": "Never", "template": template}}
        if workers:
            specs["Worker"] = {"replicas": workers, "restartPolicy": "Never", "template": template}
        return {
            "apiVersion": "kubeflow.org/v1",
            "kind": "PyTorchJob",
            "metadata": {"name": name, "namespace": self.namespace},
            "spec": {"runPolicy": {}, "pytorchReplicaSpecs": specs},
        }

    def drive_pods(self, name: str, count: int, outcome: str = "succeed") -> None:
        """Kubernetes only: give the job's pods a kwok fate (function-mode pods carry no annotations).

        Locally the processes decide for themselves, so this does nothing there.
        """
        if self.backend != "kubernetes":
            return
        from lightkube.resources.core_v1 import Pod

        pods = wait_until(
            lambda: len(names := self.client.get_job_pod_names(name)) >= count and names,
            what=f"{count} pods of {name}",
        )
        with contextlib.closing(self.k8s.client()) as c:
            for pod in pods:
                patch = {"metadata": {"annotations": {SIM_OUTCOME: outcome, SIM_RUN_DURATION: "1s"}}}
                c.patch(Pod, pod, patch, namespace=self.namespace)

    def wait_condition(self, name: str, cond: str, timeout: float = 60.0) -> None:
        """Until condition ``cond`` is True (also for Suspended, which wait_for_job_conditions refuses)."""
        wait_until(
            lambda: any(c.type == cond and c.status == "True" for c in self.client.get_job_conditions(name)),
            timeout=timeout,
            what=f"{name} to be {cond}",
        )
