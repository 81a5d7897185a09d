"""The one Kubernetes ``JobClient`` (backends/base.py) under the CLI, the SDK and the web view: the job
operations against a cluster through a kubeconfig.

An API client like kubectl: it reads and writes jobs and reads their pods and events; the operator
on the cluster decides everything else. Requests go through client.py's rate-limited async client,
run on a private event-loop thread so its callers stay synchronous. No reconcile rules here.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import contextlib
import copy
import logging
import queue
import threading
from collections.abc import Callable, Coroutine, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

import httpx2 as httpx
from lightkube import ALL_NS
from lightkube.config.kubeconfig import SingleConfig
from lightkube.core.exceptions import ApiError, ConfigError
from lightkube.types import CascadeType, PatchType

from trainop.api import errors as api_errors
from trainop.api.common import TrainingJob
from trainop.api.constants import ANNOTATION_INTERRUPTED, GROUP, LABEL_JOB_NAME
from trainop.api.errors import FieldError
from trainop.api.kinds import KIND_INFO
from trainop.api.load import parse_job
from trainop.backends.base import (
    AlreadyExistsError,
    ApiAnswer,
    BackendError,
    ClusterError,
    ContainerRun,
    JobClient,
    JobDetails,
    JobEvent,
    JobFeed,
    JobRejectedError,
    LogLine,
    LogsUnavailableError,
    NotFoundError,
    NotSupportedError,
    PollingWait,
    WaitTimeoutError,
    check_replica,
    is_finished,
    list_images,
    replica_label,
)
from trainop.backends.kubernetes import resources as r
from trainop.backends.kubernetes.client import KubeClient, api_status_code, build_client, load_config
from trainop.backends.waiting import SYSTEM_CLOCK, Clock, PollTimeout, poll_until
from trainop.core.progress import read_annotated_status
from trainop.core.status import parse_time

T = TypeVar("T")
log = logging.getLogger(__name__)

DELETE_TIMEOUT = 120.0  # a job still there this long after its deletion: finalizers, or no GC
TAIL_KEPT = 20  # lines kept per container for the failure summary's tail
CLI_QPS, CLI_BURST = 20.0, 40  # kubectl's own client-side limits are 5/10 (and more for discovery)
CASCADES = {
    "Foreground": CascadeType.FOREGROUND,
    "Background": CascadeType.BACKGROUND,
    "Orphan": CascadeType.ORPHAN,
}
REQUEST_TIMEOUT = 30.0  # seconds for one request (the SDK passes its own)
THROTTLE_RETRIES, THROTTLE_MAX_WAIT_S = 10, 5.0  # a create answered 429 is retried (client-go's rule)
NOTE_TAIL = ": showing the status only"  # what run does about it (logs just says why)


@dataclass(frozen=True, slots=True)
class PodRun:
    """A container run as a pod's container status tells it (a ``ContainerRun``)."""

    pod: str
    container: str
    attempt: int
    exit_code: int | None
    started_at: float | None
    finished_at: float | None


def _ts(value: Any) -> float | None:
    at = parse_time(value)
    return None if at is None else at.timestamp()


def _take(q: queue.SimpleQueue[T]) -> list[T]:
    """What the queue holds now, without waiting."""
    out = []
    with contextlib.suppress(queue.Empty):
        while True:
            out.append(q.get_nowait())
    return out


def build_pod_runs(pods: Sequence[Mapping[str, Any]]) -> list[PodRun]:
    """The runs of each pod's main containers: the previous one (``lastState.terminated``) and the
    current one (running, or terminated). Pure."""
    out: list[PodRun] = []
    for pod in pods:
        name = str((pod.get("metadata") or {}).get("name", ""))
        for cs in (pod.get("status") or {}).get("containerStatuses") or []:
            restarts = int(cs.get("restartCount") or 0)
            last = (cs.get("lastState") or {}).get("terminated")
            if last and restarts:
                out.append(
                    PodRun(
                        name,
                        cs["name"],
                        restarts - 1,
                        int(last.get("exitCode") or 0),
                        _ts(last.get("startedAt")),
                        _ts(last.get("finishedAt")),
                    )
                )
            state = cs.get("state") or {}
            if "terminated" in state:
                term = state["terminated"] or {}
                code = int(term.get("exitCode") or 0)
                started, finished = _ts(term.get("startedAt")), _ts(term.get("finishedAt")) or 0.0
                out.append(PodRun(name, cs["name"], restarts, code, started, finished))
            elif "running" in state:
                started = _ts((state["running"] or {}).get("startedAt"))
                out.append(PodRun(name, cs["name"], restarts, None, started, None))
    return out


def _is_missing_type(exc: BaseException) -> bool:
    """A 404 for the resource type itself (its CRD is not installed), not for an object. The API
    server answers an unknown type with a plain-text 404, which lightkube leaves an HTTPStatusError."""
    if isinstance(exc, httpx.HTTPStatusError) and not isinstance(exc, ApiError):  # (ApiError is one)
        return exc.response.status_code == 404
    if not isinstance(exc, ApiError) or api_status_code(exc) != 404:
        return False
    details = exc.status.details
    return details is None or not details.name


