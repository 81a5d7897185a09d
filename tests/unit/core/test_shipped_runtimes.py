"""The runtimes trainop ships are package data (``trainop/runtimes``: what ``trainop run`` of a TrainJob
resolves its ``runtimeRef`` against, installed or not), and manifests/runtimes holds the same files for
``kubectl apply -k`` (``make crds`` copies them)."""

from __future__ import annotations

from pathlib import Path

from trainop.backends.local.trainjob import SHIPPED_RUNTIMES, load_runtimes, shipped_runtime_dirs

REPO = Path(__file__).resolve().parents[3]
COPIES = REPO / "manifests" / "runtimes"


def test_manifests_runtimes_are_the_packages_files() -> None:
    shipped = {p.name: p.read_bytes() for p in SHIPPED_RUNTIMES.glob("*.yaml")}
    copies = {p.name: p.read_bytes() for p in COPIES.glob("*.yaml") if p.name != "kustomization.yaml"}
    stale = sorted(n for n in shipped.keys() | copies.keys() if shipped.get(n) != copies.get(n))
    assert not stale, f"manifests/runtimes differs from the package ({', '.join(stale)}): run make crds"
    listed = (COPIES / "kustomization.yaml").read_text()
    assert all(f"- {name}" in listed for name in shipped), "manifests/runtimes/kustomization.yaml misses one"


def test_the_package_ships_every_runtime_trainop_names() -> None:
    names = {r.metadata.name for r in load_runtimes([SHIPPED_RUNTIMES])}
    assert names == {
        "deepspeed-distributed",
        "jax-distributed",
        "torch-distributed",
        "torch-distributed-with-initializers",
        "xgboost-distributed",
    }
    assert shipped_runtime_dirs()[-1] == SHIPPED_RUNTIMES
