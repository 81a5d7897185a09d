"""A small asyncio HTTP/1.1 server (plain or TLS) for the webhook, /metrics and the probes.

Enough HTTP for the kube-apiserver's webhook client and Prometheus scrapers: keep-alive and
Content-Length bodies (no chunked uploads), with read, idle and connection limits, since the webhook
is ``failurePolicy: Fail``. Bad requests get a 4xx, never a traceback; shutdown closes every connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

log = logging.getLogger(__name__)

MAX_BODY = 8 * 1024 * 1024  # an AdmissionReview carries two job objects; 8 MiB is generous
MAX_HEADERS = 100  # Go's net/http allows 1 MiB of headers; no client of ours sends more than ten
MAX_HEAD_BYTES = 64 * 1024  # also asyncio's per-line limit: a longer line is refused the same way
REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed", 408: "Request Timeout",
           413: "Payload Too Large", 431: "Request Header Fields Too Large", 500: "Internal Server Error",
           501: "Not Implemented", 503: "Service Unavailable"}  # fmt: skip
_DIGITS = re.compile(rb"[0-9]+")  # str.isdigit() would also take "²", which int() refuses


@dataclass(frozen=True, slots=True)
class Limits:
    """How long a client may take, and how many may be connected at once.

    ``idle_timeout`` is longer than the 90 s after which Go's HTTP transport (the kube-apiserver's
    webhook client) drops an idle connection itself, so the client closes first and never races
    our close with a new request. Webhook calls time out after 10 s on the API server's side
    (``timeoutSeconds``), so the read timeouts only ever cut off clients that are not the API server.
    """

    header_timeout: float = 10.0  # request line and headers, from their first byte (and the TLS handshake)
    body_timeout: float = 30.0  # the body, once the headers are in; also each response write
    idle_timeout: float = 120.0  # a kept-alive connection waiting for its next request
    max_connections: int = 256  # more get a 503 and are closed: file descriptors stay bounded


@dataclass(frozen=True, slots=True)
class Response:
    status: int
    body: bytes = b""
    content_type: str = "text/plain; charset=utf-8"


Handler = Callable[[str, bytes], Awaitable[Response]]  # (method, body) -> response


class _Refused(Exception):
    """The request cannot be served: answer ``status`` and close the connection."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.response = Response(status, f"{message}\n".encode())


@dataclass(frozen=True, slots=True)
class _Request:
    method: str
    path: str
    body: bytes
    keep_alive: bool


def parse_bind_address(addr: str, default_host: str = "0.0.0.0") -> tuple[str, int] | None:
    """controller-runtime style ``host:port`` / ``:port``; ``0`` (or empty) disables the endpoint."""
    if addr in ("", "0"):
        return None
    host, sep, port = addr.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(
            f"bind address {addr!r} must look like ':8080' or '127.0.0.1:8080' (or '0' to disable)"
        )
    return (host.strip("[]") or default_host, int(port))


