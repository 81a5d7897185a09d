"""The web view's server (aiohttp.web): pages, JSON, server-sent events for live updates, and the three
actions. I/O adapter: what a page shows is ``views``'s; what it reads and changes goes through
``source.Source``.

Security: the URL ``trainop ui`` prints carries a per-session token; the first visit trades it for an
HttpOnly, SameSite=Strict cookie. Every request without that cookie (or the token) is refused with
403, a request whose Host is not the address it serves is refused too (DNS rebinding), and an action
(POST) also needs the page's CSRF token in ``X-CSRF-Token``. Pages build text with ``textContent``
only and a Content-Security-Policy allows no inline script, so job names, labels and logs are text.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import html
import json
import queue
import secrets
import socket
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from importlib import resources
from typing import Any

import msgspec
from aiohttp import web

from trainop.backends.base import BackendError, NotFoundError
from trainop.cli.lines import render_line
from trainop.cli.selectors import SelectorError, parse_selector
from trainop.ui.source import Source
from trainop.ui.views import build_job_page, build_job_row, build_progress, select_rows

LIST_INTERVAL = 0.5  # how often a stream re-reads the backend (what `get -w` polls at)
TOKEN_INTERVAL = 0.1  # how often the list's keeper asks whether anything changed (one SQLite pragma)
PING_SECONDS = 15.0  # an SSE comment keeps proxies and the browser from closing an idle stream
LOG_BATCH_LINES = 2000
LOG_BATCH_BYTES = 1 << 20
LOG_QUEUE_LINES = 1024  # lines read ahead of the browser: bounds the server's memory on a huge log
ACTIONS = ("suspend", "resume", "delete")
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
)

_ENCODE = msgspec.json.Encoder().encode
SOURCE: web.AppKey[Source] = web.AppKey("source", Source)


class SessionState:
    def __init__(self, port: int, token: str | None = None) -> None:
        self.token = token or secrets.token_urlsafe(24)
        self.csrf = secrets.token_urlsafe(24)
        self.cookie = f"trainop_ui_{port}"
        self.hosts = {f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}"}
        self.port = port


def _static(name: str) -> bytes:
    return resources.files("trainop.ui").joinpath("static", *name.split("/")).read_bytes()


def _same(a: str, b: str) -> bool:
    return hmac.compare_digest(a.encode(), b.encode())


@web.middleware
async def guard(request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> Any:
    state = request.app[STATE]
    host = request.headers.get("Host", "")
    if state.hosts and host not in state.hosts:
        return web.Response(status=403, text=f"trainop ui: unexpected Host {host!r}; open the printed URL\n")
    given = request.query.get("token")
    if given is not None and _same(given, state.token) and request.method == "GET":
        rest = {k: v for k, v in request.query.items() if k != "token"}
        found = web.HTTPFound(str(request.rel_url.with_query(rest)))
        found.set_cookie(state.cookie, state.token, httponly=True, samesite="Strict", path="/")
        return found
    if not _same(request.cookies.get(state.cookie, ""), state.token):
        return web.Response(
            status=403,
            text="trainop ui: this session's token is missing; open the URL `trainop ui` printed "
            "(it carries it)\n",
        )
    if request.method == "POST" and not _same(request.headers.get("X-CSRF-Token", ""), state.csrf):
        return web.json_response({"error": "missing or wrong X-CSRF-Token; reload the page"}, status=403)
    response = await handler(request)
    response.headers.setdefault("Content-Security-Policy", CSP)
    response.headers.setdefault("X-Content-Type-Options", "nosniff")
    response.headers.setdefault("Referrer-Policy", "no-referrer")
    return response


# ---- reading ----


def _error(exc: Exception) -> str:
    return str(exc) or type(exc).__name__


def read_jobs(source: Source, namespace: str | None) -> dict[str, Any]:
    """Every job in ``namespace`` (None: all) as list rows, with its restarts (from its pods)."""
    backend = source.backend
    try:
        jobs = backend.list_jobs(namespace or None)
    except BackendError as exc:
        return {"jobs": [], "error": _error(exc)}
    pods_of: dict[tuple[str, str], list[dict[str, Any]]] = {}
    try:
        for job, pod, _port in backend.replica_pods(namespace or None):
            pods_of.setdefault((job.namespace, job.name), []).append(pod)
    except BackendError as exc:  # restarts unknown
        rows = [build_job_row(j, None) for j in jobs]
        return {"jobs": rows, "error": f"pods: {_error(exc)}"}
    return {"jobs": [build_job_row(j, pods_of.get((j.namespace, j.name), [])) for j in jobs], "error": ""}


class ListCache:
    """The job list per namespace, kept current by one background task (``run``), so a request or a
    stream's update is served from memory at once however many jobs there are; reading 1,000 local
    jobs again takes most of a second. The task reads again when the backend's ``change_token``
    moves (on a cluster, which has none, every ``LIST_INTERVAL``), at least every ``MAX_AGE`` seconds
    (reads run the local backend's recovery rule too), and forgets a namespace no one asked for
    in ``IDLE`` seconds."""

    MAX_AGE = 10.0
    IDLE = 60.0

    def __init__(self, source: Source) -> None:
        self.source = source
        # namespace (None: all) -> [change token, read at, data, last asked for]
        self.entries: dict[str | None, list[Any]] = {}

    def _read(self, namespace: str | None) -> None:
        token = self.source.change_token()
        data = read_jobs(self.source, namespace)
        now = time.monotonic()
        entry = self.entries.setdefault(namespace, [None, 0.0, None, now])
        entry[0], entry[1], entry[2] = token, now, data

    async def get(self, namespace: str | None) -> dict[str, Any]:
        if namespace not in self.entries:
            await self.source.call(self._read, namespace)
        entry = self.entries[namespace]
        entry[3] = time.monotonic()
        data: dict[str, Any] = entry[2]
        return data

    async def run(self) -> None:
        while True:
            await asyncio.sleep(TOKEN_INTERVAL)
            for namespace, entry in list(self.entries.items()):
                now = time.monotonic()
                if now - entry[3] > self.IDLE:
                    del self.entries[namespace]
                    continue
                token = await self.source.call(self.source.change_token)
                if token is None:  # no cheap way to know: read again at the polling interval
                    stale = now - entry[1] >= LIST_INTERVAL
                else:
                    stale = token != entry[0] or now - entry[1] > self.MAX_AGE
                if stale:
                    await self.source.call(self._read, namespace)


def read_job(source: Source, namespace: str, name: str) -> dict[str, Any]:
    """One job's page; a part the reader may not read (pods, events) says so instead of failing."""
    backend = source.backend
    errors: dict[str, str] = {}
    try:
        details = backend.describe(name, namespace)
        job, pods, events = details.job, details.pods, details.events
    except NotFoundError:
        raise
    except BackendError as exc:
        job = backend.get(name, namespace)
        events = None
        errors["events"] = _error(exc)
        try:
            pods = backend.pods(name, namespace)
        except BackendError as pexc:
            pods, errors["replicas"] = None, _error(pexc)
    page = build_job_page(job, pods, events, time.time(), errors)
    try:
        page["progress"] = build_progress(backend.progress(job))
    except BackendError as exc:
        page["progress"], errors["progress"] = None, _error(exc)
    page["local"] = backend.replicas_here
    try:
        page["actions"] = source.allowed_actions(job.kind, namespace)
    except BackendError:  # no answer: offer them, the cluster decides each request
        page["actions"] = dict.fromkeys(ACTIONS, True)
    return page


async def _sse_loop(
    request: web.Request, produce: Callable[[], Awaitable[tuple[str, Any]]], interval: float
) -> web.StreamResponse:
    response = web.StreamResponse(
        headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
    )
    await response.prepare(request)
    last, sent_at = "", time.monotonic()
    with contextlib.suppress(ConnectionResetError, asyncio.CancelledError):
        while True:
            event, data = await produce()
            text = json.dumps(data, separators=(",", ":"))
            if text != last or event == "gone":
                await response.write(f"event: {event}\ndata: {text}\n\n".encode())
                last, sent_at = text, time.monotonic()
                if event == "gone":
                    break
            elif time.monotonic() - sent_at > PING_SECONDS:
                await response.write(b": ping\n\n")
                sent_at = time.monotonic()
            await asyncio.sleep(interval)
    return response


def _filters(request: web.Request) -> tuple[str | None, str | None, Any]:
    q = request.query
    try:
        selector = parse_selector(q["label"]) if q.get("label") else None
    except SelectorError as exc:
        raise web.HTTPBadRequest(text=f"label: {exc}") from None
    return q.get("namespace") or None, q.get("kind") or None, selector


async def api_jobs(request: web.Request) -> web.StreamResponse:
    namespace, kind, selector = _filters(request)
    data = await request.app[CACHE].get(namespace)
    return web.json_response({**data, "jobs": select_rows(data["jobs"], kind, selector)})


async def stream_jobs(request: web.Request) -> web.StreamResponse:
    namespace, kind, selector = _filters(request)

    async def produce() -> tuple[str, Any]:
        data = await request.app[CACHE].get(namespace)
        return "jobs", {**data, "jobs": select_rows(data["jobs"], kind, selector)}

    return await _sse_loop(request, produce, LIST_INTERVAL)


async def api_job(request: web.Request) -> web.StreamResponse:
    source = request.app[SOURCE]
    ns, name = request.match_info["namespace"], request.match_info["name"]
    try:
        return web.json_response(await source.call(read_job, source, ns, name))
    except NotFoundError as exc:
        return web.json_response({"error": str(exc)}, status=404)


async def stream_job(request: web.Request) -> web.StreamResponse:
    source = request.app[SOURCE]
    ns, name = request.match_info["namespace"], request.match_info["name"]

    async def produce() -> tuple[str, Any]:
        try:
            return "job", await source.call(read_job, source, ns, name)
        except NotFoundError as exc:
            return "gone", {"error": str(exc)}
        except BackendError as exc:
            return "job", {"error": _error(exc)}

    return await _sse_loop(request, produce, LIST_INTERVAL)


@dataclass(frozen=True, slots=True)
class _Partial:
    lines: list[tuple[str, str, str]]  # (replica, container, text) of each unfinished last line


class _LogPump:
    """Reads a log iterator on a thread of its own into a bounded queue: a slow browser slows the
    reader (backpressure), so memory stays bounded however big the log."""

    END = object()

    def __init__(self) -> None:
        self.q: queue.Queue[Any] = queue.Queue(maxsize=LOG_QUEUE_LINES)
        self.stopped = threading.Event()
        self.lines: Any = iter(())
        self.last_partial: list[tuple[str, str, str]] = []

    def partials(self, lines: list[Any]) -> None:
        """The unfinished last lines, queued when they changed (a bar's next state)."""
        now = [(ln.replica, ln.container, ln.text) for ln in lines]
        if now != self.last_partial:
            self.last_partial = now
            self._put(_Partial(now))

    def start(self, lines: Any) -> None:
        self.lines = lines
        threading.Thread(target=self._run, name="trainop-ui-log", daemon=True).start()

    def _put(self, item: Any) -> bool:
        while not self.stopped.is_set():
            try:
                self.q.put(item, timeout=0.5)
                return True
            except queue.Full:
                continue
        return False

    def _run(self) -> None:
        try:
            for line in self.lines:
                if not self._put(line):
                    return
            self._put(self.END)
        except BackendError as exc:
            self._put(exc)

    def batch(self) -> list[Any]:
        """Blocks for the first item, then takes what else is there (up to a batch)."""
        while True:  # a page that went away sets ``stopped``: this executor thread is not kept waiting
            try:
                out = [self.q.get(timeout=0.5)]
                break
            except queue.Empty:
                if self.stopped.is_set():
                    return [self.END]
        size = 0
        with contextlib.suppress(queue.Empty):
            while len(out) < LOG_BATCH_LINES and size < LOG_BATCH_BYTES and hasattr(out[-1], "text"):
                size += len(out[-1].text)
                out.append(self.q.get_nowait())
        return out


async def _pump_logs(
    request: web.Request,
    follow: bool,
    headers: dict[str, str],
    send: Callable[[web.StreamResponse, list[Any]], Awaitable[None]],
) -> web.StreamResponse:
    """Open the log (a 404 with the backend's words when it cannot be), then send what the pump reads,
    batch by batch, until its end; the pump is stopped however this ends (a page that went away
    cancels the handler: its reader must not go on waiting for the job)."""
    source = request.app[SOURCE]
    ns, name = request.match_info["namespace"], request.match_info["name"]
    replica, container = request.query.get("replica") or None, request.query.get("container") or None
    pump = _LogPump()
    loop = asyncio.get_running_loop()
    try:
        try:
            lines = await source.call(
                source.open_logs, name, ns, replica, container, follow, pump.stopped.is_set, pump.partials
            )
        except BackendError as exc:
            return web.json_response({"error": _error(exc)}, status=404)
        pump.start(lines)
        response = web.StreamResponse(headers=headers)
        await response.prepare(request)
        while True:
            items = await loop.run_in_executor(None, pump.batch)
            await send(response, items)
            if items[-1] is _LogPump.END or isinstance(items[-1], BackendError):
                return response
    except (ConnectionResetError, asyncio.CancelledError):
        return web.Response(status=499)  # nobody reads it: the client has gone
    finally:
        pump.stopped.set()


async def stream_logs(request: web.Request) -> web.StreamResponse:
    """A replica's log followed live (``logs -f``): batches of ``[replica, container, text]`` with
    each line as a terminal shows it (a ``\r`` bar's last state), then ``end``."""

    async def send(response: web.StreamResponse, items: list[Any]) -> None:
        rows = [[ln.replica, ln.container, render_line(ln.text)] for ln in items if hasattr(ln, "text")]
        if rows:  # msgspec: a gigabyte of log is JSON-encoded 5x faster than with json
            await response.write(b"event: lines\ndata: " + _ENCODE(rows) + b"\n\n")
        partial = [it for it in items if isinstance(it, _Partial)]
        if partial:  # the latest state of each unfinished line (a bar drawn in place)
            now = [[r, c, render_line(t)] for r, c, t in partial[-1].lines]
            await response.write(b"event: partial\ndata: " + _ENCODE(now) + b"\n\n")
        if isinstance(items[-1], BackendError):
            await response.write(b"event: failed\ndata: " + _ENCODE(_error(items[-1])) + b"\n\n")
        if items[-1] is _LogPump.END or isinstance(items[-1], BackendError):
            await response.write(b"event: end\ndata: {}\n\n")

    headers = {"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
    return await _pump_logs(request, True, headers, send)


async def download_logs(request: web.Request) -> web.StreamResponse:
    """The log as it is now, as plain text (``trainop logs``), streamed."""
    name, replica = request.match_info["name"], request.query.get("replica")
    filename = f"{name}-{replica}.log" if replica else f"{name}.log"

    async def send(response: web.StreamResponse, items: list[Any]) -> None:
        await response.write("".join(ln.text + "\n" for ln in items if hasattr(ln, "text")).encode())

    headers = {
        "Content-Type": "text/plain; charset=utf-8",
        "Content-Disposition": f'attachment; filename="{filename}"',
    }
    return await _pump_logs(request, False, headers, send)


# ---- acting ----


async def act(request: web.Request) -> web.StreamResponse:
    source = request.app[SOURCE]
    ns, name, action = (request.match_info[k] for k in ("namespace", "name", "action"))
    if action not in ACTIONS:
        return web.json_response(
            {"error": f"unknown action {action!r}; use one of {', '.join(ACTIONS)}"}, status=404
        )
    backend = source.backend
    try:
        if action == "delete":
            await source.call(backend.delete, name, ns, wait=False)
        else:
            await source.call(backend.set_suspend, name, action == "suspend", ns)
    except NotFoundError as exc:
        return web.json_response({"error": str(exc)}, status=404)
    except BackendError as exc:  # the cluster refused (RBAC): said as it is, with its status
        refused = exc.answer.code if exc.answer and exc.answer.code in (401, 403) else 409
        return web.json_response({"error": _error(exc)}, status=refused)
    finally:
        source.writes += 1  # the next list is read afresh
    return web.json_response({"ok": True, "action": action})


# ---- pages ----


async def page(request: web.Request) -> web.StreamResponse:
    state = request.app[STATE]
    source = request.app[SOURCE]
    text = _static("index.html").decode().replace("{{csrf}}", state.csrf)
    text = text.replace("{{where}}", html.escape(source.backend.where(), quote=True))
    return web.Response(text=text, content_type="text/html", headers={"Cache-Control": "no-store"})


STATIC_TYPES = {".js": "text/javascript", ".css": "text/css", ".png": "image/png"}
STATIC_FILES = ("app.js", "style.css", "vendor/uPlot.iife.min.js", "vendor/uPlot.min.css")


async def static(request: web.Request) -> web.StreamResponse:
    name = request.match_info["path"]
    if name not in STATIC_FILES:
        raise web.HTTPNotFound()
    suffix = name[name.rfind(".") :]
    return web.Response(body=_static(name), content_type=STATIC_TYPES[suffix])


CACHE = web.AppKey("cache", ListCache)
STATE = web.AppKey("state", SessionState)


def build_app(source: Source, state: SessionState) -> web.Application:
    app = web.Application(middlewares=[guard])
    app[SOURCE] = source
    app[STATE] = state
    app[CACHE] = ListCache(source)

    async def refresher(app: web.Application) -> Any:
        task = asyncio.create_task(app[CACHE].run())
        yield
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    app.cleanup_ctx.append(refresher)
    r = app.router
    r.add_get("/", page)
    r.add_get("/jobs/{namespace}/{name}", page)
    r.add_get("/static/{path:.+}", static)
    r.add_get("/api/jobs", api_jobs)
    r.add_get("/api/stream/jobs", stream_jobs)
    r.add_get("/api/jobs/{namespace}/{name}", api_job)
    r.add_get("/api/stream/jobs/{namespace}/{name}", stream_job)
    r.add_get("/api/stream/jobs/{namespace}/{name}/logs", stream_logs)
    r.add_get("/api/jobs/{namespace}/{name}/logs", download_logs)
    r.add_post("/api/jobs/{namespace}/{name}/{action}", act)
    return app


def serve(
    source: Source,
    host: str,
    port: int,
    announce: Callable[[str], None],
    token: str | None = None,
) -> None:
    """Serve until interrupted; ``announce`` gets the URL (with the session's token) once listening."""
    sock = socket.create_server((host, port))
    bound = int(sock.getsockname()[1])
    state = SessionState(bound, token)
    if host not in ("127.0.0.1", "localhost", "::1"):
        state.hosts = set()  # served to other machines: their Host header is theirs to choose
    shown = f"[{host}]" if ":" in host else host
    app = build_app(source, state)

    async def main() -> None:
        # handler_cancellation: a page that goes away cancels its handler, which stops its log reader
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0, handler_cancellation=True)
        await runner.setup()
        await web.SockSite(runner, sock).start()
        announce(f"http://{shown}:{bound}/?token={state.token}")
        try:
            await asyncio.Event().wait()
        finally:
            await runner.cleanup()

    try:
        asyncio.run(main())
    finally:
        source.close()
        sock.close()
