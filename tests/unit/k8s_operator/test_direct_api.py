"""DirectApi's pure parts: the URL of each hot write, the error it raises for an error answer, and
the Authorization header it sends (lightkube's, for each kind of kubeconfig user). The requests
themselves run against the real apiserver in tests/integration/k8s (objects, events, lifecycle)."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

from lightkube.config.models import User, UserExec
from lightkube.core.exceptions import ApiError

from trainop.backends.kubernetes import resources as r
from trainop.backends.kubernetes.client import (
    Activity,
    DirectApi,
    Limiter,
    RequestStats,
    _api_error,
    _AuthHeader,
    api_status_code,
    user_agent,
)


def direct(user: User | None = None, server: str = "https://127.0.0.1:6443/") -> DirectApi:
    return DirectApi(
        server,
        ssl_context=None,
        auth=_AuthHeader(user or User()),
        limiter=Limiter(0, 1),
        stats=RequestStats(),
        activity=Activity(),
        timeout=30.0,
        field_manager="trainop",
        user_agent=user_agent("trainop-operator"),
    )


def test_paths_of_the_hot_writes() -> None:
    d = direct()
    assert d.path(r.Pod, "ns") == "/api/v1/namespaces/ns/pods"
    assert d.path(r.Event, "ns", "job.1a") == "/api/v1/namespaces/ns/events/job.1a"
    job = r.JOB_RESOURCES["PyTorchJob"]
    assert d.path(job.Status, "ns", "j") == "/apis/kubeflow.org/v1/namespaces/ns/pytorchjobs/j/status"
    assert d.path(r.Role, "other") == "/apis/rbac.authorization.k8s.io/v1/namespaces/other/roles"
    assert d.path(r.Pod, None) == "/api/v1/pods"  # a watch of every namespace
    assert d.path(r.PriorityClass, None) == "/apis/scheduling.k8s.io/v1/priorityclasses"


def test_a_request_is_one_buffer_with_the_headers_lightkube_sends() -> None:
    d = direct(User(token="abc"), server="https://10.0.0.1:8443/k8s/clusters/c-1/")
    head = d._head("POST", "/api/v1/namespaces/ns/pods?fieldManager=trainop")
    assert head.startswith(
        "POST /k8s/clusters/c-1/api/v1/namespaces/ns/pods?fieldManager=trainop HTTP/1.1\r\n"
    )
    assert "Host: 10.0.0.1:8443\r\n" in head
    assert "Authorization: Bearer abc\r\n" in head
    assert "Accept-Encoding: identity\r\n" in head
    assert re.search(
        r"\r\nUser-Agent: trainop-operator/\d+\.\d+\.\d+ \(\w+/\w+\) python/3\.\d+\.\d+\r\n", head
    )
    assert head.endswith("\r\n") and not head.endswith("\r\n\r\n")  # Content-* and the blank line follow
    put = d._encode_request("PUT", "/x", {"a": 1}, "application/json")
    head_bytes, _, body = put.partition(b"\r\n\r\n")
    assert body == b'{"a":1}'
    assert b"Content-Type: application/json\r\nContent-Length: 7" in head_bytes
    assert d._encode_request("GET", "/x", None, "application/json").endswith(b"\r\n\r\n")


def test_an_error_answer_is_lightkubes_api_error_with_the_servers_status() -> None:
    body = {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "message": 'pods "p" already exists',
        "reason": "AlreadyExists",
        "details": {"name": "p", "kind": "pods"},
        "code": 409,
    }
    exc = _api_error(409, json.dumps(body).encode())
    assert isinstance(exc, ApiError)
    assert api_status_code(exc) == 409
    assert exc.status.message == 'pods "p" already exists'
    assert exc.status.details is not None and exc.status.details.name == "p"


def test_a_plain_text_error_answer_keeps_its_code_and_text() -> None:
    exc = _api_error(404, b"404 page not found\n")
    assert api_status_code(exc) == 404
    assert exc.status.message == "404 page not found"


def test_authorization_header_for_each_kind_of_user(tmp_path: Path) -> None:
    assert _AuthHeader(User()).value is None  # a client certificate: in the SSL context
    assert _AuthHeader(User(token="abc")).value == "Bearer abc"
    basic = _AuthHeader(User(username="u", password="p"))
    assert basic.value == "Basic dTpw"
    assert not basic.refresh()
    exec_user = User(exec=UserExec(apiVersion="client.authentication.k8s.io/v1beta1", command="x"))
    assert not _AuthHeader(exec_user).supported  # its requests go through lightkube


def test_a_token_file_is_read_again_on_refresh(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("one\n")
    auth = _AuthHeader(User(token_file=str(token)))
    assert auth.value == "Bearer one"
    token.write_text("two\n")  # the kubelet rotated it
    assert auth.refresh() and auth.value == "Bearer two"


def test_the_lightkube_path_sends_the_same_user_agent() -> None:
    """The rare requests (through lightkube and httpx) carry the operator's user agent too, so the
    audit log shows one client, whatever path a request took."""
    import httpx2 as httpx

    from trainop.backends.kubernetes.client import LimitedTransport

    seen: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers["User-Agent"])
        return httpx.Response(200, json={})

    agent = user_agent("trainop-operator")
    transport = LimitedTransport(httpx.MockTransport(answer), Limiter(0, 1), RequestStats(), user_agent=agent)

    async def go() -> None:
        async with httpx.AsyncClient(transport=transport) as client:
            await client.get("https://127.0.0.1:6443/api", headers={"User-Agent": "python-httpx/0"})

    asyncio.run(go())
    assert seen == [agent]
