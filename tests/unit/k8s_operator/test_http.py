"""The operator's HTTP server (aiohttp.web) on real sockets: bad requests get a status and no traceback,
idle and slow connections are cut off, 200 idle TLS connections keep no request out, and shutdown
with open connections is quiet.

Each test runs the server the way ``python -m trainop.operator`` does (``asyncio.run``, the main task
cancelled as SIGTERM does, then ``close()``), in a thread, and talks to it with blocking sockets.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import ssl
import threading
from collections.abc import Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import pytest

from trainop.operator.certs import build_bundle
from trainop.operator.http import HTTPServer, Limits, Response

DEADLINE = 10.0  # seconds a socket read may block before the test fails: the server must act sooner


async def echo(method: str, body: bytes) -> Response:
    return Response(200, body or b"ok")


class Served:
    """A server running under ``asyncio.run`` in a thread.

    ``stop()`` cancels its main task as SIGTERM does.
    """

    def __init__(self, limits: Limits, ssl_context: ssl.SSLContext | None = None) -> None:
        self.server = HTTPServer({"/echo": echo}, ssl_context=ssl_context, limits=limits)
        self._started: Future[asyncio.Task[None]] = Future()
        self._thread = threading.Thread(target=lambda: asyncio.run(self._main()), daemon=True)

    async def _main(self) -> None:
        try:
            await self.server.start("127.0.0.1", 0)
            task = asyncio.current_task()
            assert task is not None
            self._started.set_result(task)
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            pass  # __main__.serve returns 0 on cancellation
        finally:
            await self.server.close()

    @property
    def port(self) -> int:
        return self.server.port

    def start(self) -> Served:
        self._thread.start()
        self._started.result(DEADLINE)
        return self

    def stop(self) -> None:
        task = self._started.result(0)
        task.get_loop().call_soon_threadsafe(task.cancel)
        self._thread.join(DEADLINE)
        assert not self._thread.is_alive(), "server did not shut down"


@contextmanager
def serving(limits: Limits | None = None, ssl_context: ssl.SSLContext | None = None) -> Iterator[Served]:
    s = Served(limits or Limits(), ssl_context).start()
    try:
        yield s
    finally:
        s.stop()


def connect(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=DEADLINE)
    return sock


def read_response(sock: socket.socket) -> tuple[int, dict[str, str], bytes]:
    """One response off ``sock``; fails if the server says nothing within DEADLINE."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(65536)
        assert chunk, f"connection closed without a response (got {buf!r})"
        buf += chunk
    head, _, body = buf.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    length = int(headers.get("content-length", "0"))
    while len(body) < length:
        chunk = sock.recv(65536)
        assert chunk, "connection closed mid-body"
        body += chunk
    return status, headers, body[:length]


def closed_by_server(sock: socket.socket) -> bool:
    """True once the server closed ``sock`` (EOF or reset); the recv fails the test after DEADLINE."""
    try:
        while sock.recv(65536):
            pass
    except ConnectionResetError:
        pass
    return True


def request(body: bytes = b"", path: str = "/echo", extra: str = "") -> bytes:
    return f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n{extra}\r\n".encode() + body


def tracebacks(caplog: pytest.LogCaptureFixture) -> list[str]:
    """Log lines that carry a traceback, or come from asyncio's unhandled-exception reports."""
    return [
        r.getMessage()
        for r in caplog.records
        if r.exc_info or (r.name == "asyncio" and r.levelno >= logging.ERROR)
    ]


@pytest.mark.parametrize(
    ("raw", "half_close", "want"),
    [
        pytest.param(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n", False, 400,
                     id="non-numeric Content-Length"),
        pytest.param(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n", False, 400,
                     id="negative Content-Length"),
        pytest.param(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1e3\r\n\r\n", False, 400,
                     id="Content-Length 1e3"),
        pytest.param(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: \xc2\xb2\r\n\r\n", False, 400,
                     id="a non-ASCII digit"),
        pytest.param(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999\r\n\r\n",
                     False, 400, id="Content-Length overflows"),
        pytest.param(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd",
                     False, 400, id="two Content-Lengths"),
        pytest.param(b"POST /echo HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 70_000 + b"\r\n\r\n", False, 400,
                     id="a header line over 8 KiB"),
        pytest.param(b"POST /echo HTTP/1.1\r\nHost: x\r\n" + b"X-A: b\r\n" * 200 + b"\r\n", False, 400,
                     id="too many headers"),
        pytest.param(b"POST /echo HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n", False, 400,
                     id="a header without a colon"),
        pytest.param(b"POST /echo HTTP/1.1\r\nContent-Length: 0\r\n\r\n", False, 400, id="no Host"),
        pytest.param(b"GARBAGE\r\n\r\n", False, 400, id="malformed request line"),
        pytest.param(b"\xff\xfe\x00\r\n\r\n", False, 400, id="binary request line"),
    ],
)  # fmt: skip
def test_a_bad_request_gets_a_status_and_no_traceback(
    caplog: pytest.LogCaptureFixture, raw: bytes, half_close: bool, want: int
) -> None:
    with serving() as s:
        with connect(s.port) as sock:
            sock.sendall(raw)
            if half_close:
                sock.shutdown(socket.SHUT_WR)
            assert read_response(sock)[0] == want
            assert closed_by_server(sock)
        # The server is still there for the next client.
        with connect(s.port) as sock:
            sock.sendall(request(b"hello"))
            assert read_response(sock)[::2] == (200, b"hello")
    assert tracebacks(caplog) == []


