"""Trainer v2's progress contract on a cluster (KEP-2779, ``--trainer-progress``): the operator's side.

``ProgressEndpoint`` serves ``POST /apis/<group>/<version>/namespaces/<ns>/<plural>/<name>/status`` on
the webhook's HTTPS server (same certificate) for TrainJobs (written to ``status.trainerStatus``
through the status subresource) and the enabled kubeflow.org/v1 kinds (written to the annotation
``trainop.dev/trainer-status`` as JSON: their status has no field for it). A post must carry, as
bearer, a projected ServiceAccount token with the audience ``trainer.kubeflow.org`` issued to a pod
of that very job: a TokenReview (audience checked) names the pod, and the pod's labels and
controller reference must name the job. Reviews are cached for a minute (never past the token's
expiry), TokenReviews for unseen tokens and posts per ServiceAccount are rate-limited, and bodies are
capped at 64 KiB. A refusal is one line: 400 says what is wrong with the body; 401 (no or a bad
token), 403 (a pod of another job), 404 (no such resource), 429 (too many), 502/503 (an API call
failed, or the API server is unreachable).

``PodPreparer`` is the other half: the env and projected volume (``core.progress.inject_progress``)
in every pod the operator creates, and the ConfigMap ``<job>-tls-config`` (the CA; every job of that
name owns it) that the volume reads; ``rotate`` rewrites those ConfigMaps when the CA changes.
``ProgressTarget`` hooks it into the v1 reconcile; the TrainJob controller calls it before creating pods.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import httpx2 as httpx
from lightkube import ApiError

from trainop.api.constants import (
    ANNOTATION_TRAINER_STATUS,
    ENV_TRAINER_SERVER_TOKEN,
    KIND_TRAINJOB,
    LABEL_JOB_NAME,
    LABEL_JOBSET_NAME,
    TRAINER_API_VERSION,
)
from trainop.api.kinds import KIND_INFO
from trainop.backends.kubernetes import resources as r
from trainop.backends.kubernetes.client import (
    PRIORITY_WRITE,
    KubeClient,
    RateBucket,
    api_status_code,
    request_priority,
    tolerate,
)
from trainop.core.naming import build_owner_reference
from trainop.core.observed import Observed
from trainop.core.plan import CreateObject, Plan
from trainop.core.progress import (
    AUDIENCE,
    CA_KEY,
    STATUS_FIELDS,
    ProgressError,
    add_owner,
    build_status_path,
    build_stored_status,
    build_tls_config_map,
    check_trainer_status,
    inject_progress,
)
from trainop.operator.http import Request, RequestRoute, Response

log = logging.getLogger(__name__)

ROUTE = "/apis/{group}/{version}/namespaces/{namespace}/{plural}/{name}/status"
MAX_BODY = 64 * 1024
REVIEW_TTL_S = 60.0  # a token's TokenReview answer is reused this long (never past its exp)
POSTS_PER_S, POSTS_BURST = 5.0, 20.0  # per ServiceAccount: a job's ranks posting at once fit the burst
REVIEWS_PER_S, REVIEWS_BURST = 20.0, 50.0  # TokenReviews of tokens not seen yet, in all
EXTRA_POD_NAME = "authentication.kubernetes.io/pod-name"
EXTRA_POD_UID = "authentication.kubernetes.io/pod-uid"
SA_PREFIX = "system:serviceaccount:"
LABEL_TLS_CONFIG = "trainop.dev/trainer-tls-config"  # on the ConfigMaps ``rotate`` rewrites
V1_API_VERSION = "kubeflow.org/v1"


@dataclass(frozen=True, slots=True)
class Identity:
    """Who a verified token belongs to: its ServiceAccount's namespace and name, and its pod."""

    namespace: str
    service_account: str
    pod: str
    pod_uid: str


@dataclass(frozen=True, slots=True)
class Target:
    kind: str
    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.kind.lower()} {self.namespace}/{self.name}"