class HTTPServer:
    def __init__(
        self,
        routes: dict[str, Handler],
        *,
        ssl_context: ssl.SSLContext | None = None,
        limits: Limits = Limits(),
    ) -> None:
        self.routes = routes
        self.ssl_context = ssl_context
        self.limits = limits
        self._server: asyncio.Server | None = None
        self._connections: dict[asyncio.Task[None], asyncio.StreamWriter] = {}

    @property
    def port(self) -> int:
        assert self._server is not None and self._server.sockets, "server not started"
        return int(self._server.sockets[0].getsockname()[1])

    async def start(self, host: str, port: int) -> None:
        tls = {"ssl_handshake_timeout": self.limits.header_timeout} if self.ssl_context else {}
        self._server = await asyncio.start_server(
            self._serve, host, port, ssl=self.ssl_context, reuse_address=True, limit=MAX_HEAD_BYTES, **tls
        )

    async def close(self) -> None:
        """Stop listening and end every connection (idle or mid-request) before returning."""
        if self._server is not None:
            self._server.close()
        for writer in list(self._connections.values()):
            writer.close()  # a read waiting on this connection sees EOF and its handler returns
        tasks = list(self._connections)
        if tasks:
            _, stuck = await asyncio.wait(tasks, timeout=2)
            for task in stuck:  # e.g. a TLS close_notify the peer never answers
                task.cancel()
            if stuck:
                await asyncio.wait(stuck, timeout=1)
        if self._server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        try:
            if len(self._connections) >= self.limits.max_connections:
                await self._write(writer, Response(503, b"too many connections\n"), keep_alive=False)
                return
            self._connections[task] = writer
            await self._session(reader, writer)
        except (ConnectionError, ssl.SSLError, OSError, TimeoutError, asyncio.IncompleteReadError):
            pass  # the peer went away or stopped reading: nothing to answer
        except asyncio.CancelledError:
            # Only close() and the end of asyncio.run cancel a connection. Ending normally matters on
            # Python 3.11: start_server's done-callback calls task.exception() on a cancelled task and
            # logs the CancelledError it raises as a traceback, on every shutdown.
            pass
        finally:
            self._connections.pop(task, None)
            writer.close()

    async def _session(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Requests on one connection, in turn, until it closes or one cannot be served."""
        lim = self.limits
        while True:
            try:
                # Idle until the first byte of the next request, then the head within header_timeout.
                async with asyncio.timeout(lim.idle_timeout):
                    first = await reader.read(1)
                if not first:
                    return
                try:
                    async with asyncio.timeout(lim.header_timeout):
                        method, target, keep_alive, length = await self._read_head(first, reader)
                except TimeoutError:
                    raise _Refused(408, "request headers not received in time") from None
                try:
                    async with asyncio.timeout(lim.body_timeout):
                        body = await reader.readexactly(length) if length else b""
                except TimeoutError:
                    raise _Refused(408, "request body not received in time") from None
                except asyncio.IncompleteReadError as exc:
                    raise _Refused(
                        400, f"body shorter than Content-Length ({len(exc.partial)} of {length} bytes)"
                    ) from None
            except TimeoutError:
                return  # idle: close quietly, as Go's IdleTimeout does
            except _Refused as refused:
                await self._write(writer, refused.response, keep_alive=False)
                return
            resp = await self._dispatch(method, target.split("?", 1)[0], body)
            await self._write(writer, resp, keep_alive=keep_alive)
            if not keep_alive:
                return

    async def _read_head(self, first: bytes, reader: asyncio.StreamReader) -> tuple[str, str, bool, int]:
        """(method, target, keep-alive, Content-Length) of a request whose first byte is ``first``."""
        try:
            request_line = first + await reader.readline()
        except ValueError:  # asyncio's LimitOverrunError, as readline() reports it
            raise _Refused(431, "request line too long") from None
        parts = request_line.decode("latin-1").split()
        if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
            raise _Refused(400, "malformed request line")
        method, target, version = parts
        headers: dict[str, str] = {}
        total = len(request_line)
        for _ in range(MAX_HEADERS + 1):
            try:
                line = await reader.readline()
            except ValueError:
                raise _Refused(431, "header line too long") from None
            if line in (b"\r\n", b"\n"):
                break
            if not line.endswith(b"\n"):
                raise asyncio.IncompleteReadError(line, None)  # EOF inside the head: nobody to answer
            total += len(line)
            if total > MAX_HEAD_BYTES:
                raise _Refused(431, "request headers too large")
            name, colon, value = line.decode("latin-1").partition(":")
            name = name.strip().lower()
            if not colon or not name:
                raise _Refused(400, f"malformed header line {line[:60]!r}")
            if name == "content-length" and headers.get(name, value.strip()) != value.strip():
                raise _Refused(400, "conflicting Content-Length headers")
            headers[name] = value.strip()
        else:
            raise _Refused(431, f"more than {MAX_HEADERS} headers")
        if "transfer-encoding" in headers:
            raise _Refused(501, "Transfer-Encoding is not supported: send a Content-Length")
        raw_length = headers.get("content-length", "0").encode("latin-1")
        if not _DIGITS.fullmatch(raw_length):
            raise _Refused(400, f"Content-Length must be a non-negative integer, got {raw_length[:40]!r}")
        if len(raw_length) > 10 or int(raw_length) > MAX_BODY:
            raise _Refused(413, f"request body over {MAX_BODY} bytes")
        keep_alive = version == "HTTP/1.1" and headers.get("connection", "").lower() != "close"
        return method, target, keep_alive, int(raw_length)

    async def _dispatch(self, method: str, path: str, body: bytes) -> Response:
        handler = self.routes.get(path)
        if handler is None:
            return Response(404, b"not found\n")
        try:
            return await handler(method, body)
        except Exception:
            log.exception("handler for %s failed", path)  # a bug of ours: the traceback is wanted
            return Response(500, b"internal error\n")

    async def _write(self, writer: asyncio.StreamWriter, resp: Response, *, keep_alive: bool) -> None:
        head = (
            f"HTTP/1.1 {resp.status} {REASONS.get(resp.status, 'Status')}\r\n"
            f"Content-Type: {resp.content_type}\r\n"
            f"Content-Length: {len(resp.body)}\r\n"
            f"Connection: {'keep-alive' if keep_alive else 'close'}\r\n\r\n"
        )
        writer.write(head.encode("latin-1") + resp.body)
        async with asyncio.timeout(self.limits.body_timeout):  # a client that never reads
            await writer.drain()