def build_answer(exc: httpx.HTTPStatusError) -> ApiAnswer:
    """What the API server answered (status, body, headers), for the SDK's ``ApiException``."""
    response = exc.response
    headers = tuple((k.decode(), v.decode()) for k, v in response.headers.raw)
    try:
        body = response.text
    except (httpx.ResponseNotRead, UnicodeDecodeError):
        body = ""
    return ApiAnswer(response.status_code, body, headers)


def build_field_errors(exc: ApiError) -> list[FieldError]:
    """The Status's causes (one per field), or its message as one error without a path."""
    details = exc.status.details
    causes = (details.causes if details is not None else None) or []
    out = [FieldError(c.field or "", c.message or c.reason or "") for c in causes]
    return out or [FieldError("", exc.status.message or str(exc))]


def _is_webhook_denial(exc: ApiError) -> bool:
    return api_status_code(exc) == 403 and "denied the request" in str(exc.status.message or "")


class KubernetesBackend(PollingWait):
    """The one Kubernetes job client (a ``JobClient``): job operations against the cluster of a
    kubeconfig (``--kubeconfig``, ``$KUBECONFIG``, ``~/.kube/config`` or the in-cluster service
    account) and context, or of ``config`` (a lightkube config the SDK built). ``timeout``: seconds for
    one request; ``field_manager`` and ``component`` say who writes (the CLI, the SDK)."""

    name = "kubernetes"
    replicas_here = False
    wait_poll = 1.0  # seconds between reads while waiting for a condition (a watch would be one request)

    def __init__(
        self,
        kubeconfig: str | None = None,
        context: str | None = None,
        *,
        config: SingleConfig | None = None,
        timeout: float = REQUEST_TIMEOUT,
        field_manager: str = "trainop-cli",
        component: str = "trainop",
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        try:
            self.config = config if config is not None else load_config(kubeconfig, context)
        except (ConfigError, OSError, KeyError, ValueError) as exc:
            where = (
                f"kubeconfig {kubeconfig}" if kubeconfig else "the kubeconfig ($KUBECONFIG or ~/.kube/config)"
            )
            raise ClusterError(
                f"cannot use {where}"
                + (f" context {context!r}" if context else "")
                + f": {exc}; pass --kubeconfig/--context, or run on this machine with --backend local",
                detail=str(exc),
            ) from None
        self.clock = clock
        self.timeout = float(timeout)
        self.server = self.config.cluster.server
        self.default_namespace = self.config.namespace or "default"
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="trainop-kube", daemon=True)
        self._thread.start()
        try:
            self.client: KubeClient = build_client(
                self.config,
                qps=CLI_QPS,
                burst=CLI_BURST,
                timeout=self.timeout,
                field_manager=field_manager,
                component=component,
                max_connections=8,
            )
        except ValueError as exc:
            self._stop_loop()
            raise ClusterError(
                f"{exc}; or run on this machine with --backend local", detail=str(exc)
            ) from None
        self._kinds: dict[tuple[str, str], str] = {}  # (namespace, name) → kind, once seen

    # --- plumbing ---------------------------------------------------------------------------------
    def where(self) -> str:
        return f"the cluster at {self.server} (context {self.config.context_name})"

    def _run(
        self, coro: Coroutine[Any, Any, T], *, api_errors: bool = False, timeout: float | None = None
    ) -> T:
        """Run ``coro`` on the client's loop; transport and authorization failures become one line, and
        so does any other error answer unless ``api_errors`` (the caller explains an ApiError). A
        request that takes longer than ``timeout`` (default: the client's) is a WaitTimeoutError."""
        future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        limit = timeout or self.timeout
        try:
            return future.result(timeout=limit)
        except (concurrent.futures.TimeoutError, httpx.TimeoutException):
            future.cancel()
            raise WaitTimeoutError(f"{self.where()} did not answer within {limit:g}s") from None
        except httpx.TransportError as exc:
            raise ClusterError(
                f"cannot reach {self.where()}: {exc or type(exc).__name__}; start it, or choose another with "
                "--kubeconfig/--context (or run on this machine with --backend local)",
                detail=str(exc),
            ) from None
        except ApiError as exc:
            if api_status_code(exc) in (401, 403) and "admission webhook" not in (exc.status.message or ""):
                raise ClusterError(
                    f"{self.where()} refused the request: {exc.status.message}; use a kubeconfig user "
                    "allowed to manage kubeflow.org jobs, pods and events",
                    detail=str(exc.status.message),
                    answer=build_answer(exc),
                ) from None
            if api_errors:
                raise
            raise ClusterError(
                f"{self.where()} answered {api_status_code(exc)}: {exc.status.message}",
                detail=str(exc.status.message),
                answer=build_answer(exc),
            ) from None
        except httpx.HTTPStatusError as exc:  # not an ApiError: a plain-text error answer
            if api_errors:
                raise
            if _is_missing_type(exc):
                raise self._no_crds() from None
            raise ClusterError(
                f"{self.where()} answered {exc.response.status_code} to {exc.request.url}",
                answer=build_answer(exc),
            ) from None

    def _no_crds(self, kind: str | None = None) -> ClusterError:
        what = f"{KIND_INFO[kind].plural}.kubeflow.org" if kind else "the kubeflow.org/v1 training jobs"
        return ClusterError(
            f"{self.where()} does not serve {what}: install the CRDs and the operator "
            "(kubectl apply -k manifests/crds; trainop operator, or manifests/), or use --backend local"
        )

    def close(self) -> None:
        if self._loop.is_closed():
            return
        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop).result(timeout=10)
        self._stop_loop()

    async def _shutdown(self) -> None:
        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self.client.aclose()

    def _stop_loop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()

    # --- submit ---------------------------------------------------------------------------------------
    def prepare(self, manifest: Mapping[str, Any]) -> TrainingJob:
        """Parse and validate as the operator's webhook would (the same errors as locally, before any
        request); the cluster runs images, so the local backend's command checks do not apply."""
        from trainop.api.validation import validate_job

        doc = copy.deepcopy(dict(manifest))
        meta = doc.get("metadata")
        if isinstance(meta, dict) and not meta.get("name") and isinstance(meta.get("generateName"), str):
            doc["metadata"] = {**meta, "name": meta["generateName"] + "x"}  # the server fills it in
        job = parse_job(doc)
        errors = validate_job(job)
        if errors:
            raise api_errors.InvalidJobError(errors, kind=job.kind, name=job.name)
        return job

    def submit(
        self,
        manifest: Mapping[str, Any],
        *,
        base_dir: Any = None,
        namespace: str | None = None,
        attached_client: Any = None,
    ) -> TrainingJob:
        """Create the job (the API server generates a name for ``generateName``). ``base_dir`` and
        ``attached_client`` are this machine's notions: a cluster job runs from its image, and stops
        when deleted (``trainop run``'s Ctrl-C does that)."""
        job = self.prepare(manifest)
        doc = copy.deepcopy(dict(manifest))
        meta = doc.setdefault("metadata", {})
        ns = namespace or meta.get("namespace") or "default"
        meta["namespace"] = ns
        for key in ("uid", "resourceVersion", "creationTimestamp", "generation"):
            meta.pop(key, None)
        doc.pop("status", None)
        res = r.JOB_RESOURCES[job.kind]
        for attempt in range(THROTTLE_RETRIES):
            try:
                created = dict(self._run(self.client.api.create(res(doc)), api_errors=True))
                break
            except httpx.HTTPStatusError as exc:  # (an ApiError is one)
                # A 429 (throttled, or a CRD's storage still starting just after it was installed) was
                # not processed: retry after Retry-After, as client-go does.
                if exc.response.status_code != 429 or attempt == THROTTLE_RETRIES - 1:
                    raise self._write_error(exc, job.kind, job.name, ns) from None
                after = exc.response.headers.get("Retry-After", "")
                self.clock.sleep(min(float(after) if after.isdigit() else 1.0, THROTTLE_MAX_WAIT_S))
        out = parse_job(created)
        self._kinds[(out.namespace, out.name)] = out.kind
        return out

    def submit_isolated(
        self, manifest: Mapping[str, Any], *, packages: Sequence[str], index_url: str
    ) -> TrainingJob:
        """In a pod the script's own ``pip install`` installs into the pod's environment."""
        return self.submit(manifest)

    def _write_error(self, exc: httpx.HTTPStatusError, kind: str, name: str, namespace: str) -> BackendError:
        if _is_missing_type(exc):
            return self._no_crds(kind)
        answer = build_answer(exc)
        if not isinstance(exc, ApiError):
            return ClusterError(
                f"{self.where()} answered {exc.response.status_code} to {exc.request.url}", answer=answer
            )
        code = api_status_code(exc)
        details = exc.status.details
        if code == 409:
            return AlreadyExistsError(kind=kind, namespace=namespace, name=name, answer=answer)
        if code == 404 and details is not None and details.kind == "namespaces":
            return ClusterError(
                f'namespace "{namespace}" does not exist on {self.where()}: create it '
                f"(kubectl create namespace {namespace}) or pass another with -n",
                kind=kind,
                namespace=namespace,
                name=name,
                answer=answer,
            )
        if code in (400, 422) or _is_webhook_denial(exc):  # the CRD schema's (422), the webhook's (403, §2)
            return JobRejectedError(
                f"{self.where()} rejected {kind} {name}: {exc.status.message}",
                errors=build_field_errors(exc),
                kind=kind,
                namespace=namespace,
                name=name,
                answer=answer,
            )
        return ClusterError(
            f"{self.where()} rejected {kind} {name}: {exc.status.message}",
            detail=str(exc.status.message),
            kind=kind,
            namespace=namespace,
            name=name,
            answer=answer,
        )

    # --- reading --------------------------------------------------------------------------------------
    async def _get_any(
        self, name: str, namespace: str, kinds: Sequence[str]
    ) -> dict[str, Any] | ApiAnswer | None:
        """The job of the first of ``kinds`` that has one of that name; else the API server's 404
        for a single kind (its answer, for the SDK), else None."""
        missing = 0
        answer = None
        for kind in kinds:
            try:
                obj = dict(await self.client.api.get(r.JOB_RESOURCES[kind], name, namespace=namespace))
            except (ApiError, httpx.HTTPStatusError) as exc:
                if _is_missing_type(exc):
                    missing += 1
                elif api_status_code(exc) != 404:
                    raise
                else:
                    answer = build_answer(exc)
                continue
            self._kinds[(namespace, name)] = kind
            return obj
        if missing == len(kinds):
            raise self._no_crds(kinds[0] if len(kinds) == 1 else None)
        return answer if len(kinds) == 1 else None

    def _get_raw(
        self, name: str, namespace: str, kind: str | None = None, timeout: float | None = None
    ) -> dict[str, Any]:
        known = self._kinds.get((namespace, name))
        kinds = [kind] if kind is not None else sorted(KIND_INFO, key=lambda k: k != known)  # known first
        obj = self._run(self._get_any(name, namespace, kinds), timeout=timeout)
        if not isinstance(obj, dict):
            raise NotFoundError(kind=kind, namespace=namespace, name=name, answer=obj)
        return obj

    def get(
        self, name: str, namespace: str = "default", kind: str | None = None, *, timeout: float | None = None
    ) -> TrainingJob:
        return parse_job(self._get_raw(name, namespace, kind, timeout))

    async def _list(self, res: Any, namespace: str | None, labels: dict[str, Any] | None = None) -> list[Any]:
        return [
            dict(o) async for o in self.client.api.list(res, namespace=namespace or ALL_NS, labels=labels)
        ]

    async def _list_kinds(self, namespace: str | None, kinds: Sequence[str]) -> list[dict[str, Any]]:
        results = await asyncio.gather(
            *(self._list(r.JOB_RESOURCES[k], namespace) for k in kinds), return_exceptions=True
        )
        out: list[dict[str, Any]] = []
        missing = 0
        for res in results:
            if isinstance(res, BaseException):
                if _is_missing_type(res):
                    missing += 1
                    continue
                raise res
            out.extend(res)
        if missing == len(kinds):
            raise self._no_crds(kinds[0] if len(kinds) == 1 else None)
        return out

    def list_jobs(
        self, namespace: str | None = None, kind: str | None = None, *, timeout: float | None = None
    ) -> list[TrainingJob]:
        kinds = [kind] if kind else list(KIND_INFO)
        objs = self._run(self._list_kinds(namespace, kinds), timeout=timeout)
        return sorted((parse_job(o) for o in objs), key=lambda j: (j.namespace, j.name))

    def known_names(self, namespace: str) -> list[str]:
        return [j.name for j in self.list_jobs(namespace)]

    def _pods_of(self, job: TrainingJob, timeout: float | None = None) -> list[dict[str, Any]]:
        pods = self._run(self._list(r.Pod, job.namespace, {LABEL_JOB_NAME: job.name}), timeout=timeout)
        uid = job.metadata.uid
        mine = [
            p
            for p in pods
            if not uid
            or any(o.get("uid") == uid for o in (p.get("metadata") or {}).get("ownerReferences") or [])
        ]
        return sorted(mine, key=lambda p: str(p["metadata"]["name"]))

    def pods(
        self, name: str, namespace: str = "default", *, timeout: float | None = None
    ) -> list[dict[str, Any]]:
        return self._pods_of(self.get(name, namespace, timeout=timeout), timeout)

    def events(self, namespace: str, *, timeout: float | None = None) -> list[dict[str, Any]]:
        return list(self._run(self._list(r.Event, namespace), timeout=timeout))

    def create_volume_claim(self, claim: Mapping[str, Any]) -> str:
        """Upstream's train(): create the claim; when that fails and a claim of that name exists, reuse it."""
        ns, name = claim["metadata"]["namespace"], claim["metadata"]["name"]
        try:
            self._run(self.client.api.create(r.PersistentVolumeClaim(dict(claim))), api_errors=True)
        except httpx.HTTPStatusError as exc:
            existing = self._run(self._list(r.PersistentVolumeClaim, ns))
            if not any(o["metadata"]["name"] == name for o in existing):
                raise self._write_error(exc, "PersistentVolumeClaim", name, ns) from None
            log.info("PVC '%s' already exists in namespace %s.", name, ns)
            return f"PersistentVolumeClaim {ns}/{name} (it already existed)"
        return f"PersistentVolumeClaim {ns}/{name}"

    def check_local_queue(self, namespace: str, queue_name: str) -> None:
        """Upstream's ``_check_queue_exists`` (§7.3): only a 500 stops the create; anything else warns."""
        try:
            self._run(self.client.api.get(r.LocalQueue, queue_name, namespace=namespace), api_errors=True)
        except ApiError as exc:
            if api_status_code(exc) == 500:
                raise ClusterError(
                    "Kueue webhook or admission controller is not responding.", answer=build_answer(exc)
                ) from None
            log.warning(
                "LocalQueue %s/%s could not be read (%s); the job is created anyway",
                namespace,
                queue_name,
                exc.status.message,
            )
        except httpx.HTTPStatusError as exc:
            log.warning("LocalQueue %s/%s could not be read (%s)", namespace, queue_name, exc)

    def replica_pods(self, namespace: str | None) -> list[tuple[TrainingJob, dict[str, Any], int | None]]:
        jobs = {j.metadata.uid: j for j in self.list_jobs(namespace)}
        pods = self._run(self._list(r.Pod, namespace, {LABEL_JOB_NAME: None})) if jobs else []
        out: list[tuple[TrainingJob, dict[str, Any], int | None]] = []
        for p in sorted(pods, key=lambda p: (p["metadata"].get("namespace", ""), p["metadata"]["name"])):
            uids = [o.get("uid") for o in p["metadata"].get("ownerReferences") or []]
            owner = next((jobs[uid] for uid in uids if uid in jobs), None)
            if owner is not None:
                out.append((owner, p, None))
        return out

    def runs(self, name: str, namespace: str = "default") -> list[ContainerRun]:
        return list(build_pod_runs(self.pods(name, namespace)))

    def describe(self, name: str, namespace: str = "default") -> Any:
        raw = self._get_raw(name, namespace)
        job = parse_job(raw)
        pods = self._pods_of(job)
        services = self._run(self._list(r.Service, namespace, {LABEL_JOB_NAME: name}))
        events = self._run(self._list(r.Event, namespace))
        rows = []
        for e in events:
            inv = e.get("involvedObject") or {}
            if inv.get("uid") != job.metadata.uid:
                continue
            first = _ts(e.get("firstTimestamp") or e.get("eventTime")) or 0.0
            last = _ts(e.get("lastTimestamp") or (e.get("series") or {}).get("lastObservedTime")) or first
            count = int(e.get("count") or (e.get("series") or {}).get("count") or 1)
            rows.append(
                JobEvent(
                    str(e.get("type")), str(e.get("reason")), str(e.get("message") or ""), count, first, last
                )
            )
        rows.sort(key=lambda e: e.first_ts)
        return JobDetails(
            job=job,
            base_dir="",
            pods=pods,
            objects=services,
            events=rows,
            processes=[],
            ports={},
            supervisor=None,
            deleting=bool((raw.get("metadata") or {}).get("deletionTimestamp")),
            images=list_images(job),
            cluster=self.where(),
        )

    # --- changing -----------------------------------------------------------------------------------
    def patch(self, name: str, namespace: str, kind: str, patch: Mapping[str, Any]) -> TrainingJob:
        """A JSON merge patch (RFC 7386, as ``kubectl patch --type merge``); the webhook validates it."""
        res = r.JOB_RESOURCES[kind]
        coro = self.client.api.patch(res, name, dict(patch), namespace=namespace, patch_type=PatchType.MERGE)
        try:
            return parse_job(dict(self._run(coro, api_errors=True)))
        except httpx.HTTPStatusError as exc:
            if api_status_code(exc) == 404 and not _is_missing_type(exc):
                raise NotFoundError(
                    kind=kind, namespace=namespace, name=name, answer=build_answer(exc)
                ) from None
            raise self._write_error(exc, kind, name, namespace) from None

    def set_suspend(
        self, name: str, suspend: bool, namespace: str = "default", *, interrupted: bool = False
    ) -> TrainingJob:
        """runPolicy.suspend := ``suspend`` (a merge patch, as ``kubectl patch``); ``interrupted``
        (``trainop run``'s Ctrl-C) also marks the job with the time, as on this machine; a resume
        removes the mark."""
        job = self.get(name, namespace)
        patch: dict[str, Any] = {"spec": {"runPolicy": {"suspend": suspend}}}
        if interrupted:
            stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            patch["metadata"] = {"annotations": {ANNOTATION_INTERRUPTED: stamp}}
        elif not suspend and ANNOTATION_INTERRUPTED in (job.metadata.annotations or {}):
            patch["metadata"] = {"annotations": {ANNOTATION_INTERRUPTED: None}}
        res = r.JOB_RESOURCES[job.kind]
        out = self._run(
            self.client.api.patch(res, name, patch, namespace=namespace, patch_type=PatchType.MERGE)
        )
        return parse_job(dict(out))

    def delete(
        self,
        name: str,
        namespace: str = "default",
        *,
        kind: str | None = None,
        wait: bool = True,
        grace: float | None = None,
        propagation: str | None = None,
    ) -> None:
        """Delete the job with ``propagation`` (default Foreground: the job stays until its pods are
        gone, so ``wait`` returns once they are); ``grace`` also deletes the pods with that grace
        period."""
        job = self.get(name, namespace, kind)
        res = r.JOB_RESOURCES[job.kind]
        cascade = CASCADES[propagation or "Foreground"]

        async def delete() -> None:
            try:
                await self.client.api.delete(
                    res,
                    name,
                    namespace=namespace,
                    grace_period=None if grace is None else int(grace),
                    cascade=cascade,
                )
            except ApiError as exc:
                if api_status_code(exc) != 404:
                    raise
            if grace is not None:
                await self._delete_pods(name, namespace, int(grace))

        self._run(delete())
        if not wait:
            return

        def present() -> bool:
            try:
                self._get_raw(name, namespace, job.kind)
            except NotFoundError:
                return False
            return True

        try:
            poll_until(
                present, lambda there: not there, timeout=DELETE_TIMEOUT, interval=0.5, clock=self.clock
            )
        except PollTimeout:
            raise ClusterError(
                f"{job.kind} {name} is still on {self.where()} {DELETE_TIMEOUT:g}s after its deletion: "
                f"its pods or finalizers hold it (kubectl describe {KIND_INFO[job.kind].plural} {name} -n "
                f"{namespace})"
            ) from None

    async def _delete_pods(self, name: str, namespace: str, grace: int) -> None:
        for pod in await self._list(r.Pod, namespace, {LABEL_JOB_NAME: name}):
            with contextlib.suppress(ApiError):
                await self.client.api.delete(
                    r.Pod, pod["metadata"]["name"], namespace=namespace, grace_period=grace
                )

    def kill_replicas(self, name: str, namespace: str = "default") -> None:
        """Delete the job's pods with no grace period (run's second Ctrl-C): SIGKILL, as here."""
        self.get(name, namespace)  # NotFoundError first
        self._run(self._delete_pods(name, namespace, 0))

    def may(self, verb: str, kind: str, namespace: str) -> bool:
        resource = r.JOB_RESOURCES[kind]._api_info.plural
        review = r.SelfSubjectAccessReview(
            {
                "apiVersion": "authorization.k8s.io/v1",
                "kind": "SelfSubjectAccessReview",
                "spec": {
                    "resourceAttributes": {
                        "group": GROUP,
                        "resource": resource,
                        "verb": verb,
                        "namespace": namespace,
                    }
                },
            }
        )
        try:
            answer = self._run(self.client.api.create(review), api_errors=True)
        except (ApiError, httpx.HTTPStatusError) as exc:
            # No answer (an old authorizer, a proxy): offer the action and let the cluster decide.
            log.debug("SelfSubjectAccessReview for %s %s in %s failed: %s", verb, resource, namespace, exc)
            return True
        return bool((dict(answer).get("status") or {}).get("allowed"))

    # --- logs -----------------------------------------------------------------------------------------
    def logs(
        self,
        name: str,
        namespace: str = "default",
        *,
        replica: str | None = None,
        container: str | None = None,
        follow: bool = False,
        previous: bool = False,
        stop: Callable[[], bool] | None = None,
        partials: Callable[[list[LogLine]], None] | None = None,
    ) -> Iterator[LogLine]:
        # ``stop`` and ``partials``: the API server streams whole lines and has no unfinished one to
        # give; a followed stream ends with the job's pods (or when its reader is closed).
        if previous:
            raise NotSupportedError(
                "--previous is not available with --backend kubernetes yet; kubectl logs --previous POD "
                "shows it"
            )
        job = self.get(name, namespace)
        feed = ClusterFeed(self, job, replica=replica, container=container)
        if follow:
            return feed.follow()
        return feed.read_all()

    def feed(self, job: TrainingJob) -> JobFeed:
        return ClusterFeed(self, job)

    @contextlib.contextmanager
    def reader(self) -> Iterator[KubernetesBackend]:
        yield self  # requests run on the client's own loop thread, whichever thread asks

    def change_token(self) -> object | None:
        return None

    def progress(self, job: TrainingJob) -> list[tuple[str, float, dict[str, Any]]]:
        return read_annotated_status(job)  # the operator keeps the latest post (operator/progress.py)

    # TrainJobs on a cluster are the operator's (operator/trainjobs.py): read and deleted here as
    # Kubernetes JSON; their pods carry JobSet's jobset-name label.
    async def _trainjob_call(self, coro: Coroutine[Any, Any, Any], name: str, namespace: str) -> Any:
        try:
            return await coro
        except ApiError as exc:
            if _is_missing_type(exc):
                raise ClusterError(
                    f"{self.where()} has no TrainJob CRD (trainer.kubeflow.org): install upstream's CRDs "
                    "or trainop's (manifests/crds)"
                ) from None
            if api_status_code(exc) == 404:
                raise NotFoundError(kind="TrainJob", namespace=namespace, name=name) from None
            raise

    def list_trainjobs(self, namespace: str | None = None) -> list[dict[str, Any]]:
        objs = self._run(self._trainjob_call(self._list(r.TrainJob, namespace), "", namespace or ""))
        return sorted(objs, key=lambda o: (o["metadata"].get("namespace", ""), o["metadata"]["name"]))

    def get_trainjob(self, name: str, namespace: str = "default") -> dict[str, Any]:
        obj = self._run(
            self._trainjob_call(self.client.api.get(r.TrainJob, name, namespace=namespace), name, namespace)
        )
        return dict(obj)

    def trainjob_pods(self, name: str, namespace: str = "default") -> list[dict[str, Any]]:
        self.get_trainjob(name, namespace)  # NotFoundError first
        pods = self._run(self._list(r.Pod, namespace, {"jobset.sigs.k8s.io/jobset-name": name}))
        return sorted(pods, key=lambda p: p["metadata"]["name"])

    def trainjob_logs(
        self, name: str, namespace: str = "default", *, replica: str | None = None, follow: bool = False
    ) -> Iterator[LogLine]:
        feed = TrainJobFeed(self, self.get_trainjob(name, namespace), replica=replica)  # NotFoundError now
        check_replica(name, replica, [str(p["metadata"]["name"]) for p in feed.pods()])
        return feed.follow() if follow else feed.read_all()

    def delete_trainjob(self, name: str, namespace: str = "default", *, grace: float | None = None) -> None:
        """Foreground cascade: the TrainJob goes once its pods (it owns them) are gone."""

        async def delete() -> None:
            await self.client.api.delete(
                r.TrainJob,
                name,
                namespace=namespace,
                grace_period=None if grace is None else int(grace),
                cascade=CASCADES["Foreground"],
            )

        self._run(self._trainjob_call(delete(), name, namespace))


