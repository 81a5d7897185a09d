"""The validating admission webhook (contract §2.1): AdmissionReview v1 in, AdmissionReview v1 out.

One path per kind, ``/validate-kubeflow-org-v1-<kind>``, for the five kinds upstream validates (none
for MPIJob). A denial carries upstream's aggregated message (a single error bare, several as
``[e1, e2]``, duplicates once) with code 403, as controller-runtime's ``admission.Denied`` does;
deprecations come back as admission warnings. ``build_*`` is pure; the server lives in operator/http.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from trainop.api.errors import FieldError, InvalidJobError
from trainop.api.load import parse_job
from trainop.api.validation import validate_for_apply, validation_warnings
from trainop.operator.http import Handler, Response

log = logging.getLogger(__name__)

ADMISSION_API_VERSION = "admission.k8s.io/v1"
WEBHOOK_CONFIGURATION_NAME = "validator.training-operator.kubeflow.org"
# MPIJob is validated inside the controller (§2.4), as upstream.
WEBHOOK_KINDS = ("PyTorchJob", "TFJob", "XGBoostJob", "PaddleJob", "JAXJob")


def webhook_path(kind: str) -> str:
    return f"/validate-kubeflow-org-v1-{kind.lower()}"


def webhook_name(kind: str) -> str:
    return f"validator.{kind.lower()}.training-operator.kubeflow.org"


def build_aggregate_message(errors: list[FieldError]) -> str:
    """k8s.io/apimachinery's utilerrors.Aggregate.Error(): one error bare, several bracketed, deduplicated."""
    msgs: list[str] = []
    for e in errors:
        text = str(e)
        if text not in msgs:
            msgs.append(text)
    if len(msgs) == 1:
        return msgs[0]
    return "[" + ", ".join(msgs) + "]"


def build_admission_response(review: dict[str, Any], kind: str) -> dict[str, Any]:
    """The AdmissionReview answering ``review`` for a webhook serving ``kind``."""
    request = review.get("request") or {}
    uid = request.get("uid", "")
    obj = request.get("object")
    response: dict[str, Any] = {"uid": uid, "allowed": True}
    if request.get("operation") == "DELETE" or not isinstance(obj, dict):
        return _review(response)
    if obj.get("kind") != kind:
        response.update(_denied(f'expected a {kind} but got a "{obj.get("kind")}"'))
        return _review(response)
    old_job = None
    old = request.get("oldObject")
    if request.get("operation") == "UPDATE" and isinstance(old, dict):
        try:
            old_job = parse_job(old)
        except InvalidJobError:
            old_job = None  # a stored object the models cannot read: validate the new one alone
    errors = validate_for_apply(obj, old_job)
    if errors:
        response.update(_denied(build_aggregate_message(errors)))
        return _review(response)
    try:
        warnings = validation_warnings(parse_job(obj))
    except InvalidJobError:
        warnings = []
    if warnings:
        response["warnings"] = warnings
    return _review(response)


def _denied(message: str) -> dict[str, Any]:
    return {"allowed": False, "status": {"code": 403, "reason": "Forbidden", "message": message}}


def _review(response: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": ADMISSION_API_VERSION, "kind": "AdmissionReview", "response": response}


def build_routes(kinds: list[str]) -> dict[str, Handler]:
    """One handler per validated kind among the enabled ``kinds``."""
    routes: dict[str, Handler] = {}
    for kind in kinds:
        if kind not in WEBHOOK_KINDS:
            continue
        routes[webhook_path(kind)] = _handler(kind)
    return routes


def _handler(kind: str) -> Handler:
    async def handle(method: str, body: bytes) -> Response:
        if method != "POST":
            return Response(405, b"POST an AdmissionReview\n")
        try:
            review = json.loads(body)
        except ValueError as exc:
            return Response(400, f"body is not JSON: {exc}\n".encode())
        if not isinstance(review, dict) or review.get("kind") != "AdmissionReview":
            return Response(400, b"expected an admission.k8s.io/v1 AdmissionReview\n")
        out = build_admission_response(review, kind)
        if not out["response"]["allowed"]:
            log.info("webhook: denied %s: %s", kind, out["response"]["status"]["message"])
        return Response(200, json.dumps(out).encode(), "application/json")

    return handle
