"""``trainop run`` interrupted (Ctrl-C, SIGTERM, SIGHUP): stop every replica and keep the job. The
job is suspended and marked interrupted (its record, state and logs stay, so ``logs`` works);
the replicas get SIGTERM, and what they print while shutting down (a checkpoint message) is still
streamed until they have ended; a second interrupt kills them at once. ``trainop delete`` removes it.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

    from trainop.api.common import TrainingJob
    from trainop.backends.local.api import LocalBackend
    from trainop.cli.watch import RunView

POLL = 0.1
MARGIN = 15.0  # past the longest grace period: the supervisor's own SIGKILL has happened by then


def compute_longest_grace(job: TrainingJob) -> float:
    from trainop.backends.local.render import DEFAULT_GRACE_SECONDS

    graces = [float(DEFAULT_GRACE_SECONDS)]
    for rs in job.replica_specs.values():
        g = rs.pod_spec.get("terminationGracePeriodSeconds")
        if isinstance(g, int | float) and not isinstance(g, bool):
            graces.append(float(g))
    return max(graces)


def kill_now(backend: LocalBackend, uid: str) -> None:
    """SIGKILL every replica session of the job that still runs (the second interrupt)."""
    from trainop.backends.local import procs
    from trainop.backends.local.api import stop_sessions

    sessions = [
        (p.pid, p.ticks)
        for p in backend.store.list_processes(uid, unfinished=True)
        if p.pid is not None and p.boot == procs.boot_id()
    ]
    stop_sessions(sessions, 0.0)


def stop_and_keep(backend: LocalBackend, view: RunView | None, job: TrainingJob, console: Console) -> None:
    """Suspend and mark the job, then stream the replicas' last output until every one has ended.
    Raises nothing on a second interrupt: it kills what is left and returns."""
    from trainop.backends.base import JobNotFoundError

    name, ns = job.name, job.namespace
    flags = f" -n {ns}" if ns != "default" else ""
    err_line = (
        f"interrupted: stopping {job.kind} {name}'s replicas (SIGTERM, SIGKILL after their grace period; "
        "interrupt again to kill now); the job and its logs are kept"
    )
    console.print(err_line, style="yellow", highlight=False)
    try:
        backend.set_suspend(name, True, ns, interrupted=True)
    except JobNotFoundError:
        console.print(f"{job.kind} {name} is gone (deleted elsewhere)", highlight=False)
        return
    row = backend.store.find_job(ns, name)
    if row is None:
        return
    deadline = time.monotonic() + compute_longest_grace(job) + MARGIN
    try:
        while time.monotonic() < deadline:
            if view is not None:
                view.emit(view.follower.poll())
            if not backend.store.list_processes(row.uid, unfinished=True):
                break
            time.sleep(POLL)
        if view is not None:
            view.emit(view.follower.poll())
    except KeyboardInterrupt:
        console.print("killing now", style="yellow", highlight=False)
        kill_now(backend, row.uid)
    console.print(
        f"{job.kind} {name} interrupted: its replicas were stopped; the job and its logs are kept "
        f"(trainop logs {name}{flags}; trainop resume {name}{flags} runs it again; "
        f"trainop delete {name}{flags} removes it)",
        highlight=False,
    )