@pytest.mark.parametrize(
    ("raw", "want"),
    [
        pytest.param(request(b"x", path="/nope"), (404, b"404: Not Found"), id="an unknown path"),
        pytest.param(
            b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 9000000\r\n\r\n" + b"a" * 9_000_000,
            (413, b"request body over 8388608 bytes\n"),
            id="a body over 8 MiB",
        ),
        pytest.param(
            b"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
            (200, b"abc"),
            id="a chunked body is read",
        ),
    ],
)
def test_requests_the_server_answers(raw: bytes, want: tuple[int, bytes]) -> None:
    with serving() as s, connect(s.port) as sock:
        sock.sendall(raw)
        assert read_response(sock)[::2] == want


def test_keep_alive_serves_several_requests_on_one_connection() -> None:
    with serving() as s, connect(s.port) as sock:
        for body in (b"one", b"two", b""):
            sock.sendall(request(body))
            status, _, got = read_response(sock)
            assert (status, got) == (200, body or b"ok")


def test_an_idle_keep_alive_connection_is_closed() -> None:
    with serving(Limits(idle_timeout=0.3)) as s, connect(s.port) as sock:
        sock.sendall(request(b"x"))
        assert read_response(sock)[0] == 200
        assert closed_by_server(sock)


@pytest.mark.parametrize(
    "partial",
    [
        pytest.param(b"", id="nothing sent"),
        pytest.param(b"POST /echo HT", id="request line never finished"),
        pytest.param(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n", id="headers never finished"),
    ],
)
def test_a_connection_that_stalls_before_its_request_is_closed(partial: bytes) -> None:
    with serving(Limits(idle_timeout=0.3)) as s, connect(s.port) as sock:
        sock.sendall(partial)
        assert closed_by_server(sock)


def test_a_body_never_completed_gets_408() -> None:
    with serving(Limits(body_timeout=0.3)) as s, connect(s.port) as sock:
        sock.sendall(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nonly ten b")
        assert read_response(sock)[::2] == (408, b"request body not received in time\n")
        assert closed_by_server(sock)


def test_shutdown_with_open_connections_logs_no_traceback(caplog: pytest.LogCaptureFixture) -> None:
    s = Served(Limits()).start()
    idle = connect(s.port)
    idle.sendall(request(b"x"))
    assert read_response(idle)[0] == 200
    mid_headers = connect(s.port)
    mid_headers.sendall(b"POST /echo HTTP/1.1\r\n")
    mid_body = connect(s.port)
    mid_body.sendall(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc")
    # Wait until the server holds all three (otherwise shutdown could race their accept).
    for sock in (mid_headers, mid_body):
        sock.settimeout(0.05)
        with pytest.raises(TimeoutError):
            sock.recv(1)
        sock.settimeout(DEADLINE)
    s.stop()
    for sock in (idle, mid_headers, mid_body):
        assert closed_by_server(sock)
        sock.close()
    assert tracebacks(caplog) == []


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> ssl.SSLContext:
    bundle = build_bundle(["127.0.0.1"], datetime.now(UTC))
    d: Path = tmp_path_factory.mktemp("tls")
    (d / "tls.crt").write_bytes(bundle.cert)
    (d / "tls.key").write_bytes(bundle.key)
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(str(d / "tls.crt"), str(d / "tls.key"))
    return ctx


def test_a_tls_handshake_that_never_starts_is_closed(
    tls: ssl.SSLContext, caplog: pytest.LogCaptureFixture
) -> None:
    with serving(Limits(header_timeout=0.3), ssl_context=tls) as s, connect(s.port) as sock:
        assert closed_by_server(sock)
    assert tracebacks(caplog) == []


def test_tls_bad_content_length_gets_400(tls: ssl.SSLContext, caplog: pytest.LogCaptureFixture) -> None:
    client = ssl.create_default_context()
    client.check_hostname = False
    client.verify_mode = ssl.CERT_NONE
    with (
        serving(ssl_context=tls) as s,
        connect(s.port) as raw,
        client.wrap_socket(raw, server_hostname="127.0.0.1") as sock,
    ):
        sock.sendall(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: nope\r\n\r\n")
        assert read_response(sock)[0] == 400
    assert tracebacks(caplog) == []


TLS_CLIENT = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # one context: each load of the CAs costs ~0.1 s
TLS_CLIENT.check_hostname = False
TLS_CLIENT.verify_mode = ssl.CERT_NONE


def tls_client(port: int) -> ssl.SSLSocket:
    return TLS_CLIENT.wrap_socket(connect(port), server_hostname="127.0.0.1")


def test_idle_tls_connections_keep_no_request_out(tls: ssl.SSLContext) -> None:
    """Issue 22: clients that opened TLS connections to the webhook and stayed idle held the old
    server's connection cap (256), and the API server's calls failed. More than that are held open
    here (handshaken, then silent) while requests on new connections are all answered."""
    with serving(ssl_context=tls) as s:
        idle = [tls_client(s.port) for _ in range(300)]
        try:
            for i in range(5):
                with tls_client(s.port) as sock:
                    sock.sendall(request(f"job {i}".encode()))
                    assert read_response(sock)[::2] == (200, f"job {i}".encode())
        finally:
            for sock in idle:
                sock.close()
