"""The progress endpoint's decisions (operator/progress.py) without a cluster: what a TokenReview's
answer proves, which pods may post for which job, the rate limit, and the HTTP route's body cap and
one-line refusals on a real socket. tests/integration/k8s/test_progress.py runs it against the real
API server."""

from __future__ import annotations

import asyncio
import base64
import json
from typing import Any

import aiohttp
import httpx2 as httpx
import pytest
from lightkube import ApiError

from trainop.backends.kubernetes.client import RateBucket
from trainop.operator.http import HTTPServer, Request, RequestRoute, Response
from trainop.operator.progress import (
    MAX_BODY,
    ROUTE,
    Identity,
    ProgressEndpoint,
    Refused,
    Target,
    build_api_refusal,
    check_pod_of,
    read_claims,
    read_identity,
)


def jwt(claims: dict[str, Any]) -> str:
    part = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    return f"e30.{part}.sig"


def review(**status: Any) -> dict[str, Any]:
    return {"status": status}


SA_USER = {
    "username": "system:serviceaccount:ns:default",
    "extra": {
        "authentication.kubernetes.io/pod-name": ["j-worker-0"],
        "authentication.kubernetes.io/pod-uid": ["uid-1"],
    },
}


def test_claims_are_read_without_trusting_them() -> None:
    assert read_claims(jwt({"sub": "system:serviceaccount:ns:default", "exp": 5}))["exp"] == 5
    for token, want in (
        ("opaque", "the bearer token is not a JWT"),
        ("a.!!!.c", "the bearer token's claims cannot be read"),
        (jwt({"iss": "x"}), "the bearer token has no subject"),
    ):
        with pytest.raises(Refused) as info:
            read_claims(token)
        assert info.value.status == 401 and str(info.value).startswith(want)


def test_a_review_names_the_pod() -> None:
    answer = review(authenticated=True, audiences=["trainer.kubeflow.org"], user=SA_USER)
    assert read_identity(answer, {}) == Identity("ns", "default", "j-worker-0", "uid-1")
    # An API server that puts the bound pod only in the JWT.
    user = {"username": "system:serviceaccount:ns:default"}
    claims = {"kubernetes.io": {"pod": {"name": "p", "uid": "u"}}}
    answer = review(authenticated=True, audiences=["trainer.kubeflow.org"], user=user)
    assert read_identity(answer, claims) == Identity("ns", "default", "p", "u")


@pytest.mark.parametrize(
    ("answer", "status", "message"),
    [
        (review(authenticated=False, error="token expired"), 401,
         "token rejected by the API server: token expired"),
        (review(authenticated=True, audiences=["https://kubernetes.default.svc"], user=SA_USER), 401,
         "token is not for the audience trainer.kubeflow.org"),
        (review(authenticated=True, audiences=["trainer.kubeflow.org"], user={"username": "alice"}), 403,
         "alice is not a ServiceAccount"),
        (review(authenticated=True, audiences=["trainer.kubeflow.org"],
                user={"username": "system:serviceaccount:ns:default"}), 403,
         "the token is not bound to a pod"),
    ],
)  # fmt: skip
def test_what_a_review_refuses(answer: dict[str, Any], status: int, message: str) -> None:
    with pytest.raises(Refused) as info:
        read_identity(answer, {})
    assert info.value.status == status and str(info.value).startswith(message), str(info.value)


def pod(labels: dict[str, str], kind: str, owner: str, uid: str = "uid-1") -> dict[str, Any]:
    return {
        "metadata": {
            "name": "j-worker-0",
            "uid": uid,
            "labels": labels,
            "ownerReferences": [{"kind": kind, "name": owner, "controller": True}],
        }
    }


WHO = Identity("ns", "default", "j-worker-0", "uid-1")


