"""The webhook on UPDATE: the same rules as on CREATE (the new object is validated whole, whatever the
old one), plus the update-only rules, e.g. Kueue's queue-name immutability."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from trainop.operator.webhook import build_admission_response
from trainop.testing.builders import mpi_job, pytorch_job

QUEUE = "kueue.x-k8s.io/queue-name"


def review(obj: dict[str, Any], operation: str, old: dict[str, Any] | None) -> dict[str, Any]:
    req: dict[str, Any] = {"uid": "req-1", "operation": operation, "object": obj}
    if old is not None:
        req["oldObject"] = old
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": req}


def verdict(
    obj: dict[str, Any], kind: str, operation: str = "CREATE", old: dict[str, Any] | None = None
) -> str:
    response = build_admission_response(review(obj, operation, old), kind)["response"]
    return "allowed" if response["allowed"] else response["status"]["message"]


def as_stored(obj: dict[str, Any]) -> dict[str, Any]:
    """What the API server sends as oldObject and as the base of a patch: server-set metadata, a status."""
    out = copy.deepcopy(obj)
    out["metadata"].update(
        {"uid": "u-1", "resourceVersion": "42", "generation": 1, "creationTimestamp": "2026-01-01T00:00:00Z"}
    )
    out["status"] = {"conditions": [{"type": "Created", "status": "True", "reason": "MPIJobCreated"}]}
    return out


def mpi_edit(rtype: str, replicas: int | None = None, *, rename: str | None = None) -> dict[str, Any]:
    obj = as_stored(mpi_job("m").launcher(1).workers(2).build_dict())
    specs = obj["spec"]["mpiReplicaSpecs"]
    if replicas is not None:
        specs[rtype]["replicas"] = replicas
    if rename is not None:
        specs[rename] = specs.pop(rtype)
    return obj


@pytest.mark.parametrize(
    ("obj", "want"),
    [
        pytest.param(mpi_edit("Worker", -1),
                     "spec.mpiReplicaSpecs[Worker].replicas: Invalid value: -1: must be greater than or "
                     "equal to 0",
                     id="MPIJob Worker replicas -1"),
        pytest.param(mpi_edit("Worker", -1, rename="Bogus"),
                     "spec.mpiReplicaSpecs[Bogus].replicas: Invalid value: -1: must be greater than or "
                     "equal to 0",
                     id="MPIJob unknown replica type with replicas -1"),
        pytest.param(mpi_edit("Worker", rename="Bogus"), "allowed",
                     id="MPIJob unknown replica type: a section 2.4 rule, left to the controller on both"),
        pytest.param(mpi_edit("Launcher", -1), "allowed",
                     id="MPIJob Launcher replicas -1: a section 2.4 rule, left to the controller on both"),
    ],
)  # fmt: skip
def test_an_update_gets_the_verdict_a_create_gets(obj: dict[str, Any], want: str) -> None:
    """The MPIJob webhook judges the new object whole on UPDATE: an edit of a valid stored job is denied
    exactly as the same object is at CREATE."""
    old = as_stored(mpi_job("m").launcher(1).workers(2).build_dict())
    got = {"CREATE": verdict(obj, "MPIJob"), "UPDATE": verdict(obj, "MPIJob", "UPDATE", old)}
    assert got == {"CREATE": want, "UPDATE": want}


def test_kueue_queue_name_change_on_a_running_job_is_denied() -> None:
    old = as_stored(pytorch_job("p").master(1).workers(1).labels(**{QUEUE: "team-a"}).build_dict())
    moved = copy.deepcopy(old)
    moved["metadata"]["labels"][QUEUE] = "team-b"
    suspended = copy.deepcopy(moved)
    suspended["spec"].setdefault("runPolicy", {})["suspend"] = True
    bad = copy.deepcopy(old)
    bad["metadata"]["labels"][QUEUE] = "Team_B"
    got = {
        "running": verdict(moved, "PyTorchJob", "UPDATE", old),
        "suspended": verdict(suspended, "PyTorchJob", "UPDATE", old),
        "create with a bad name": verdict(bad, "PyTorchJob").split(": a lowercase RFC 1123")[0],
    }
    want = {
        "running": f'metadata.labels[{QUEUE}]: Invalid value: "team-b": field is immutable; to move the job '
        "to another queue, suspend it (spec.runPolicy.suspend: true) in the same update",
        "suspended": "allowed",
        "create with a bad name": f'metadata.labels[{QUEUE}]: Invalid value: "Team_B"',
    }
    assert got == want
