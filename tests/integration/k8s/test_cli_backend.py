"""``trainop --backend kubernetes``: the CLI drives the test cluster (the operator reconciling, kwok
playing the pods) exactly as it drives this machine: the DDP demo's YAML runs with the same status
lines as a local run of it, every other command works through the kubeconfig, and what cannot work
(no kubeconfig, an unreachable cluster, a refused job) is one line, never a traceback."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from k8s_harness import REPO, OperatorProcess, annotate

from trainop.testing.builders import pytorch_job
from trainop.testing.testenv import (
    SIM_EXIT_CODE,
    SIM_FAIL_TIMES,
    SIM_OUTCOME,
    SIM_RUN_DURATION,
    K8sEnv,
    start_env,
)

DEMO = REPO / "examples" / "pytorch" / "ddp-digits"
NAME = "ddp-digits"


def trainop(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None, timeout: float = 300
) -> Any:
    return subprocess.run(
        [sys.executable, "-m", "trainop.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        env={**os.environ, **(env or {})},
    )


def demo_with_fates(tmp_path: Path) -> Path:
    """The demo's YAML, unchanged but for kwok's pod fates (annotations, ignored by the local backend):
    the Workers end 1 s before the Master, as the Master's last epoch and report take longer."""
    doc = yaml.safe_load((DEMO / "pytorchjob.yaml").read_text())
    for rtype, seconds in (("Master", "4s"), ("Worker", "3s")):
        template = doc["spec"]["pytorchReplicaSpecs"][rtype]["template"]
        template.setdefault("metadata", {})["annotations"] = {
            SIM_OUTCOME: "succeed",
            SIM_RUN_DURATION: seconds,
        }
    shutil.copy(DEMO / "train.py", tmp_path / "train.py")
    path = tmp_path / "pytorchjob.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


_HEADER = re.compile(rf"^PyTorchJob {NAME}: (\w+)  \S+$")
_ENDING = re.compile(rf"^PyTorchJob {NAME} (\w+) after [0-9.]+s$")


def status_blocks(out: str) -> list[list[str]]:
    """Each status block run printed (without a terminal: whenever it changed), the clock cut off."""
    blocks: list[list[str]] = []
    current: list[str] | None = None
    for line in out.splitlines():
        m = _HEADER.match(line)
        if m:
            current = [f"PyTorchJob {NAME}: {m.group(1)}"]
            blocks.append(current)
        elif current is not None and line.startswith("  "):
            current.append(line)
        else:
            current = None
    return blocks


def endings(out: str) -> list[str]:
    return [f"PyTorchJob {NAME} {m.group(1)}" for m in map(_ENDING.match, out.splitlines()) if m]


RUNNING = [f"PyTorchJob {NAME}: Running", "  Master  1/1 Running", "  Worker  2/2 Running"]


def test_the_ddp_demo_runs_on_the_cluster_with_the_status_lines_of_a_local_run(
    k8s_env: K8sEnv, operator: OperatorProcess, k8s_namespace: str, tmp_path: Path
) -> None:
    manifest = demo_with_fates(tmp_path)
    on_cluster = trainop(
        "run",
        str(manifest),
        "--backend",
        "kubernetes",
        "--kubeconfig",
        str(k8s_env.kubeconfig),
        "-n",
        k8s_namespace,
    )
    here = trainop("run", str(manifest), env={"TRAINOP_HOME": str(tmp_path / "home")}, cwd=tmp_path)
    side_by_side = f"--- cluster (rc {on_cluster.returncode}):\n{on_cluster.stdout}{on_cluster.stderr}"
    side_by_side += f"--- local (rc {here.returncode}):\n{here.stdout}{here.stderr}"
    cluster_blocks, local_blocks = status_blocks(on_cluster.stdout), status_blocks(here.stdout)
    got = {
        "exit codes": (on_cluster.returncode, here.returncode),
        "every replica running, shown alike": (RUNNING in cluster_blocks, RUNNING in local_blocks),
        "last status": cluster_blocks[-1:],
        "ending": endings(on_cluster.stdout),
        "traceback": "Traceback" in on_cluster.stderr,
    }
    want = {
        "exit codes": (0, 0),
        "every replica running, shown alike": (True, True),
        "last status": local_blocks[-1:],
        "ending": endings(here.stdout),
        "traceback": False,
    }
    assert got == want, side_by_side
    assert got["ending"] == [f"PyTorchJob {NAME} Succeeded"], side_by_side
    # kwok plays the pods: the cluster serves no logs, which run says once instead of failing.
    assert on_cluster.stdout.count("serves no logs") == 1, side_by_side
    print(side_by_side)  # (pytest -s shows both runs)


