"""``TrainingClient``: kubeflow-training's client API (contract §7.3) over the local or Kubernetes backend.

Argument names, defaults, return shapes and error types follow upstream, so notebook code moves over by
changing its import. The backend is chosen once in the constructor; every method turns arguments into
Kubernetes JSON and asks the backend's ``JobClient`` (``trainop.backends.base``), then translates
its answers to upstream's models and its errors to upstream's (sdk/errors.py). Deliberate differences
from upstream are listed in docs/sdk.md. No job logic lives here: the backends validate and reconcile.
"""

from __future__ import annotations

import inspect
import logging
import os
import queue
import textwrap
import threading
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast

from trainop.api import errors as api_errors
from trainop.api.constants import ANNOTATION_FAILURE_POLICY
from trainop.api.errors import FieldError
from trainop.api.load import load_documents, parse_job
from trainop.backends.base import BackendError, ClusterError, JobClient, NotFoundError
from trainop.backends.selection import BACKENDS, ENV_BACKEND
from trainop.backends.waiting import PollTimeout, poll_until
from trainop.sdk import constants, finetune, utils
from trainop.sdk.errors import (
    JobFailedError,
    SDKError,
    WaitTimeoutError,
    build_cause,
    build_invalid_job_error,
    build_log_error,
    build_sdk_error,
)
from trainop.sdk.funcjob import build_entrypoint, build_func_job, build_func_script, build_pod_template
from trainop.sdk.models import SDK_JOB_MODELS, build_model, build_plain

if TYPE_CHECKING:
    from trainop.backends.kubernetes.jobs import KubernetesBackend

T = TypeVar("T")
logger = logging.getLogger(__name__)
# Upstream's: wait_for_job_conditions logs (at debug) a NAME/STATE/TIME table row per poll.
status_logger = utils.StatusLogger(
    header="{:<30.30} {:<20.20} {}".format("NAME", "STATE", "TIME"),
    column_format="{:<30.30} {:<20.20} {}",
)

FIELD_MANAGER = "trainop-sdk"

# Follow mode (§7.3): one reader thread per pod feeds one bounded queue, printed from in arrival order.
FOLLOW_QUEUE_SIZE = 100
FOLLOW_POLL_S = 1.0


class _StreamEnd:
    """Sentinel a reader thread puts on its queue when the stream ends (``error`` set if it failed)."""

    def __init__(self, error: BaseException | None = None) -> None:
        self.error = error


class _IsJob(Protocol):
    """``is_job_<condition>``'s signature, upstream's (a method made by ``_is_job``)."""

    def __call__(
        self,
        name: str | None = None,
        namespace: str | None = None,
        job_kind: str | None = None,
        job: Any = None,
        timeout: int = constants.DEFAULT_TIMEOUT,
    ) -> bool: ...


def _is_job(condition: str, example: bool) -> _IsJob:
    """The method ``is_job_<condition>``: whether the job has condition ``condition``=True (upstream's
    five methods differ only in the condition)."""

    def method(
        self: TrainingClient,
        name: str | None = None,
        namespace: str | None = None,
        job_kind: str | None = None,
        job: Any = None,
        timeout: int = constants.DEFAULT_TIMEOUT,
    ) -> bool:
        return utils.has_condition(
            self.get_job_conditions(name, namespace, job_kind, job, timeout), condition
        )

    method.__name__ = f"is_job_{condition.lower()}"
    method.__qualname__ = f"TrainingClient.{method.__name__}"
    method.__doc__ = f"""True if the job has condition {condition}=True.

        Example:
            >>> client.{method.__name__}("mnist")
            {example}
        """
    return cast(_IsJob, method)


