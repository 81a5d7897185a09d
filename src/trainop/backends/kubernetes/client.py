"""Connection to the Kubernetes API: kubeconfig or in-cluster config, and a client-side QPS/burst limit.

lightkube has no rate limiter, so every request (watches included, as in client-go) passes a token
bucket in the HTTP transport. The bucket has priority lanes: job status writes first (so a job's status
never waits behind other jobs' creation burst), then object writes and reads. Events, best effort,
have a bucket of their own of the same size, as client-go's event recorder has. The operator's hot
writes (creating pods and Services, job status, Events) and its watches go as plain JSON over
http1.py's kept-alive connections through the same limiter and counters (``DirectApi``), without
lightkube's and httpx's request and response objects; the rest (lists, gets, leases, the CLI's reads)
through lightkube. Knows nothing about jobs.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import os
import platform
import ssl
import time
from collections import Counter, deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast
from urllib.parse import quote

import httpx2 as httpx
import msgspec
from lightkube import AsyncClient
from lightkube.config import client_adapter
from lightkube.config.kubeconfig import KubeConfig, SingleConfig
from lightkube.config.models import User
from lightkube.core import resource as lkres
from lightkube.core.exceptions import ApiError
from lightkube.core.selector import build_selector
from lightkube.models.meta_v1 import Status
from lightkube.types import PatchType

from trainop.backends.kubernetes import http1

# Request priorities (lower is served first).
PRIORITY_STATUS = 0  # job status writes: one per job change, after that job's own creates (issue 16)
PRIORITY_WRITE = 1  # creating/deleting pods and services: what users wait for
PRIORITY_READ = 2  # lists, watches, gets
PRIORITY_EVENT = 3  # Events are best effort, but get a fair share (EVENT_SHARE)

# While events wait, every EVENT_SHARE-th token goes to the oldest of them: under a long creation
# burst events are late, never starved (client-go sends them through a client of their own).
EVENT_SHARE = 10

_priority: contextvars.ContextVar[int] = contextvars.ContextVar(
    "trainop_request_priority", default=PRIORITY_READ
)

# A watch that delivers no line for this long (not even a bookmark, which the API server sends
# about once a minute to watches that ask for them) is taken for a dead connection and opened again;
# TCP keepalive (http1.py) finds a half-open connection too, this also a server that stopped
# writing. Well under the 5-10 min a watch lasts (informer.py), so a stall costs minutes, not hours.
WATCH_IDLE_S = 180.0

# Defaults raised from upstream's 20/30 (§6.4): one reconcile of a 1+3 PyTorchJob makes ~9 writes, so
# 20 QPS caps the operator at ~2 jobs/s, and the apiserver's own priority-and-fairness, not the client,
# is what protects the cluster now. bench-k8s (issue 16), 100 x (1+3) with pods running 10 s: at
# 50/100 the burst took 19 s, job status lagged its pods by 1.47 s (p99) and 2 jobs never showed
# Running; at 100/200 the burst took 8 s, the lag was 0.07 s and every job showed Running.
DEFAULT_QPS = 100.0
DEFAULT_BURST = 200


@contextlib.contextmanager
def request_priority(priority: int) -> Iterator[None]:
    """Run the enclosed requests (in this task) at ``priority``."""
    token = _priority.set(priority)
    try:
        yield
    finally:
        _priority.reset(token)


class TokenBucket:
    """client-go's flowcontrol token bucket (``qps`` tokens per second, at most ``burst`` saved), whose
    waiters are served by priority, then first come first served, except that waiting events get
    every ``EVENT_SHARE``-th token. ``qps <= 0`` disables the limit."""

    def __init__(self, qps: float, burst: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.qps = qps
        self.burst = max(1, burst)
        self._clock = clock
        self._tokens = float(self.burst)
        self._last = clock()
        self._lanes: dict[int, deque[asyncio.Future[None]]] = {}
        self._waiting = 0
        self._served = 0
        self._pump: asyncio.Task[None] | None = None

    def _refill(self) -> None:
        now = self._clock()
        self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
        self._last = now

    async def acquire(self, priority: int = PRIORITY_READ) -> None:
        if self.qps <= 0:
            return
        self._refill()
        if not self._waiting and self._tokens >= 1.0:
            self._tokens -= 1.0
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        lane = self._lanes.get(priority)
        if lane is None:
            lane = self._lanes[priority] = deque()
            self._lanes = dict(sorted(self._lanes.items()))
        lane.append(fut)
        self._waiting += 1
        if self._pump is None or self._pump.done():
            self._pump = asyncio.create_task(self._serve())
        await fut

    def _next(self) -> asyncio.Future[None]:
        self._served += 1
        events = self._lanes.get(PRIORITY_EVENT)
        if events and self._served % EVENT_SHARE == 0:
            return events.popleft()
        for lane in self._lanes.values():
            if lane:
                return lane.popleft()
        raise AssertionError("no waiter")  # pragma: no cover - guarded by self._waiting

    async def _serve(self) -> None:
        while self._waiting:
            self._refill()
            if self._tokens >= 1.0:
                fut = self._next()
                self._waiting -= 1
                if fut.cancelled():
                    self._served -= 1
                    continue
                self._tokens -= 1.0
                fut.set_result(None)
                continue
            await asyncio.sleep((1.0 - self._tokens) / self.qps)


# Events wait for this long a pause in the other requests before they may use their whole rate.
EVENT_QUIET_S = 1.0


class RateBucket:
    """A plain token bucket for a caller that checks rather than waits: ``take`` is False once ``burst``
    calls came faster than ``rate`` per second (``TokenBucket`` queues its waiters instead)."""

    def __init__(self, rate: float, burst: float, now: float) -> None:
        self.rate, self.burst, self.tokens, self.stamp = rate, burst, burst, now

    def take(self, now: float) -> bool:
        self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now
        if self.tokens < 1:
            return False
        self.tokens -= 1
        return True


class Limiter:
    """The client's rate limits: one token bucket (with its priority lanes) for every request but
    Events, and one of the same size for Events, as client-go's event recorder sends through a client,
    and so a token bucket, of its own (controller-runtime builds it a second clientset from the same
    rest.Config). While other requests are going (none has paused for ``EVENT_QUIET_S``), events are
    further held to ``1 / EVENT_SHARE`` of the rate: best effort, they must not take the API server's
    time from the pods, Services and status writes of a burst, nor pile up to flood it right after
    (issue 16: sharing one bucket made 500 x (1+3) at 200/400 create its objects in 23 s instead of
    ~21 s; holding all events until a pause delayed the last jobs' Running by 7-13 s)."""

    def __init__(
        self,
        qps: float,
        burst: int,
        clock: Callable[[], float] = time.monotonic,
        activity: Activity | None = None,
    ) -> None:
        self.requests = TokenBucket(qps, burst, clock)
        self.events = TokenBucket(qps, burst, clock)
        self.busy_events = TokenBucket(qps / EVENT_SHARE, max(1, burst // EVENT_SHARE), clock)
        self.activity = activity
        self._clock = clock
        # Told how long each request other than an Event waited for its token (client-go's
        # rest_client_rate_limiter_duration_seconds; the operator's dashboard shows throttling with it).
        self.on_wait: Callable[[float], None] | None = None

    async def acquire(self, priority: int = PRIORITY_READ) -> None:
        if priority != PRIORITY_EVENT:
            t0 = self._clock()
            await self.requests.acquire(priority)
            if self.on_wait is not None:
                self.on_wait(self._clock() - t0)
            return
        if self.activity is not None and self.activity.quiet_for() < EVENT_QUIET_S:
            await self.busy_events.acquire(priority)
        await self.events.acquire(priority)


@dataclass
class RequestStats:
    """What the client sent, for ``rest_client_requests_total`` (§6.6's client-go metric) and benchmarks."""

    by_method_code: Counter[tuple[str, str]] = field(default_factory=Counter)
    hooks: list[Callable[[str, str], None]] = field(default_factory=list)

    @property
    def total(self) -> int:
        return sum(self.by_method_code.values())

    def record(self, method: str, code: str) -> None:
        self.by_method_code[(method, code)] += 1
        for hook in self.hooks:
            hook(method, code)


class Activity:
    """Requests other than Events in flight (waiting for a token included), and when the last one
    ended: while they go, Events are held to a fraction of their rate (``Limiter``)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.inflight = 0
        self.last_done = -1e9
        self._clock = clock

    def quiet_for(self) -> float:
        return 0.0 if self.inflight else self._clock() - self.last_done


@contextlib.contextmanager
def _in_flight(activity: Activity | None, priority: int) -> Iterator[None]:
    """Count the enclosed request (its wait for a token included) in ``activity``, unless an Event."""
    if activity is None or priority >= PRIORITY_EVENT:
        yield
        return
    activity.inflight += 1
    try:
        yield
    finally:
        activity.inflight -= 1
        activity.last_done = time.monotonic()


class LimitedTransport(httpx.AsyncBaseTransport):
    """Waits for a token before each request and counts responses by method and status code."""

    def __init__(
        self,
        inner: httpx.AsyncBaseTransport,
        limiter: Limiter,
        stats: RequestStats,
        activity: Activity | None = None,
        status_inner: httpx.AsyncBaseTransport | None = None,
        user_agent: str | None = None,
    ) -> None:
        self._inner = inner
        self._user_agent = user_agent
        # Status writes get connections of their own: behind a creation burst the shared pool's
        # queue, not the token bucket, is where they would wait (issue 16).
        self._status_inner = status_inner or inner
        self._limiter = limiter
        self._stats = stats
        self._activity = activity

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if self._user_agent:
            request.headers["User-Agent"] = self._user_agent
        priority = _priority.get()
        with _in_flight(self._activity, priority):
            await self._limiter.acquire(priority)
            try:
                inner = self._status_inner if priority == PRIORITY_STATUS else self._inner
                resp = await inner.handle_async_request(request)
            except httpx.HTTPError:
                self._stats.record(request.method, "<error>")
                raise
        self._stats.record(request.method, str(resp.status_code))
        return resp

    async def aclose(self) -> None:
        await self._inner.aclose()
        if self._status_inner is not self._inner:
            await self._status_inner.aclose()


_encode = msgspec.json.encode
_decode = msgspec.json.decode


class _AuthHeader:
    """The Authorization header lightkube would send for ``user`` (its order: token file, token, exec,
    basic). A token file is re-read on 401 (the kubelet rotates it). Exec plugins are not supported:
    ``supported`` is False and those requests go through lightkube."""

    def __init__(self, user: User) -> None:
        self._file = user.token_file
        self.supported = True
        self.value: str | None = None
        if self._file is not None:
            self.value = self._read()
        elif user.token is not None:
            self.value = f"Bearer {user.token}"
        elif user.exec:
            self.supported = False
        elif user.username and user.password:
            self.value = httpx.BasicAuth(user.username, user.password)._auth_header
        # else a client certificate (in the SSL context) or no credentials

    def _read(self) -> str:
        assert self._file is not None
        return f"Bearer {Path(self._file).read_text().strip()}"

    def refresh(self) -> bool:
        """Re-read a rotated token; False when there is nothing to re-read."""
        if self._file is None:
            return False
        self.value = self._read()
        return True


def _api_error(code: int, body: bytes) -> ApiError:
    """lightkube's ApiError for an error answer (a metav1.Status, or a plain-text one such as the 404
    for a type the server does not serve)."""
    status: Any = None
    with contextlib.suppress(msgspec.DecodeError):
        status = _decode(body)
    if not (isinstance(status, dict) and status.get("kind") == "Status"):
        text = body.decode("utf-8", "replace").strip()
        status = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": text, "code": code}
    status.setdefault("code", code)
    return ApiError(status=cast(Status, Status.from_dict(status)))


class DirectApi:
    """JSON requests and watches straight over http1.py's connections, through the same token bucket,
    priority lanes, activity and counters as ``KubeClient.api``, with the same headers and
    ``fieldManager``: lightkube's, httpx's and aiohttp's request and response objects cost about a
    quarter of the operator's CPU (py-spy, issue 16). Each request is one pre-encoded buffer. Errors
    are lightkube's ApiError; transport failures httpx's TransportError kinds (as through lightkube)."""

    def __init__(
        self,
        server: str,
        *,
        ssl_context: ssl.SSLContext | None,
        auth: _AuthHeader,
        limiter: Limiter,
        stats: RequestStats,
        activity: Activity | None,
        timeout: float,
        field_manager: str | None,
        user_agent: str,
        max_connections: int = 32,
        status_connections: int = 8,
    ) -> None:
        origin = http1.Origin.parse(server)
        self._prefix = origin.prefix
        # Status writes get connections of their own: behind a creation burst the shared pool's
        # queue, not the token bucket, is where they would wait (issue 16).
        self.pool = http1.Pool(origin, ssl_context, limit=max_connections, connect_timeout=timeout)
        self.status_pool = http1.Pool(origin, ssl_context, limit=status_connections, connect_timeout=timeout)
        self._auth = auth
        self._limiter, self._stats, self._activity = limiter, stats, activity
        self._timeout = timeout
        self._query = f"?fieldManager={field_manager}" if field_manager else ""
        self._paths: dict[tuple[Any, str | None], str] = {}
        self._common = (
            f"Host: {origin.host_header}\r\nUser-Agent: {user_agent}\r\nAccept: */*\r\n"
            "Accept-Encoding: identity\r\n"
        )
        self._auth_value: str | None = None
        self._auth_line = ""

    def path(self, res: Any, namespace: str | None, name: str | None = None) -> str:
        """``/api[s]/…[/namespaces/<ns>]/<plural>[/<name>[/<subresource>]]`` of a lightkube resource;
        ``namespace`` None: every namespace (or a cluster-scoped resource)."""
        base = self._paths.get((res, namespace))
        info = lkres.api_info(res)
        if base is None:
            top = info.parent or info.resource
            prefix = f"/api/{top.version}" if top.group == "" else f"/apis/{top.group}/{top.version}"
            where = f"/namespaces/{namespace}" if namespace is not None else ""
            base = self._paths[(res, namespace)] = f"{prefix}{where}/{info.plural}"
        if name is None:
            return base
        return f"{base}/{name}/{info.action}" if info.action else f"{base}/{name}"

    def _head(self, method: str, target: str) -> str:
        if self._auth.value != self._auth_value:
            self._auth_value = self._auth.value
            self._auth_line = f"Authorization: {self._auth_value}\r\n" if self._auth_value else ""
        return f"{method} {self._prefix}{target} HTTP/1.1\r\n{self._common}{self._auth_line}"

    async def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        content_type: str = "application/json",
        decode: bool = True,
    ) -> Any:
        """Send ``body`` and return the decoded answer (None unless ``decode``)."""
        target = path + self._query
        for attempt in range(2):
            code, answer = await self._send(method, target, body, content_type)
            if code == 401 and attempt == 0 and self._auth.refresh():
                continue
            break
        if code >= 300:
            raise _api_error(code, answer)
        return _decode(answer) if decode and answer else None

    def _encode_request(self, method: str, target: str, body: Any, content_type: str) -> bytes:
        head = self._head(method, target)
        if body is None:
            return (head + "\r\n").encode()
        data = _encode(body)
        head += f"Content-Type: {content_type}\r\nContent-Length: {len(data)}\r\n\r\n"
        return head.encode() + data

    async def _send(self, method: str, target: str, body: Any, content_type: str) -> tuple[int, bytes]:
        priority = _priority.get()
        with _in_flight(self._activity, priority):
            await self._limiter.acquire(priority)
            # Encoded once it holds its token: a burst's waiting requests do not each hold their bytes
            # (1,002 creates for one job of 500 workers).
            request = self._encode_request(method, target, body, content_type)
            pool = self.status_pool if priority == PRIORITY_STATUS else self.pool
            try:
                code, answer = await pool.request(request, self._timeout)
            except http1.TransportError as exc:
                self._stats.record(method, "<error>")
                raise _transport_error(exc) from exc
        self._stats.record(method, str(code))
        return code, answer

    async def watch(
        self,
        res: Any,
        namespace: str | None,
        *,
        resource_version: str | None,
        labels: dict[str, Any] | None,
        server_timeout: int,
        idle_timeout: float | None = WATCH_IDLE_S,
    ) -> AsyncIterator[list[bytes]]:
        """One watch request (``allowWatchBookmarks``, as client-go's reflector): batches of its event
        lines, undecoded, until the server ends it; an error answer raises ApiError (410: too old).
        ``idle_timeout`` seconds without a line (not even a bookmark) end it with a timeout: the
        connection is taken for dead, and the informer opens the watch again."""
        query = f"?watch=true&allowWatchBookmarks=true&timeoutSeconds={server_timeout}"
        if resource_version:
            query += f"&resourceVersion={quote(resource_version)}"
        if labels:
            query += f"&labelSelector={quote(build_selector(labels))}"
        request = (self._head("GET", self.path(res, namespace) + query) + "\r\n").encode()
        await self._limiter.acquire(_priority.get())
        try:
            stream = await self.pool.stream(request, self._timeout)
        except http1.TransportError as exc:
            self._stats.record("GET", "<error>")
            raise _transport_error(exc) from exc
        self._stats.record("GET", str(stream.status))
        if stream.status != 200:
            try:
                body = await stream.read()
            except http1.TransportError as exc:
                raise _transport_error(exc) from exc
            if stream.status == 401:
                self._auth.refresh()
            raise _api_error(stream.status, body)
        try:
            async for batch in stream.lines(idle_timeout):
                yield batch
        except http1.TransportError as exc:
            raise _transport_error(exc) from exc

    async def aclose(self) -> None:
        await self.pool.close()
        await self.status_pool.close()


def _transport_error(exc: http1.TransportError) -> httpx.TransportError:
    """httpx's kind of the failure: what lightkube's requests raise for the same failure."""
    if isinstance(exc, http1.RequestTimeout):
        return httpx.TimeoutException(str(exc))
    return httpx.ConnectError(str(exc))


def watch_error(obj: Any) -> ApiError:
    """The ApiError of a watch's ERROR event (its object is a metav1.Status; 410: too old)."""
    status = obj if isinstance(obj, dict) else {}
    return _api_error(int(status.get("code") or 500), _encode(status or {"message": str(obj)}))


def event_loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's event loop when it is installed (libuv and its TLS in C: the operator's event loop and
    TLS were ~a third of its CPU, issue 16), else None (asyncio's own). TRAINOP_EVENT_LOOP=asyncio
    chooses asyncio's to compare."""
    if os.environ.get("TRAINOP_EVENT_LOOP", "uvloop") != "uvloop":
        return None
    try:
        import uvloop
    except ImportError:
        return None
    factory: Callable[[], asyncio.AbstractEventLoop] = uvloop.new_event_loop
    return factory


def load_config(
    kubeconfig: str | None = None, context: str | None = None, client_configuration: Any = None
) -> SingleConfig:
    """``client_configuration`` if given (the SDK's argument), else ``--kubeconfig``, else the
    in-cluster service account, else ``$KUBECONFIG`` / ~/.kube/config."""
    if client_configuration is not None:
        return build_config_from_client_configuration(client_configuration)
    kc = KubeConfig.from_file(Path(kubeconfig).expanduser()) if kubeconfig else KubeConfig.from_env()
    cfg = kc.get(context)
    assert cfg is not None  # .get() without a default raises instead of returning None
    return cfg


def build_config_from_client_configuration(conf: Any) -> SingleConfig:
    """A ``kubernetes.client.Configuration``-like object (host, api_key, ssl_ca_cert, cert_file,
    key_file, verify_ssl, username/password), or a lightkube config, → a lightkube SingleConfig."""
    if isinstance(conf, SingleConfig):
        return conf
    if isinstance(conf, KubeConfig):
        single = conf.get()
        if single is None:
            raise ValueError("client_configuration: the KubeConfig has no current context")
        return single
    host = getattr(conf, "host", None)
    if not host:
        raise ValueError("client_configuration must have a `host` (a kubernetes.client.Configuration)")
    cluster: dict[str, Any] = {"server": host}
    if getattr(conf, "ssl_ca_cert", None):
        cluster["certificate-authority"] = conf.ssl_ca_cert
    if getattr(conf, "verify_ssl", True) is False:
        cluster["insecure-skip-tls-verify"] = True
    user: dict[str, Any] = {}
    api_key = getattr(conf, "api_key", None) or {}
    token = api_key.get("authorization") or api_key.get("BearerToken")
    if token:
        prefix = (getattr(conf, "api_key_prefix", None) or {}).get("authorization", "")
        full = f"{prefix} {token}".strip()
        user["token"] = full.split(" ", 1)[1] if full.lower().startswith("bearer ") else full
    if getattr(conf, "cert_file", None):
        user["client-certificate"] = conf.cert_file
    if getattr(conf, "key_file", None):
        user["client-key"] = conf.key_file
    if getattr(conf, "username", None):
        user["username"] = conf.username
        user["password"] = getattr(conf, "password", None) or ""
    kc = KubeConfig.from_dict(
        {
            "clusters": [{"name": "sdk", "cluster": cluster}],
            "users": [{"name": "sdk", "user": user}],
            "contexts": [{"name": "sdk", "context": {"cluster": "sdk", "user": "sdk"}}],
            "current-context": "sdk",
        }
    )
    single = kc.get()
    assert single is not None  # .get() without a default raises instead of returning None
    return single


@dataclass
class KubeClient:
    """Two lightkube async clients sharing one rate limiter and one set of counters: ``api`` for
    requests, ``watch_api`` for informers' lists and long-lived watches (so watches never hold the
    connections requests need)."""

    api: AsyncClient
    watch_api: AsyncClient
    limiter: Limiter
    stats: RequestStats
    config: SingleConfig
    activity: Activity = field(default_factory=Activity)
    direct: DirectApi | None = None  # the hot writes below; None: through ``api`` (httpx stack, exec auth)

    async def aclose(self) -> None:
        await self.api.close()
        await self.watch_api.close()
        if self.direct is not None:
            await self.direct.aclose()

    # The operator's hot writes: through ``direct`` when there is one, else lightkube (same requests).
    async def create(self, res: Any, namespace: str, obj: dict[str, Any]) -> None:
        """POST ``obj`` (whose metadata.namespace is ``namespace``); the answer is not decoded."""
        if self.direct is None:
            await self.api.create(res(obj))
            return
        if not obj.get("apiVersion") or not obj.get("kind"):
            info = lkres.api_info(res).resource
            obj = {**obj, "apiVersion": info.api_version, "kind": info.kind}
        await self.direct.request("POST", self.direct.path(res, namespace), obj, decode=False)

    async def replace_status(
        self, res: Any, namespace: str, name: str, obj: dict[str, Any]
    ) -> dict[str, Any]:
        """PUT ``obj`` to the job's /status (optimistic concurrency by its resourceVersion); the job
        as the server wrote it."""
        if self.direct is None:
            return dict(await self.api.replace(res.Status(obj), name, namespace=namespace))
        written: dict[str, Any] = await self.direct.request(
            "PUT", self.direct.path(res.Status, namespace, name), obj
        )
        return written

    async def merge_patch(self, res: Any, namespace: str, name: str, patch: dict[str, Any]) -> None:
        """A JSON merge patch (RFC 7386); the answer is not decoded."""
        if self.direct is None:
            await self.api.patch(res, name, patch, namespace=namespace, patch_type=PatchType.MERGE)
            return
        await self.direct.request(
            "PATCH",
            self.direct.path(res, namespace, name),
            patch,
            content_type=PatchType.MERGE.value,
            decode=False,
        )


def user_agent(component: str) -> str:
    """``trainop-operator/0.1.0 (linux/x86_64) python/3.11``, in client-go's form: who sent a request,
    as the API server's audit log and priority-and-fairness see it."""
    from trainop import __version__

    os_arch = f"{platform.system().lower()}/{platform.machine().lower()}"
    return f"{component}/{__version__} ({os_arch}) python/{platform.python_version()}"


def build_client(
    config: SingleConfig,
    *,
    qps: float = DEFAULT_QPS,
    burst: int = DEFAULT_BURST,
    timeout: float = 30.0,
    field_manager: str = "trainop",
    component: str = "trainop-operator",
    max_connections: int = 32,
    http2: bool = False,
    direct: bool | None = None,
) -> KubeClient:
    """An AsyncClient whose every request goes through the QPS/burst token bucket, and the direct
    path for the hot writes and watches (``direct``: default on, unless TRAINOP_KUBE_DIRECT=0 or the
    user authenticates through an exec plugin, which only lightkube runs). Every request carries the
    ``component``'s user agent."""
    if config.user is None:
        raise ValueError(
            f"kubeconfig context {config.context_name!r} names no user: add one (token or client certificate)"
        )
    ssl_ctx = client_adapter.verify_cluster(config.cluster, config.user, config.abs_file)
    activity = Activity()
    limiter = Limiter(qps, burst, activity=activity)
    stats = RequestStats()
    agent = user_agent(component)

    def transport(connections: int) -> httpx.AsyncBaseTransport:
        return httpx.AsyncHTTPTransport(
            verify=ssl_ctx,
            http2=http2,
            limits=httpx.Limits(max_connections=connections, max_keepalive_connections=connections),
            socket_options=http1.tcp_keepalive_options(),
        )

    def client(
        inner: httpx.AsyncBaseTransport,
        tracked: Activity | None,
        status_inner: httpx.AsyncBaseTransport | None = None,
    ) -> AsyncClient:
        return AsyncClient(
            config,
            timeout=httpx.Timeout(timeout),
            field_manager=field_manager,
            transport=LimitedTransport(inner, limiter, stats, tracked, status_inner, agent),
            lazy=False,
        )

    if direct is None:
        direct = os.environ.get("TRAINOP_KUBE_DIRECT", "1") != "0"
    auth = _AuthHeader(config.user)
    fast = None
    if direct and auth.supported:
        fast = DirectApi(
            config.cluster.server,
            ssl_context=ssl_ctx,
            auth=auth,
            limiter=limiter,
            stats=stats,
            activity=activity,
            timeout=timeout,
            field_manager=field_manager,
            user_agent=agent,
            max_connections=max_connections,
        )
    # Small pools: httpcore scans every pooled connection on each request, so hundreds of idle
    # connections cost more CPU than they save; with the direct path these carry only the rare requests.
    watch_api = client(transport(64), None)  # a watch is "in flight" for minutes: not activity
    set_watch_idle_timeout(watch_api, WATCH_IDLE_S)
    return KubeClient(
        api=client(transport(max_connections), activity, transport(8)),
        watch_api=watch_api,
        limiter=limiter,
        stats=stats,
        config=config,
        activity=activity,
        direct=fast,
    )


def set_watch_idle_timeout(api: AsyncClient, seconds: float) -> None:
    """lightkube reads a watch with no read timeout (``_watch_timeout.read = None``), so a stalled
    connection would hold its informer forever: give its watches the direct path's idle deadline (a
    read timeout, which its watch loop retries as any other error)."""
    inner = getattr(api, "_client", None)
    timeout = getattr(inner, "_watch_timeout", None)
    if isinstance(timeout, httpx.Timeout):
        inner._watch_timeout = httpx.Timeout(  # type: ignore[union-attr]
            connect=timeout.connect, read=seconds, write=timeout.write, pool=timeout.pool
        )


async def tolerate(call: Awaitable[Any], *codes: int) -> bool:
    """Await ``call``; False when the API server answered one of ``codes`` (409 AlreadyExists or
    Conflict, 404 NotFound: what the caller counts as done already, or lost), any other error raises."""
    try:
        await call
    except Exception as exc:
        if api_status_code(exc) not in codes:
            raise
        return False
    return True


async def is_served(api: AsyncClient, resource: Any, namespace: str | None = None) -> bool:
    """Whether the API server serves ``resource`` (listing one object answers; 404: no such CRD)."""
    try:
        async for _ in api.list(resource, namespace=namespace, chunk_size=1):
            break
    except Exception as exc:
        if api_status_code(exc) != 404:
            raise
        return False
    return True


def api_status_code(exc: BaseException) -> int | None:
    """The HTTP status of an API error (404, 409, 410 ...), or None for transport errors."""
    if isinstance(exc, ApiError):
        code = exc.status.code
        return int(code) if code is not None else exc.response.status_code if exc.response else None
    if isinstance(exc, httpx.HTTPStatusError):
        return exc.response.status_code
    return None