def test_each_command_works_through_the_kubeconfig(
    k8s_env: K8sEnv, operator: OperatorProcess, k8s_namespace: str, tmp_path: Path
) -> None:
    manifest = demo_with_fates(tmp_path)
    doc = yaml.safe_load(manifest.read_text())
    for rs in doc["spec"]["pytorchReplicaSpecs"].values():
        rs["template"]["metadata"]["annotations"].pop(SIM_OUTCOME)  # the pods run until stopped
    manifest.write_text(yaml.safe_dump(doc, sort_keys=False))
    env = {"KUBECONFIG": str(k8s_env.kubeconfig), "TRAINOP_BACKEND": "kubernetes"}
    ns = ["-n", k8s_namespace]

    def ok(*args: str) -> str:
        done = trainop(*args, *ns, env=env, timeout=120)
        assert done.returncode == 0, (
            f"trainop {' '.join(args)}: rc {done.returncode}\n{done.stdout}{done.stderr}"
        )
        return str(done.stdout)

    assert ok("submit", str(manifest)) == f"pytorchjob.kubeflow.org/{NAME} created\n"
    assert ok("wait", NAME, "--for", "Running", "--timeout", "2m") == (
        f"pytorchjob.kubeflow.org/{NAME} condition met: Running\n"
    )
    listed = ok("get").splitlines()
    assert [row.split()[:3] for row in listed] == [
        ["NAME", "KIND", "STATE"],
        [NAME, "PyTorchJob", "Running"],
    ], listed
    pods = ok("get", "pods", NAME).splitlines()
    assert [p.split()[0] for p in pods[1:]] == [f"{NAME}-master-0", f"{NAME}-worker-0", f"{NAME}-worker-1"], (
        pods
    )
    for args, code in ((["--previous"], 2), ([], 3)):  # not offered yet; kwok's pods have no logs
        logs = trainop("logs", NAME, *args, *ns, env=env)
        assert (logs.returncode, len(logs.stderr.splitlines())) == (code, 1), logs.stderr
    described = ok("describe", NAME)
    assert "Cluster:" in described and "master-0" in described and "Supervisor" not in described, described
    assert ok("suspend", NAME) == f"pytorchjob.kubeflow.org/{NAME} suspended\n"
    ok("wait", NAME, "--for", "Suspended", "--timeout", "2m")
    assert ok("resume", NAME) == f"pytorchjob.kubeflow.org/{NAME} resumed\n"
    assert ok("delete", NAME) == f"pytorchjob.kubeflow.org/{NAME} deleted\n"
    gone = trainop("get", NAME, *ns, env=env)
    assert (gone.returncode, "not found" in gone.stderr, len(gone.stderr.splitlines())) == (3, True, 1), (
        gone.stderr
    )


@pytest.mark.parametrize(
    ("args", "code", "says"),
    [
        pytest.param(
            ["--kubeconfig", "/nonexistent/kubeconfig"],
            5,
            "cannot use kubeconfig /nonexistent/kubeconfig",
            id="no file",
        ),
        pytest.param(["--backend", "docker"], 2, 'unknown backend "docker"', id="unknown backend"),
    ],
)
def test_a_backend_that_cannot_be_used_is_one_line(args: list[str], code: int, says: str) -> None:
    done = trainop("get", *args)
    assert (done.returncode, len(done.stderr.splitlines()), says in done.stderr) == (code, 1, True), (
        done.stderr
    )


def test_an_unreachable_cluster_is_one_line(k8s_env: K8sEnv, tmp_path: Path) -> None:
    config = yaml.safe_load(Path(k8s_env.kubeconfig).read_text())
    for c in config["clusters"]:
        c["cluster"]["server"] = "https://127.0.0.1:1"  # nothing listens there
    dead = tmp_path / "kubeconfig"
    dead.write_text(yaml.safe_dump(config))
    done = trainop("get", "--kubeconfig", str(dead))
    assert (done.returncode, len(done.stderr.splitlines())) == (5, 1), done.stderr
    assert "cannot reach the cluster at https://127.0.0.1:1" in done.stderr, done.stderr


