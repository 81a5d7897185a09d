"""The operator's HTTP endpoints (the admission webhook, /metrics, the probes), served by aiohttp.web.

aiohttp.web is the project's one server library (``trainop ui`` serves with it too): a maintained
HTTP/1.1 parser (in C) instead of our own. What we add is small: a handler signature the endpoints
share (method, body → Response), limits, and a quiet shutdown. There is no connection cap, as Go's
net/http behind upstream's webhook has none: the webhook is ``failurePolicy: Fail``, so clients that
open connections and stay idle must never keep the API server's calls out (issue 22); an idle or
stalled connection is closed after ``idle_timeout`` instead. Bad requests get a 4xx, never a
traceback; shutdown closes every connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError

log = logging.getLogger(__name__)

MAX_BODY = 8 * 1024 * 1024  # an AdmissionReview carries two job objects; 8 MiB is generous
MAX_HEADERS = 100  # Go's net/http allows 1 MiB of headers; no client of ours sends more than ten
SHUTDOWN_S = 2.0  # how long close() lets a request in flight finish
LINGER_S = 1.0  # after a refused request, how long the rest of its body is read and dropped


@dataclass(frozen=True, slots=True)
class Limits:
    """How long a client may take.

    ``idle_timeout`` is longer than the 90 s after which Go's HTTP transport (the kube-apiserver's
    webhook client) drops an idle connection itself, so the client closes first and never races our
    close with a new request; it also closes a connection that sends nothing, or stops mid-head.
    Webhook calls time out after 10 s on the API server's side (``timeoutSeconds``), so the other
    timeouts only ever cut off clients that are not the API server.
    """

    header_timeout: float = 10.0  # the TLS handshake, from the connection's accept
    body_timeout: float = 30.0  # the body, once the headers are in
    idle_timeout: float = 120.0  # a connection waiting for its (next) request


@dataclass(frozen=True, slots=True)
class Response:
    status: int
    body: bytes = b""
    content_type: str = "text/plain; charset=utf-8"


Handler = Callable[[str, bytes], Awaitable[Response]]  # (method, body) -> response


@dataclass(frozen=True, slots=True)
class Request:
    """What a handler that needs more than the body sees (the progress endpoint: its path's
    variables and the Authorization header)."""

    method: str
    params: Mapping[str, str]  # the route's {variables}
    headers: Mapping[str, str]
    body: bytes


RequestHandler = Callable[[Request], Awaitable[Response]]


@dataclass(frozen=True, slots=True)
class RequestRoute:
    """A route pattern (aiohttp's ``{name}`` variables) whose handler gets a ``Request``, with a
    body cap of its own: a longer body is refused with 413 before it is all read."""

    handler: RequestHandler
    max_body: int


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


class _ServerLog(logging.LoggerAdapter):  # type: ignore[type-arg]
    """aiohttp's server log: a client's malformed request (already answered with its 4xx) is one
    debug line, not a traceback; anything else is logged as aiohttp logs it."""

    def log(self, level: int, msg: object, *args: object, **kwargs: Any) -> None:
        exc = kwargs.get("exc_info")
        if isinstance(exc, HttpProcessingError):
            first = (exc.message or "").strip().splitlines()
            self.logger.debug("bad request (%s): %s", exc.code, first[0] if first else "")
            return
        super().log(level, msg, *args, **kwargs)


def _plain(status: int, text: str) -> web.Response:
    return web.Response(status=status, text=text + "\n")


def _closing(status: int, text: str) -> web.Response:
    """A refusal after which the connection is closed (its request was not read to the end)."""
    resp = _plain(status, text)
    resp.force_close()
    return resp


def _of_method_and_body(handler: Handler) -> RequestHandler:
    async def handle(req: Request) -> Response:
        return await handler(req.method, req.body)

    return handle


class HTTPServer:
    """``routes`` (path → handler, any method) on one address, plain or TLS."""

    def __init__(
        self,
        routes: dict[str, Handler],
        *,
        ssl_context: ssl.SSLContext | None = None,
        limits: Limits = Limits(),
        request_routes: Mapping[str, RequestRoute] | None = None,
    ) -> None:
        self.routes = routes
        self.request_routes = dict(request_routes or {})
        self.ssl_context = ssl_context
        self.limits = limits
        self._runner: web.AppRunner | None = None
        self._server: asyncio.Server | None = None

    @property
    def port(self) -> int:
        assert self._server is not None and self._server.sockets, "server not started"
        return int(self._server.sockets[0].getsockname()[1])

    async def start(self, host: str, port: int) -> None:
        app = web.Application(client_max_size=MAX_BODY)
        routes = {path: RequestRoute(_of_method_and_body(h), MAX_BODY) for path, h in self.routes.items()}
        for pattern, route in {**routes, **self.request_routes}.items():
            app.router.add_route("*", pattern, self._serve(route, pattern))
        self._runner = web.AppRunner(
            app,
            access_log=None,
            logger=_ServerLog(logging.getLogger("aiohttp.server")),
            handle_signals=False,
            keepalive_timeout=self.limits.idle_timeout,
            max_headers=MAX_HEADERS,
            lingering_time=LINGER_S,
            shutdown_timeout=SHUTDOWN_S,
        )
        await self._runner.setup()
        # Our own listener rather than web.TCPSite: it bounds the TLS handshake (a client that opens
        # a connection and never starts one is closed after header_timeout).
        factory = self._runner.server
        assert factory is not None  # (made by setup())
        self._server = await asyncio.get_running_loop().create_server(
            factory,
            host,
            port,
            ssl=self.ssl_context,
            reuse_address=True,
            ssl_handshake_timeout=self.limits.header_timeout if self.ssl_context else None,
        )

    async def close(self) -> None:
        """Stop listening and end every connection (idle or mid-request) before returning."""
        if self._server is not None:
            self._server.close()
        if self._runner is not None:
            await self._runner.cleanup()
        if self._server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), SHUTDOWN_S)

    def _serve(self, route: RequestRoute, pattern: str) -> Callable[[web.Request], Awaitable[web.Response]]:
        async def serve(request: web.Request) -> web.Response:
            if (request.content_length or 0) > route.max_body:
                return _closing(413, f"request body over {route.max_body} bytes")
            chunks: list[bytes] = []
            size = 0
            try:
                async with asyncio.timeout(self.limits.body_timeout):
                    while chunk := await request.content.read(64 * 1024):
                        size += len(chunk)
                        if size > route.max_body:  # chunked: no Content-Length to refuse it by
                            return _closing(413, f"request body over {route.max_body} bytes")
                        chunks.append(chunk)
            except TimeoutError:
                return _closing(408, "request body not received in time")
            req = Request(request.method, dict(request.match_info), request.headers, b"".join(chunks))
            try:
                resp = await route.handler(req)
            except Exception:
                log.exception("handler for %s failed", pattern)  # a bug of ours: the traceback is wanted
                return _plain(500, "internal error")
            return web.Response(
                status=resp.status, body=resp.body, headers={"Content-Type": resp.content_type}
            )

        return serve
