"""http1.py against a real socket server that answers each request with scripted bytes: framing by
Content-Length, chunks (split anywhere, with extensions and trailers) and the end of the connection,
interim 1xx answers, keep-alive reuse and the server closing an idle connection, failures mid-answer,
timeouts, the pool's limit, and watch streams. The Kubernetes requests themselves run against the real
API server in tests/integration/k8s."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest

from trainop.backends.kubernetes.http1 import Origin, Pool, RequestTimeout, TransportError

# What the server does with one request: bytes to send (each item one write, the writes drained
# apart), and then whether to close the connection.
Script = Callable[[bytes], tuple[list[bytes], bool]]


@dataclass
class Server:
    script: Script
    requests: list[bytes] = field(default_factory=list)
    connections: int = 0
    port: int = 0
    hold: asyncio.Event = field(default_factory=asyncio.Event)  # set: let held answers go

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                body = await reader.readexactly(length) if length else b""
                self.requests.append(head + body)
                writes, close = self.script(head + body)
                for w in writes:
                    if w == b"<hold>":
                        await self.hold.wait()
                        continue
                    writer.write(w)
                    await writer.drain()
                    await asyncio.sleep(0)
                if close:
                    return
        finally:
            writer.close()


@asynccontextmanager
async def serve(script: Script) -> AsyncIterator[tuple[Server, Pool]]:
    srv = Server(script)
    server = await asyncio.start_server(srv.handle, "127.0.0.1", 0)
    srv.port = server.sockets[0].getsockname()[1]
    pool = Pool(Origin.parse(f"http://127.0.0.1:{srv.port}"), None, limit=4)
    try:
        yield srv, pool
    finally:
        srv.hold.set()
        await pool.close()
        server.close()
        await server.wait_closed()


def req(path: str = "/", body: bytes = b"") -> bytes:
    head = f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n\r\n"
    return head.encode() + body


def ok(body: bytes, *extra: str) -> bytes:
    headers = "".join(f"{h}\r\n" for h in extra)
    return f"HTTP/1.1 201 Created\r\nContent-Length: {len(body)}\r\n{headers}\r\n".encode() + body


def chunked(*parts: bytes, trailer: bytes = b"") -> bytes:
    out = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    for p in parts:
        out += f"{len(p):x};ext=1\r\n".encode() + p + b"\r\n"
    return out + b"0\r\n" + trailer + b"\r\n"


def bytewise(data: bytes) -> list[bytes]:
    return [data[i : i + 1] for i in range(len(data))]


LOOP = "asyncio"  # set by the autouse fixture below: every test runs on asyncio's loop and uvloop's


@pytest.fixture(autouse=True, params=["asyncio", "uvloop"])
def event_loop_kind(request: pytest.FixtureRequest) -> str:
    global LOOP
    LOOP = request.param
    return LOOP


def run(coro: Coroutine[Any, Any, None]) -> None:
    if LOOP == "uvloop":
        import uvloop

        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            runner.run(coro)
    else:
        asyncio.run(coro)


def test_content_length_answers_reuse_one_connection() -> None:
    async def main() -> None:
        async with serve(lambda r: ([ok(b'{"n": %d}' % len(r))], False)) as (srv, pool):
            for i in range(3):
                status, body = await pool.request(req(body=b"x" * i), 5)
                assert status == 201
                assert body == b'{"n": %d}' % len(req(body=b"x" * i))
            assert srv.connections == 1 and pool.connects == 1
            assert srv.requests[2].endswith(b"xx")

    run(main())


def test_chunked_answers_split_at_every_byte_with_extensions_and_trailers() -> None:
    answer = chunked(b'{"a":', b' "b"}', trailer=b"X-Trailer: 1\r\n")  # (a last chunk with a trailer)

    async def main() -> None:
        async with serve(lambda r: (bytewise(answer), False)) as (srv, pool):
            assert await pool.request(req(), 5) == (200, b'{"a": "b"}')
            assert await pool.request(req(), 5) == (200, b'{"a": "b"}')  # framing ended exactly
            assert srv.connections == 1

    run(main())


def test_interim_answers_and_empty_bodies() -> None:
    answers = [
        b"HTTP/1.1 100 Continue\r\n\r\n" + ok(b"after"),
        b"HTTP/1.1 204 No Content\r\n\r\n",
        ok(b""),
    ]

    async def main() -> None:
        async with serve(lambda r: ([answers.pop(0)], False)) as (_, pool):
            assert await pool.request(req(), 5) == (201, b"after")
            assert await pool.request(req(), 5) == (204, b"")
            assert await pool.request(req(), 5) == (201, b"")

    run(main())


def test_connection_close_and_a_body_framed_by_the_end_of_the_connection() -> None:
    answers = [
        (ok(b"one", "Connection: close"), True),
        (b"HTTP/1.0 200 OK\r\n\r\nuntil the end", True),
        (ok(b"three"), False),
    ]

    async def main() -> None:
        async with serve(lambda r: ([answers[0][0]], answers.pop(0)[1])) as (srv, pool):
            assert await pool.request(req(), 5) == (201, b"one")
            assert await pool.request(req(), 5) == (200, b"until the end")
            assert await pool.request(req(), 5) == (201, b"three")
            assert srv.connections == 3

    run(main())


def test_an_idle_connection_the_server_closed_is_replaced_and_the_request_sent_once() -> None:
    async def main() -> None:
        # The server answers, then closes: the client may not have noticed before its next request.
        async with serve(lambda r: ([ok(b"fine")], True)) as (srv, pool):
            for _ in range(3):
                assert await pool.request(req(), 5) == (201, b"fine")
            assert len(srv.requests) == 3  # none sent twice
            assert srv.connections == 3

    run(main())


def test_a_kept_alive_connection_closed_without_an_answer_is_retried_once_on_a_new_one() -> None:
    # The server reads the second request and closes without a word (an idle-timeout race): nothing
    # of an answer came back, so the request goes again on a fresh connection. A new connection that
    # fails the same way is not retried.
    answers: list[tuple[list[bytes], bool]] = [([ok(b"one")], False), ([], True), ([ok(b"two")], False)]

    async def main() -> None:
        async with serve(lambda r: answers.pop(0)) as (srv, pool):
            assert await pool.request(req(), 5) == (201, b"one")
            assert await pool.request(req(), 5) == (201, b"two")
            assert srv.connections == 2 and len(srv.requests) == 3
        async with serve(lambda r: ([], True)) as (srv, pool):
            with pytest.raises(TransportError, match="closed"):
                await pool.request(req(), 5)
            assert len(srv.requests) == 1

    run(main())


def test_a_failure_mid_answer_is_a_transport_error_and_is_not_retried() -> None:
    async def main() -> None:
        async with serve(lambda r: ([b"HTTP/1.1 201 Created\r\nContent-Length: 50\r\n\r\nshort"], True)) as (
            srv,
            pool,
        ):
            with pytest.raises(TransportError, match="before the answer was complete"):
                await pool.request(req(), 5)
            assert len(srv.requests) == 1

    run(main())


@pytest.mark.parametrize(
    "answer",
    [
        b"SMTP ready\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n",
        chunked(b"a").replace(b"1;", b"z;"),
    ],
)
def test_answers_that_are_not_http_are_transport_errors(answer: bytes) -> None:
    async def main() -> None:
        async with serve(lambda r: ([answer], False)) as (_, pool):
            with pytest.raises(TransportError):
                await pool.request(req(), 5)

    run(main())


def test_no_answer_is_a_timeout_and_the_connection_is_not_reused() -> None:
    answers = [[b"<hold>"], [ok(b"late but fine")]]

    async def main() -> None:
        async with serve(lambda r: (answers.pop(0), False)) as (srv, pool):
            with pytest.raises(RequestTimeout):
                await pool.request(req(), 0.2)
            srv.hold.set()
            assert await pool.request(req(), 5) == (201, b"late but fine")
            assert srv.connections == 2

    run(main())


def test_the_pool_limit_queues_requests_in_turn() -> None:
    async def main() -> None:
        async with serve(lambda r: ([ok(r.split(b"\r\n", 1)[0].split(b" ")[1])], False)) as (srv, pool):
            pool._limit = 2
            answers = await asyncio.gather(*(pool.request(req(f"/{i}"), 5) for i in range(10)))
            assert [b for _, b in answers] == [f"/{i}".encode() for i in range(10)]
            assert srv.connections == 2

    run(main())


def test_a_cancelled_request_does_not_poison_the_pool() -> None:
    answers = [[b"<hold>", ok(b"first")], [ok(b"second")]]

    async def main() -> None:
        async with serve(lambda r: (answers.pop(0), False)) as (_, pool):
            task = asyncio.ensure_future(pool.request(req(), 5))
            while not pool.connects:
                await asyncio.sleep(0.01)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert await pool.request(req(), 5) == (201, b"second")

    run(main())


def test_a_stream_yields_lines_across_chunks_until_the_server_ends_it() -> None:
    answer = chunked(b'{"type":"ADDED"}\n{"ty', b'pe":"MODIFIED"}\n', b'{"type":"DELETED"}\n')

    async def main() -> None:
        async with serve(lambda r: (bytewise(answer), True)) as (_, pool):
            stream = await pool.stream(req(), 5)
            assert stream.status == 200
            lines = [line async for batch in stream.lines() for line in batch]
            assert lines == [b'{"type":"ADDED"}', b'{"type":"MODIFIED"}', b'{"type":"DELETED"}']

    run(main())


def test_a_stream_is_open_before_its_first_event() -> None:
    head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"

    async def main() -> None:
        async with serve(lambda r: ([head, b"<hold>", b"5\r\nline\n\r\n0\r\n\r\n"], True)) as (srv, pool):
            stream = await pool.stream(req(), 5)  # returns although no event came yet
            srv.hold.set()
            assert [line async for batch in stream.lines() for line in batch] == [b"line"]

    run(main())


def test_a_stream_error_answer_is_read_whole_and_a_broken_stream_raises() -> None:
    status = b'{"kind":"Status","code":410}'

    async def main() -> None:
        async with serve(lambda r: ([ok(status).replace(b"201 Created", b"410 Gone")], True)) as (_, pool):
            stream = await pool.stream(req(), 5)
            assert stream.status == 410
            assert await stream.read() == status
        broken = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nline\n\r\n3\r\nab"
        async with serve(lambda r: ([broken], True)) as (_, pool):
            stream = await pool.stream(req(), 5)
            got: list[bytes] = []
            with pytest.raises(TransportError):
                async for batch in stream.lines():
                    got.extend(batch)
            assert got == [b"line"]

    run(main())


def test_origin_parsing() -> None:
    o = Origin.parse("https://10.0.0.1:6443/k8s/c-1/")
    assert (o.scheme, o.host, o.port, o.prefix, o.host_header) == (
        "https",
        "10.0.0.1",
        6443,
        "/k8s/c-1",
        "10.0.0.1:6443",
    )
    assert Origin.parse("https://api.example").host_header == "api.example"
    assert Origin.parse("https://[::1]:6443").host_header == "[::1]:6443"
    with pytest.raises(ValueError, match="http"):
        Origin.parse("unix:///var/run/k8s.sock")
