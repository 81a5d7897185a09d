"""What every backend offers the front doors: ``JobClient``, the one job-operations Protocol, and
the one error family its operations raise.

Backend-neutral: no I/O here, and nothing backend-specific. ``backends.local.api.LocalBackend`` and
``backends.kubernetes.jobs.KubernetesBackend`` implement ``JobClient``; the CLI prints over it, the
SDK translates it to kubeflow-training's types (and builds upstream's exceptions at its edge).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, cast

from trainop.api import errors as api_errors
from trainop.api.common import TrainingJob
from trainop.api.errors import FieldError
from trainop.core.status import detect_finished

if TYPE_CHECKING:
    from trainop.backends.waiting import Clock


@dataclass(frozen=True, slots=True)
class ApiAnswer:
    """What the API server answered to a refused request (status code, body, headers), kept on the
    error so the SDK's edge can build the ``ApiException`` upstream chained; None on this machine."""

    code: int
    body: str = ""
    headers: tuple[tuple[str, str], ...] = ()


class BackendError(RuntimeError):
    """Base of the one error family every job operation raises, whatever the backend. A RuntimeError,
    as kubeflow-training's were (§7.3); the SDK rewords the message at its edge and chains the
    ``ApiException`` it builds from ``answer`` (``cause``), the CLI prints it and picks an exit code.

    ``code`` is the API server's status for the failure (404, 409, 422; 500 for the rest);
    ``detail`` the backend's own words; ``kind``/``namespace``/``name`` the object, when one
    (``kind`` is "" when the request named none)."""

    code = 500

    def __init__(
        self,
        message: str = "",
        *,
        kind: str | None = None,
        namespace: str = "",
        name: str = "",
        detail: str = "",
        answer: ApiAnswer | None = None,
    ) -> None:
        message = message or self.default_message(kind or "job", namespace, name)
        super().__init__(message)
        self.kind, self.namespace, self.name = kind or "", namespace, name
        self.detail = detail or message
        self.answer = answer
        self.cause: BaseException | None = None  # the SDK's ApiException, set at its edge

    def default_message(self, kind: str, namespace: str, name: str) -> str:
        return f'{kind} "{name}" in namespace "{namespace}": request failed'

    def with_message(self, message: str) -> BackendError:
        """The same error (class and fields) saying ``message``."""
        new = type(self).__new__(type(self))
        new.__dict__.update(self.__dict__)
        new.args = (message,)
        return new


class NotFoundError(BackendError):
    """The job (or a replica, a pod) does not exist."""

    code = 404

    def default_message(self, kind: str, namespace: str, name: str) -> str:
        return f'{kind} "{name}" not found in namespace "{namespace}"'


class AlreadyExistsError(BackendError):
    """A job of that name already exists in the namespace."""

    code = 409

    def default_message(self, kind: str, namespace: str, name: str) -> str:
        return (
            f'{kind} "{name}" already exists in namespace "{namespace}"; '
            f"delete it first (trainop delete {name}) or choose another metadata.name"
        )


class JobRejectedError(BackendError, api_errors.InvalidJobError):
    """The job was refused as invalid (the API server's schema, an admission webhook); ``errors``
    holds the ``FieldError(path, message)`` items. Also ``trainop.api``'s InvalidJobError (a
    ValueError), as the same mistake found before any request is; the SDK exports it by upstream's
    name, ``InvalidJobError``."""

    code = 422

    def __init__(
        self,
        message: str = "",
        *,
        errors: list[FieldError],
        kind: str | None = None,
        namespace: str = "",
        name: str = "",
        answer: ApiAnswer | None = None,
    ) -> None:
        fields = "; ".join(str(e) for e in errors)
        message = message or f'{kind or "job"} "{name}" is invalid: {fields}'
        BackendError.__init__(
            self, message, kind=kind, namespace=namespace, name=name, detail=message, answer=answer
        )
        self.errors = list(errors)


class ClusterError(BackendError):
    """The cluster cannot be used as asked: no kubeconfig, unreachable, refused, no CRDs. One line
    saying what to change."""


class NotSupportedError(BackendError):
    """An option this backend does not offer (the message says what to use instead)."""

    code = 400


class LogsUnavailableError(BackendError):
    """The cluster serves no logs for a pod (kwok's pods, a node whose kubelet cannot be reached)."""


class ReplicaNotFoundError(NotFoundError):
    """``logs --replica``/``--container`` named something the job does not have."""

    def __init__(self, what: str, wanted: str, job: str, known: Sequence[str]) -> None:
        listed = ", ".join(known) if known else "none"
        super().__init__(f'{what} "{wanted}" not found in job "{job}"; its {what}s: {listed}', name=job)
        self.what, self.wanted, self.known = what, wanted, tuple(known)


