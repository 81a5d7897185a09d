"""AdmissionReview answers: upstream's aggregated denial messages (§2.1), warnings, and the paths."""

from __future__ import annotations

from typing import Any

import pytest

from trainop.api.errors import FieldError
from trainop.operator.webhook import (
    build_admission_response,
    build_aggregate_message,
    build_routes,
    webhook_path,
)
from trainop.testing.builders import pytorch_job, tf_job, xgboost_job


def review(
    obj: dict[str, Any], operation: str = "CREATE", old: dict[str, Any] | None = None
) -> dict[str, Any]:
    req: dict[str, Any] = {"uid": "req-1", "operation": operation, "object": obj}
    if old is not None:
        req["oldObject"] = old
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": req}


def allowed(warnings: list[str] | None = None) -> dict[str, Any]:
    resp: dict[str, Any] = {"uid": "req-1", "allowed": True}
    if warnings:
        resp["warnings"] = warnings
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": resp}


def denied(message: str) -> dict[str, Any]:
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": {
            "uid": "req-1",
            "allowed": False,
            "status": {"code": 403, "reason": "Forbidden", "message": message},
        },
    }


@pytest.mark.parametrize(
    ("errors", "want"),
    [
        pytest.param(
            [FieldError("a", "Required value: x")], "a: Required value: x", id="one error has no brackets"
        ),
        pytest.param(
            [FieldError("a", "Forbidden: x"), FieldError("b", "Forbidden: y")],
            "[a: Forbidden: x, b: Forbidden: y]",
            id="several are bracketed and comma-joined",
        ),
        pytest.param(
            [FieldError("a", "Forbidden: x"), FieldError("a", "Forbidden: x")],
            "a: Forbidden: x",
            id="duplicates are reported once",
        ),
    ],
)
def test_aggregate_message(errors: list[FieldError], want: str) -> None:
    assert build_aggregate_message(errors) == want


@pytest.mark.parametrize(
    ("kind", "obj", "want"),
    [
        pytest.param(
            "PyTorchJob", pytorch_job("ok").master(1).workers(2).build_dict(), allowed(), id="valid job"
        ),
        pytest.param(
            "PyTorchJob",
            pytorch_job("p").master(2).build_dict(),
            denied("spec.pytorchReplicaSpecs[Master].replicas: Forbidden: must be 1"),
            id="PyTorch Master replicas must be 1",
        ),
        pytest.param(
            "PyTorchJob",
            pytorch_job("p").master(None).build_dict(),
            denied("spec.pytorchReplicaSpecs[Master].replicas: Forbidden: must be 1"),
            id="PyTorch Master replicas unset is rejected too (quirk 1)",
        ),
        pytest.param(
            "TFJob",
            tf_job("t").chief(1).master(1).workers(1).build_dict(),
            denied("spec.tfReplicaSpecs: Forbidden: must not have more than 1 Chief or Master role"),
            id="TF at most one Chief or Master",
        ),
        pytest.param(
            "XGBoostJob",
            xgboost_job("x").workers(2).build_dict(),
            denied("spec.xgbReplicaSpecs[Master]: Required value: must be present"),
            id="XGBoost needs a Master",
        ),
        pytest.param(
            "PyTorchJob",
            pytorch_job("p").master(1).workers(1).elastic(n_proc_per_node=2).build_dict(),
            allowed(["spec.elasticPolicy.nProcPerNode is deprecated, use spec.nprocPerNode instead"]),
            id="deprecated nProcPerNode is a warning",
        ),
        pytest.param(
            "PyTorchJob",
            pytorch_job("p").master(1).workers(1).build_dict() | {"kind": "TFJob"},
            denied('expected a PyTorchJob but got a "TFJob"'),
            id="wrong kind on the path",
        ),
    ],
)
def test_admission_response(kind: str, obj: dict[str, Any], want: dict[str, Any]) -> None:
    assert build_admission_response(review(obj), kind) == want


def test_several_errors_are_bracketed_in_the_denial() -> None:
    obj = pytorch_job("Bad_Name").master(2).build_dict()
    got = build_admission_response(review(obj), "PyTorchJob")["response"]
    assert got["allowed"] is False
    msg = got["status"]["message"]
    assert msg.startswith('[metadata.name: Invalid value: "Bad_Name"')
    assert "spec.pytorchReplicaSpecs[Master].replicas: Forbidden: must be 1" in msg
    assert msg.endswith("]")


def test_delete_is_not_validated() -> None:
    obj = pytorch_job("p").master(5).build_dict()
    assert build_admission_response(review(obj, "DELETE"), "PyTorchJob") == allowed()


def test_routes_cover_five_kinds_and_not_mpi() -> None:
    got = sorted(build_routes(["PyTorchJob", "TFJob", "XGBoostJob", "MPIJob", "PaddleJob", "JAXJob"]))
    want = sorted(webhook_path(k) for k in ("PyTorchJob", "TFJob", "XGBoostJob", "PaddleJob", "JAXJob"))
    assert got == want
    assert want[0] == "/validate-kubeflow-org-v1-jaxjob"
