"""The built wheel, installed with pip into an empty venv (no repository on the path), gives a working
`trainop` and operator; and so does an install at the lowest version each direct dependency allows
(pyproject's floors, as `uv pip install --resolution lowest-direct` would pick them): the operator reaches
ready on the test control plane and runs a PyTorchJob to Succeeded.

pip fetches the dependencies from the package index (the wheel cache makes a second run quick).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tomllib
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.version import Version

from trainop.testing.builders import pytorch_job
from trainop.testing.deploy import REPO, package_version
from trainop.testing.testenv import SIM_OUTCOME, SIM_RUN_DURATION, K8sEnv, free_port, wait_for

CLI_COMMANDS = ["", "run", "submit", "get", "logs", "describe", "delete", "operator"]


def build_lowest_constraints() -> list[str]:
    """``name==floor`` for every direct runtime dependency of pyproject.toml that applies here."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    out = []
    for spec in project["dependencies"]:
        req = Requirement(spec)
        if req.marker is not None and not req.marker.evaluate():
            continue
        floors = [s.version for s in req.specifier if s.operator == ">="]
        assert len(floors) == 1, f"pyproject.toml: {spec!r} needs one >= floor (the lowest version tested)"
        out.append(f"{req.name}=={floors[0]}")
    return out


def run(cmd: list[str], cwd: Path, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    # No PYTHONPATH, and not from the repository: what runs is what the wheel installed.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PIP_FIND_LINKS")}
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out)]
    got = run([*cmd, str(REPO)], cwd=out)
    assert got.returncode == 0, got.stderr
    (built,) = out.glob("trainop-*.whl")
    assert built.name.startswith(f"trainop-{package_version()}-py3-none-any")
    return built


def make_venv(where: Path, wheel: Path, *pip_args: str) -> Path:
    got = run([sys.executable, "-m", "venv", str(where)], cwd=where.parent)
    assert got.returncode == 0, got.stderr
    got = run([str(where / "bin/pip"), "install", "-q", *pip_args, str(wheel)], cwd=where.parent)
    assert got.returncode == 0, got.stdout + got.stderr
    return where


def installed_versions(venv: Path) -> dict[str, str]:
    got = run([str(venv / "bin/pip"), "list", "--format=freeze"], cwd=venv)
    return {
        re.sub(r"[-_.]+", "-", name).lower(): version
        for name, _, version in (line.partition("==") for line in got.stdout.splitlines())
    }


def succeeds(template: dict[str, Any]) -> None:
    """kwok's pod fate (hack/testenv's stages): run for a second, exit 0."""
    template.setdefault("metadata", {}).setdefault("annotations", {}).update(
        {SIM_OUTCOME: "succeed", SIM_RUN_DURATION: "1s"}
    )


def check_works(venv: Path, env: K8sEnv, namespace: str, tmp: Path) -> None:
    """The CLI's commands, then the operator against the control plane, running one job to Succeeded."""
    where = run([str(venv / "bin/python"), "-c", "import trainop; print(trainop.__file__)"], cwd=tmp)
    assert where.stdout.startswith(str(venv)), where
    got = run([str(venv / "bin/trainop"), "--version"], cwd=tmp)
    assert (got.returncode, got.stdout.strip()) == (0, f"trainop {package_version()}"), got.stderr
    for command in CLI_COMMANDS:
        got = run([str(venv / "bin/trainop"), *command.split(), "--help"], cwd=tmp)
        assert got.returncode == 0 and "usage" in got.stdout.lower(), (command, got.stderr[-2000:])
    # A TrainJob that names a shipped runtime resolves without the repository (the runtimes are
    # package data, not files beside the source tree).
    trainjob = tmp / "trainjob.yaml"
    trainjob.write_bytes((REPO / "examples/pytorch/ddp-digits/trainjob.yaml").read_bytes())
    got = run([str(venv / "bin/trainop"), "run", "--dry-run", str(trainjob)], cwd=tmp)
    assert got.returncode == 0 and "ddp-digits-v2-node-0-0" in got.stdout, got.stdout[-2000:] + got.stderr
    probe = free_port()
    log = tmp / "operator.log"
    with log.open("ab") as f:
        proc = subprocess.Popen(
            [str(venv / "bin/python"), "-m", "trainop.operator", f"--kubeconfig={env.kubeconfig}",
             f"--namespace={namespace}", "--enable-webhook=false",
             f"--metrics-bind-address=127.0.0.1:{free_port()}",
             f"--health-probe-bind-address=127.0.0.1:{probe}"],
            cwd=tmp, stdout=f, stderr=subprocess.STDOUT,
            env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
        )  # fmt: skip
    try:

        def ready() -> bool | None:
            if proc.poll() is not None:
                raise AssertionError(f"operator exited {proc.returncode}:\n{log.read_text()[-4000:]}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{probe}/readyz", timeout=5) as resp:
                    return resp.status == 200 or None
            except OSError:
                return None

        wait_for(ready, 120, f"/readyz of the operator from {venv.name}")
        job = pytorch_job("wheel").master(1).workers(1).template(succeeds)
        obj = job.build_dict()
        obj["metadata"] = {"name": "wheel"}  # the builder's namespace and uid are for unit tests
        env.kubectl("create", "-f", "-", namespace=namespace, input=yaml.safe_dump(obj))

        def succeeded() -> bool | None:
            if proc.poll() is not None:
                raise AssertionError(f"operator exited {proc.returncode}:\n{log.read_text()[-4000:]}")
            jsonpath = "jsonpath={.status.conditions[?(@.type=='Succeeded')].status}"
            got = env.kubectl("get", "pytorchjob", "wheel", "-o", jsonpath, namespace=namespace)
            return got.stdout == "True" or None

        wait_for(succeeded, 120, f"PyTorchJob wheel Succeeded through the operator from {venv.name}")
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0, log.read_text()[-4000:]


@pytest.fixture
def crds(k8s_env: K8sEnv) -> None:
    k8s_env.kubectl("apply", "-k", str(REPO / "manifests" / "crds"))
    k8s_env.kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd/pytorchjobs.kubeflow.org")


def test_wheel_installs_into_an_empty_venv(
    wheel: Path, k8s_env: K8sEnv, crds: None, k8s_namespace: str, tmp_path: Path
) -> None:
    venv = make_venv(tmp_path / "venv", wheel)
    check_works(venv, k8s_env, k8s_namespace, tmp_path)


def test_lowest_direct_dependencies_work(
    wheel: Path, k8s_env: K8sEnv, crds: None, k8s_namespace: str, tmp_path: Path
) -> None:
    pins = build_lowest_constraints()
    (tmp_path / "lowest.txt").write_text("\n".join(pins) + "\n")
    venv = make_venv(tmp_path / "venv", wheel, "--constraint", str(tmp_path / "lowest.txt"))
    got = installed_versions(venv)
    want = {re.sub(r"[-_.]+", "-", p.split("==")[0]).lower(): p.split("==")[1] for p in pins}
    assert {name: Version(got.get(name, "0")) for name in want} == {n: Version(v) for n, v in want.items()}
    check_works(venv, k8s_env, k8s_namespace, tmp_path)


def test_every_direct_dependency_has_a_floor() -> None:
    assert build_lowest_constraints()
