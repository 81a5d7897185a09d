"""A small HTTP/1.1 client for the operator's hot requests and watches, on the event loop's transport.

The operator sends thousands of small JSON requests (pod and Service creates, job status, Events) and
reads a few long watch streams. A general client (aiohttp, httpx) builds request, header and response
objects, timers and traces for each; here a request is one pre-encoded ``bytes`` written to a kept-alive
connection, and the answer is parsed with ``bytes.find`` into (status, body). TLS and socket I/O stay in
the event loop (uvloop's, in C). What the API server sends is all this needs to read: a status line,
headers, and a body framed by Content-Length, chunked transfer coding, or the end of the connection.
No redirects, no compression (requests say ``Accept-Encoding: identity``), no proxies, no HTTP/2.

``Pool.request`` sends one request on an idle connection (or a new one, up to ``limit``; beyond that it
waits its turn). ``Pool.stream`` opens a connection of its own for a watch and yields its lines.
Transport failures raise ``TransportError`` (``RequestTimeout`` for a timeout). I/O adapter; knows
nothing about Kubernetes.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import socket
import ssl
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import cast
from urllib.parse import urlsplit

MAX_HEAD = 64 * 1024  # a status line and headers larger than this are refused
KEEPALIVE_S = 60.0  # an idle connection older than this is closed, not reused
# TCP keepalive on every connection: a peer gone without a FIN or RST (a half-open connection) is
# found in about TCP_IDLE_S + TCP_INTERVAL_S * TCP_COUNT = 60 s (Go's dialer probes after 15 s).
TCP_IDLE_S, TCP_INTERVAL_S, TCP_COUNT = 30, 10, 3
# A watch's undelivered batches of lines: past this many the socket is not read (the server waits
# in TCP flow control) until the consumer has taken half of them, so a slow informer holds bounded
# memory instead of a queue that grows without end.
MAX_QUEUED_BATCHES = 256


class TransportError(Exception):
    """The request got no complete answer: connection refused, reset or closed early, bad framing."""


class RequestTimeout(TransportError):
    """No complete answer within the timeout."""


@dataclass(frozen=True, slots=True)
class Origin:
    """Where requests go: ``https://host:port`` plus an optional path prefix (a proxied API server)."""

    scheme: str
    host: str
    port: int
    prefix: str

    @classmethod
    def parse(cls, url: str) -> Origin:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"server URL {url!r} must be http(s)://host[:port][/path]")
        port = parts.port or (443 if parts.scheme == "https" else 80)
        return cls(parts.scheme, parts.hostname, port, parts.path.rstrip("/"))

    @property
    def host_header(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        default = 443 if self.scheme == "https" else 80
        return host if self.port == default else f"{host}:{self.port}"


class _Answer:
    """The parse state of one response on a connection."""

    __slots__ = (
        "chunk_left",
        "chunked",
        "close",
        "head",
        "headed",
        "length",
        "lines",
        "parts",
        "status",
        "tail",
    )

    def __init__(
        self,
        lines: asyncio.Queue[list[bytes] | BaseException | None] | None = None,
        headed: asyncio.Future[None] | None = None,
    ) -> None:
        self.head = True  # still reading the status line and headers
        self.status = 0
        self.length = -1  # Content-Length, or -1
        self.chunked = False
        self.close = False  # the server closes the connection after this answer
        self.parts: list[bytes] = []  # the body so far (a request's, or a stream's error answer)
        self.chunk_left = -1  # chunked: bytes left in the current chunk (+2 for its CRLF); -1: a size line
        self.lines = lines  # stream mode: batches of complete lines go here (None: the end)
        self.tail = b""  # stream mode: an incomplete last line
        self.headed = headed  # stream mode: done once the status line and headers are in


def set_tcp_keepalive(sock: socket.socket) -> None:
    """Probe an idle connection (TCP_IDLE_S, TCP_INTERVAL_S, TCP_COUNT); best effort where the
    platform lacks an option."""
    with contextlib.suppress(OSError):
        for level, option, value in tcp_keepalive_options():
            sock.setsockopt(level, option, value)


def tcp_keepalive_options() -> list[tuple[int, int, int]]:
    """The socket options of TCP keepalive, also for httpx's transports (lightkube's path)."""
    out = [(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)]
    wanted = (("TCP_KEEPIDLE", TCP_IDLE_S), ("TCP_KEEPINTVL", TCP_INTERVAL_S), ("TCP_KEEPCNT", TCP_COUNT))
    for name, value in wanted:
        if hasattr(socket, name):  # Linux and macOS; not every platform has all three
            out.append((socket.IPPROTO_TCP, getattr(socket, name), value))
    return out


class Connection(asyncio.Protocol):
    """One kept-alive connection: at most one request in flight (no pipelining)."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.paused = False  # reading paused: a watch's consumer is behind (MAX_QUEUED_BATCHES)
        self.used = 0  # answers completed on this connection
        self.idle_since = time.monotonic()
        self.received = False  # any byte of the current answer arrived
        self._buf = bytearray()
        # Done once the transport is gone (Pool.close waits for it, so no socket outlives the loop).
        self.lost: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._answer: _Answer | None = None
        self._done: asyncio.Future[tuple[int, bytes]] | None = None

    # --- asyncio.Protocol ----------------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # (uvloop's are not asyncio's classes)
        sock = transport.get_extra_info("socket")
        if sock is not None:
            set_tcp_keepalive(sock)

    def data_received(self, data: bytes) -> None:
        if self._answer is None:  # nothing asked: the server must not speak
            self.abort(TransportError("unexpected data from the server"))
            return
        self.received = True
        self._buf += data
        answer = self._answer
        try:
            self._parse(answer)
        except TransportError as exc:
            self.abort(exc)
            return
        lines = answer.lines
        if lines is not None and not self.paused and lines.qsize() >= MAX_QUEUED_BATCHES:
            self.paused = True
            assert self.transport is not None
            self.transport.pause_reading()

    def resume(self) -> None:
        """Read again (the consumer caught up)."""
        if self.paused and not self.closed and self.transport is not None:
            self.paused = False
            self.transport.resume_reading()

    def eof_received(self) -> bool | None:
        return False  # close our side too

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if not self.lost.done():
            self.lost.set_result(None)
        answer = self._answer
        if answer is None:
            return
        if not answer.head and not answer.chunked and answer.length < 0:
            self._finish(answer)  # a body framed by the end of the connection
            return
        what = "reset" if exc else "closed"
        self.abort(TransportError(f"connection {what} by the server before the answer was complete"))

    # --- requests ------------------------------------------------------------------------------------
    def send(self, data: bytes, answer: _Answer) -> asyncio.Future[tuple[int, bytes]]:
        """Write a whole request; the future has (status, body) once the answer is complete."""
        if self.transport is None or self.closed or self._answer is not None:
            raise TransportError("connection not usable")
        self._answer = answer
        self.received = False
        done = self._done = asyncio.get_running_loop().create_future()
        self.transport.write(data)
        return done

    def close(self) -> None:
        """Close, forgetting the answer in progress (its future is cancelled, its stream ended)."""
        answer, done = self._answer, self._done
        self._answer = self._done = None
        self.closed = True
        if self.transport is not None and not self.transport.is_closing():
            # Stop reading, then drop the socket: a TLS close_notify exchange gains nothing on a
            # connection whose answers are complete or abandoned, and uvloop reports bytes that
            # arrive while its TLS layer shuts down (a watch's next event) as a fatal error with a
            # traceback (seen at SIGTERM during start-up, test_operator_faults).
            with contextlib.suppress(Exception):
                self.transport.pause_reading()
            self.transport.abort()
        if done is not None and not done.done():
            done.cancel()
        if answer is not None and answer.lines is not None:
            answer.lines.put_nowait(None)

    def abort(self, exc: BaseException) -> None:
        """Fail the answer in progress with ``exc`` and close (a timeout, a transport failure)."""
        answer, done = self._answer, self._done
        self._answer = self._done = None
        self.close()
        if answer is not None and answer.headed is not None and not answer.headed.done():
            answer.headed.set_exception(exc)
        if answer is not None and answer.lines is not None:
            answer.lines.put_nowait(exc)
            if done is not None and not done.done():
                done.cancel()  # a stream's failure is read from its lines
        elif done is not None and not done.done():
            done.set_exception(exc)

    def _finish(self, answer: _Answer) -> None:
        done = self._done
        self._answer = self._done = None
        self.used += 1
        self.idle_since = time.monotonic()
        if answer.close or self._buf:  # (bytes after an answer: the framing is off)
            self.close()
        if answer.lines is not None:
            if answer.tail:
                answer.lines.put_nowait([answer.tail])
            answer.lines.put_nowait(None)
        if done is not None and not done.done():
            done.set_result((answer.status, b"".join(answer.parts)))

    # --- parsing -------------------------------------------------------------------------------------
    def _parse(self, a: _Answer) -> None:
        buf = self._buf
        while a.head:
            end = buf.find(b"\r\n\r\n")
            if end < 0:
                if len(buf) > MAX_HEAD:
                    raise TransportError("the answer's headers are too large")
                return
            self._read_head(a, bytes(buf[:end]))
            del buf[: end + 4]
            if a.status < 200:  # 1xx: an interim answer, the real one follows
                a.head, a.length, a.chunked, a.close = True, -1, False, False
                continue
            if a.headed is not None and not a.headed.done():
                a.headed.set_result(None)
            if a.status in (204, 304) or a.length == 0:
                self._finish(a)
                return
        if a.chunked:
            self._read_chunks(a)
        elif a.length >= 0:
            if len(buf) >= a.length:
                self._body(a, bytes(buf[: a.length]))
                del buf[: a.length]
                self._finish(a)
        elif buf:  # until the connection ends
            self._body(a, bytes(buf))
            buf.clear()

    @staticmethod
    def _read_head(a: _Answer, head: bytes) -> None:
        lines = head.split(b"\r\n")
        status = lines[0].split(b" ", 2)
        if len(status) < 2 or not status[0].startswith(b"HTTP/1.") or not status[1].isdigit():
            raise TransportError(f"not an HTTP/1.x answer: {lines[0][:80]!r}")
        a.head = False
        a.status = int(status[1])
        a.close = status[0] == b"HTTP/1.0"
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            if name == b"content-length":
                try:
                    a.length = int(value.strip())
                except ValueError:
                    raise TransportError(f"bad Content-Length {value.strip()[:20]!r}") from None
            elif name == b"transfer-encoding":
                a.chunked = b"chunked" in value.lower()
            elif name == b"connection" and value.strip().lower() == b"close":
                a.close = True
        if a.chunked:
            a.length = -1

    def _read_chunks(self, a: _Answer) -> None:
        buf = self._buf
        while True:
            if a.chunk_left < 0:  # a size line, or the last chunk and its trailer
                eol = buf.find(b"\r\n")
                if eol < 0:
                    return
                size_text = bytes(buf[:eol]).split(b";", 1)[0].strip()
                try:
                    size = int(size_text, 16)
                except ValueError:
                    raise TransportError(f"bad chunk size {size_text[:20]!r}") from None
                if size == 0:
                    end = buf.find(b"\r\n\r\n", eol)  # (at eol itself when there are no trailers)
                    if end < 0:
                        return
                    del buf[: end + 4]
                    self._finish(a)
                    return
                del buf[: eol + 2]
                a.chunk_left = size + 2
            if len(buf) < a.chunk_left:
                take = min(len(buf), a.chunk_left - 2)
                if take > 0 and a.lines is not None:  # a stream gets what is here already
                    self._body(a, bytes(buf[:take]))
                    del buf[:take]
                    a.chunk_left -= take
                return
            if buf[a.chunk_left - 2 : a.chunk_left] != b"\r\n":
                raise TransportError("a chunk does not end with CRLF")
            data = bytes(buf[: a.chunk_left - 2])
            del buf[: a.chunk_left]
            a.chunk_left = -1
            if data:
                self._body(a, data)

    @staticmethod
    def _body(a: _Answer, data: bytes) -> None:
        if a.lines is None or a.status != 200:  # a request's body, or a stream's error answer
            a.parts.append(data)
            return
        if a.tail:
            data = a.tail + data
        lines = data.split(b"\n")
        a.tail = lines.pop()
        batch = [line for line in lines if line]
        if batch:
            a.lines.put_nowait(batch)


class Pool:
    """Kept-alive connections to one origin (``limit`` at most for ``request``; watches have their own)."""

    def __init__(
        self,
        origin: Origin,
        ssl_context: ssl.SSLContext | None,
        *,
        limit: int = 32,
        connect_timeout: float = 30.0,
        keepalive: float = KEEPALIVE_S,
    ) -> None:
        self.origin = origin
        self._ssl = ssl_context if origin.scheme == "https" else None
        self._limit = max(1, limit)
        self._connect_timeout = connect_timeout
        self._keepalive = keepalive
        self._idle: list[Connection] = []
        self._open = 0  # connections of ``request``, idle or busy
        self._waiters: collections.deque[asyncio.Future[None]] = collections.deque()
        self._streams: set[Connection] = set()
        self._all: set[Connection] = set()  # every connection not yet gone (for close)
        self.connects = 0  # connections opened (tests, metrics)

    async def _connect(self) -> Connection:
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(self._connect_timeout):
                _, conn = await loop.create_connection(
                    Connection,
                    self.origin.host,
                    self.origin.port,
                    ssl=self._ssl,
                    server_hostname=self.origin.host if self._ssl is not None else None,
                )
        except TimeoutError:
            raise RequestTimeout(f"connecting to {self.origin.host_header} timed out") from None
        except (OSError, ssl.SSLError) as exc:
            raise TransportError(f"cannot connect to {self.origin.host_header}: {exc}") from exc
        self.connects += 1
        self._all.add(conn)
        conn.lost.add_done_callback(lambda _: self._all.discard(conn))
        return conn

    async def _acquire(self) -> Connection:
        while True:
            now = time.monotonic()
            while self._idle:
                conn = self._idle.pop()
                if not conn.closed and now - conn.idle_since < self._keepalive:
                    return conn
                conn.close()
                self._open -= 1
            if self._open < self._limit:
                self._open += 1
                try:
                    return await self._connect()
                except BaseException:
                    self._open -= 1
                    self._wake()
                    raise
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            except BaseException:
                if not waiter.cancelled() and waiter.done():
                    self._wake()  # pass the turn on
                raise

    def _wake(self) -> None:
        while self._waiters:
            w = self._waiters.popleft()
            if not w.done():
                w.set_result(None)
                return

    def _release(self, conn: Connection) -> None:
        if conn.closed:
            self._open -= 1
        else:
            self._idle.append(conn)
        self._wake()

    async def request(self, data: bytes, timeout: float) -> tuple[int, bytes]:
        """Send ``data`` (a whole request: line, headers, body) and return (status, body). A kept-alive
        connection the server closed before answering is retried once on a new one (the request did
        not reach it: nothing of the answer came back), as browsers and Go's net/http do."""
        for attempt in (0, 1):
            conn = await self._acquire()
            reused = conn.used > 0
            try:
                return await self._exchange(conn, data, timeout)
            except RequestTimeout:
                raise
            except TransportError:
                if attempt == 0 and reused and not conn.received:
                    continue
                raise
            finally:
                self._release(conn)
        raise AssertionError("unreachable")  # pragma: no cover

    @staticmethod
    async def _exchange(conn: Connection, data: bytes, timeout: float) -> tuple[int, bytes]:
        done = conn.send(data, _Answer())
        handle = asyncio.get_running_loop().call_later(
            timeout, conn.abort, RequestTimeout(f"no answer within {timeout:g} s")
        )
        try:
            return await done
        except asyncio.CancelledError:
            conn.close()  # given up mid-request: the connection's state is unknown
            raise
        finally:
            handle.cancel()

    async def stream(self, data: bytes, timeout: float) -> Stream:
        """Send ``data`` on a connection of its own; the stream once the answer's headers are in."""
        conn = await self._connect()
        self._streams.add(conn)
        loop = asyncio.get_running_loop()
        answer = _Answer(asyncio.Queue(), loop.create_future())
        assert answer.headed is not None
        try:
            done = conn.send(data, answer)
            async with asyncio.timeout(timeout):
                await answer.headed
        except TimeoutError:
            self._drop(conn)
            raise RequestTimeout(f"no answer within {timeout:g} s") from None
        except BaseException:
            self._drop(conn)
            raise
        return Stream(self, conn, answer, done)

    def _drop(self, conn: Connection) -> None:
        conn.close()
        self._streams.discard(conn)

    async def close(self, wait: float = 2.0) -> None:
        """Close every connection and wait (at most ``wait`` seconds) until they are gone: a TLS
        connection closes after its close_notify, and a socket must not outlive the event loop."""
        for conn in list(self._all):
            conn.close()
        self._idle.clear()
        self._streams.clear()
        pending = [c.lost for c in self._all if not c.lost.done()]
        if pending:
            await asyncio.wait(pending, timeout=wait)
        for conn in list(self._all):  # the server never answered the close: drop the socket
            if conn.transport is not None:
                conn.transport.abort()


class Stream:
    """A watch's answer: ``status``, then its lines (``lines()``), or its whole body (``read()``)."""

    def __init__(
        self, pool: Pool, conn: Connection, answer: _Answer, done: asyncio.Future[tuple[int, bytes]]
    ) -> None:
        self._pool, self._conn, self._answer, self._done = pool, conn, answer, done

    @property
    def status(self) -> int:
        return self._answer.status

    async def read(self) -> bytes:
        """The whole body (of an error answer)."""
        try:
            return (await self._done)[1]
        except asyncio.CancelledError:
            if self._done.cancelled() and not self._conn.closed:
                raise
            raise TransportError("connection closed before the answer was complete") from None
        finally:
            self.close()

    async def lines(self, idle: float | None = None) -> AsyncIterator[list[bytes]]:
        """Batches of complete, non-empty lines until the server ends the answer; a transport failure
        raises ``TransportError``, and so do ``idle`` seconds without a line (``RequestTimeout``: a
        stalled or half-open connection is taken for dead and closed)."""
        queue = self._answer.lines
        assert queue is not None
        conn = self._conn
        try:
            while True:
                try:
                    async with asyncio.timeout(idle):
                        item = await queue.get()
                except TimeoutError:
                    raise RequestTimeout(f"nothing received for {idle:g} s") from None
                if conn.paused and queue.qsize() <= MAX_QUEUED_BATCHES // 2:
                    conn.resume()
                if item is None:
                    return
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            self.close()

    def close(self) -> None:
        self._pool._drop(self._conn)