class TrainingClient:
    """Create, watch and manage kubeflow.org/v1 training jobs, on Kubernetes or on this machine.

    Args:
        config_file: kube-config path (Kubernetes backend). Defaults to ``$KUBECONFIG`` or ``~/.kube/config``.
        context: kube-config context; defaults to its current context.
        client_configuration: a ``kubernetes.client.Configuration`` (host, token or client certificate)
            or a lightkube config, used instead of the kube-config file.
        namespace: default namespace of every method. Defaults to the in-pod service-account namespace,
            else the kube-config context's namespace, else ``default`` (always ``default`` locally).
        job_kind: default kind of every method (``PyTorchJob``).
        backend: ``"local"`` (processes on this machine, no cluster) or ``"kubernetes"``. Defaults to
            Kubernetes when ``config_file``/``context``/``client_configuration`` is given, else to
            ``$TRAINOP_BACKEND``, else Kubernetes. A ``JobClient`` object is also accepted.
        local_home: the local backend's state directory (defaults to ``$TRAINOP_HOME``).

    Raises:
        ValueError: ``job_kind`` is not one of the six kinds, or ``backend`` is unknown.

    Example:
        >>> from trainop import TrainingClient
        >>> client = TrainingClient(backend="local")  # or TrainingClient(): the kube-config cluster
        >>> client.job_kind, client.namespace
        ('PyTorchJob', 'default')
    """

    def __init__(
        self,
        config_file: str | None = None,
        context: str | None = None,
        client_configuration: Any = None,
        namespace: str | None = None,
        job_kind: str = constants.PYTORCHJOB_KIND,
        *,
        backend: str | JobClient | None = None,
        local_home: str | os.PathLike[str] | None = None,
    ) -> None:
        self.job_kind = _checked_kind(job_kind)
        given = {"config_file": config_file, "context": context, "client_configuration": client_configuration}
        kube_args = [k for k, v in given.items() if v is not None]
        # Explicit cluster arguments mean Kubernetes; $TRAINOP_BACKEND decides only for a bare constructor.
        chosen = (
            backend
            if backend is not None
            else ("kubernetes" if kube_args else os.environ.get(ENV_BACKEND) or "kubernetes")
        )
        default_ns = constants.DEFAULT_NAMESPACE
        if isinstance(chosen, str):
            if chosen == "local":
                if kube_args:
                    raise ValueError(
                        f"{', '.join(kube_args)}: only for the Kubernetes backend, not backend='local'"
                    )
                from trainop.backends.local.api import LocalBackend

                self.backend: JobClient = LocalBackend(home=local_home)
            elif chosen in ("kubernetes", "k8s"):
                kb = _kubernetes_client(config_file, context, client_configuration)
                default_ns = kb.default_namespace
                self.backend = kb
            else:
                source = f"${ENV_BACKEND}" if backend is None else "backend"
                raise ValueError(f"{source}: unknown backend {chosen!r}; use one of {list(BACKENDS)}")
        else:
            self.backend = chosen
        self.namespace = namespace or default_ns

    def __repr__(self) -> str:
        return (
            f"TrainingClient(backend={self.backend.name!r}, namespace={self.namespace!r}, "
            f"job_kind={self.job_kind!r})"
        )

    # ------------------------------------------------------------------------------------------------
    # create

    def create_job(
        self,
        job: Any = None,
        name: str | None = None,
        namespace: str | None = None,
        labels: Mapping[str, str] | None = None,
        annotations: Mapping[str, str] | None = None,
        job_kind: str | None = None,
        base_image: str | None = None,
        train_func: Callable[..., Any] | None = None,
        parameters: Mapping[str, Any] | None = None,
        num_workers: int = 1,
        num_procs_per_worker: int | str | None = None,
        resources_per_worker: Any = None,
        num_chief_replicas: int | None = None,
        num_ps_replicas: int | None = None,
        packages_to_install: Sequence[str] | None = None,
        pip_index_url: str = constants.DEFAULT_PIP_INDEX_URL,
        env_vars: Any = None,
        queue_name: str | None = None,
        volumes: Sequence[Any] | None = None,
        volume_mounts: Sequence[Any] | None = None,
        *,
        fail_fast: bool | None = None,
    ) -> None:
        """Create a training job from an object, or from a Python function run in every replica.

        ``job`` may be one of our models (``KubeflowOrgV1PyTorchJob`` ...), a dict, YAML text, or a
        ``kubernetes.client``-style model object (anything with ``attribute_map``/``to_dict()``); with it
        only ``namespace``, ``labels``, ``annotations`` and ``queue_name`` may be given. Otherwise
        ``name`` and ``train_func`` (or ``base_image``) build a PyTorchJob (Master + ``num_workers``-1
        Workers; ``torchrun`` when ``num_workers`` > 1 or ``num_procs_per_worker`` is set, else
        ``python -u``) or a TFJob (Chief/PS/Worker). ``packages_to_install`` is pip-installed first:
        on Kubernetes into the pod's Python, locally into a per-job virtual environment (never into
        yours). Locally the image is not used; the function runs with this interpreter.

        ``fail_fast`` (trainop's): the job fails at its first replica failure, whatever the restart
        policies say (annotation trainop.dev/failure-policy, one FailJob rule; a function job's
        replicas also get restartPolicy Never, so nothing restarts). Default: on for a function job on
        the local backend, as the Trainer v2 SDK's local backend reports Failed at once; off otherwise,
        as upstream (a function job restarts OnFailure). docs/sdk.md says why.

        Raises:
            ValueError: invalid arguments, with upstream's messages.
            InvalidJobError (a RuntimeError): the job is invalid; ``.errors`` names the fields and
                ``__cause__`` is the API server's 422.
            AlreadyExistsError (RuntimeError): a job of that name exists (``__cause__.status`` 409).
            RuntimeError: the backend failed. TimeoutError: the request timed out.

        Example:
            >>> def train(args):
            ...     print("lr", args["lr"])
            >>> client.create_job(name="fn", train_func=train, parameters={"lr": 0.1}, num_workers=1)
            >>> client.create_job(job=open("pytorchjob.yaml").read())
        """
        target_ns = namespace or self.namespace
        if fail_fast is None:
            fail_fast = train_func is not None and self.backend.name == "local"
        if fail_fast:
            annotations = {ANNOTATION_FAILURE_POLICY: FAIL_FAST_POLICY, **(annotations or {})}
        try:
            obj, isolated_env = build_create_request(
                job=job,
                name=name,
                namespace=namespace or None,
                default_namespace=self.namespace,
                labels=labels,
                annotations=annotations,
                job_kind=job_kind,
                default_kind=self.job_kind,
                base_image=base_image,
                train_func=train_func,
                parameters=parameters,
                num_workers=num_workers,
                num_procs_per_worker=num_procs_per_worker,
                resources_per_worker=resources_per_worker,
                num_chief_replicas=num_chief_replicas,
                num_ps_replicas=num_ps_replicas,
                packages_to_install=packages_to_install,
                pip_index_url=pip_index_url,
                env_vars=env_vars,
                queue_name=queue_name,
                volumes=volumes,
                volume_mounts=volume_mounts,
            )
        except api_errors.InvalidJobError as e:
            # Upstream sent it and the API server refused it: a RuntimeError chained to the 422.
            kind = e.kind or str(job_kind or self.job_kind)
            err = build_invalid_job_error(e, kind=kind, namespace=target_ns, name=e.name or str(name or ""))
            raise err.with_message(
                f"Failed to create {err.kind}: {target_ns}/{err.name}. Error: {err.cause}"
            ) from err.cause
        if fail_fast and train_func is not None:
            build_never_restart(obj)
        meta = obj["metadata"]
        kind, ns, job_name = obj["kind"], meta["namespace"], meta.get("name", "")
        if queue_name and queue_name.strip():
            try:
                self.backend.check_local_queue(ns, queue_name)
            except ClusterError as e:  # upstream's _check_queue_exists raised ConnectionError
                raise ConnectionError(str(e)) from build_cause(e)
        packages = list(packages_to_install or [])
        self._request(
            f"create {kind}: {ns}/{job_name}",
            lambda: (
                self.backend.submit_isolated(obj, packages=packages, index_url=pip_index_url)
                if isolated_env and packages
                else self.backend.submit(obj)
            ),
            (kind, ns, job_name),
        )
        logger.debug("%s %s/%s has been created", obj["kind"], meta["namespace"], meta.get("name"))

    # ------------------------------------------------------------------------------------------------
    # read

    def get_job(
        self,
        name: str,
        namespace: str | None = None,
        job_kind: str | None = None,
        timeout: int = constants.DEFAULT_TIMEOUT,
    ) -> Any:
        """The job, as a model (``KubeflowOrgV1PyTorchJob`` ...) with snake_case attributes.

        Raises NotFoundError (a RuntimeError, ``__cause__.status`` 404) when it does not exist,
        TimeoutError on a timeout.

        Example:
            >>> job = client.get_job("mnist")
            >>> job.metadata.name, job.status.conditions[-1].type
            ('mnist', 'Running')
        """
        kind = self._kind(job_kind)
        ns = namespace or self.namespace
        job = self._request(
            f"get {kind}: {ns}/{name}",
            lambda: self.backend.get(name, ns, kind, timeout=timeout),
            (kind, ns, name),
        )
        return build_model(job.to_dict(), SDK_JOB_MODELS[kind])

    def list_jobs(
        self,
        namespace: str | None = None,
        job_kind: str | None = None,
        timeout: int = constants.DEFAULT_TIMEOUT,
    ) -> list[Any]:
        """Every job of the kind in the namespace, as models ([] when there is none).

        Example:
            >>> [j.metadata.name for j in client.list_jobs()]
            ['mnist', 'fn']
        """
        kind = self._kind(job_kind)
        ns = namespace or self.namespace
        jobs = self._request(
            f"list {kind}s in namespace: {ns}",
            lambda: self.backend.list_jobs(ns, kind, timeout=timeout),
            (kind, ns, ""),
            failed=f"Failed to list {kind}s in namespace: : {ns}",  # upstream's words, doubled colon too
        )
        return [build_model(j.to_dict(), SDK_JOB_MODELS[kind]) for j in jobs]

    def get_job_conditions(
        self,
        name: str | None = None,
        namespace: str | None = None,
        job_kind: str | None = None,
        job: Any = None,
        timeout: int = constants.DEFAULT_TIMEOUT,
    ) -> list[Any]:
        """The job's conditions (``job.status.conditions``), [] when it has none yet.

        Pass ``name`` to fetch the job, or an already fetched ``job`` object.

        Example:
            >>> [(c.type, c.status) for c in client.get_job_conditions("mnist")]
            [('Created', 'True'), ('Running', 'True')]
        """
        kind = self._kind(job_kind)
        if job is not None and not isinstance(job, SDK_JOB_MODELS[kind]):
            raise ValueError(f"Job must be one of these types: {constants.JOB_MODELS}")
        if job is None:
            if name is None:  # upstream's words
                raise ValueError("Job name must be set to configure Job from function or image")
            job = self.get_job(name, namespace, kind, timeout)
        return _conditions_of(job)

    is_job_created = _is_job(constants.JOB_CONDITION_CREATED, example=True)
    is_job_running = _is_job(constants.JOB_CONDITION_RUNNING, example=False)
    is_job_restarting = _is_job(constants.JOB_CONDITION_RESTARTING, example=False)
    is_job_succeeded = _is_job(constants.JOB_CONDITION_SUCCEEDED, example=True)
    is_job_failed = _is_job(constants.JOB_CONDITION_FAILED, example=False)

    def wait_for_job_conditions(
        self,
        name: str,
        namespace: str | None = None,
        job_kind: str | None = None,
        # A set, as upstream's default (code may compare or print it); never changed here.
        expected_conditions: set[str] | frozenset[str] = {constants.JOB_CONDITION_SUCCEEDED},  # noqa: B006
        wait_timeout: float = 600,
        polling_interval: float = 15,
        callback: Callable[[Any], Any] | None = None,
        timeout: int = constants.DEFAULT_TIMEOUT,
    ) -> Any:
        """Poll the job until one of ``expected_conditions`` is True; return the job.

        ``callback(job)`` is called after every poll. A Failed job raises JobFailedError (a
        RuntimeError whose message holds the conditions) unless Failed is expected; no expected
        condition within ``wait_timeout`` seconds raises WaitTimeoutError (a TimeoutError).

        Example:
            >>> job = client.wait_for_job_conditions("mnist", wait_timeout=300, polling_interval=2,
            ...                                      callback=lambda j: print(j.status.conditions[-1].type))
            >>> client.is_job_succeeded(job=job)
            True
        """
        expected = set(expected_conditions)
        if not expected <= constants.JOB_CONDITIONS:
            # Upstream's words, the whitespace of its line continuation included.
            raise ValueError(
                f"Expected conditions: {_shown(expected_conditions)} must be subset of "
                f"                    {constants.JOB_CONDITIONS}"
            )
        kind = self._kind(job_kind)
        ns = namespace or self.namespace

        def read() -> Any:
            job = self.get_job(name, ns, kind, timeout)
            conditions = _conditions_of(job)
            if conditions:
                status_logger(name, conditions[-1].type, conditions[-1].last_transition_time)
            return job

        def done(job: Any) -> bool:
            conditions = _conditions_of(job)
            true = {c.type for c in conditions if c.status == constants.CONDITION_STATUS_TRUE}
            if constants.JOB_CONDITION_FAILED in true and constants.JOB_CONDITION_FAILED not in expected:
                raise JobFailedError(
                    f"{kind} {ns}/{name} is Failed. {kind} conditions: {job.status.conditions}",
                    job=job,
                    conditions=conditions,
                )
            return bool(true & expected)

        # The one wait loop (backends/waiting.py); callback sees every job read, before the checks,
        # as upstream's loop calls it.
        try:
            return poll_until(
                read,
                done,
                timeout=float(wait_timeout),
                interval=float(polling_interval),
                on_poll=callback,
            )
        except PollTimeout as e:
            raise WaitTimeoutError(
                f"Timeout waiting for {kind}: {ns}/{name} to reach expected conditions: "
                f"                {_shown(expected_conditions)}",
                job=e.last,
            ) from None

    # ------------------------------------------------------------------------------------------------
    # pods and logs

    def get_job_pods(
        self,
        name: str,
        namespace: str | None = None,
        is_master: bool = False,
        replica_type: str | None = None,
        replica_index: int | None = None,
        timeout: int = constants.DEFAULT_TIMEOUT,
    ) -> list[Any]:
        """The job's pods, as ``kubernetes.client.V1Pod`` objects.

        (``pod.metadata.name``, ``pod.status.phase`` ...)

        ``is_master`` keeps the master-role pod; ``replica_type`` (any case: ``"Worker"`` or
        ``"worker"``) and ``replica_index`` narrow further. As upstream, the kind is not part of the
        filter: pods of a same-named job of another kind match too.

        Example:
            >>> [p.metadata.name for p in client.get_job_pods("mnist", replica_type="Worker")]
            ['mnist-worker-0', 'mnist-worker-1']
        """
        labels = self._pod_labels(name, is_master, replica_type, replica_index)
        ns = namespace or self.namespace

        def read() -> list[dict[str, Any]]:
            try:
                return self.backend.pods(name, ns, timeout=timeout)
            except NotFoundError:  # a job that is not there has no pods (upstream lists by label)
                return []

        pods = self._request(
            f"list pods for Job: {ns}/{name}",
            read,
            ("Pod", ns, ""),
        )
        pods = [p for p in pods if _has_labels(p, labels)]
        # The API server's order (by name), so both backends list alike.
        pods.sort(key=lambda p: str((p.get("metadata") or {}).get("name", "")))
        return [build_model(p, "V1Pod") for p in pods]

    def get_job_pod_names(
        self,
        name: str,
        namespace: str | None = None,
        is_master: bool = False,
        replica_type: str | None = None,
        replica_index: int | None = None,
        timeout: int = constants.DEFAULT_TIMEOUT,
    ) -> list[str]:
        """Names of the job's pods, selected as in ``get_job_pods``.

        Example:
            >>> client.get_job_pod_names("mnist")
            ['mnist-master-0', 'mnist-worker-0', 'mnist-worker-1']
        """
        pods = self.get_job_pods(name, namespace, is_master, replica_type, replica_index, timeout)
        return [str(p.metadata.name) for p in pods]

    def get_job_logs(
        self,
        name: str,
        namespace: str | None = None,
        job_kind: str | None = None,
        is_master: bool = True,
        replica_type: str | None = None,
        replica_index: int | None = None,
        follow: bool = False,
        timeout: int = constants.DEFAULT_TIMEOUT,
        verbose: bool = False,
    ) -> tuple[dict[str, str], dict[str, list[str]]]:
        """Logs of the job's pods: ``({pod: text}, {object: [event lines]})``.

        By default only the master-role pod. Choose others with ``is_master=False`` plus
        ``replica_type``/``replica_index``. Pending pods are skipped. ``follow=True`` streams every
        selected pod, printing ``[Pod <name>]: <line>``, and returns when all of them end.
        ``verbose=True`` also returns the Events of the job and its pods.

        Raises RuntimeError("Failed to read logs for pod <ns>/<pod>") when a log cannot be read (on
        Kubernetes the kubelet serves logs: a simulated node without one cannot).

        Example:
            >>> logs, _ = client.get_job_logs("mnist", follow=True)     # master, streamed to the end
            >>> logs, _ = client.get_job_logs(
            ...     "mnist", is_master=False, replica_type="worker", replica_index=1
            ... )
            >>> print(logs["mnist-worker-1"])
        """
        kind = self._kind(job_kind)
        ns = namespace or self.namespace
        pods = [
            p
            for p in self.get_job_pods(name, ns, is_master, replica_type, replica_index, timeout)
            if p.status is not None and p.status.phase != constants.POD_PHASE_PENDING
        ]
        container = constants.JOB_PARAMETERS[kind]["container"]
        names = [str(p.metadata.name) for p in pods]
        if not names:
            self._warn_no_log_pods(name, ns, is_master, replica_type, replica_index, timeout)
        logs: dict[str, str] = {}
        if follow:
            logs = self._follow_logs(ns, name, names, container, timeout)
        else:
            for pod in names:
                try:
                    lines = list(self.backend.logs(name, ns, replica=pod, container=container))
                except BackendError as e:
                    cause = build_cause(e)
                    raise build_log_error(ns, pod, e.detail, cause) from cause
                logs[pod] = "".join(f"{line.text}\n" for line in lines)
        return logs, self._job_events(kind, ns, name, pods, timeout) if verbose else {}

    def _warn_no_log_pods(
        self,
        name: str,
        namespace: str,
        is_master: bool,
        replica_type: str | None,
        replica_index: int | None,
        timeout: int,
    ) -> None:
        """Nothing matched: upstream returns empty dicts (kept, for a drop-in), which reads as "no
        output"; a warning names the replicas and containers the job has, so a typo shows."""
        wanted = ("the master" if is_master else "") + (f" {replica_type}" if replica_type else "")
        if replica_index is not None:
            wanted += f" index {replica_index}"
        pods = self.get_job_pods(name, namespace, timeout=timeout)
        listed = [
            f"{p.metadata.name} ({p.status.phase if p.status else 'Pending'}; containers: "
            + ", ".join(str(c.name) for c in (p.spec.containers if p.spec is not None else None) or [])
            + ")"
            for p in pods
        ]
        logger.warning(
            "get_job_logs(%r): no running or finished pod of %s matches%s; its pods: %s",
            name,
            namespace,
            f" ({wanted.strip()})" if wanted.strip() else "",
            "; ".join(listed) if listed else "none (not created yet, or removed when the job finished)",
        )

    def _follow_logs(
        self, namespace: str, job: str, pods: list[str], container: str, timeout: int
    ) -> dict[str, str]:
        """Stream every pod's log, printing ``[Pod <name>]: <line>`` as lines arrive, until every stream
        has ended (§7.3)."""
        lines_of: queue.Queue[tuple[str, str | _StreamEnd]] = queue.Queue(FOLLOW_QUEUE_SIZE)
        stop = threading.Event()  # set when the caller stops reading (an error): readers then give up

        def put(pod: str, item: str | _StreamEnd) -> bool:
            while not stop.is_set():
                try:
                    lines_of.put((pod, item), timeout=FOLLOW_POLL_S)
                    return True
                except queue.Full:
                    continue
            return False

        def read(pod: str) -> None:
            try:
                for line in self.backend.logs(job, namespace, replica=pod, container=container, follow=True):
                    if not put(pod, line.text):
                        return
            except BaseException as e:  # handed to the caller's thread
                put(pod, _StreamEnd(e))
            else:
                put(pod, _StreamEnd())

        for p in pods:
            threading.Thread(target=read, args=(p,), daemon=True, name=f"logs-{p}").start()
        lines: dict[str, list[str]] = {p: [] for p in pods}
        open_streams = set(pods)
        try:
            while open_streams:
                pod, item = lines_of.get()
                if not isinstance(item, _StreamEnd):
                    print(f"[Pod {pod}]: {item}", flush=True)
                    lines[pod].append(item)
                    continue
                open_streams.discard(pod)
                if item.error is not None:
                    detail = getattr(item.error, "detail", None) or str(item.error)
                    raise build_log_error(namespace, pod, detail) from item.error
        finally:
            stop.set()
        return {p: "".join(f"{line}\n" for line in ls) for p, ls in lines.items()}

    def _job_events(
        self, kind: str, namespace: str, name: str, pods: list[Any], timeout: int
    ) -> dict[str, list[str]]:
        # §9.12: upstream fetched the job with the client's default kind; we use the kind asked for.
        job = self.get_job(name, namespace, kind, timeout)
        created = {(kind, name): _parse_time(job.metadata.creation_timestamp)}
        for p in pods:
            created[("Pod", str(p.metadata.name))] = _parse_time(p.metadata.creation_timestamp)
        out: dict[str, list[str]] = {}
        events = self._request(
            f"list events in namespace: {namespace}",
            lambda: self.backend.events(namespace, timeout=timeout),
            ("Event", namespace, ""),
        )
        for ev in sorted(events, key=lambda ev: str(_event_time(ev) or "")):
            inv = ev.get("involvedObject") or {}
            key = (inv.get("kind"), inv.get("name"))
            if key not in created:
                continue
            when = _parse_time(_event_time(ev))
            since = created[key]
            if when is not None and since is not None and when < since:
                continue
            stamp = when.strftime("%Y-%m-%d %H:%M:%S") if when is not None else ""
            out.setdefault(f"{str(key[0]).lower()}/{key[1]}", []).append(
                f"{stamp} {ev.get('message', '')}".strip()
            )
        return out

    # ------------------------------------------------------------------------------------------------
    # write

    def update_job(
        self,
        job: Any,
        name: str,
        namespace: str | None = None,
        job_kind: str | None = None,
    ) -> None:
        """Patch the job with ``job`` (a JSON merge patch: a whole job object, or only the fields to change).

        Example:
            >>> job = client.get_job("mnist")
            >>> job.spec.run_policy.suspend = True
            >>> client.update_job(job, "mnist")
            >>> client.update_job({"spec": {"runPolicy": {"suspend": False}}}, "mnist")   # resume
        """
        patch = build_job_dict(job) if not isinstance(job, Mapping) else build_plain(job)
        own_kind = patch.get("kind")
        kind = self._kind(job_kind or own_kind)
        if own_kind is not None and own_kind != kind:
            raise ValueError(f"job is a {own_kind} but job_kind is {kind}")
        # Server-managed fields would only make the patch fail (stale resourceVersion) or be ignored.
        meta = patch.get("metadata")
        if isinstance(meta, dict):
            for key in ("resourceVersion", "managedFields", "creationTimestamp", "uid", "generation"):
                meta.pop(key, None)
        patch.pop("status", None)
        ns = namespace or self.namespace
        self._request(
            f"update {kind}: {ns}/{name}",
            lambda: self.backend.patch(name, ns, kind, patch),
            (kind, ns, name),
        )
        logger.debug("%s %s/%s has been updated", kind, ns, name)

    def delete_job(
        self,
        name: str,
        namespace: str | None = None,
        job_kind: str | None = None,
        delete_options: Any = None,
    ) -> None:
        """Delete the job (its pods go with it). ``delete_options``: a V1DeleteOptions or dict.

        Raises NotFoundError (a RuntimeError) when it does not exist.

        Example:
            >>> client.delete_job("mnist")
        """
        ns = namespace or self.namespace
        kind = job_kind or self.job_kind
        if kind not in constants.JOB_PARAMETERS:  # upstream: the lookup fails inside its try
            raise SDKError(f"Failed to delete {kind}: {ns}/{name}")
        opts = build_plain(delete_options) if delete_options is not None else {}
        grace = opts.get("gracePeriodSeconds")
        # Without options, the API server's default (Background): the call returns once the job is
        # gone (locally: once its processes stopped), its pods follow.
        propagation = opts.get("propagationPolicy") or "Background"
        self._request(
            f"delete {kind}: {ns}/{name}",
            lambda: self.backend.delete(
                name,
                ns,
                kind=kind,
                wait=True,
                grace=None if grace is None else float(grace),
                propagation=propagation,
            ),
            (kind, ns, name),
        )
        logger.debug("%s %s/%s has been deleted", kind, ns, name)

    def train(
        self,
        name: str,
        namespace: str | None = None,
        labels: Mapping[str, str] | None = None,
        annotations: Mapping[str, str] | None = None,
        num_workers: int = 1,
        num_procs_per_worker: int = 1,
        resources_per_worker: Any = None,
        model_provider_parameters: Any = None,
        dataset_provider_parameters: Any = None,
        trainer_parameters: Any = None,
        init_env_vars: Any = None,
        env_vars: Any = None,
        storage_config: dict[str, Any] = {  # noqa: B006 (upstream's default, never mutated here)
            "size": constants.PVC_DEFAULT_SIZE,
            "storage_class": None,
            "access_modes": constants.PVC_DEFAULT_ACCESS_MODES,
        },
        queue_name: str | None = None,
    ) -> None:
        """Fine-tune a Hugging Face model with LoRA (upstream's alpha API, same signature and objects).

        Creates a PersistentVolumeClaim named like the job and a PyTorchJob whose Master first runs the
        storage initializer (model and dataset into the claim), then ``num_workers`` replicas of
        ``num_procs_per_worker`` trainer processes each, exactly as kubeflow-training 1.9.4 does (images
        from ``STORAGE_INITIALIZER_IMAGE``/``TRAINER_TRANSFORMER_IMAGE``). On the local backend the same
        job runs trainop's own initializer and trainer (trainop.programs) and the claim is a directory
        of the job; docs/finetune.md lists the differences. Parameters are upstream's
        ``kubeflow.storage_initializer`` objects, or trainop.sdk's classes of the same names.

        Example:
            >>> client.train(name="llm", model_provider_parameters=HuggingFaceModelParams(
            ...     model_uri="hf://org/tiny", transformer_type=transformers.AutoModelForCausalLM),
            ...     dataset_provider_parameters=HuggingFaceDatasetParams(repo_id="./data"),
            ...     trainer_parameters=HuggingFaceTrainerParams(TrainingArguments("out"), LoraConfig()))
        """
        try:
            import peft  # noqa: F401
            import transformers  # noqa: F401
        except ImportError:
            raise ImportError(  # upstream's words
                "Train API dependencies not installed. Run: pip install -U 'kubeflow-training[huggingface]' "
            ) from None
        if not all((name, model_provider_parameters, dataset_provider_parameters, trainer_parameters)):
            raise ValueError("One of the required parameters is None")
        ns = namespace or self.namespace
        # Built (and the provider types checked) before the claim exists: upstream creates the PVC
        # first and leaves it behind when a parameter is then refused.
        job = finetune.build_train_job(
            name=name,
            namespace=ns,
            labels=labels,
            annotations=annotations,
            num_workers=num_workers,
            num_procs_per_worker=num_procs_per_worker,
            resources_per_worker=resources_per_worker,
            model_provider_parameters=model_provider_parameters,
            dataset_provider_parameters=dataset_provider_parameters,
            trainer_parameters=trainer_parameters,
            init_env_vars=init_env_vars,
            env_vars=env_vars,
        )
        try:
            claim = self.backend.create_volume_claim(finetune.build_pvc(name, ns, storage_config))
        except BackendError as e:  # upstream's words (it reuses a claim of that name that exists)
            raise RuntimeError(f"failed to create PVC. Error: {e}") from e
        logger.info("train %s/%s: its storage is %s", ns, name, claim)
        self.create_job(job=job, namespace=ns, queue_name=queue_name)

    # ------------------------------------------------------------------------------------------------
    # helpers

    def _kind(self, job_kind: str | None) -> str:
        """``job_kind`` or the client's, else upstream's ValueError (its methods print dict_keys)."""
        kind = job_kind or self.job_kind
        if kind not in constants.JOB_PARAMETERS:
            raise ValueError(f"Job kind must be one of these: {constants.JOB_PARAMETERS.keys()}")
        return kind

    @staticmethod
    def _request(
        what: str, fn: Callable[[], T], target: tuple[str, str, str], failed: str | None = None
    ) -> T:
        """Run a ``JobClient`` call: the SDK's edge. Its errors say ``Failed to <what>`` (or ``failed``)
        / ``Timeout to <what>`` as upstream's did, keep their class and fields, and are chained to the
        ``ApiException`` upstream chained (``__cause__``). ``target``: (kind, namespace, name) asked
        for, for errors that do not say."""
        kind, namespace, name = target
        failed = failed or f"Failed to {what}"
        try:
            return fn()
        except WaitTimeoutError:
            raise WaitTimeoutError(f"Timeout to {what}") from None
        except BackendError as e:
            e.kind, e.namespace, e.name = e.kind or kind, e.namespace or namespace, e.name or name
            err = build_sdk_error(e, failed)
            raise err from err.cause
        except api_errors.InvalidJobError as e:  # found before any request (a manifest's own errors)
            invalid = build_invalid_job_error(e, kind=kind, namespace=namespace, name=name)
            raise invalid.with_message(f"{failed}. Error: {invalid.cause}") from invalid.cause
        except OSError as e:  # this machine's state directory
            err = build_sdk_error(BackendError(str(e), kind=kind, namespace=namespace, name=name), failed)
            raise err from err.cause

    @staticmethod
    def _pod_labels(
        name: str, is_master: bool, replica_type: str | None, replica_index: int | None
    ) -> dict[str, str]:
        labels = {constants.JOB_NAME_LABEL: name}
        if is_master:
            labels[constants.JOB_ROLE_LABEL] = constants.JOB_ROLE_MASTER
        if replica_type is not None:
            rt = str(replica_type).lower()
            # §9.12: upstream compared case-sensitively against lower-case values (so "Worker" failed)
            # and, for JAX, tested a substring; we accept any case of any kind's replica type.
            if rt not in constants.REPLICA_TYPES:
                raise ValueError(
                    f"replica_type {replica_type!r} is not a replica type of any kind; use one of "
                    f"{sorted(constants.REPLICA_TYPES)} (any case)"
                )
            labels[constants.REPLICA_TYPE_LABEL] = rt
        if replica_index is not None:
            labels[constants.REPLICA_INDEX_LABEL] = str(replica_index)
        return labels