class Refused(Exception):
    """A request the endpoint answers with ``status`` and one line."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def read_claims(token: str) -> dict[str, Any]:
    """The JWT's claims, NOT verified (the TokenReview does that): the subject to rate-limit by, the
    expiry to bound the cache, and ``kubernetes.io`` for the pod when the review has no extra."""
    parts = token.split(".")
    if len(parts) != 3:
        raise Refused(401, f"the bearer token is not a JWT: send the token in ${ENV_TRAINER_SERVER_TOKEN}")
    try:
        claims = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except (binascii.Error, ValueError):
        raise Refused(401, "the bearer token's claims cannot be read") from None
    if not isinstance(claims, dict) or not isinstance(claims.get("sub"), str):
        raise Refused(401, "the bearer token has no subject")
    return claims


def read_identity(review: Mapping[str, Any], claims: Mapping[str, Any]) -> Identity:
    """The pod a TokenReview's answer vouches for; Refused(401) when it does not authenticate the token
    for our audience, Refused(403) when the token is not a pod's ServiceAccount token."""
    status = review.get("status") or {}
    if not status.get("authenticated"):
        why = status.get("error") or "not authenticated"
        raise Refused(401, f"token rejected by the API server: {why}")
    if AUDIENCE not in (status.get("audiences") or []):
        raise Refused(401, f"token is not for the audience {AUDIENCE}")
    user = status.get("user") or {}
    username = str(user.get("username") or "")
    ns, _, sa = username.removeprefix(SA_PREFIX).partition(":")
    if not username.startswith(SA_PREFIX) or not sa:
        raise Refused(403, f"{username or 'the token'} is not a ServiceAccount")
    extra = user.get("extra") or {}
    pod = (extra.get(EXTRA_POD_NAME) or [""])[0]
    uid = (extra.get(EXTRA_POD_UID) or [""])[0]
    if not pod:  # API servers before 1.30 put the bound pod in the JWT only
        bound = (claims.get("kubernetes.io") or {}).get("pod") or {}
        pod, uid = str(bound.get("name") or ""), str(bound.get("uid") or "")
    if not pod:
        raise Refused(403, "the token is not bound to a pod: mount a projected serviceAccountToken")
    return Identity(ns, sa, pod, uid)


def check_pod_of(pod: Mapping[str, Any], target: Target, identity: Identity) -> None:
    """Refused(403) unless ``pod`` is the token's pod and one of ``target``'s: the job's name label and a
    controller reference to the job."""
    meta = pod.get("metadata") or {}
    if identity.pod_uid and meta.get("uid") != identity.pod_uid:
        raise Refused(403, f"pod {identity.pod} was replaced since the token was issued")
    label = LABEL_JOBSET_NAME if target.kind == KIND_TRAINJOB else LABEL_JOB_NAME
    owners = [
        o for o in meta.get("ownerReferences") or () if o.get("controller") and o.get("kind") == target.kind
    ]
    if (meta.get("labels") or {}).get(label) != target.name or not any(
        o.get("name") == target.name for o in owners
    ):
        raise Refused(403, f"pod {identity.pod} does not belong to {target}")


def build_api_refusal(exc: ApiError | httpx.HTTPError) -> Refused:
    """An API call the endpoint needed failed: 502 with the API server's one line (a webhook denying
    the annotation's update, a conflict), 503 when it cannot be reached. The poster may retry."""
    code = api_status_code(exc)
    if code is None:
        return Refused(503, f"the API server cannot be reached: {exc}")
    text = exc.status.message if isinstance(exc, ApiError) else str(exc)
    first = (text or "").strip().splitlines()
    return Refused(502, f"the API server answered {code}: {first[0] if first else ''}".rstrip(": "))


