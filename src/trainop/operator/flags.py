"""Command-line flags of ``trainop operator``, compatible with upstream's ``/manager`` (contract §6.4).

Go-style spellings work (``--flag=value``, ``--flag value``, ``--leader-elect`` alone or ``=true``).
Bad values exit with a message that says what to change, never a traceback. Pure: argv and an
environment mapping in, an OperatorConfig out.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from trainop import __version__
from trainop.api.kinds import KIND_INFO
from trainop.backends.kubernetes.client import DEFAULT_BURST, DEFAULT_QPS

DEFAULT_LEADER_ELECTION_ID = "1ca428e5.training-operator.kubeflow.org"
DEFAULT_WEBHOOK_SERVICE = "training-operator"
DEFAULT_WEBHOOK_SECRET = "training-operator-webhook-cert"
DEFAULT_CERT_DIR = "/tmp/k8s-webhook-server/serving-certs"
DEFAULT_POD_NAMESPACE = "kubeflow"
DEFAULT_CONTROLLER_THREADS = 32
DEFAULT_MPI_KUBECTL_DELIVERY_IMAGE = "ghcr.io/kubeflow/training-v1/kubectl-delivery:latest"

SCHEMES = {k.lower(): k for k in KIND_INFO}


class FlagError(ValueError):
    """A flag value the operator cannot start with; the message says what to change."""


@dataclass(frozen=True)
class OperatorConfig:
    kinds: list[str]
    namespace: str | None
    controller_threads: int
    qps: float
    burst: int
    metrics_bind_address: str
    health_probe_bind_address: str
    leader_elect: bool
    leader_election_id: str
    leader_election_namespace: str
    pod_namespace: str
    identity: str
    enable_webhook: bool
    webhook_server_port: int
    webhook_host: str
    webhook_service_name: str
    webhook_secret_name: str
    webhook_configuration_name: str
    webhook_cert_hosts: list[str]
    cert_dir: str
    pytorch_init_container_image: str
    pytorch_init_container_max_tries: int
    pytorch_init_container_template_file: str
    mpi_kubectl_delivery_image: str
    kubeconfig: str | None
    log_level: str
    cluster_domain: str = ""
    gang_scheduler_name: str = ""  # §5: "" = no gang scheduling
    # False: another party (cert-manager) writes the certificate into --cert-dir and injects the caBundle.
    manage_webhook_cert: bool = True
    # Trainer v2's progress contract on the webhook's HTTPS server, and its env and volume in every
    # job's pods (operator/progress.py); off: pods are exactly the Go operator's.
    trainer_progress: bool = False
    trainer_progress_server: str = ""  # https://<host>[:port] the pods post to


def _bool(value: str) -> bool:
    v = value.strip().lower()
    if v in ("1", "t", "true", "yes"):
        return True
    if v in ("0", "f", "false", "no"):
        return False
    raise argparse.ArgumentTypeError(f"{value!r} is not a boolean (use true or false)")


def _positive_int(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not an integer") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"{value!r} must be at least 1")
    return n


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise FlagError(message)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="trainop operator",
        description="Run the Kubernetes operator for kubeflow.org/v1 training jobs "
        "(a drop-in replacement for the Kubeflow Training Operator).",
        allow_abbrev=False,
    )
    add = p.add_argument

    def add_bool(flag: str, default: bool, help: str) -> None:
        """``--flag`` alone means true; ``--flag=false`` (Go's spelling) is accepted too."""
        add(flag, type=_bool, nargs="?", const=True, default=default, help=help)

    add(
        "--enable-scheme",
        action="append",
        default=[],
        metavar="KIND",
        help="Job kind to run (repeatable, case-insensitive): tfjob, pytorchjob, xgboostjob, mpijob, "
        "paddlejob, jaxjob. None given means all.",
    )
    add(
        "--namespace",
        default=None,
        help="Watch only this namespace (default: $KUBEFLOW_NAMESPACE; empty means every namespace).",
    )
    add(
        "--controller-threads",
        type=_positive_int,
        default=DEFAULT_CONTROLLER_THREADS,
        help=f"Jobs reconciled concurrently (default {DEFAULT_CONTROLLER_THREADS}; upstream 1). Workers are "
        "asyncio tasks waiting on the API, so more of them cost little; one job is never reconciled twice "
        "at once.",
    )
    add(
        "--kube-api-qps",
        type=float,
        default=DEFAULT_QPS,
        help=f"Client-side limit on API requests per second (default {DEFAULT_QPS:g}; upstream 20). Raised "
        "because one 1+3 PyTorchJob needs ~9 writes to start, and the API server's priority and fairness "
        "already protects it; at 50/100 job status lagged its pods during a creation burst (issue 16).",
    )
    add(
        "--kube-api-burst",
        type=_positive_int,
        default=DEFAULT_BURST,
        help=f"Requests allowed above the QPS in a burst (default {DEFAULT_BURST}; upstream 30).",
    )
    add("--metrics-bind-address", default=":8080", help="Address of /metrics ('0' disables).")
    add(
        "--health-probe-bind-address", default=":8081", help="Address of /healthz and /readyz ('0' disables)."
    )
    add_bool(
        "--leader-elect",
        False,
        "Elect a leader (coordination.k8s.io Lease) so only one replica reconciles and writes.",
    )
    add("--leader-election-id", default=DEFAULT_LEADER_ELECTION_ID, help="Name of the Lease.")
    add(
        "--leader-election-namespace",
        default=None,
        help="Namespace of the Lease (default: the operator's own namespace, $MY_POD_NAMESPACE).",
    )
    add_bool(
        "--enable-webhook",
        True,
        "Serve the validating admission webhook and manage its certificate (default true).",
    )
    add("--webhook-server-port", type=int, default=9443, help="Port of the webhook's HTTPS server.")
    add("--webhook-host", default="0.0.0.0", help="Address the webhook server binds.")
    add(
        "--webhook-service-name",
        default=DEFAULT_WEBHOOK_SERVICE,
        help="Service fronting the webhook; the certificate is issued for <service>.<namespace>.svc.",
    )
    add(
        "--webhook-secret-name",
        default=DEFAULT_WEBHOOK_SECRET,
        help="Secret holding the webhook certificate.",
    )
    add(
        "--webhook-configuration-name",
        default="validator.training-operator.kubeflow.org",
        help="ValidatingWebhookConfiguration that receives the caBundle.",
    )
    add(
        "--webhook-cert-host",
        action="append",
        default=[],
        metavar="HOST",
        help="Extra DNS name or IP for the serving certificate (repeatable), e.g. 127.0.0.1 when the "
        "webhook configuration uses a URL clientConfig (tests, out-of-cluster runs).",
    )
    add("--cert-dir", default=DEFAULT_CERT_DIR, help="Writable directory for the serving certificate files.")
    add_bool(
        "--manage-webhook-cert",
        True,
        "Make, rotate and inject the webhook's certificate (Secret --webhook-secret-name, caBundle). "
        "false: serve tls.crt and tls.key from --cert-dir as mounted there (cert-manager writes the Secret "
        "and injects the caBundle), re-read when they change.",
    )
    add(
        "--gang-scheduler-name",
        default="",
        help="Gang scheduling (contract §5): 'volcano' (Volcano scheduling.volcano.sh/v1beta1 "
        "PodGroups), 'yunikorn' (Apache YuniKorn: app-id, queue and task-group labels and annotations "
        "on every pod, no PodGroup) or the name of a scheduler-plugins scheduler "
        "(scheduling.x-k8s.io/v1alpha1 PodGroups), e.g. scheduler-plugins-scheduler. A PodGroup CRD "
        "must be installed.",
    )
    add_bool(
        "--trainer-progress",
        False,
        "Receive Kubeflow Trainer v2 progress (KEP-2779) from jobs' pods on the webhook's HTTPS server "
        "(POST .../namespaces/NS/PLURAL/NAME/status, a projected ServiceAccount token with audience "
        "trainer.kubeflow.org as bearer): a TrainJob's goes to status.trainerStatus, a kubeflow.org/v1 "
        "job's to the annotation trainop.dev/trainer-status. Every pod of every job then gets "
        "KUBEFLOW_TRAINER_SERVER_URL, _CA_CERT and _TOKEN and their volume (default false: pods stay as "
        "the Go operator makes them). Needs the webhook.",
    )
    add(
        "--trainer-progress-server",
        default="",
        metavar="URL",
        help="Where pods reach that server (default https://<webhook-service-name>.<namespace>.svc, "
        "the Service's port 443); its host must be in the serving certificate.",
    )
    add("--pytorch-init-container-image", default="alpine:3.10", help="Image of the init-pytorch container.")
    add(
        "--pytorch-init-container-max-tries",
        type=_positive_int,
        default=100,
        help="How many times init-pytorch looks the master up before failing.",
    )
    add(
        "--pytorch-init-container-template-file",
        default="/etc/config/initContainer.yaml",
        help="Accepted for compatibility; Go templates for the init container are not supported, "
        "so the file must not exist.",
    )
    add(
        "--mpi-kubectl-delivery-image",
        default=DEFAULT_MPI_KUBECTL_DELIVERY_IMAGE,
        help="Image of the MPI launcher's kubectl-delivery init container.",
    )
    add("--kubeconfig", default=None, help="Kubeconfig file (default: in-cluster, then $KUBECONFIG).")
    # The image's entrypoint is this parser: `podman run IMAGE --version` names the package it holds.
    add("--version", action="version", version=f"trainop {__version__}")
    add("--zap-log-level", default="info", help="Log level: debug, info or error (zap's flag name).")
    for zap in ("--zap-devel", "--zap-encoder", "--zap-stacktrace-level", "--zap-time-encoding"):
        add(zap, nargs="?", const="true", default=None, help=argparse.SUPPRESS)
    return p


def _enabled_kinds(schemes: Sequence[str]) -> list[str]:
    """--enable-scheme values (repeated or comma-separated) → kinds, in order; none given: all."""
    kinds: list[str] = []
    for raw in schemes:
        for value in str(raw).split(","):
            v = value.strip().lower()
            if not v:
                continue
            if v not in SCHEMES:
                raise FlagError(f"scheme {value.strip()} is not supported yet")
            if SCHEMES[v] not in kinds:
                kinds.append(SCHEMES[v])
    return kinds or list(KIND_INFO)


def _check_flags(ns: argparse.Namespace) -> None:
    """Combinations and values argparse cannot refuse by itself."""
    if os.path.exists(ns.pytorch_init_container_template_file):
        # Upstream renders this file as a Go template; silently ignoring it would change pods.
        raise FlagError(
            f"--pytorch-init-container-template-file {ns.pytorch_init_container_template_file}: Go templates "
            "for the init container are not supported yet by trainop; remove the file, and use "
            "--pytorch-init-container-image and --pytorch-init-container-max-tries"
        )
    if ns.kube_api_qps < 0:
        raise FlagError(f"--kube-api-qps {ns.kube_api_qps:g} must not be negative (0 disables the limit)")
    if ns.zap_log_level.lower() not in ("debug", "info", "error", "warn", "warning"):
        raise FlagError(f"--zap-log-level {ns.zap_log_level}: use debug, info or error")
    if ns.trainer_progress and not ns.enable_webhook:
        raise FlagError(
            "--trainer-progress is served on the webhook's HTTPS server: drop --enable-webhook=false, "
            "or --trainer-progress"
        )
    server = str(ns.trainer_progress_server)
    if server and not server.startswith("https://"):
        raise FlagError(
            f"--trainer-progress-server {server.rstrip('/')}: use an https:// URL (the pods check the CA)"
        )


def parse_flags(argv: Sequence[str], env: Mapping[str, str] | None = None) -> OperatorConfig:
    """argv (without the program name) → OperatorConfig; FlagError says what to change."""
    env = os.environ if env is None else env
    ns = build_parser().parse_args(list(argv))
    _check_flags(ns)
    kinds = _enabled_kinds(ns.enable_scheme)
    pod_ns = env.get("MY_POD_NAMESPACE") or DEFAULT_POD_NAMESPACE
    server = str(ns.trainer_progress_server).rstrip("/")
    namespace = ns.namespace if ns.namespace is not None else env.get("KUBEFLOW_NAMESPACE", "")
    identity = env.get("MY_POD_NAME") or f"{os.uname().nodename}_{os.getpid()}"
    hosts = [f"{ns.webhook_service_name}.{pod_ns}.svc", *ns.webhook_cert_host]
    return OperatorConfig(
        kinds=kinds,
        namespace=namespace or None,
        controller_threads=ns.controller_threads,
        qps=ns.kube_api_qps,
        burst=ns.kube_api_burst,
        metrics_bind_address=ns.metrics_bind_address,
        health_probe_bind_address=ns.health_probe_bind_address,
        leader_elect=bool(ns.leader_elect),
        leader_election_id=ns.leader_election_id,
        leader_election_namespace=ns.leader_election_namespace or pod_ns,
        pod_namespace=pod_ns,
        identity=identity,
        enable_webhook=bool(ns.enable_webhook),
        webhook_server_port=ns.webhook_server_port,
        webhook_host=ns.webhook_host,
        webhook_service_name=ns.webhook_service_name,
        webhook_secret_name=ns.webhook_secret_name,
        webhook_configuration_name=ns.webhook_configuration_name,
        webhook_cert_hosts=hosts,
        cert_dir=ns.cert_dir,
        pytorch_init_container_image=ns.pytorch_init_container_image,
        pytorch_init_container_max_tries=ns.pytorch_init_container_max_tries,
        pytorch_init_container_template_file=ns.pytorch_init_container_template_file,
        mpi_kubectl_delivery_image=ns.mpi_kubectl_delivery_image,
        kubeconfig=ns.kubeconfig,
        log_level=ns.zap_log_level.lower(),
        cluster_domain=env.get("CUSTOM_CLUSTER_DOMAIN", ""),
        gang_scheduler_name=str(ns.gang_scheduler_name).strip(),
        manage_webhook_cert=bool(ns.manage_webhook_cert),
        trainer_progress=bool(ns.trainer_progress),
        trainer_progress_server=server or f"https://{ns.webhook_service_name}.{pod_ns}.svc",
    )