def test_only_a_pod_of_the_named_job_may_post() -> None:
    v1 = Target("PyTorchJob", "ns", "j")
    check_pod_of(pod({"training.kubeflow.org/job-name": "j"}, "PyTorchJob", "j"), v1, WHO)
    tj = Target("TrainJob", "ns", "j")
    check_pod_of(pod({"jobset.sigs.k8s.io/jobset-name": "j"}, "TrainJob", "j"), tj, WHO)
    refused = [
        (
            pod({"training.kubeflow.org/job-name": "k"}, "PyTorchJob", "k"),
            v1,
            "does not belong to pytorchjob ns/j",
        ),
        (
            pod({"training.kubeflow.org/job-name": "j"}, "TFJob", "j"),
            v1,
            "does not belong to pytorchjob ns/j",
        ),
        (
            pod({"training.kubeflow.org/job-name": "j"}, "PyTorchJob", "j"),
            tj,
            "does not belong to trainjob ns/j",
        ),
        (pod({"training.kubeflow.org/job-name": "j"}, "PyTorchJob", "j", uid="uid-2"), v1, "was replaced"),
    ]
    for p, target, message in refused:
        with pytest.raises(Refused) as info:
            check_pod_of(p, target, WHO)
        assert info.value.status == 403 and message in str(info.value)


def test_the_bucket_allows_a_burst_then_the_rate() -> None:
    b = RateBucket(rate=5, burst=20, now=0.0)
    assert all(b.take(0.0) for _ in range(20))
    assert not b.take(0.0)
    assert b.take(0.2) and not b.take(0.2)  # 0.2 s at 5/s: one more


def serve_and_post(
    endpoint_routes: dict[str, RequestRoute], posts: list[tuple[str, dict[str, str], bytes]]
) -> list[tuple[int, str]]:
    async def main() -> list[tuple[int, str]]:
        server = HTTPServer({}, request_routes=endpoint_routes)
        await server.start("127.0.0.1", 0)
        out = []
        try:
            async with aiohttp.ClientSession() as session:
                for path, headers, body in posts:
                    async with session.post(
                        f"http://127.0.0.1:{server.port}{path}", headers=headers, data=body
                    ) as resp:
                        out.append((resp.status, await resp.text()))
        finally:
            await server.close()
        return out

    return asyncio.run(main())


def test_the_route_passes_params_and_caps_the_body() -> None:
    seen: list[Request] = []

    async def handler(req: Request) -> Response:
        seen.append(req)
        return Response(200, b"ok")

    routes = {"/x/{name}/status": RequestRoute(handler, 10)}
    got = serve_and_post(
        routes,
        [("/x/j/status", {"Authorization": "Bearer t"}, b"0123456789"), ("/x/j/status", {}, b"0" * 11)],
    )
    assert got[0] == (200, "ok") and got[1][0] == 413
    assert seen[0].params == {"name": "j"} and seen[0].headers["Authorization"] == "Bearer t"
    assert seen[0].body == b"0123456789"


def test_refusals_before_any_api_call_are_one_line() -> None:
    endpoint = ProgressEndpoint(None, ["PyTorchJob"])  # type: ignore[arg-type]  # never reached
    base = "/apis/kubeflow.org/v1/namespaces/ns"
    body = json.dumps({"trainerStatus": {"progressPercentage": 5}}).encode()
    got = serve_and_post(
        endpoint.routes(),
        [
            (f"{base}/pytorchjobs/j/status", {}, body),
            (f"{base}/pytorchjobs/j/status", {"Authorization": "Bearer opaque"}, body),
            (f"{base}/tfjobs/j/status", {}, body),  # not an enabled kind
            (f"{base}/pytorchjobs/j/status", {}, b"x" * (MAX_BODY + 1)),
        ],
    )
    assert got[0] == (401, "no bearer token: send the token in $KUBEFLOW_TRAINER_SERVER_TOKEN\n")
    assert got[1] == (
        401,
        "the bearer token is not a JWT: send the token in $KUBEFLOW_TRAINER_SERVER_TOKEN\n",
    )
    assert got[2] == (404, "no progress endpoint for tfjobs.kubeflow.org/v1\n")
    assert got[3][0] == 413
    assert ROUTE in endpoint.routes()


def test_a_failed_api_call_is_one_line_too() -> None:
    message = 'admission webhook "v" denied the request: spec.x: bad\nmore'
    response = httpx.Response(
        400,
        json={"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": message, "code": 400},
        request=httpx.Request("PATCH", "https://api"),
    )
    got = build_api_refusal(ApiError(response=response))
    assert (got.status, str(got)) == (
        502,
        'the API server answered 400: admission webhook "v" denied the request: spec.x: bad',
    )
    got = build_api_refusal(httpx.ConnectError("connection refused"))
    assert (got.status, str(got)) == (503, "the API server cannot be reached: connection refused")
