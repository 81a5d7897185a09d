"""AdmissionReview answers: upstream's aggregated denial messages (§2.1), warnings, and the paths."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from trainop.api.errors import FieldError
from trainop.operator.http import Response
from trainop.operator.webhook import (
    build_admission_response,
    build_aggregate_message,
    build_routes,
    webhook_path,
)
from trainop.testing.builders import jax_job, mpi_job, paddle_job, pytorch_job, tf_job, xgboost_job


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


def test_routes_cover_all_six_kinds() -> None:
    got = sorted(build_routes(["PyTorchJob", "TFJob", "XGBoostJob", "MPIJob", "PaddleJob", "JAXJob"]))
    want = sorted(
        webhook_path(k) for k in ("PyTorchJob", "TFJob", "XGBoostJob", "MPIJob", "PaddleJob", "JAXJob")
    )
    assert got == want
    assert want[:2] == ["/validate-kubeflow-org-v1-jaxjob", "/validate-kubeflow-org-v1-mpijob"]


def set_container(**fields: Any) -> Any:
    def op(template: dict[str, Any]) -> None:
        template["spec"]["containers"][0].update(fields)

    return op


@pytest.mark.parametrize(
    ("obj", "want"),
    [
        pytest.param(
            mpi_job("m").launcher(1).workers(2).build_dict(), allowed(), id="valid MPIJob"
        ),
        pytest.param(
            mpi_job("m").launcher(1).workers(1).template(set_container(ports="notalist"),
                                                         "Worker").build_dict(),
            denied(
                'spec.mpiReplicaSpecs[Worker].template.spec.containers[0].ports: Invalid value: "notalist": '
                "must be a list of ports"
            ),
            id="a malformed template is denied, as upstream's typed CRD schema did (section 1.1)",
        ),
        pytest.param(
            mpi_job("m").launcher(1).workers(1).build_dict() | {"spec": {"mpiReplicaSpecs": "x"}},
            denied('spec.mpiReplicaSpecs: Invalid value: "x": must be an object (a mapping of fields)'),
            id="wrong types are denied",
        ),
        pytest.param(
            mpi_job("m").workers(1).build_dict(),
            allowed(),
            id="the section 2.4 rules stay in the controller (no Launcher: accepted, then an event)",
        ),
        pytest.param(
            mpi_job("m").launcher(3).workers(1).image("", "Worker").build_dict(),
            allowed(),
            id="all section 2.4 errors are left to the controller",
        ),
        pytest.param(
            mpi_job("m").launcher(1).workers(1).build_dict() | {"kind": "TFJob"},
            denied('expected a MPIJob but got a "TFJob"'),
            id="wrong kind on the MPIJob path",
        ),
    ],
)  # fmt: skip
def test_mpijob_admission(obj: dict[str, Any], want: dict[str, Any]) -> None:
    assert build_admission_response(review(obj), "MPIJob") == want


@pytest.mark.parametrize("kind", ["PyTorchJob", "TFJob", "XGBoostJob", "MPIJob", "PaddleJob", "JAXJob"])
def test_env_that_is_not_a_list_is_denied_with_its_path(kind: str) -> None:
    """Part of the Kubernetes core/v1 schema check in trainop.api.validation (issue 10, finding 7)."""
    builders = {"PyTorchJob": pytorch_job("j").master(1).workers(1), "TFJob": tf_job("j").workers(1),
                "XGBoostJob": xgboost_job("j").master(1).workers(1),
                "MPIJob": mpi_job("j").launcher(1).workers(1),
                "PaddleJob": paddle_job("j").workers(1), "JAXJob": jax_job("j").workers(1)}  # fmt: skip
    obj = builders[kind].template(set_container(env="notalist"), "Worker").build_dict()
    got = build_admission_response(review(obj), kind)["response"]
    assert got["allowed"] is False, got
    key = next(k for k in obj["spec"] if k.endswith("ReplicaSpecs"))
    assert got["status"]["message"].startswith(f"spec.{key}[Worker].template.spec.containers[0].env: ")


def handle(kind: str, body: bytes) -> Response:
    async def call() -> Response:
        return await build_routes([kind])[webhook_path(kind)]("POST", body)

    return asyncio.run(call())


@pytest.mark.parametrize(
    ("body", "want"),
    [
        pytest.param(b"{", "body is not JSON", id="not JSON"),
        pytest.param(b"[" * 100_000 + b"]" * 100_000, "body is not JSON",
                     id="nested past the recursion limit"),
        pytest.param(rb'{"\ud800": 1}', "expected an admission.k8s.io/v1 AdmissionReview",
                     id="lone surrogate key"),
        pytest.param(b"[]", "expected an admission.k8s.io/v1 AdmissionReview", id="not an object"),
        pytest.param(b'{"kind": "AdmissionReview"}', "the AdmissionReview has no request", id="no request"),
        pytest.param(b'{"kind": "AdmissionReview", "request": "x"}', "the AdmissionReview has no request",
                     id="request not an object"),
        pytest.param(b"\xff\xfe", "body is not JSON", id="not UTF-8"),
    ],
)  # fmt: skip
def test_a_bad_body_is_a_400_without_a_traceback(
    body: bytes, want: str, caplog: pytest.LogCaptureFixture
) -> None:
    got = handle("PyTorchJob", body)
    assert (got.status, got.body.decode().split(":")[0].strip()) == (400, want)
    assert [r for r in caplog.records if r.exc_info] == []
