"""What every backend offers the SDK and the CLI: typed errors and the small job-operations Protocol.

Backend-neutral: no I/O here, and nothing backend-specific. The local backend implements
``JobBackend`` today; the SDK (``TrainingClient``) depends only on this module's names.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from trainop.api.common import TrainingJob
from trainop.core.status import detect_finished


class BackendError(Exception):
    """Base of every error a backend raises for a request it cannot carry out."""


class JobNotFoundError(BackendError):
    def __init__(self, name: str, namespace: str, kind: str | None = None) -> None:
        what = kind or "job"
        super().__init__(f'{what} "{name}" not found in namespace "{namespace}"')
        self.name, self.namespace, self.kind = name, namespace, kind


class JobAlreadyExistsError(BackendError):
    def __init__(self, name: str, namespace: str, kind: str) -> None:
        super().__init__(
            f'{kind} "{name}" already exists in namespace "{namespace}"; '
            f"delete it first (trainop delete {name}) or choose another metadata.name"
        )
        self.name, self.namespace, self.kind = name, namespace, kind


class WaitTimeoutError(BackendError):
    def __init__(self, name: str, wanted: Sequence[str], timeout: float, last_state: str) -> None:
        super().__init__(
            f'timed out after {timeout:g}s waiting for "{name}" to be {" or ".join(wanted)} (it is '
            f"{last_state})"
        )
        self.name, self.wanted, self.timeout, self.last_state = name, tuple(wanted), timeout, last_state


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


@runtime_checkable
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


class EventRecord(Protocol):
    """One event about a job, as ``describe`` lists it (the local store's row, or a cluster's Event);
    times in epoch seconds."""

    @property
    def type(self) -> str: ...
    @property
    def reason(self) -> str: ...
    @property
    def message(self) -> str: ...
    @property
    def count(self) -> int: ...
    @property
    def first_ts(self) -> float: ...
    @property
    def last_ts(self) -> float: ...


@dataclass(frozen=True, slots=True)
class JobEvent:
    """An ``EventRecord`` read from a cluster's core/v1 Event."""

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
    events: Sequence[EventRecord]
    processes: list[Any]  # the local store's ProcessRows (none on a cluster)
    ports: dict[tuple[str, int], int]
    supervisor: Any  # the local backend's SupervisorInfo; None on a cluster (its operator supervises)
    deleting: bool = False
    images: list[str] = field(default_factory=list)
    cluster: str = ""  # where the job is, when a cluster's (backends/kubernetes/jobs.py)


class JobBackend(Protocol):
    """Job operations a backend offers; every method returns models (or raises a BackendError)."""

    def submit(self, manifest: dict[str, Any], *, base_dir: str | None = None) -> TrainingJob: ...

    def get(self, name: str, namespace: str = "default", kind: str | None = None) -> TrainingJob: ...

    def list_jobs(self, namespace: str | None = None, kind: str | None = None) -> list[TrainingJob]: ...

    def delete(self, name: str, namespace: str = "default", *, wait: bool = True) -> None: ...

    def set_suspend(self, name: str, suspend: bool, namespace: str = "default") -> TrainingJob: ...

    def wait(
        self,
        name: str,
        conditions: Sequence[str],
        namespace: str = "default",
        timeout: float | None = None,
    ) -> TrainingJob: ...

    def logs(
        self,
        name: str,
        namespace: str = "default",
        *,
        replica: str | None = None,
        container: str | None = None,
        follow: bool = False,
        previous: bool = False,
    ) -> Iterator[LogLine]: ...