class JobFailedError(BackendError):
    """A wait saw Failed without expecting it; ``job`` is the job, ``conditions`` its conditions."""

    def __init__(self, message: str, *, job: Any = None, conditions: list[Any] | None = None) -> None:
        super().__init__(message)
        self.job = job
        self.conditions = list(conditions or [])


class WaitTimeoutError(TimeoutError):
    """A wait (or a request) ran out of time. A TimeoutError, not a RuntimeError, as upstream's was;
    ``job`` is the job as last seen, when there is one."""

    def __init__(self, message: str, *, job: Any = None, state: str = "") -> None:
        super().__init__(message)
        self.job = job
        self.state = state


def build_wait_timeout(
    name: str, wanted: Sequence[str], timeout: float, last: TrainingJob
) -> WaitTimeoutError:
    """The error of a wait for ``wanted`` that ran out, naming the state the job was last seen in."""
    state = detect_state(last)
    return WaitTimeoutError(
        f'timed out after {timeout:g}s waiting for "{name}" to be {" or ".join(wanted)} (it is {state})',
        job=last,
        state=state,
    )


@dataclass(frozen=True, slots=True)
class LogLine:
    """One line of a replica's output; ``replica`` is the pod name without the job prefix (``worker-1``)."""

    replica: str
    container: str
    attempt: int
    text: str


def detect_state(job: TrainingJob) -> str:
    """The job's state as kubectl prints it: the type of the newest True condition (printer column §1.1)."""
    conditions = (job.status.conditions if job.status else None) or []
    for cond in reversed(conditions):
        if cond.status == "True":
            return cond.type
    return "Pending"


def is_finished(job: TrainingJob) -> bool:
    """True once Succeeded or Failed is True (both terminal, §4.1)."""
    return detect_finished(job.status)


def replica_label(job_name: str, pod_name: str) -> str:
    """``<job>-worker-1`` → ``worker-1`` (the prefix ``trainop logs --replica`` and log lines use)."""
    return pod_name.removeprefix(f"{job_name}-")


def check_replica(job_name: str, replica: str | None, pods: Sequence[str]) -> None:
    """ReplicaNotFoundError, listing the pods there are, when ``replica`` (a pod's name, with or
    without the job's) names none of ``pods``."""
    if replica is not None and replica not in pods and f"{job_name}-{replica}" not in pods:
        raise ReplicaNotFoundError("replica", replica, job_name, [replica_label(job_name, p) for p in pods])


def list_images(job: TrainingJob) -> list[str]:
    """The images of every container of the job's replicas, sorted (``describe``)."""
    return sorted(
        {
            str(c.get("image"))
            for rs in job.replica_specs.values()
            for key in ("initContainers", "containers")
            for c in rs.pod_spec.get(key) or []
            if isinstance(c, dict) and c.get("image")
        }
    )


class ContainerRun(Protocol):
    """One run (attempt) of one container of a replica: a local process, or what a pod's container
    status says on a cluster. ``started_at`` and ``finished_at`` are epoch seconds; ``finished_at``
    is None while it runs, ``started_at`` None where the cluster does not say."""

    @property
    def pod(self) -> str: ...
    @property
    def container(self) -> str: ...
    @property
    def attempt(self) -> int: ...
    @property
    def exit_code(self) -> int | None: ...
    @property
    def started_at(self) -> float | None: ...
    @property
    def finished_at(self) -> float | None: ...


class JobFeed(Protocol):
    """What ``trainop run`` watches one job through, whatever runs it: new output, the pods as they are
    now, the container runs (for the failure summary) and the last lines of a replica. Reads only."""

    def poll_lines(self) -> Iterator[LogLine]:
        """Complete lines written since the last call."""
        ...

    def partial_lines(self) -> list[LogLine]:
        """Each container's unfinished last line (a progress bar between two ``\\r``), if any."""
        ...

    def notes(self) -> list[str]:
        """Things to tell the user once (e.g. that the cluster serves no logs for a pod)."""
        ...

    def pods(self) -> list[dict[str, Any]]: ...

    def runs(self) -> list[ContainerRun]:
        """Every run of every main container (init containers left out), oldest first."""
        ...

    def tails(
        self, labels: set[str], defaults: set[str], *, finished_only: bool, final: bool = False
    ) -> dict[str, list[str] | None]:
        """The last lines of each replica in ``labels`` (its latest run, or its latest finished run with
        ``finished_only``; a default container first); None for a replica whose output cannot be read
        (a cluster serving no logs for its pod). ``final``: for the job's ending, when a moment may be
        spent to learn whether the output can be read."""
        ...

    def running_replicas(self) -> list[str]:
        """Replicas (``worker-1``) with a container still running."""
        ...

    def close(self) -> None: ...


