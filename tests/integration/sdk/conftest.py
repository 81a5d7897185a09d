"""Fixtures of the SDK tests: ``sdk_env`` (one per backend) and the operator for the Kubernetes runs.

Local: a TrainingClient on a fresh ``$TRAINOP_HOME``. Kubernetes: the test control plane with the CRDs
and trainop's operator running (no webhook), and a fresh namespace per test.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sdk_harness import CRD_DIR, SDKEnv, wait_until

from trainop.sdk import TrainingClient
from trainop.sdk.errors import NotFoundError

# --------------------------------------------------------------------------------------------------
# backends


@pytest.fixture(scope="session")
def k8s_operator(k8s_env: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The CRDs installed and trainop's operator running against the test control plane (no webhook)."""
    for crd in sorted(CRD_DIR.glob("kubeflow.org_*.yaml")):
        k8s_env.apply_yaml(crd)
    k8s_env.kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd", "--all")
    log = tmp_path_factory.mktemp("operator") / "operator.log"
    cmd = [
        sys.executable,
        "-m",
        "trainop.operator",
        f"--kubeconfig={k8s_env.kubeconfig}",
        "--enable-webhook=false",
        "--leader-elect=false",
        "--metrics-bind-address=0",
        "--health-probe-bind-address=0",
    ]
    with log.open("w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=k8s_env.kubeconfig_env())

    # Until the operator has listed every kind (a fixed 1 s sleep let a slow start, e.g. on a loaded
    # 2-core CI box, go unnoticed, and a start-up failure after it surface only as test timeouts).
    def started() -> bool:
        if proc.poll() is not None:
            pytest.fail(
                f"the operator exited with {proc.returncode}:\n{log.read_text()[-4000:]}", pytrace=False
            )
        return "caches synced" in log.read_text(errors="replace")

    wait_until(started, 120, f"the operator to sync its caches ({log})")
    try:
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if os.environ.get("TRAINOP_SDK_SHOW_OPERATOR_LOG"):
            sys.stderr.write(log.read_text()[-8000:])


@pytest.fixture(
    params=[
        pytest.param("local", id="local"),
        pytest.param("kubernetes", id="kubernetes", marks=pytest.mark.k8s),
    ]
)
def sdk_env(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SDKEnv]:
    if request.param == "local":
        client = TrainingClient(backend="local", local_home=tmp_path / "home")
        env = SDKEnv("local", client, client.namespace)
    else:
        k8s_env = request.getfixturevalue("k8s_env")
        request.getfixturevalue("k8s_operator")
        namespace = request.getfixturevalue("k8s_namespace")
        client = TrainingClient(config_file=str(k8s_env.kubeconfig), namespace=namespace)
        env = SDKEnv("kubernetes", client, namespace, k8s=k8s_env)
    try:
        yield env
    finally:
        # Locally, deleting stops the replica processes; on Kubernetes the namespace goes anyway.
        for job in client.list_jobs():
            with contextlib.suppress(NotFoundError):
                client.delete_job(job.metadata.name)
        client.backend.close()  # its HTTP connections (unclosed sockets otherwise)
