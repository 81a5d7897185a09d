"""Fixtures for the operator's integration tests on the real control plane (marker ``k8s``).

``crds`` installs the generated CRDs once per session; ``operator`` runs one operator process (all
namespaces, webhook off) per test module; ``start_operator`` starts more, with any flags, and stops
them after the test; ``cluster`` reads and writes in the test's namespace.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from k8s_harness import Cluster, OperatorProcess, StartOperator, install_crds, running_operator

from trainop.testing.testenv import K8sEnv


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.k8s)
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session")
def crds(k8s_env: K8sEnv) -> None:
    install_crds(k8s_env)


@pytest.fixture(scope="module")
def operator(
    k8s_env: K8sEnv, crds: None, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[OperatorProcess]:
    """The operator every lifecycle test shares: all kinds, all namespaces, no webhook."""
    log = tmp_path_factory.mktemp("operator") / "operator.log"
    with running_operator(k8s_env, ["--enable-webhook=false"], log) as op:
        yield op


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
    with contextlib.closing(Cluster(k8s_env, k8s_namespace)) as c:
        yield c