class ProgressEndpoint:
    """The route ``routes()`` gives the webhook's server."""

    def __init__(
        self,
        client: KubeClient,
        kinds: Iterable[str],
        *,
        clock: Callable[[], float] = time.monotonic,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.client = client
        self.clock, self.now = clock, now
        self.kinds: dict[tuple[str, str], str] = {(V1_API_VERSION, KIND_INFO[k].plural): k for k in kinds}
        self.kinds[(TRAINER_API_VERSION, "trainjobs")] = KIND_TRAINJOB
        self._reviews: dict[str, tuple[float, Identity | Refused]] = {}
        self._pods: dict[tuple[str, Target], float] = {}  # (token digest, target) → verified until
        self._posts: dict[str, RateBucket] = {}
        self._new_tokens = RateBucket(REVIEWS_PER_S, REVIEWS_BURST, clock())

    def routes(self) -> dict[str, RequestRoute]:
        return {ROUTE: RequestRoute(self.handle, MAX_BODY)}

    async def handle(self, req: Request) -> Response:
        try:
            try:
                await self._handle(req)
            except (ApiError, httpx.HTTPError) as exc:
                raise build_api_refusal(exc) from None
        except Refused as exc:
            if exc.status >= 403:
                log.info("progress: refused (%d): %s", exc.status, exc)
            return Response(exc.status, f"{exc}\n".encode())
        return Response(200, b'{"ok":true}\n', "application/json")

    async def _handle(self, req: Request) -> None:
        target = self._target(req)
        await self._authorize(req, target)
        try:
            status = check_trainer_status(json.loads(req.body))
        except ProgressError as exc:
            raise Refused(400, str(exc)) from None
        except (ValueError, RecursionError) as exc:
            raise Refused(400, f"the body is not JSON: {exc}") from None
        await self._write(target, build_stored_status(status, self.now().strftime("%Y-%m-%dT%H:%M:%SZ")))

    def _target(self, req: Request) -> Target:
        p = req.params
        kind = self.kinds.get((f"{p['group']}/{p['version']}", p["plural"]))
        if kind is None:
            raise Refused(404, f"no progress endpoint for {p['plural']}.{p['group']}/{p['version']}")
        if req.method != "POST":
            raise Refused(405, 'POST a JSON body {"trainerStatus": {...}}')
        return Target(kind, p["namespace"], p["name"])

    async def _authorize(self, req: Request, target: Target) -> None:
        auth = req.headers.get("Authorization", "")
        token = auth.removeprefix("Bearer ").strip() if auth.startswith("Bearer ") else ""
        if not token:
            raise Refused(401, f"no bearer token: send the token in ${ENV_TRAINER_SERVER_TOKEN}")
        claims = read_claims(token)
        digest = hashlib.sha256(token.encode()).hexdigest()
        identity = await self._review(token, digest, claims)
        now = self.clock()
        bucket = self._posts.setdefault(claims["sub"], RateBucket(POSTS_PER_S, POSTS_BURST, now))
        if not bucket.take(now):
            raise Refused(429, f"too many posts from {claims['sub']}: at most {POSTS_PER_S:g} a second")
        if identity.namespace != target.namespace:
            raise Refused(403, f"a token of namespace {identity.namespace} cannot post for {target}")
        key = (digest, target)
        if self._pods.get(key, 0.0) > now:
            return
        try:
            pod = dict(await self.client.api.get(r.Pod, identity.pod, namespace=identity.namespace))
        except Exception as exc:
            if api_status_code(exc) != 404:
                raise
            raise Refused(403, f"pod {identity.pod} is gone") from None
        check_pod_of(pod, target, identity)
        self._pods[key] = self._reviews[digest][0]

    async def _review(self, token: str, digest: str, claims: Mapping[str, Any]) -> Identity:
        now = self.clock()
        cached = self._reviews.get(digest)
        if cached is None or cached[0] <= now:
            if not self._new_tokens.take(now):
                raise Refused(429, "too many new tokens at once: retry in a second")
            review = r.TokenReview(
                {
                    "apiVersion": "authentication.k8s.io/v1",
                    "kind": "TokenReview",
                    "spec": {"token": token, "audiences": [AUDIENCE]},
                }
            )
            answer = dict(await self.client.api.create(review))
            self._forget_expired(now)
            exp = claims.get("exp")
            ttl = REVIEW_TTL_S
            if isinstance(exp, int | float):
                ttl = max(0.0, min(ttl, float(exp) - time.time()))
            try:
                identity: Identity | Refused = read_identity(answer, claims)
            except Refused as exc:
                identity = exc
            cached = self._reviews[digest] = (now + ttl, identity)
        if isinstance(cached[1], Refused):
            raise cached[1]
        return cached[1]

    def _forget_expired(self, now: float) -> None:
        if len(self._reviews) > 1024:
            self._reviews = {k: v for k, v in self._reviews.items() if v[0] > now}
            self._pods = {k: v for k, v in self._pods.items() if v > now}
            self._posts = {k: b for k, b in self._posts.items() if b.tokens < b.burst or b.stamp > now - 60}

    async def _write(self, target: Target, status: dict[str, Any]) -> None:
        api = self.client.api
        from lightkube.types import PatchType

        if target.kind == KIND_TRAINJOB:
            # Every field named: null removes what an earlier post set and this one does not.
            patch = {"status": {"trainerStatus": {k: status.get(k) for k in STATUS_FIELDS}}}
            res = r.TrainJob.Status
        else:
            text = json.dumps(status, separators=(",", ":"))
            patch = {"metadata": {"annotations": {ANNOTATION_TRAINER_STATUS: text}}}
            res = r.JOB_RESOURCES[target.kind]
        with request_priority(PRIORITY_WRITE):
            call = api.patch(res, target.name, patch, namespace=target.namespace, patch_type=PatchType.MERGE)
            if not await tolerate(call, 404):
                raise Refused(404, f"{target} not found")


# --- the pods' side ----------------------------------------------------------------------------------


class PodPreparer:
    """Injects the contract into a job's new pods and keeps its ``<job>-tls-config`` ConfigMap."""

    def __init__(self, client: KubeClient, server: str, ca_pem: Callable[[], bytes | None]) -> None:
        self.client = client
        self.server = server
        self.ca_pem = ca_pem
        # (kind, namespace, job) → (job uid, the CA written), for live jobs only (``forget``). The uid:
        # a job deleted and made again under its name needs its reference again.
        self._written: dict[tuple[str, str, str], tuple[str, bytes]] = {}

    def forget(self, kind: str, namespace: str, name: str) -> None:
        """The job is gone: the garbage collector drops its reference (and the ConfigMap with the last
        one), and we drop its entry."""
        self._written.pop((kind, namespace, name), None)

    async def prepare(
        self,
        owner: Mapping[str, Any],
        namespace: str,
        plural: str,
        pods: Iterable[dict[str, Any]],
    ) -> None:
        """``pods`` (about to be created) get the env and volume; the ConfigMap they read exists."""
        pods = list(pods)
        if not pods:
            return
        name = str(owner["name"])
        api_version = str(owner["apiVersion"])
        url = self.server + build_status_path(api_version, plural, namespace, name)
        for pod in pods:
            inject_progress(pod, name, url)
        await self._ensure(owner, namespace)

    async def _ensure(self, owner: Mapping[str, Any], namespace: str) -> None:
        ca = self.ca_pem()
        if ca is None:
            raise RuntimeError("the webhook certificate's CA is not loaded yet")
        key = (str(owner["kind"]), namespace, str(owner["name"]))
        written = (str(owner.get("uid") or ""), ca)
        if self._written.get(key) == written:
            return
        labels = {LABEL_TLS_CONFIG: "true"}
        cm = build_tls_config_map(str(owner["name"]), namespace, ca.decode(), owner, labels)
        with request_priority(PRIORITY_WRITE):
            await self._create_or_fix(cm)
        self._written[key] = written

    async def _create_or_fix(self, cm: dict[str, Any], tries: int = 3) -> None:
        """Create ``cm``; one already there (another job's of the same name, a rotation missed, or a
        deleted namesake's that the garbage collector would take) gets ``cm``'s CA, and its owner's
        reference next to the other jobs' (``add_owner``)."""
        api = self.client.api
        meta = cm["metadata"]
        (ref,) = meta["ownerReferences"]
        for _ in range(tries):
            if await tolerate(api.create(r.ConfigMap(cm)), 409):
                return
            try:
                current = dict(await api.get(r.ConfigMap, meta["name"], namespace=meta["namespace"]))
                cmeta = current.get("metadata") or {}
                refs = cmeta.get("ownerReferences") or []
                if current.get("data") == cm["data"] and ref in refs:
                    return
                current["data"] = cm["data"]
                current["metadata"] = {**cmeta, "ownerReferences": add_owner(refs, ref)}
                await api.replace(r.ConfigMap(current))
                return
            except Exception as exc:
                if api_status_code(exc) not in (404, 409):  # deleted or changed meanwhile: again
                    raise
        raise RuntimeError(f"ConfigMap {meta['namespace']}/{meta['name']} keeps changing; retrying later")

    async def rotate(self, namespace: str | None) -> None:
        """After the CA changed: every ConfigMap of ours gets the new one (pods see it within the
        kubelet's sync period; the server keeps the old certificate until it reloads)."""
        ca = self.ca_pem()
        if ca is None:
            return
        api = self.client.api
        with request_priority(PRIORITY_WRITE):
            ours = api.list(r.ConfigMap, namespace=namespace or "*", labels={LABEL_TLS_CONFIG: "true"})
            async for obj in ours:
                cm = dict(obj)
                if (cm.get("data") or {}).get(CA_KEY) == ca.decode():
                    continue
                cm["data"] = {**(cm.get("data") or {}), CA_KEY: ca.decode()}
                await tolerate(api.replace(r.ConfigMap(cm)), 404, 409)


class ProgressTarget:
    """The v1 reconcile's target with ``PodPreparer`` in front of ``apply``: the pods a plan creates
    carry the contract. Everything else is the wrapped target's."""

    def __init__(self, inner: Any, preparer: PodPreparer) -> None:
        self.inner = inner
        self.preparer = preparer

    def pending(self, key: tuple[str, str, str]) -> float | None:
        return self.inner.pending(key)  # type: ignore[no-any-return]

    def observe(self, key: tuple[str, str, str]) -> Observed | None:
        observed: Observed | None = self.inner.observe(key)
        if observed is None:  # gone, or being deleted: no more pods
            self.preparer.forget(*key)
        return observed

    async def apply(self, key: tuple[str, str, str], observed: Observed, plan: Plan) -> None:
        pods = [a.obj for a in plan.actions if isinstance(a, CreateObject) and a.obj.get("kind") == "Pod"]
        if pods:
            job = observed.job
            owner = build_owner_reference(job)
            await self.preparer.prepare(owner, job.namespace, KIND_INFO[job.kind].plural, pods)
        await self.inner.apply(key, observed, plan)
