"""kubeflow-training's module paths under ``trainop.sdk`` (pure: no Kubernetes client is imported).

Code written for upstream imports ``kubeflow.training.constants.constants``,
``kubeflow.training.utils.utils`` and the generated ``kubeflow.training.models.kubeflow_org_v1_*``
modules; changing ``kubeflow.training`` to ``trainop.sdk`` in those lines must be enough.
"""

from __future__ import annotations

import importlib

import pytest

from trainop.sdk import models
from trainop.sdk.models import generated_module_name


@pytest.mark.parametrize(
    ("model", "module"),
    [
        ("KubeflowOrgV1PyTorchJob", "kubeflow_org_v1_py_torch_job"),
        ("KubeflowOrgV1XGBoostJobList", "kubeflow_org_v1_xg_boost_job_list"),
        ("KubeflowOrgV1JAXJobSpec", "kubeflow_org_v1_jax_job_spec"),
        ("KubeflowOrgV1MPIJob", "kubeflow_org_v1_mpi_job"),
        ("KubeflowOrgV1RDZVConf", "kubeflow_org_v1_rdzv_conf"),
        ("KubeflowOrgV1TFJob", "kubeflow_org_v1_tf_job"),
        ("KubeflowOrgV1PaddleElasticPolicy", "kubeflow_org_v1_paddle_elastic_policy"),
        ("KubeflowOrgV1JobCondition", "kubeflow_org_v1_job_condition"),
    ],
)
def test_generated_module_name_is_openapi_generators(model: str, module: str) -> None:
    assert generated_module_name(model) == module


def test_upstreams_module_paths_import() -> None:
    pytorch = importlib.import_module("trainop.sdk.models.kubeflow_org_v1_py_torch_job")
    got = (
        importlib.import_module("trainop.sdk.constants.constants").PYTORCHJOB_KIND,
        importlib.import_module("trainop.sdk.utils.utils").has_condition.__name__,
        pytorch.KubeflowOrgV1PyTorchJob is models.KubeflowOrgV1PyTorchJob,
        pytorch.__all__,
        len([n for n in vars(models) if n.startswith("kubeflow_org_v1_")]),
    )
    assert got == ("PyTorchJob", "has_condition", True, ["KubeflowOrgV1PyTorchJob"], 27)