@dataclass(frozen=True, slots=True)
class JobEvent:
    """One event about a job, as ``describe`` lists it: a cluster's core/v1 Event, or a row of the
    local store's events; times in epoch seconds."""

    type: str
    reason: str
    message: str
    count: int
    first_ts: float
    last_ts: float


@dataclass(slots=True)
class JobDetails:
    """Everything ``describe`` shows: the job, its pods and other objects (Services), its events; on
    this machine also its processes, ports, working dir and supervisor; on a cluster, which one."""

    job: TrainingJob
    base_dir: str
    pods: list[dict[str, Any]]
    objects: list[dict[str, Any]]
    events: Sequence[JobEvent]
    processes: list[Any]  # the local store's ProcessRows (none on a cluster)
    ports: dict[tuple[str, int], int]
    supervisor: Any  # the local backend's SupervisorInfo; None on a cluster (its operator supervises)
    deleting: bool = False
    images: list[str] = field(default_factory=list)
    cluster: str = ""  # where the job is, when a cluster's (backends/kubernetes/jobs.py)


class PollingWait:
    """``JobClient.wait`` as both backends do it: ``get`` every ``wait_poll`` seconds on ``clock``."""

    wait_poll: float
    clock: Clock

    def wait(
        self,
        name: str,
        conditions: Sequence[str] = ("Succeeded", "Failed"),
        namespace: str = "default",
        timeout: float | None = None,
    ) -> TrainingJob:
        from trainop.backends.waiting import wait_for_job  # (it imports this module)

        get = cast("JobClient", self).get
        return wait_for_job(
            lambda: get(name, namespace), name, conditions, timeout, interval=self.wait_poll, clock=self.clock
        )