def test_an_invalid_job_gets_the_errors_it_gets_locally(k8s_env: K8sEnv, crds: None, tmp_path: Path) -> None:
    doc = yaml.safe_load((DEMO / "pytorchjob.yaml").read_text())
    doc["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = -1
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(doc))
    on_cluster = trainop("submit", str(bad), "--kubeconfig", str(k8s_env.kubeconfig))
    here = trainop("submit", str(bad), env={"TRAINOP_HOME": str(tmp_path / "home")})
    assert (on_cluster.returncode, on_cluster.stderr) == (
        here.returncode,
        here.stderr,
    ) and here.returncode == 2


def test_ctrl_c_suspends_the_cluster_job_and_keeps_it(
    k8s_env: K8sEnv, operator: OperatorProcess, k8s_namespace: str, tmp_path: Path
) -> None:
    manifest = demo_with_fates(tmp_path)
    doc = yaml.safe_load(manifest.read_text())
    for rs in doc["spec"]["pytorchReplicaSpecs"].values():
        rs["template"]["metadata"]["annotations"].pop(SIM_OUTCOME)  # the pods run until stopped
    manifest.write_text(yaml.safe_dump(doc, sort_keys=False))
    env = {**os.environ, "KUBECONFIG": str(k8s_env.kubeconfig)}
    run = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "trainop.cli.main",
            "run",
            str(manifest),
            "--backend",
            "kubernetes",
            "-n",
            k8s_namespace,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    lines: list[str] = []
    assert run.stdout is not None
    reader = threading.Thread(target=lambda: lines.extend(run.stdout or []))
    reader.start()
    deadline = time.monotonic() + 120
    while "  Worker  2/2 Running\n" not in lines and run.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    run.send_signal(signal.SIGINT)
    code = run.wait(timeout=120)
    reader.join()
    run.stdout.close()  # the pipe; unclosed it is a ResourceWarning
    out = "".join(lines)
    listed = trainop(
        "get", "-n", k8s_namespace, env={"KUBECONFIG": str(k8s_env.kubeconfig), "TRAINOP_BACKEND": "k8s"}
    )
    pods = trainop("get", "pods", "-n", k8s_namespace, "--kubeconfig", str(k8s_env.kubeconfig))
    got = {
        "exit": code,
        "said": f"PyTorchJob {NAME} interrupted: its pods were stopped; the job is kept" in out,
        "state": [row.split()[2] for row in listed.stdout.splitlines()[1:]],
        "pods": pods.stderr.strip(),
    }
    assert got == {
        "exit": 130,
        "said": True,
        "state": ["Interrupted"],
        "pods": f"No pods in namespace {k8s_namespace}.",
    }, out


def test_a_cluster_without_the_crds_is_one_line(tmp_path: Path) -> None:
    plane = start_env(nodes=1)  # a bare control plane of its own: the session's has the CRDs
    try:
        config = ["--kubeconfig", str(plane.kubeconfig)]
        got = {
            " ".join(args): (done.returncode, done.stderr.strip())
            for args in (["get"], ["get", NAME], ["submit", str(DEMO / "pytorchjob.yaml")])
            for done in [trainop(*args, *config)]
        }
    finally:
        plane.stop()
    where = f"the cluster at {plane.server} (context trainop-testenv)"
    fix = (
        "install the CRDs and the operator (kubectl apply -k manifests/crds; trainop operator, or manifests/)"
    )
    assert got == {
        "get": (
            5,
            f"error: {where} does not serve the kubeflow.org/v1 training jobs: {fix}, or use --backend local",
        ),
        f"get {NAME}": (
            5,
            f"error: {where} does not serve the kubeflow.org/v1 training jobs: {fix}, or use --backend local",
        ),
        f"submit {DEMO / 'pytorchjob.yaml'}": (
            5,
            f"error: {where} does not serve pytorchjobs.kubeflow.org: {fix}, or use --backend local",
        ),
    }


_AFTER = re.compile(r" after [0-9.]+s$")


