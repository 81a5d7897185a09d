"""The SDK's Kubernetes adapter: job CRUD, pods, logs and events through lightkube's sync client.

Config follows kubeflow-training's constructor (§7.3): a kube-config file and context, or an explicit
client configuration, or the in-cluster service account when running in a pod. API errors become the
typed SDK errors with upstream's ``Failed to <verb> <Kind>: <ns>/<name>`` prefix. No job logic here.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import httpx2 as httpx
from lightkube import ApiError, Client
from lightkube.config.kubeconfig import KubeConfig, SingleConfig
from lightkube.core.exceptions import ConfigError
from lightkube.generic_resource import create_namespaced_resource
from lightkube.resources.core_v1 import Event, Pod
from lightkube.types import CascadeType, PatchType

from trainop.api.errors import FieldError
from trainop.backends.kubernetes.resources import JOB_RESOURCES  # the kubeflow.org/v1 kinds (§1.1)
from trainop.sdk import constants
from trainop.sdk.errors import (
    AlreadyExistsError,
    InvalidJobError,
    NotFoundError,
    SDKError,
    WaitTimeoutError,
    build_api_exception,
    build_log_error,
)
from trainop.sdk.models import build_plain

T = TypeVar("T")
logger = logging.getLogger(__name__)

SERVICE_ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")
FIELD_MANAGER = "trainop-sdk"
THROTTLE_RETRIES = 10
THROTTLE_MAX_WAIT_S = 5.0

LocalQueue: Any = create_namespaced_resource("kueue.x-k8s.io", "v1beta1", "LocalQueue", "localqueues")


def is_running_in_k8s() -> bool:
    """Upstream's test: the service-account secrets directory exists."""
    return os.path.isdir("/var/run/secrets/kubernetes.io/")


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
    assert single is not None
    return single


def load_config(config_file: str | None, context: str | None, client_configuration: Any) -> SingleConfig:
    """Which cluster to talk to, as upstream chose it (§7.3)."""
    if client_configuration is not None:
        return build_config_from_client_configuration(client_configuration)
    try:
        if config_file or not is_running_in_k8s():
            path = config_file or os.environ.get("KUBECONFIG", "").split(os.pathsep)[0] or "~/.kube/config"
            kc = KubeConfig.from_file(os.path.expanduser(path))
        else:
            kc = KubeConfig.from_service_account(SERVICE_ACCOUNT_DIR)
        single = kc.get(context_name=context)
    except (ConfigError, FileNotFoundError) as e:
        raise SDKError(
            f"Failed to load the Kubernetes configuration: {e}. Pass config_file=... (or set $KUBECONFIG), "
            'or use TrainingClient(backend="local") to run jobs on this machine'
        ) from None
    if single is None:
        raise SDKError(
            "Failed to load the Kubernetes configuration: it has no current context; pass context=..."
        )
    return single


def _causes(e: ApiError) -> list[FieldError]:
    details = getattr(e.status, "details", None)
    causes = getattr(details, "causes", None) or []
    out = [FieldError(c.field or "", c.message or c.reason or "") for c in causes]
    return out or [FieldError("", e.status.message or str(e))]


def build_api_exception_from(e: ApiError) -> Exception:
    """lightkube's ApiError → the ``ApiException`` kubernetes.client raises for that response
    (status, reason phrase, headers, body), so ``e.__cause__`` reads as upstream's."""
    response = e.response
    if response is None:
        return build_api_exception(int(e.status.code or 0), str(e.status.message or ""))
    headers: Any = dict(response.headers.multi_items())
    try:  # kubernetes.client's type for them (its ApiException prints them)
        from urllib3 import HTTPHeaderDict

        headers = HTTPHeaderDict([(k.decode(), v.decode()) for k, v in response.headers.raw])
    except ImportError:
        pass
    return build_api_exception(response.status_code, response.text, headers)


def _is_webhook_denial(e: ApiError) -> bool:
    return e.status.code == 403 and "denied the request" in str(e.status.message or "")