# ----------------------------------------------------------------------------------------------------
# pure helpers


def _kubernetes_client(
    config_file: str | None, context: str | None, client_configuration: Any
) -> KubernetesBackend:
    """The one Kubernetes job client, configured as upstream's constructor chose a cluster (§7.3)."""
    from lightkube.core.exceptions import ConfigError

    from trainop.backends.kubernetes.client import load_config
    from trainop.backends.kubernetes.jobs import KubernetesBackend as Client

    try:
        config = load_config(config_file, context, client_configuration)
    except (ConfigError, OSError, KeyError) as e:
        raise SDKError(
            f"Failed to load the Kubernetes configuration: {e}. Pass config_file=... (or set $KUBECONFIG), "
            'or use TrainingClient(backend="local") to run jobs on this machine'
        ) from None
    try:
        return Client(
            config=config,
            timeout=float(constants.DEFAULT_TIMEOUT),
            field_manager=FIELD_MANAGER,
            component="trainop-sdk",
        )
    except ClusterError as e:
        raise SDKError(f"Failed to load the Kubernetes configuration: {e.detail}") from None


def _has_labels(obj: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """Whether the object's labels include every pair of ``labels`` (a label selector's equality)."""
    have = (obj.get("metadata") or {}).get("labels") or {}
    return all(have.get(k) == v for k, v in labels.items())


def _checked_kind(kind: Any) -> str:
    """``kind`` when it is one of the six kinds, else upstream's ValueError (§7.3)."""
    if kind not in constants.JOB_PARAMETERS:
        raise ValueError(f"Job kind must be one of these: {list(constants.JOB_PARAMETERS)}")
    return str(kind)


# ``fail_fast``: the first replica failure fails the job (docs/failure-policy.md's rule shape).
FAIL_FAST_POLICY = '[{"name": "fail-fast", "action": "FailJob"}]'


def build_never_restart(obj: dict[str, Any]) -> None:
    """Every replica of a job built from a function: restartPolicy Never (no in-place restart)."""
    for key, specs in (obj.get("spec") or {}).items():
        if key.endswith("ReplicaSpecs") and isinstance(specs, dict):
            for spec in specs.values():
                if isinstance(spec, dict):
                    spec["restartPolicy"] = "Never"


def build_create_request(
    *,
    job: Any,
    name: str | None,
    namespace: str | None,
    default_namespace: str,
    labels: Mapping[str, str] | None,
    annotations: Mapping[str, str] | None,
    job_kind: str | None,
    default_kind: str,
    base_image: str | None,
    train_func: Callable[..., Any] | None,
    parameters: Mapping[str, Any] | None,
    num_workers: int,
    num_procs_per_worker: int | str | None,
    resources_per_worker: Any,
    num_chief_replicas: int | None,
    num_ps_replicas: int | None,
    packages_to_install: Sequence[str] | None,
    pip_index_url: str,
    env_vars: Any,
    queue_name: str | None,
    volumes: Sequence[Any] | None,
    volume_mounts: Sequence[Any] | None,
) -> tuple[dict[str, Any], bool]:
    """``create_job``'s arguments → (the job as Kubernetes JSON, whether it needs an isolated Python env).

    Applies §7.3's argument rules and ValueError messages, then parses the result so a malformed job
    fails here with field paths (InvalidJobError) before anything reaches a backend.
    """
    if job is not None:
        _refuse_with_job(
            name=name,
            job_kind=job_kind,
            base_image=base_image,
            train_func=train_func,
            parameters=parameters,
            num_procs_per_worker=num_procs_per_worker,
            resources_per_worker=resources_per_worker,
            num_chief_replicas=num_chief_replicas,
            num_ps_replicas=num_ps_replicas,
            packages_to_install=packages_to_install,
            env_vars=env_vars,
            volumes=volumes,
            volume_mounts=volume_mounts,
        )
        obj, isolated_env = _given_job(job, namespace or None, default_namespace, labels, annotations), False
    elif train_func is not None or base_image is not None:
        kind = _checked_kind(job_kind or default_kind)
        _check_function_args(kind, name, num_workers, len(volumes or []), len(volume_mounts or []))
        script = None
        if train_func is not None:
            script = build_func_script(
                source=function_source(train_func),
                func_name=train_func.__name__,
                entrypoint=build_entrypoint(kind, num_workers, num_procs_per_worker),
                parameters=parameters,
                packages_to_install=packages_to_install,
                pip_index_url=pip_index_url,
            )
        template = build_pod_template(
            kind,
            base_image or constants.JOB_PARAMETERS[kind]["base_image"],
            script,
            resources=resources_per_worker,
            env_vars=env_vars,
            volumes=volumes,
            volume_mounts=volume_mounts,
        )
        obj = build_func_job(
            kind=kind,
            name=str(name),
            namespace=namespace or default_namespace,
            template=template,
            num_workers=num_workers,
            num_procs_per_worker=num_procs_per_worker,
            num_chief_replicas=num_chief_replicas,
            num_ps_replicas=num_ps_replicas,
            labels=labels,
            annotations=annotations,
        )
        isolated_env = bool(packages_to_install) and train_func is not None
    else:
        raise ValueError(
            f"Job must be one of these types: {constants.JOB_MODELS}; or set `name` and `train_func` "
            "(or `base_image`) to build one"
        )
    if queue_name and queue_name.strip():
        _merge(obj["metadata"], "labels", {constants.LOCAL_QUEUE_LABEL: queue_name})
    parse_job(obj)
    return obj, isolated_env


def _refuse_with_job(**given: Any) -> None:
    """§7.3: with ``job`` only ``namespace``, ``labels`` and ``annotations`` may be set."""
    for key, value in given.items():
        if value is not None:
            raise ValueError(
                "If `job` is set only `namespace`, `labels`, and `annotations` arguments are allowed. "
                f"Argument `{key}` must be None."
            )


def _given_job(
    job: Any,
    namespace: str | None,
    default_namespace: str,
    labels: Mapping[str, str] | None,
    annotations: Mapping[str, str] | None,
) -> dict[str, Any]:
    """The user's job as JSON, in ``namespace`` (else its own, else the client's), with ``labels`` and
    ``annotations`` added."""
    obj = build_job_dict(job)
    kind = _checked_kind(obj.get("kind"))
    meta = obj.setdefault("metadata", {})
    if not isinstance(meta, dict):
        raise api_errors.InvalidJobError([FieldError("metadata", "must be a mapping")], kind=kind)
    meta["namespace"] = namespace or meta.get("namespace") or default_namespace
    _merge(meta, "labels", labels)
    _merge(meta, "annotations", annotations)
    return obj


def _check_function_args(
    kind: str, name: str | None, num_workers: int | None, volumes: int, mounts: int
) -> None:
    """§7.3's rules for a job built from a function or an image, in upstream's words."""
    if not name:
        raise ValueError("Job name must be set to configure Job from function or image")
    if num_workers is None or num_workers < 1:
        raise ValueError(f"At least one Worker for {kind} must be set")
    if volumes != mounts:
        raise ValueError(f"Volumes and VolumeMounts must be the same length: {volumes} vs. {mounts}")


def build_job_dict(job: Any) -> dict[str, Any]:
    """Whatever the user passed as a job → one Kubernetes JSON dict (a copy; the input is not changed).

    Accepts our models, dicts, YAML/JSON text holding exactly one job, and ``kubernetes.client``-style
    model objects. Anything else raises ValueError naming the accepted types.
    """
    if isinstance(job, str):
        docs = load_documents(job)
        if len(docs) != 1:
            raise ValueError(f"`job` as YAML text must hold exactly one job, found {len(docs)} documents")
        job = docs[0]
    try:
        obj = build_plain(job)
    except TypeError:
        obj = None
    if not isinstance(obj, dict):
        raise ValueError(
            f"Job must be one of these types: {constants.JOB_MODELS}, a dict, YAML text or a "
            f"kubernetes.client model object; got {type(job).__name__}"
        )
    obj.setdefault("apiVersion", constants.API_VERSION)
    return obj


def function_source(func: Callable[..., Any]) -> str:
    """The dedented source of ``func`` (it must be a named function whose source file is readable)."""
    if not callable(func):
        raise ValueError(f"Training function must be callable, got function type: {type(func)}")
    try:
        source = inspect.getsource(func)
    except (OSError, TypeError) as e:
        raise ValueError(
            f"train_func: cannot read the source of {getattr(func, '__name__', func)!r} ({e}); define "
            "it with `def` in a file or notebook cell"
        ) from None
    name = getattr(func, "__name__", "")
    if not name.isidentifier():
        raise ValueError(f"train_func must be a function defined with `def`, got {name!r}")
    return textwrap.dedent(source)


def _merge(meta: dict[str, Any], key: str, values: Mapping[str, str] | None) -> None:
    if values:
        current = meta.get(key) or {}
        meta[key] = {**current, **{str(k): str(v) for k, v in values.items()}}


def _shown(conditions: Any) -> Any:
    """``expected_conditions`` as upstream prints it: its default is a set (ours a frozenset, immutable)."""
    return set(conditions) if isinstance(conditions, frozenset) else conditions


def _conditions_of(job: Any) -> list[Any]:
    """``job.status.conditions`` of a job model, [] when it has none yet."""
    return list(job.status.conditions or []) if job.status is not None else []


def _parse_time(value: Any) -> datetime | None:
    if isinstance(value, datetime):
        return value
    if isinstance(value, str) and value:
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
    return None


def _event_time(ev: Mapping[str, Any]) -> Any:
    """When an Event happened: eventTime (events.k8s.io writers), else firstTimestamp, else creation."""
    return (
        ev.get("eventTime") or ev.get("firstTimestamp") or (ev.get("metadata") or {}).get("creationTimestamp")
    )
