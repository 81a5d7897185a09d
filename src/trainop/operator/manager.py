"""Wires the operator together: client, informers, work queue, workers, webhook, metrics, probes, lease.

Startup order follows upstream (§6.4): the webhook certificate is made ready first, then the caches
sync, then (if ``--leader-elect``) the lease is won, and only then do workers reconcile and write.
Every replica serves the webhook, metrics and probes; only the leader writes jobs. Losing the lease
stops the process (a standby takes over), as controller-runtime does.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import ssl
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from trainop.api.kinds import KIND_INFO
from trainop.backends.kubernetes.backend import KubernetesReconcileTarget
from trainop.backends.kubernetes.cache import ClusterCache, JobKey
from trainop.backends.kubernetes.client import KubeClient, build_client, is_served, load_config
from trainop.backends.kubernetes.events import EventRecorder
from trainop.backends.kubernetes.leader import LeaderElector
from trainop.backends.kubernetes.resources import JOB_RESOURCES, use_pod_group_api
from trainop.controller.jobs import JobReconciler
from trainop.controller.loop import Controller
from trainop.controller.workqueue import WorkQueue
from trainop.core.gang import GangScheduler
from trainop.core.topology import ServiceTopology
from trainop.frameworks.base import FrameworkPlugin
from trainop.operator.explain import reconcile_or_explain
from trainop.operator.flags import OperatorConfig
from trainop.operator.http import HTTPServer, Response, parse_bind_address
from trainop.operator.metrics import OperatorMetrics

if TYPE_CHECKING:
    # Imported where the webhook starts: cryptography is 11.6 MB of RSS (its Rust library and
    # OpenSSL bindings) that an operator run with --enable-webhook=false never uses.
    from trainop.operator import certs
    from trainop.operator.progress import PodPreparer

log = logging.getLogger(__name__)

CERT_CHECK_INTERVAL = 30.0  # re-read the Secret (another replica may have rotated) and re-inject the CA


class LeadershipLost(Exception):
    """The lease was lost: stop, so that a standby takes over with a fresh cache."""


class StartupError(Exception):
    """The operator cannot start; the message says what to change."""


def build_plugins(cfg: OperatorConfig) -> dict[str, FrameworkPlugin]:
    """One plugin per enabled kind, configured from the flags of §6.4."""
    from trainop.frameworks.registry import build_registry

    registry = build_registry(
        pytorch_init_container_image=cfg.pytorch_init_container_image,
        pytorch_init_container_max_tries=cfg.pytorch_init_container_max_tries,
        mpi_kubectl_delivery_image=cfg.mpi_kubectl_delivery_image,
    )
    return {kind: registry.get(kind) for kind in cfg.kinds}


class Operator:
    def __init__(self, cfg: OperatorConfig, *, client: KubeClient | None = None) -> None:
        self.cfg = cfg
        self.metrics = OperatorMetrics()
        if client is None:
            client = build_client(load_config(cfg.kubeconfig), qps=cfg.qps, burst=cfg.burst)
        self.client = client
        host = urlparse(client.config.cluster.server).netloc
        client.stats.hooks.append(self.metrics.rest_hook(host))
        client.limiter.on_wait = self.metrics.limiter_hook(host)
        self.gang = GangScheduler.from_flag(cfg.gang_scheduler_name)
        # YuniKorn's gang is on the pods: no PodGroup API to watch or to check for.
        self.pod_group_resource = (
            use_pod_group_api(self.gang.api_version) if self.gang and self.gang.pod_group else None
        )
        plugins = build_plugins(cfg)
        # The plugins' capabilities say which owned kinds to watch besides pods and Services.
        self.cache = ClusterCache(
            client, cfg.kinds, namespace=cfg.namespace, pod_group=self.pod_group_resource, plugins=plugins
        )
        self.recorder = EventRecorder(client)
        self.backend = KubernetesReconcileTarget(
            client, self.cache, self.recorder, count_metric=self.metrics.count_job
        )
        self.queue: WorkQueue[JobKey] = WorkQueue(metrics=self.metrics)
        target: Any = self.backend
        self.pods: PodPreparer | None = None
        if cfg.trainer_progress:
            from trainop.operator.progress import PodPreparer, ProgressTarget

            self.pods = PodPreparer(client, cfg.trainer_progress_server, self._ca_pem)
            target = ProgressTarget(self.backend, self.pods)
        self.reconciler = JobReconciler(
            target,
            plugins.__getitem__,
            ServiceTopology(cfg.cluster_domain),
            reconcile_fn=functools.partial(reconcile_or_explain, gang=self.gang),
        )
        self.controller = Controller(
            self.queue, self.reconciler, workers=cfg.controller_threads, metrics=self.metrics
        )
        self.elector: LeaderElector | None = None
        if cfg.leader_elect:
            self.elector = LeaderElector(
                client,
                name=cfg.leader_election_id,
                namespace=cfg.leader_election_namespace,
                identity=cfg.identity,
            )
        self.webhook_ready = asyncio.Event()
        self.webhook_server: HTTPServer | None = None
        self.metrics_server: HTTPServer | None = None
        self.probe_server: HTTPServer | None = None
        self._ssl: ssl.SSLContext | None = None
        self._mounted: tuple[bytes, bytes] | None = None  # --manage-webhook-cert=false: the files loaded
        self._rotate_mounted = False  # the mounted certificate changed: rewrite the pods' CA ConfigMaps
        self._bundle: certs.CertBundle | None = None
        self.started = asyncio.Event()  # workers are running (this replica leads, or no election)

    # --- probes ---------------------------------------------------------------------------------------
    @property
    def ready(self) -> bool:
        return self.cache.synced and (not self.cfg.enable_webhook or self.webhook_ready.is_set())

    async def _healthz(self, method: str, body: bytes) -> Response:
        return Response(200, b"ok")

    async def _readyz(self, method: str, body: bytes) -> Response:
        if self.ready:
            return Response(200, b"ok")
        missing = []
        if not self.cache.synced:
            missing.append("caches not synced")
        if self.cfg.enable_webhook and not self.webhook_ready.is_set():
            missing.append("webhook certificate not ready or caBundle not injected")
        return Response(503, ("; ".join(missing) + "\n").encode())

    async def _start_http(self) -> None:
        probe = parse_bind_address(self.cfg.health_probe_bind_address)
        if probe is not None:
            self.probe_server = HTTPServer({"/healthz": self._healthz, "/readyz": self._readyz})
            await self.probe_server.start(*probe)
        metrics = parse_bind_address(self.cfg.metrics_bind_address)
        if metrics is not None:
            self.metrics_server = HTTPServer({"/metrics": self.metrics.handle})
            await self.metrics_server.start(*metrics)

    # --- webhook certificate ----------------------------------------------------------------------------
    def _ca_pem(self) -> bytes | None:
        """The CA that signs the HTTPS server (pods of jobs check it when posting progress): ours, or
        the mounted Secret's ca.crt (cert-manager writes one) with --manage-webhook-cert=false."""
        if self._bundle is not None:
            return self._bundle.ca_cert
        try:
            return (Path(self.cfg.cert_dir) / "ca.crt").read_bytes()
        except OSError:
            return None

    async def _refresh_cert(self) -> None:
        from trainop.operator import certs

        cfg = self.cfg
        if not cfg.manage_webhook_cert:
            self._load_mounted_cert()
            if self._rotate_mounted and self.pods is not None:
                await self.pods.rotate(cfg.namespace)
                self._rotate_mounted = False
            if self.webhook_server is not None:
                self.webhook_ready.set()
            return
        bundle = await certs.apply_cert_secret(
            self.client,
            namespace=cfg.pod_namespace,
            name=cfg.webhook_secret_name,
            hosts=cfg.webhook_cert_hosts,
            now=datetime.now(UTC),
        )
        rotated = self._bundle is not None and bundle.ca_cert != self._bundle.ca_cert
        if bundle != self._bundle:
            cert_dir = Path(cfg.cert_dir)
            cert_dir.mkdir(parents=True, exist_ok=True)
            (cert_dir / "tls.crt").write_bytes(bundle.cert)
            key_file = cert_dir / "tls.key"
            key_file.touch(mode=0o600)
            key_file.write_bytes(bundle.key)
            self._serve_cert(cert_dir / "tls.crt", key_file)
            self._bundle = bundle
        if rotated and self.pods is not None:
            await self.pods.rotate(cfg.namespace)
        injected = await certs.apply_ca_bundle(
            self.client, name=cfg.webhook_configuration_name, ca_pem=bundle.ca_cert
        )
        if injected and self.webhook_server is not None:
            self.webhook_ready.set()

    def _load_mounted_cert(self) -> None:
        """--manage-webhook-cert=false: the certificate cert-manager keeps in the mounted Secret, loaded
        again when the kubelet has updated the files (a rotation)."""
        cert_dir = Path(self.cfg.cert_dir)
        cert, key = cert_dir / "tls.crt", cert_dir / "tls.key"
        try:
            stamp = (cert.read_bytes(), key.read_bytes())
        except OSError as exc:
            msg = f"no tls.crt/tls.key in --cert-dir {cert_dir} (is the Secret mounted?): {exc}"
            raise RuntimeError(msg) from None
        if stamp != self._mounted:
            self._rotate_mounted = self._mounted is not None
            self._serve_cert(cert, key)
            self._mounted = stamp

    def _serve_cert(self, cert: Path, key: Path) -> None:
        if self._ssl is None:
            self._ssl = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        # Reloading into the same context serves the new certificate on every later handshake.
        self._ssl.load_cert_chain(str(cert), str(key))

    async def _run_webhook(self, certs_loaded: asyncio.Event) -> None:
        failures = 0
        while True:
            try:
                await self._refresh_cert()
                if self.webhook_server is None and self._ssl is not None:
                    from trainop.operator.webhook import build_routes

                    self.webhook_server = HTTPServer(
                        build_routes(self.cfg.kinds),
                        ssl_context=self._ssl,
                        request_routes=self._progress_routes(),
                    )
                    await self.webhook_server.start(self.cfg.webhook_host, self.cfg.webhook_server_port)
                    log.info("webhook: serving on :%d", self.webhook_server.port)
                    await self._refresh_cert()  # inject now that the server is up (sets webhook_ready)
                certs_loaded.set()
                failures = 0
                await asyncio.sleep(CERT_CHECK_INTERVAL)
            except Exception as exc:
                failures += 1
                log.warning("webhook certificate: %s (retrying)", exc)
                await asyncio.sleep(min(CERT_CHECK_INTERVAL, 0.5 * 2**failures))

    def _progress_routes(self) -> dict[str, Any]:
        if not self.cfg.trainer_progress:
            return {}
        from trainop.operator.progress import ProgressEndpoint

        return ProgressEndpoint(self.client, self.cfg.kinds).routes()

    # --- main -----------------------------------------------------------------------------------------
    async def run(self) -> None:
        """Run until cancelled; raises LeadershipLost when a leader loses its lease."""
        cfg = self.cfg
        log.info(
            "trainop operator starting: kinds=%s namespace=%s threads=%d qps=%g burst=%d leader-elect=%s",
            ",".join(cfg.kinds), cfg.namespace or "<all>", cfg.controller_threads, cfg.qps, cfg.burst,
            cfg.leader_elect,
        )  # fmt: skip
        # A change of a job's pods or Services is urgent: that job runs (workqueue.py).
        self.cache.subscribe(
            self.queue.add, self.backend.on_owned_change, enqueue_owned=self.queue.add_urgent
        )
        await self._check_crds()
        try:
            async with asyncio.TaskGroup() as tg:
                await self._start_http()
                if cfg.enable_webhook:
                    certs_loaded = asyncio.Event()
                    tg.create_task(self._run_webhook(certs_loaded), name="webhook")
                    await certs_loaded.wait()  # upstream registers controllers only once certificates exist
                tg.create_task(self.cache.run(), name="informers")
                tg.create_task(self.recorder.run(), name="events")
                await self.cache.wait_synced()
                log.info("caches synced: %d jobs", len(self.cache.job_keys()))
                if self.elector is not None:
                    tg.create_task(self.elector.run(), name="leader-election")
                    self.metrics.leader.labels(cfg.leader_election_id).set(0)
                    await self.elector.is_leader.wait()
                    self.metrics.leader.labels(cfg.leader_election_id).set(1)
                    tg.create_task(self._watch_lease(), name="lease-watch")
                for key in self.cache.job_keys():
                    self.queue.add(key)
                tg.create_task(self.controller.run(), name="controller")
                await self._start_trainjobs(tg)
                self.started.set()
        except* LeadershipLost:
            raise LeadershipLost(
                f"lost lease {cfg.leader_election_namespace}/{cfg.leader_election_id}"
            ) from None

    async def _start_trainjobs(self, tg: asyncio.TaskGroup) -> None:
        """Kubeflow Trainer v2 TrainJobs (operator/trainjobs.py), when their CRD is installed."""
        from trainop.operator.trainjobs import TrainJobController

        trainjobs = TrainJobController(self.client.api, self.cfg.namespace or None, pods=self.pods)
        try:
            found = await trainjobs.installed()
        except Exception as exc:
            log.warning("TrainJob controller off: cannot list TrainJobs: %s", exc)
            return
        if found:
            log.info("TrainJob CRD found: reconciling trainer.kubeflow.org TrainJobs")
            tg.create_task(trainjobs.run(), name="trainjobs")

    async def _check_crds(self) -> None:
        """Fail fast, as upstream does, when an enabled kind has no CRD (rather than retry forever)."""
        ns = self.cfg.namespace or "*"
        missing = [
            f"{KIND_INFO[kind].plural}.kubeflow.org"
            for kind in self.cfg.kinds
            if not await is_served(self.client.api, JOB_RESOURCES[kind], ns)
        ]
        if missing:
            raise StartupError(
                f"CRD {', '.join(missing)} not installed: run `kubectl apply -k manifests/crds`, "
                "or leave the kind out with --enable-scheme"
            )
        if self.gang is not None and self.pod_group_resource is not None:
            await self._check_pod_group_crd(self.gang, self.pod_group_resource)

    async def _check_pod_group_crd(self, gang: GangScheduler, resource: Any) -> None:
        """§5: upstream exits at startup when the chosen PodGroup CRD is missing; say what to install."""
        if not await is_served(self.client.api, resource, self.cfg.namespace or "*"):
            what = (
                "Volcano (https://volcano.sh/en/docs/installation/)"
                if gang.volcano
                else "scheduler-plugins' CRDs and its Coscheduling scheduler "
                "(https://github.com/kubernetes-sigs/scheduler-plugins/tree/master/manifests/install)"
            )
            raise StartupError(
                f"--gang-scheduler-name={self.cfg.gang_scheduler_name} needs the PodGroup CRD "
                f"{gang.crd_name} ({gang.api_version}), which is not installed: install {what}, "
                "or run without --gang-scheduler-name"
            )

    async def _watch_lease(self) -> None:
        assert self.elector is not None
        await self.elector.lost.wait()
        raise LeadershipLost()

    async def shutdown(self) -> None:
        """Release what others wait on: the lease, queued events, sockets, the HTTP client."""
        await self.queue.shutdown()
        if self.elector is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.elector.release(), 5)
        for server in (self.webhook_server, self.metrics_server, self.probe_server):
            if server is not None:
                await server.close()
        with contextlib.suppress(Exception):
            await self.client.aclose()
