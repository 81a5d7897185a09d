"""Fixtures for the operator's integration tests on the real control plane (marker ``k8s``).

``crds`` installs the generated CRDs once per session; ``operator`` runs one operator process (all
namespaces, webhook off) per test module; ``start_operator`` starts more, with any flags, and stops
them after the test; ``cluster`` reads and writes in the test's namespace.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from k8s_harness import REPO, Cluster, OperatorProcess, StartOperator

from trainop.testing.testenv import K8sEnv

CRD_NAMES = [
    f"{p}.kubeflow.org" for p in ("pytorchjobs", "tfjobs", "xgboostjobs", "mpijobs", "paddlejobs", "jaxjobs")
]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.k8s)
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session")
def crds(k8s_env: K8sEnv) -> None:
    k8s_env.kubectl("apply", "-k", str(REPO / "manifests" / "crds"))
    k8s_env.kubectl("wait", "--for=condition=Established", "--timeout=60s", *(f"crd/{n}" for n in CRD_NAMES))


@pytest.fixture(scope="module")
def operator(
    k8s_env: K8sEnv, crds: None, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[OperatorProcess]:
    """The operator every lifecycle test shares: all kinds, all namespaces, no webhook."""
    log = tmp_path_factory.mktemp("operator") / "operator.log"
    op = OperatorProcess(k8s_env, ["--enable-webhook=false"], log).start()
    try:
        op.wait_ready()
        yield op
    finally:
        op.stop()


@pytest.fixture
def start_operator(k8s_env: K8sEnv, crds: None, tmp_path: Path) -> Iterator[StartOperator]:
    started: list[OperatorProcess] = []

    def start(*args: str, name: str = "op", wait: bool = True, **kw: object) -> OperatorProcess:
        op = OperatorProcess(k8s_env, list(args), tmp_path / f"{name}-{len(started)}.log", **kw).start()  # type: ignore[arg-type]
        started.append(op)
        if wait:
            op.wait_ready()
        return op

    yield start
    for op in started:
        op.stop()


@pytest.fixture
def cluster(k8s_env: K8sEnv, k8s_namespace: str) -> Iterator[Cluster]:
    c = Cluster(k8s_env, k8s_namespace)
    try:
        yield c
    finally:
        c.close()
