"""A small asyncio HTTP/1.1 server (plain or TLS) for the webhook, /metrics and the probes.

Enough HTTP for the kube-apiserver's webhook client and Prometheus scrapers: keep-alive,
Content-Length bodies, no chunked uploads. Adding a web framework for three endpoints would cost
more memory than the whole server. Handlers map (method, path, body) to (status, content type, body).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

log = logging.getLogger(__name__)

MAX_BODY = 8 * 1024 * 1024  # an AdmissionReview carries two job objects; 8 MiB is generous
REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed", 413: "Payload Too Large",
           500: "Internal Server Error", 503: "Service Unavailable"}  # fmt: skip


@dataclass(frozen=True, slots=True)
class Response:
    status: int
    body: bytes = b""
    content_type: str = "text/plain; charset=utf-8"


Handler = Callable[[str, bytes], Awaitable[Response]]  # (method, body) -> response


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
    def __init__(self, routes: dict[str, Handler], *, ssl_context: ssl.SSLContext | None = None) -> None:
        self.routes = routes
        self.ssl_context = ssl_context
        self._server: asyncio.Server | None = None

    @property
    def port(self) -> int:
        assert self._server is not None and self._server.sockets, "server not started"
        return int(self._server.sockets[0].getsockname()[1])

    async def start(self, host: str, port: int) -> None:
        self._server = await asyncio.start_server(
            self._serve, host, port, ssl=self.ssl_context, reuse_address=True
        )

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                try:
                    request_line = await reader.readline()
                except (ConnectionError, ssl.SSLError, asyncio.LimitOverrunError, ValueError):
                    return
                if not request_line:
                    return
                parts = request_line.decode("latin-1").split()
                if len(parts) != 3:
                    await self._write(writer, Response(400, b"malformed request line\n"), keep_alive=False)
                    return
                method, target, version = parts
                headers: dict[str, str] = {}
                while True:
                    line = await reader.readline()
                    if line in (b"\r\n", b"\n", b""):
                        break
                    name, _, value = line.decode("latin-1").partition(":")
                    headers[name.strip().lower()] = value.strip()
                length = int(headers.get("content-length") or 0)
                if length > MAX_BODY:
                    await self._write(writer, Response(413, b"request too large\n"), keep_alive=False)
                    return
                body = await reader.readexactly(length) if length else b""
                path = target.split("?", 1)[0]
                handler = self.routes.get(path)
                if handler is None:
                    resp = Response(404, b"not found\n")
                else:
                    try:
                        resp = await handler(method, body)
                    except Exception:
                        log.exception("handler for %s failed", path)
                        resp = Response(500, b"internal error\n")
                keep_alive = version == "HTTP/1.1" and headers.get("connection", "").lower() != "close"
                await self._write(writer, resp, keep_alive=keep_alive)
                if not keep_alive:
                    return
        except (ConnectionError, asyncio.IncompleteReadError, ssl.SSLError):
            return
        finally:
            with contextlib.suppress(Exception):
                writer.close()

    @staticmethod
    async def _write(writer: asyncio.StreamWriter, resp: Response, *, keep_alive: bool) -> None:
        head = (
            f"HTTP/1.1 {resp.status} {REASONS.get(resp.status, 'Status')}\r\n"
            f"Content-Type: {resp.content_type}\r\n"
            f"Content-Length: {len(resp.body)}\r\n"
            f"Connection: {'keep-alive' if keep_alive else 'close'}\r\n\r\n"
        )
        writer.write(head.encode("latin-1") + resp.body)
        await writer.drain()
