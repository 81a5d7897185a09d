"""The master-role rule of §3.1 for every kind: which pods carry ``job-role=master``."""

from __future__ import annotations

from typing import Any

import pytest

from trainop.frameworks.registry import REGISTRY
from trainop.testing.builders import (
    JobBuilder,
    jax_job,
    mpi_job,
    paddle_job,
    pytorch_job,
    tf_job,
    xgboost_job,
)

from .helpers import defaulted


def master_pods(builder: JobBuilder) -> list[str]:
    job = defaulted(builder)
    plugin: Any = REGISTRY.get(job.kind)  # every built-in plugin has is_master_role (BasePlugin)
    return [
        plugin.pod_name(job, rtype, i)
        for rtype in job.replica_specs
        for i in plugin.replica_indices(job, rtype)
        if plugin.is_master_role(job, rtype, i)
    ]


CASES = [
    pytest.param(
        pytorch_job("a").master(1).workers(2), ["a-master-0"], id="pytorch: Master-0 when a Master exists"
    ),
    pytest.param(pytorch_job("a").workers(3), ["a-worker-0"], id="pytorch: Worker-0 without a Master"),
    pytest.param(tf_job("t").chief(1).ps(1).workers(2), ["t-chief-0"], id="tf: the Chief"),
    pytest.param(tf_job("t").master(2).workers(2), ["t-master-0", "t-master-1"], id="tf: every Master pod"),
    pytest.param(tf_job("t").ps(2).workers(2), ["t-worker-0"], id="tf: Worker-0 without Chief/Master"),
    pytest.param(tf_job("t").ps(2).evaluator(1), [], id="tf: PS and Evaluator only: none"),
    pytest.param(xgboost_job("x").master(1).workers(2), ["x-master-0"], id="xgboost: Master pods"),
    pytest.param(paddle_job("p").master(1).workers(2), ["p-master-0"], id="paddle PS mode: Master pods"),
    pytest.param(paddle_job("p").workers(2), [], id="paddle collective: none"),
    pytest.param(jax_job("j").workers(3), ["j-worker-0"], id="jax: Worker-0"),
    pytest.param(mpi_job("m").launcher().workers(2), ["m-launcher"], id="mpi: the launcher"),
]


@pytest.mark.parametrize(("builder", "want"), CASES)
def test_master_role(builder: JobBuilder, want: list[str]) -> None:
    assert master_pods(builder) == want


def test_pod_names_and_indices_per_kind() -> None:
    got = {}
    for builder in (pytorch_job("a").master(1).workers(2), mpi_job("m").launcher().workers(2)):
        job = defaulted(builder)
        plugin: Any = REGISTRY.get(job.kind)  # every built-in plugin has is_master_role (BasePlugin)
        got[job.kind] = [
            plugin.pod_name(job, t, i) for t in job.replica_specs for i in plugin.replica_indices(job, t)
        ]
    assert got == {
        "PyTorchJob": ["a-master-0", "a-worker-0", "a-worker-1"],
        "MPIJob": ["m-launcher", "m-worker-0", "m-worker-1"],
    }
