"""hack/testenv/build.sh's bookkeeping (issue 25): the cache keys it prints, --wait, and the build-time
table, run as the real script on a cache directory of this test's own (nothing is built: every binary
the script looks for is already there, or --wait finds something missing)."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "hack" / "testenv" / "build.sh"


def versions() -> dict[str, str]:
    out = {}
    for line in (REPO / "hack" / "testenv" / "versions.env").read_text().splitlines():
        if "=" in line and not line.startswith("#"):
            k, _, v = line.partition("=")
            out[k] = v
    return out


def run(cache: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TRAINOP_TESTENV_CACHE": str(cache)}
    return subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True, env=env, timeout=60)


def fill(cache: Path) -> dict[str, Path]:
    """Every path build.sh checks, as an executable file or a directory."""
    v = versions()
    key = cache / f"k8s-{v['KUBERNETES_VERSION']}_etcd-{v['ETCD_VERSION']}_kwok-{v['KWOK_VERSION']}"
    sp = cache / f"scheduler-plugins-{v['SCHEDULER_PLUGINS_VERSION']}"
    kueue = cache / f"kueue-{v['KUEUE_VERSION']}"
    helm = cache / f"helm-{v['HELM_VERSION']}"
    k8s = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl", "etcd", "kwok")
    files = [key / "bin" / b for b in k8s]
    files += [
        sp / "bin" / "sp-scheduler",
        sp / "bin" / "sp-controller",
        kueue / "bin" / "kueue",
        helm / "bin" / "helm",
    ]
    for f in files:
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text("")
        f.chmod(0o755)
    (sp / "crds").mkdir()
    (kueue / "config").mkdir()
    trainer = cache / f"kubeflow-trainer-{v['KUBEFLOW_TRAINER_VERSION']}"
    (trainer / "crds").mkdir(parents=True)
    return {"key": key, "sp": sp, "kueue": kueue, "helm": helm, "trainer": trainer}


def test_print_flags_name_each_cache_key(tmp_path: Path) -> None:
    v = versions()
    assert run(tmp_path, "--print-helm").stdout.strip() == str(
        tmp_path / f"helm-{v['HELM_VERSION']}/bin/helm"
    )
    assert run(tmp_path, "--print-kueue-dir").stdout.strip() == str(tmp_path / f"kueue-{v['KUEUE_VERSION']}")
    assert run(tmp_path, "--print-trainer-dir").stdout.strip() == str(
        tmp_path / f"kubeflow-trainer-{v['KUBEFLOW_TRAINER_VERSION']}"
    )
    assert run(tmp_path, "--check").returncode == 1


def test_wait_fails_naming_what_is_missing(tmp_path: Path) -> None:
    dirs = fill(tmp_path)
    (dirs["kueue"] / "bin" / "kueue").unlink()
    res = run(tmp_path, "--wait")
    assert res.returncode == 1
    assert "the build left binaries missing: kueue" in res.stdout


@pytest.mark.parametrize("mode", ["--wait", ""])
def test_table_reports_this_runs_seconds_or_cached(tmp_path: Path, mode: str) -> None:
    dirs = fill(tmp_path)
    assert run(tmp_path, "--check").returncode == 0
    now = int(time.time())
    # As a background build started 20 s ago would have recorded them: kueue built, the rest older.
    (tmp_path / ".last-run-start").write_text(f"{now - 20}\n")
    (dirs["kueue"] / ".build-times").write_text(f"kueue 412 {now - 10}\n")
    (dirs["key"] / ".build-times").write_text(f"kubernetes 352 {now - 3600}\n")
    res = run(tmp_path, *([mode] if mode else []))
    assert res.returncode == 0, res.stderr
    rows = {line.split()[0]: line.split()[-1] for line in res.stdout.splitlines() if line.startswith("  ")}
    if mode == "--wait":
        assert rows == {
            "step": "seconds", "kubernetes": "cached", "etcd": "cached", "kwok": "cached",
            "sp-scheduler": "cached", "sp-controller": "cached", "kueue": "412", "helm": "cached",
            "total": "412",
        }  # fmt: skip
    else:  # a foreground run that built nothing: its own start is now, so everything is cached
        assert "all binaries present" in res.stdout
        assert rows["kueue"] == "cached" and rows["total"] == "0"


def test_wait_control_plane_returns_once_it_is_built_and_fails_without_a_build(tmp_path: Path) -> None:
    dirs = fill(tmp_path)
    for addon in (dirs["kueue"] / "bin" / "kueue", dirs["helm"] / "bin" / "helm"):
        addon.unlink()  # built last: the control plane's tests need not wait for them
    assert run(tmp_path, "--wait-control-plane").returncode == 0
    (dirs["key"] / "bin" / "kwok").unlink()
    res = run(tmp_path, "--wait-control-plane")  # nothing holds the build lock: no build will bring it
    assert res.returncode == 1
    assert "no build is running and the control plane lacks: kwok" in res.stdout
    (dirs["key"] / "bin" / "kwok").write_text("")
    (dirs["key"] / "bin" / "kwok").chmod(0o755)
    (dirs["trainer"] / "crds").rmdir()  # the TrainJob drop-in tests of the k8s tier read upstream's CRDs
    res = run(tmp_path, "--wait-control-plane")
    assert "no build is running and the control plane lacks: trainer-manifests" in res.stdout
