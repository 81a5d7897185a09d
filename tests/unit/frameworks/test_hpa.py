"""PyTorch's elastic HPA (§3.4) as a whole dict; other kinds own no extra objects."""

from __future__ import annotations

from typing import Any

import pytest

from trainop.core.plugin import capabilities
from trainop.core.topology import ServiceTopology
from trainop.frameworks.registry import REGISTRY
from trainop.testing.builders import JobBuilder, jax_job, paddle_job, pytorch_job, tf_job, xgboost_job

from .helpers import defaulted

CPU_METRIC = {
    "type": "Resource",
    "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}},
}

CASES = [
    pytest.param(
        pytorch_job("e").namespace("ns").workers(2).elastic(min=1, max=4, metrics=[CPU_METRIC]),
        [
            {
                "apiVersion": "autoscaling/v2",
                "kind": "HorizontalPodAutoscaler",
                "metadata": {
                    "name": "e",
                    "namespace": "ns",
                    "ownerReferences": [
                        {
                            "apiVersion": "kubeflow.org/v1",
                            "kind": "PyTorchJob",
                            "name": "e",
                            "uid": "e-uid",
                            "controller": True,
                            "blockOwnerDeletion": True,
                        }
                    ],
                },
                "spec": {
                    "scaleTargetRef": {"kind": "PyTorchJob", "name": "e", "apiVersion": "kubeflow.org/v1"},
                    "minReplicas": 1,
                    "maxReplicas": 4,
                    "metrics": [CPU_METRIC],
                },
            }
        ],
        id="elastic metrics: an HPA scaling the job between min and max",
    ),
    pytest.param(pytorch_job("e").workers(2).elastic(min=1, max=4), [], id="elastic without metrics: no HPA"),
    pytest.param(
        paddle_job("p").workers(2).elastic(min=1, max=4, metrics=[CPU_METRIC]),
        [],
        id="paddle metrics have no effect (§9.13)",
    ),
    pytest.param(tf_job("t").workers(2), [], id="tf: none"),
    pytest.param(xgboost_job("x").master(1), [], id="xgboost: none"),
    pytest.param(jax_job("j").workers(1), [], id="jax: none"),
]


@pytest.mark.parametrize(("builder", "want"), CASES)
def test_extra_objects(builder: JobBuilder, want: list[dict[str, Any]]) -> None:
    job = defaulted(builder)
    extra = capabilities(REGISTRY.get(job.kind)).extra_objects
    assert (extra.build_extra_objects(job, {}, ServiceTopology()) if extra is not None else []) == want