class JobClient(Protocol):
    """The one way every front door (the CLI, the SDK, the web view) reaches jobs, implemented once
    per backend: ``backends.local.api.LocalBackend`` (this machine) and
    ``backends.kubernetes.jobs.KubernetesBackend`` (a cluster through a kubeconfig). Jobs come back
    as models, pods and events as Kubernetes JSON; failures are this module's errors. ``timeout``
    (seconds) bounds one request where a cluster answers it; None is the client's default."""

    name: str  # "local" or "kubernetes", for messages
    # True where a job's replicas are this machine's processes, under a supervisor this machine runs
    # (their container runs are recorded here; a stop that outlasts their grace period is finished by
    # killing them); False where an operator runs them as pods and stops them itself.
    replicas_here: bool

    def where(self) -> str:
        """Where jobs run, for messages (``this machine (state in …)``, ``the cluster at …``)."""
        ...

    def close(self) -> None: ...

    # --- creating ---------------------------------------------------------------------------------
    def prepare(self, manifest: Mapping[str, Any]) -> TrainingJob:
        """Parse, default and validate as a submit would, without creating anything."""
        ...

    def submit(
        self,
        manifest: Mapping[str, Any],
        *,
        base_dir: Any = None,
        namespace: str | None = None,
        attached_client: Any = None,
    ) -> TrainingJob:
        """Create the job (``generateName`` filled in). ``base_dir`` and ``attached_client`` are this
        machine's notions (relative paths, ``trainop run``'s terminal); a cluster ignores them."""
        ...

    def submit_isolated(
        self, manifest: Mapping[str, Any], *, packages: Sequence[str], index_url: str
    ) -> TrainingJob:
        """Create a job whose replicas ``pip install`` ``packages``: they must not land in the
        caller's environment (this machine gives the job a virtual environment of its own; a pod's
        environment already is its own)."""
        ...

    # --- reading ----------------------------------------------------------------------------------
    def get(
        self, name: str, namespace: str = "default", kind: str | None = None, *, timeout: float | None = None
    ) -> TrainingJob: ...

    def list_jobs(
        self, namespace: str | None = None, kind: str | None = None, *, timeout: float | None = None
    ) -> list[TrainingJob]:
        """Jobs of ``namespace`` (None: all) and ``kind`` (None: all), by namespace and name."""
        ...

    def known_names(self, namespace: str) -> list[str]: ...

    def describe(self, name: str, namespace: str = "default") -> JobDetails: ...

    def pods(
        self, name: str, namespace: str = "default", *, timeout: float | None = None
    ) -> list[dict[str, Any]]:
        """The job's pods (Kubernetes JSON), by name."""
        ...

    def replica_pods(self, namespace: str | None) -> list[tuple[TrainingJob, dict[str, Any], int | None]]:
        """Every pod of every job of ``namespace`` with its job and host port (None on a cluster)."""
        ...

    def runs(self, name: str, namespace: str = "default") -> list[ContainerRun]: ...

    def events(self, namespace: str, *, timeout: float | None = None) -> list[dict[str, Any]]:
        """core/v1 Event dicts of the namespace's jobs and pods (involvedObject, reason, timestamps)."""
        ...

    def feed(self, job: TrainingJob) -> JobFeed: ...

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
        """The job's output; ``replica`` is ``worker-1`` or the pod's name. ``follow``: until the job
        has finished and its replicas' processes ended, or ``stop()`` says so where the backend polls
        (a web page that closed); ``partials`` gets each container's unfinished last line after each
        poll where the backend keeps one (this machine: a bar drawn in place)."""
        ...

    def reader(self) -> AbstractContextManager[JobClient]:
        """A client to read from on another thread for as long as the context lasts (a followed log):
        this machine's store connection belongs to the thread that opened it, so it opens another;
        a cluster's client is shared."""
        ...

    def change_token(self) -> object | None:
        """Something that differs whenever a job may have changed, or None where there is no cheap way
        to know (a cluster: every read goes to the API server)."""
        ...

    def progress(self, job: TrainingJob) -> list[tuple[str, float, dict[str, Any]]]:
        """What the job's replicas posted as Trainer v2 progress (KEP-2779), oldest first: (replica,
        time, trainerStatus). This machine keeps every post; a cluster the latest (core/progress.py)."""
        ...

    def wait(
        self,
        name: str,
        conditions: Sequence[str],
        namespace: str = "default",
        timeout: float | None = None,
    ) -> TrainingJob:
        """Until one of ``conditions`` is True (or the job finished); WaitTimeoutError."""
        ...

    def create_volume_claim(self, claim: Mapping[str, Any]) -> str:
        """Create the PersistentVolumeClaim ``claim`` (train()'s storage); one of that name already
        there is reused, as upstream's train() does. Returns what the claim is here, for messages."""
        ...

    def check_local_queue(self, namespace: str, queue_name: str) -> None:
        """Best effort: warn when a Kueue LocalQueue cannot be read (§7.3); never fails on 403/404."""
        ...

    # --- changing ---------------------------------------------------------------------------------
    def patch(self, name: str, namespace: str, kind: str, patch: Mapping[str, Any]) -> TrainingJob:
        """Apply a JSON merge patch (RFC 7386) to the job, validated like an update."""
        ...

    def set_suspend(
        self, name: str, suspend: bool, namespace: str = "default", *, interrupted: bool = False
    ) -> TrainingJob: ...

    def kill_replicas(self, name: str, namespace: str = "default") -> None: ...

    def may(self, verb: str, kind: str, namespace: str) -> bool:
        """Whether the caller may ``verb`` (``patch``, ``delete``) jobs of ``kind`` in ``namespace``:
        a cluster asks its authorizer (a SelfSubjectAccessReview, as ``kubectl auth can-i``); this
        machine lets its user do everything. Advice for what to offer, never a gate: the cluster
        still decides each request."""
        ...

    # --- Kubeflow Trainer v2 TrainJobs (Kubernetes JSON, trainer.kubeflow.org/v1alpha1) ------------
    def list_trainjobs(self, namespace: str | None = None) -> list[dict[str, Any]]:
        """TrainJobs of ``namespace`` (None: all), by namespace and name."""
        ...

    def get_trainjob(self, name: str, namespace: str = "default") -> dict[str, Any]:
        """The TrainJob with its status; NotFoundError (``kind`` TrainJob)."""
        ...

    def trainjob_pods(self, name: str, namespace: str = "default") -> list[dict[str, Any]]:
        """The TrainJob's pods (Kubernetes JSON, ``status.phase``), steps in order."""
        ...

    def trainjob_logs(
        self, name: str, namespace: str = "default", *, replica: str | None = None, follow: bool = False
    ) -> Iterator[LogLine]:
        """Its pods' output (``replica``: one pod, ``node-0-1`` or its full name); ``follow``: until
        the TrainJob has finished."""
        ...

    def delete_trainjob(self, name: str, namespace: str = "default", *, grace: float | None = None) -> None:
        """Stop its pods (SIGTERM, SIGKILL after ``grace`` seconds) and remove it."""
        ...

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
        """Delete the job and its pods (``grace``: their grace period). ``wait``: until it is gone.
        ``propagation`` (Foreground, Background, Orphan) is a cluster's; None: wait's choice."""
        ...