def test_a_failure_gets_the_summary_it_gets_locally(
    k8s_env: K8sEnv, operator: OperatorProcess, k8s_namespace: str, tmp_path: Path
) -> None:
    """A Worker (restartPolicy Never) exits 3 while the Master runs: the job Fails; run's ending names
    the job's reason, the replica that failed first and how, where to look, and the Master left
    running (cleanPodPolicy None), in the same words on both backends. Locally the replicas are
    processes; on the cluster kwok plays the same fates from annotations."""
    fates = {SIM_OUTCOME: "fail", SIM_EXIT_CODE: "3", SIM_RUN_DURATION: "1s"}
    job = (
        pytorch_job("crash")
        .master(1)
        .workers(1)
        .restart_policy("Never")
        .command([sys.executable, "-c", "import time; time.sleep(300)"], "Master")
        .command([sys.executable, "-c", "import sys, time; time.sleep(1); sys.exit(3)"], "Worker")
        .template(annotate(fates), "Worker")
        .build_dict()
    )
    manifest = tmp_path / "crash.yaml"
    manifest.write_text(yaml.safe_dump(job, sort_keys=False))
    ns = ["-n", k8s_namespace]  # the same on both, so the hints' flags are the same
    local_env = {"TRAINOP_HOME": str(tmp_path / "home")}
    on_cluster = trainop("run", str(manifest), *ns, "--kubeconfig", str(k8s_env.kubeconfig), timeout=180)
    here = trainop("run", str(manifest), *ns, env=local_env, timeout=180)
    trainop("delete", "crash", *ns, "--grace-period", "0", env=local_env)  # the Master it left running

    def ending(out: str) -> list[str]:
        lines = out.splitlines()
        start = next(i for i, t in enumerate(lines) if t.startswith("PyTorchJob crash Failed after "))
        return [_AFTER.sub(" after …", t) for t in lines[start:]]

    side_by_side = f"--- cluster (rc {on_cluster.returncode}):\n{on_cluster.stdout}{on_cluster.stderr}"
    side_by_side += f"--- local (rc {here.returncode}):\n{here.stdout}{here.stderr}"
    got, want = ending(on_cluster.stdout), ending(here.stdout)
    # The one difference: what worker-0 printed. Locally it printed nothing; kwok's pods have no logs,
    # which the cluster's ending says rather than "it printed nothing".
    head = "  worker-0 failed first: exit code 3 (Error); "
    assert want[2] == head + "it printed nothing", side_by_side
    assert got[2:3] == [head + "its output is not available (the cluster serves no logs for its pod)"], (
        side_by_side
    )
    assert (on_cluster.returncode, got[:2] + got[3:]) == (here.returncode, want[:2] + want[3:]), side_by_side
    assert here.returncode == 1 and want[1].startswith("  PyTorchJobFailed: "), side_by_side
    print(side_by_side)  # (pytest -s shows both runs)


def test_restarts_and_waiting_reasons_on_the_cluster(
    k8s_env: K8sEnv, operator: OperatorProcess, k8s_namespace: str, tmp_path: Path
) -> None:
    """The Master crashes twice (exit 2, restartPolicy OnFailure) then succeeds; the Worker's image
    cannot be pulled. run counts the restarts, gives the crash notice once, and says why the Worker
    waits, in the words it uses locally (kubectl's waiting reason and message)."""
    job = (
        pytorch_job("loop")
        .master(1)
        .workers(1)
        .restart_policy("OnFailure")
        .template(annotate({SIM_OUTCOME: "fail", SIM_EXIT_CODE: "2", SIM_FAIL_TIMES: "2"}), "Master")
        .template(annotate({"sim.trainop.dev/waiting-reason": "ImagePullBackOff"}), "Worker")
        .build_dict()
    )
    manifest = tmp_path / "loop.yaml"
    manifest.write_text(yaml.safe_dump(job, sort_keys=False))
    done = trainop("run", str(manifest), "-n", k8s_namespace, "--kubeconfig", str(k8s_env.kubeconfig))
    out = done.stdout
    got = {
        "exit": done.returncode,
        "restart counts": [
            n for n in ("· 1 restart\n", "· 2 restarts\n") if f"  Master  1/1 Running {n}" in out
        ],
        "notices": out.count("master-0 restarted ("),
        "notice": "master-0 restarted (restart 1, restartPolicy OnFailure): exit code 2 (Error)" in out,
        "waiting": "    worker-0: ImagePullBackOff: simulated by kwok\n" in out,
        "ending": endings(out.replace("PyTorchJob loop ", f"PyTorchJob {NAME} ")),
    }
    assert got == {
        "exit": 0,
        "restart counts": ["· 1 restart\n", "· 2 restarts\n"],
        "notices": 1,
        "notice": True,
        "waiting": True,
        "ending": [f"PyTorchJob {NAME} Succeeded"],
    }, out + done.stderr
