"""The validating admission webhook (contract §2.1): AdmissionReview v1 in, AdmissionReview v1 out.

One path per kind, ``/validate-kubeflow-org-v1-<kind>``, running the CLI's ``validate_for_apply``. A
denial carries upstream's aggregated message (one error bare, several as ``[e1, e2]``, duplicates once)
with code 403, as controller-runtime's ``admission.Denied``; deprecations are admission warnings. A kind
upstream validates in the controller (MPIJob) has a webhook too (see ``WEBHOOK_KINDS``); what it asks
of a kind is the kind's row and spec hooks, never its name. ``build_*`` is pure; no I/O here.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from trainop.api.common import TrainingJob
from trainop.api.errors import FieldError, InvalidJobError
from trainop.api.kinds import KIND_INFO
from trainop.api.load import parse_job
from trainop.api.validation import validate_for_apply, validation_warnings
from trainop.operator.http import Handler, Response

log = logging.getLogger(__name__)

ADMISSION_API_VERSION = "admission.k8s.io/v1"
# Every kind. Upstream serves the five with ``admission_webhook`` (§2.1). It needs no MPIJob webhook
# because its MPIJob CRD types the whole PodTemplateSpec, so the API server rejects a malformed template
# at create (§1.1). Our CRDs keep templates opaque, so such a template was stored and then failed every
# reconcile: the webhook of a kind without ``admission_webhook`` stands in for that schema. It denies
# what ``validate_for_apply`` finds except the kind's upstream rules (§2.4), which stay in the
# controller as upstream's (accepted, then a <Kind>FailedValidation event on each pass).
WEBHOOK_KINDS = tuple(KIND_INFO)


def webhook_path(kind: str) -> str:
    return f"/validate-kubeflow-org-v1-{kind.lower()}"


def webhook_name(kind: str) -> str:
    return f"validator.{kind.lower()}.training-operator.kubeflow.org"


def build_aggregate_message(errors: list[FieldError]) -> str:
    """k8s.io/apimachinery's utilerrors.Aggregate.Error(): one error bare, several bracketed, deduplicated."""
    msgs = list(dict.fromkeys(str(e) for e in errors))
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
    if errors and not KIND_INFO[kind].admission_webhook:
        errors = _without_controller_rules(obj, old_job, errors)
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


def _without_controller_rules(
    obj: dict[str, Any], old: TrainingJob | None, errors: list[FieldError]
) -> list[FieldError]:
    """``errors`` less the kind's in-controller rules (MPIJob's, §2.4), which upstream never checks at
    admission."""
    try:
        job = parse_job(obj)
    except InvalidJobError:
        return errors  # wrong types: what upstream's CRD schema rejects too
    controller = set(job.spec.upstream_errors(job, old))
    return [e for e in errors if e not in controller]


def _denied(message: str) -> dict[str, Any]:
    return {"allowed": False, "status": {"code": 403, "reason": "Forbidden", "message": message}}


def _review(response: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": ADMISSION_API_VERSION, "kind": "AdmissionReview", "response": response}


def build_routes(kinds: list[str]) -> dict[str, Handler]:
    """One handler per validated kind among the enabled ``kinds``."""
    return {webhook_path(kind): _handler(kind) for kind in kinds if kind in KIND_INFO}


def _handler(kind: str) -> Handler:
    async def handle(method: str, body: bytes) -> Response:
        if method != "POST":
            return Response(405, b"POST an AdmissionReview\n")
        try:
            review = json.loads(body)
        except (ValueError, RecursionError) as exc:  # RecursionError: nested past the parser's limit
            return Response(400, f"body is not JSON: {exc}\n".encode())
        if not isinstance(review, dict) or review.get("kind") != "AdmissionReview":
            return Response(400, b"expected an admission.k8s.io/v1 AdmissionReview\n")
        if not isinstance(review.get("request"), dict):
            return Response(400, b"the AdmissionReview has no request\n")
        out = build_admission_response(review, kind)
        if not out["response"]["allowed"]:
            log.info("webhook: denied %s: %s", kind, out["response"]["status"]["message"])
        return Response(200, json.dumps(out).encode(), "application/json")

    return handle
