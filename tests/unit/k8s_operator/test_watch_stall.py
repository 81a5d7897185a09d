"""A watch whose connection stops answering is taken for dead and opened again, on both HTTP paths
(the direct client and lightkube's), and a watch's undelivered lines stay bounded.

The peer is a real socket that answers the informer's list, answers its watch with one event and
then says nothing more while keeping the connection open: what a half-open connection, or an API
server that stopped writing, looks like from the client's side.
"""

from __future__ import annotations

import asyncio
import contextlib
import json

import pytest

from trainop.backends.kubernetes import http1
from trainop.backends.kubernetes import resources as r
from trainop.backends.kubernetes.client import (
    build_client,
    build_config_from_client_configuration,
    set_watch_idle_timeout,
)
from trainop.backends.kubernetes.informer import Informer

DEADLINE = 20.0  # seconds the test waits for the reopened watch before it fails
IDLE = 0.3  # the watch's idle deadline in these tests


class StallingApiServer:
    """Answers a pod list, then each watch with one ADDED event, then stalls (the socket stays open)."""

    def __init__(self) -> None:
        self.watches: list[str] = []
        self.reopened = asyncio.Event()
        self._writers: list[asyncio.StreamWriter] = []
        self._server: asyncio.Server | None = None

    async def start(self) -> int:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return int(self._server.sockets[0].getsockname()[1])

    async def close(self) -> None:
        assert self._server is not None
        self._server.close()
        for w in self._writers:
            w.close()
        for w in self._writers:
            with contextlib.suppress(ConnectionError):
                await w.wait_closed()
        await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.append(writer)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                target = head.split(b" ", 2)[1].decode()
                if "watch=true" not in target:
                    body = json.dumps(
                        {
                            "kind": "PodList",
                            "apiVersion": "v1",
                            "metadata": {"resourceVersion": "1"},
                            "items": [],
                        }
                    ).encode()
                    writer.write(
                        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                        + f"Content-Length: {len(body)}\r\n\r\n".encode()
                        + body
                    )
                    await writer.drain()
                    continue
                self.watches.append(target)
                if len(self.watches) >= 2:
                    self.reopened.set()
                pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"}}
                event = json.dumps({"type": "ADDED", "object": pod})
                line = (event + "\n").encode()
                writer.write(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
                    + f"{len(line):x}\r\n".encode()
                    + line
                    + b"\r\n"
                )
                await writer.drain()
                await asyncio.Event().wait()  # and then nothing, ever
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass


class _Conf:
    def __init__(self, host: str) -> None:
        self.host = host
        self.api_key = {"authorization": "Bearer t0ken"}


@pytest.mark.parametrize(
    "direct", [pytest.param(True, id="direct path"), pytest.param(False, id="lightkube path")]
)
def test_a_stalled_watch_is_opened_again_within_its_deadline(direct: bool) -> None:
    async def main() -> tuple[int, bool, set[tuple[str, str]]]:
        server = StallingApiServer()
        port = await server.start()
        config = build_config_from_client_configuration(_Conf(f"http://127.0.0.1:{port}"))
        client = build_client(config, direct=direct, qps=0)
        assert (client.direct is not None) == direct
        set_watch_idle_timeout(client.watch_api, IDLE)
        informer = Informer(client, r.Pod, namespace="default", name="pods")
        informer.watch_idle = IDLE
        task = asyncio.create_task(informer.run())
        try:
            async with asyncio.timeout(DEADLINE):
                await server.reopened.wait()
        except TimeoutError:
            pass
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            await client.aclose()
            await server.close()
        return len(server.watches), server.reopened.is_set(), set(informer.store.objects)

    watches, reopened, cached = asyncio.run(main())
    assert (reopened, cached) == (True, {("default", "p")}), f"{watches} watch request(s)"


def test_a_watch_behind_its_consumer_stops_reading() -> None:
    """Past MAX_QUEUED_BATCHES undelivered batches the connection stops reading (the server waits
    in TCP flow control); once the consumer has taken them down to half, it reads again."""
    total = http1.MAX_QUEUED_BATCHES + 100

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        for i in range(total):  # one batch each: the client reads them as they come
            line = f"{i}\n".encode()
            writer.write(f"{len(line):x}\r\n".encode() + line + b"\r\n")
            await writer.drain()
            await asyncio.sleep(0)
        writer.write(b"0\r\n\r\n")
        await writer.drain()
        await reader.read()
        writer.close()

    async def main() -> tuple[bool, int, bool, int]:
        server = await asyncio.start_server(serve, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        pool = http1.Pool(http1.Origin.parse(f"http://127.0.0.1:{port}"), None, limit=1)
        stream = await pool.stream(b"GET /w HTTP/1.1\r\nHost: x\r\n\r\n", 5.0)
        conn = stream._conn
        queue = stream._answer.lines
        assert queue is not None
        async with asyncio.timeout(DEADLINE):
            while not conn.paused:
                await asyncio.sleep(0.01)
        behind = (conn.paused, queue.qsize())
        got = 0
        lines = stream.lines(idle=5)
        while queue.qsize() > http1.MAX_QUEUED_BATCHES // 2:
            got += len(await anext(lines))
        caught_up = conn.paused
        async for batch in lines:
            got += len(batch)
        await pool.close()
        server.close()
        await server.wait_closed()
        return (*behind, caught_up, got)

    paused, queued, still_paused, lines = asyncio.run(main())
    assert (paused, queued <= http1.MAX_QUEUED_BATCHES + 1, still_paused, lines) == (True, True, False, total)