class ClusterFeed:
    """``trainop run``'s view of a cluster job (a ``JobFeed``): its pods on each poll, and its output
    from one follow stream per container run, started as each container starts. A pod whose logs the
    cluster does not serve (kwok plays its pods: there are none) is named once in ``notes``."""

    def __init__(
        self,
        backend: KubernetesBackend,
        job: TrainingJob,
        *,
        replica: str | None = None,
        container: str | None = None,
    ) -> None:
        self.job = job
        self._setup(backend, job.name, job.namespace, replica, container)

    def _setup(
        self,
        backend: KubernetesBackend,
        name: str,
        namespace: str,
        replica: str | None,
        container: str | None,
    ) -> None:
        self.backend, self.name, self.namespace = backend, name, namespace
        self.replica, self.container = replica, container
        self._lines: queue.SimpleQueue[LogLine] = queue.SimpleQueue()
        self._notes: queue.SimpleQueue[str] = queue.SimpleQueue()
        self._streams: dict[tuple[str, str, int], Any] = {}
        self._no_logs: set[str] = set()  # pods the cluster serves no logs for
        self._answer: ApiAnswer | None = None  # the cluster's first refusal
        self._told = False
        self._kept: dict[tuple[str, str], collections.deque[str]] = {}
        self._pods: list[dict[str, Any]] = []

    def pods(self) -> list[dict[str, Any]]:
        self._pods = self.backend._pods_of(self.job)
        return self._pods

    def _started(self) -> list[tuple[str, str, int, bool]]:
        """(pod, container, run, running) of every selected container that has started."""
        out = []
        for pod in self._pods:
            pname = str(pod["metadata"]["name"])
            label = replica_label(self.name, pname)
            if self.replica is not None and self.replica not in (label, pname):
                continue
            for cs in (pod.get("status") or {}).get("containerStatuses") or []:
                if self.container is not None and cs.get("name") != self.container:
                    continue
                state = cs.get("state") or {}
                if "running" in state or "terminated" in state:
                    out.append((pname, str(cs["name"]), int(cs.get("restartCount") or 0), "running" in state))
        return out

    def _start_streams(self, follow: bool) -> None:
        for pod, container, run, _ in self._started():
            key = (pod, container, run)
            if key in self._streams or pod in self._no_logs:
                continue
            self._streams[key] = asyncio.run_coroutine_threadsafe(
                self._stream(pod, container, run, follow), self.backend._loop
            )

    async def _stream(self, pod: str, container: str, run: int, follow: bool) -> None:
        label = replica_label(self.name, pod)
        kept = self._kept.setdefault((label, container), collections.deque(maxlen=TAIL_KEPT))
        api, ns = self.backend.client.api, self.namespace
        try:
            async for text in api.log(pod, namespace=ns, container=container, follow=follow, newlines=False):
                kept.append(text)
                self._lines.put(LogLine(label, container, run, text))
        except (ApiError, httpx.HTTPError) as exc:
            self._refused(pod, exc)
        except RuntimeError:
            # lightkube (1.0.1) reads the error body of a followed stream synchronously, which raises
            # this instead of its ApiError: ask once more without follow to get the cluster's answer.
            try:
                async for _ in api.log(pod, namespace=ns, container=container, tail_lines=1):
                    pass
            except (ApiError, httpx.HTTPError) as exc:
                self._refused(pod, exc)

    def _refused(self, pod: str, exc: ApiError | httpx.HTTPError) -> None:
        self._no_logs.add(pod)
        if isinstance(exc, httpx.HTTPStatusError) and self._answer is None:
            self._answer = build_answer(exc)
        if self._told:
            return
        self._told = True
        why = exc.status.message if isinstance(exc, ApiError) else str(exc)
        code = api_status_code(exc)
        self._notes.put(
            f"note: {self.backend.where()} serves no logs for {pod} ({code or 'error'}: {why}); "
            "pods played by kwok, or on a node whose kubelet cannot be reached, have none" + NOTE_TAIL
        )

    def poll_lines(self) -> Iterator[LogLine]:
        self._start_streams(follow=True)
        return iter(_take(self._lines))

    def partial_lines(self) -> list[LogLine]:
        return []  # the API serves whole lines

    def notes(self) -> list[str]:
        return _take(self._notes)

    def runs(self) -> list[ContainerRun]:
        return list(build_pod_runs(self._pods))

    def tails(
        self, labels: set[str], defaults: set[str], *, finished_only: bool, final: bool = False
    ) -> dict[str, list[str] | None]:
        """As the local feed's, from the lines the streams kept (across a replica's restarts, so
        ``finished_only`` changes nothing here); None for a replica whose pod the cluster serves no
        logs for. For the ending (``final``; a restart notice must not wait) the replicas' streams get
        up to a second to answer, so that is known."""
        if final:
            self._start_streams(follow=False)
            pods = {f"{self.name}-{label}" for label in labels}
            pending = [f for (pod, _, _), f in self._streams.items() if pod in pods and not f.done()]
            if pending:
                concurrent.futures.wait(pending, timeout=1.0)
        out: dict[str, list[str] | None] = {}
        for (label, container), kept in self._kept.items():
            if label in labels and kept and (container in defaults or label not in out):
                out[label] = list(kept)
        for label in labels - out.keys():
            if f"{self.name}-{label}" in self._no_logs:
                out[label] = None  # not "printed nothing": the cluster does not say what it printed
        return out

    def running_replicas(self) -> list[str]:
        return sorted({replica_label(self.name, pod) for pod, _, _, running in self._started() if running})

    def close(self) -> None:
        for fut in self._streams.values():
            fut.cancel()
        self._streams.clear()

    # --- trainop logs ---------------------------------------------------------------------------------
    def _raise_if_no_logs(self) -> None:
        """Every stream asked for was refused: nothing can be shown, which is an error."""
        if not self._told or not all(pod in self._no_logs for pod, _, _ in self._streams):
            return
        notes = self.notes()
        why = notes[0] if notes else f"note: {self.backend.where()} serves no logs for {self.name}"
        raise LogsUnavailableError(
            why.removeprefix("note: ").removesuffix(NOTE_TAIL),
            kind="Pod",
            namespace=self.namespace,
            name=self.replica or self.name,
            answer=self._answer,
        )

    def _finished(self) -> bool | None:
        """Whether the job finished; None once it is gone."""
        try:
            return is_finished(self.backend.get(self.name, self.namespace, self.job.kind))
        except NotFoundError:
            return None

    def read_all(self) -> Iterator[LogLine]:
        self.pods()
        self._start_streams(follow=False)
        for fut in list(self._streams.values()):
            fut.result()
        self._raise_if_no_logs()
        return iter(_take(self._lines))

    def follow(self) -> Iterator[LogLine]:
        try:
            while True:
                self.pods()
                yield from self.poll_lines()
                finished = self._finished()
                if finished is None:
                    return
                streams_done = all(f.done() for f in self._streams.values())
                if streams_done:
                    self._raise_if_no_logs()
                if finished and not self.running_replicas() and streams_done:
                    yield from self.poll_lines()
                    return
                self.backend.clock.sleep(0.5)
        finally:
            self.close()


class TrainJobFeed(ClusterFeed):
    """``trainop logs`` of a TrainJob on a cluster: its pods are the ones labelled with its name as
    JobSet labels them (``jobset.sigs.k8s.io/jobset-name``), whichever controller made them."""

    def __init__(self, backend: KubernetesBackend, trainjob: dict[str, Any], *, replica: str | None) -> None:
        meta = trainjob.get("metadata") or {}
        self._setup(backend, str(meta.get("name")), str(meta.get("namespace") or "default"), replica, None)

    def pods(self) -> list[dict[str, Any]]:
        self._pods = self.backend.trainjob_pods(self.name, self.namespace)
        return self._pods

    def _finished(self) -> bool | None:
        try:
            obj = self.backend.get_trainjob(self.name, self.namespace)
        except NotFoundError:
            return None
        return any(
            c.get("type") in ("Complete", "Failed") and c.get("status") == "True"
            for c in (obj.get("status") or {}).get("conditions") or []
        )


if TYPE_CHECKING:  # mypy checks that the class is a JobClient (backends/base.py)

    def _conforms(client: KubernetesBackend) -> JobClient:
        return client