class KubernetesBackend:
    """``ClientBackend`` over a kube-apiserver (one lightkube client per request timeout)."""

    name = "kubernetes"

    def __init__(
        self,
        config_file: str | None = None,
        context: str | None = None,
        client_configuration: Any = None,
        timeout: float = constants.DEFAULT_TIMEOUT,
    ) -> None:
        self.config = load_config(config_file, context, client_configuration)
        self.default_namespace = self.config.namespace or constants.DEFAULT_NAMESPACE
        self._timeout = float(timeout)
        self._clients: dict[float, Client] = {}

    def client(self, timeout: float | None = None) -> Client:
        t = float(timeout) if timeout else self._timeout
        c = self._clients.get(t)
        if c is None:
            c = Client(self.config, timeout=httpx.Timeout(t), field_manager=FIELD_MANAGER)
            self._clients[t] = c
        return c

    def close(self) -> None:
        """Close the HTTP connections (left to the garbage collector they are unclosed sockets)."""
        for c in self._clients.values():
            c.close()
        self._clients.clear()

    # --- error mapping ---
    def _call(self, verb: str, kind: str, namespace: str, name: str, fn: Callable[[], T]) -> T:
        """Run ``fn``; API errors become the SDK's typed errors chained to an ``ApiException``. The
        client words the message as upstream did; ``verb`` only fills the default one."""
        try:
            return self._retry_throttled(fn)
        except ApiError as e:
            code = e.status.code
            cause = build_api_exception_from(e)
            detail = str(e.status.message or e)
            message = f"Failed to {verb} {kind}: {namespace}/{name}. Error: {cause}"
            if code == 422 or _is_webhook_denial(e):
                raise InvalidJobError(
                    message, errors=_causes(e), kind=kind, namespace=namespace, name=name, cause=cause
                ) from cause
            if code == 404:
                raise NotFoundError(
                    message, kind=kind, namespace=namespace, name=name, detail=detail, cause=cause
                ) from cause
            if code == 409 and e.status.reason == "AlreadyExists":
                raise AlreadyExistsError(
                    message, kind=kind, namespace=namespace, name=name, detail=detail, cause=cause
                ) from cause
            raise SDKError(message, detail=detail, cause=cause) from cause
        except httpx.TimeoutException as e:
            raise WaitTimeoutError(f"Timeout to {verb} {kind}: {namespace}/{name}: {e}") from None
        except httpx.HTTPError as e:
            raise SDKError(f"Failed to {verb} {kind}: {namespace}/{name}. Error: {e}", detail=str(e)) from e

    @staticmethod
    def _retry_throttled(fn: Callable[[], T]) -> T:
        # A 429 (throttled, or a resource's storage still initialising just after its CRD was
        # installed) means the request was not processed: retry after Retry-After, as client-go does.
        for attempt in range(THROTTLE_RETRIES):
            try:
                return fn()
            except ApiError as e:
                if e.status.code != 429 or attempt == THROTTLE_RETRIES - 1:
                    raise
                after = e.response.headers.get("Retry-After", "") if e.response is not None else ""
                time.sleep(min(float(after) if after.isdigit() else 1.0, THROTTLE_MAX_WAIT_S))
        raise AssertionError("unreachable")

    # --- jobs ---
    def create_job(self, obj: dict[str, Any], *, timeout: float | None = None) -> dict[str, Any]:
        kind = obj["kind"]
        meta = obj.get("metadata") or {}
        res = JOB_RESOURCES[kind]
        ns, name = meta.get("namespace") or self.default_namespace, meta.get("name", "")
        got = self._call(
            "create", kind, ns, name, lambda: self.client(timeout).create(res.from_dict(obj), namespace=ns)
        )
        return dict(got.to_dict())

    def get_job(
        self, kind: str, namespace: str, name: str, *, timeout: float | None = None
    ) -> dict[str, Any]:
        got = self._call(
            "get",
            kind,
            namespace,
            name,
            lambda: self.client(timeout).get(JOB_RESOURCES[kind], name, namespace=namespace),
        )
        return dict(got.to_dict())

    def list_jobs(self, kind: str, namespace: str, *, timeout: float | None = None) -> list[dict[str, Any]]:
        def run() -> list[dict[str, Any]]:
            return [
                dict(o.to_dict()) for o in self.client(timeout).list(JOB_RESOURCES[kind], namespace=namespace)
            ]

        return self._call("list", kind, namespace, "", run)

    def patch_job(
        self, kind: str, namespace: str, name: str, patch: dict[str, Any], *, timeout: float | None = None
    ) -> dict[str, Any]:
        def run() -> Any:
            return self.client(timeout).patch(
                JOB_RESOURCES[kind], name, patch, namespace=namespace, patch_type=PatchType.MERGE
            )

        return dict(self._call("update", kind, namespace, name, run).to_dict())

    def delete_job(
        self,
        kind: str,
        namespace: str,
        name: str,
        options: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
    ) -> None:
        opts = build_plain(options) if options is not None else {}
        grace = opts.get("gracePeriodSeconds")
        policy = opts.get("propagationPolicy")
        cascade = {
            "Foreground": CascadeType.FOREGROUND,
            "Background": CascadeType.BACKGROUND,
            "Orphan": CascadeType.ORPHAN,
        }.get(policy or "")

        def run() -> None:
            self.client(timeout).delete(
                JOB_RESOURCES[kind], name, namespace=namespace, grace_period=grace, cascade=cascade
            )

        self._call("delete", kind, namespace, name, run)

    # --- pods, logs, events ---
    def list_pods(
        self, namespace: str, labels: Mapping[str, str], *, timeout: float | None = None
    ) -> list[dict[str, Any]]:
        def run() -> list[dict[str, Any]]:
            return [
                dict(p.to_dict())
                for p in self.client(timeout).list(Pod, namespace=namespace, labels=dict(labels))
            ]

        return self._call("list", "Pod", namespace, "", run)

    def read_log(
        self, namespace: str, job: str, pod: str, container: str, *, timeout: float | None = None
    ) -> str:
        def run() -> str:
            return "".join(self.client(timeout).log(pod, namespace=namespace, container=container))

        return self._call("read logs of", "Pod", namespace, pod, run)

    def stream_log(
        self, namespace: str, job: str, pod: str, container: str, *, timeout: float | None = None
    ) -> Iterator[str]:
        lines = self._call(
            "read logs of",
            "Pod",
            namespace,
            pod,
            lambda: self.client(timeout).log(
                pod, namespace=namespace, container=container, follow=True, newlines=False
            ),
        )
        try:
            yield from lines
        except httpx.HTTPError as e:
            raise build_log_error(namespace, pod, str(e)) from e

    def list_events(self, namespace: str, *, timeout: float | None = None) -> list[dict[str, Any]]:
        def run() -> list[dict[str, Any]]:
            return [dict(e.to_dict()) for e in self.client(timeout).list(Event, namespace=namespace)]

        return self._call("list", "Event", namespace, "", run)

    # --- create_job helpers ---
    def check_local_queue(self, namespace: str, queue_name: str) -> None:
        try:
            self.client().get(LocalQueue, queue_name, namespace=namespace)
        except ApiError as e:
            # Upstream's _check_queue_exists: only a 500 stops the create; anything else warns.
            if e.status.code == 500:
                raise ConnectionError(
                    "Kueue webhook or admission controller is not responding."
                ) from build_api_exception_from(e)
            logger.warning(
                "LocalQueue %s/%s could not be read (%s); the job is created anyway",
                namespace,
                queue_name,
                e.status.message,
            )
        except httpx.HTTPError as e:
            raise ConnectionError(f"Failed to check LocalQueue {namespace}/{queue_name}: {e}") from None

    def create_function_job(
        self, obj: dict[str, Any], *, packages_to_install: Sequence[str] | None, pip_index_url: str
    ) -> dict[str, Any]:
        # In a pod the script's own `python -m pip install` installs into the pod's environment.
        return self.create_job(obj)
