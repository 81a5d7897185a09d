"""``trainop run`` stopped once its job exists (Ctrl-C, SIGTERM, SIGHUP, its terminal or reader gone):
stop every replica and keep the job. The job is suspended and marked interrupted (its record, state
and logs stay: ``logs`` works, ``resume`` runs it again, ``delete`` removes it); the replicas get
SIGTERM and their grace period, and what they print while shutting down (a checkpoint message) is
still streamed until they have ended; a second signal kills them at once. It never deletes a job.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from trainop.cli.stop_signals import compute_exit_code, describe_signal

if TYPE_CHECKING:
    from trainop.api.common import TrainingJob
    from trainop.backends.base import JobClient
    from trainop.cli.stop_signals import StopSignals

POLL = 0.1
# Past the longest grace period: the supervisor's own SIGKILL has happened by then, unless it is not
# running; run then kills the replicas itself, and waits this long again for the supervisor's record.
MARGIN = 15.0


def compute_longest_grace(job: TrainingJob) -> float:
    from trainop.backends.local.render import DEFAULT_GRACE_SECONDS

    graces = [float(DEFAULT_GRACE_SECONDS)]
    for rs in job.replica_specs.values():
        g = rs.pod_spec.get("terminationGracePeriodSeconds")
        if isinstance(g, int | float) and not isinstance(g, bool):
            graces.append(float(g))
    return max(graces)


def detect_stopped(job: TrainingJob, pods: int, unfinished: int) -> bool:
    """The stop is complete: the supervisor has acted on the suspend (the job reads Suspended) and
    every pod is gone (a pod is removed only once nothing in its sessions lives any more); or the job
    finished first and none of its processes runs."""
    from trainop.backends.base import detect_state, is_finished

    if is_finished(job):
        return unfinished == 0
    return detect_state(job) == "Suspended" and pods == 0 and unfinished == 0


def detect_suspend_seen(job: TrainingJob) -> bool:
    """The supervisor has acted on the suspend (or the job finished first): its pods are being deleted,
    so a replica killed now is not restarted, nor counted as a failure."""
    from trainop.backends.base import detect_state, is_finished

    return is_finished(job) or detect_state(job) == "Suspended"


def count_unfinished(backend: JobClient, name: str, namespace: str) -> int:
    """The job's container runs that have not ended (recorded by its supervisor)."""
    return sum(1 for r in backend.runs(name, namespace) if r.finished_at is None)


def stop_and_keep(
    backend: JobClient,
    job: TrainingJob,
    signals: StopSignals,
    say: Callable[[str], None],
    stream: Callable[[], None],
    *,
    keep: bool = True,
) -> int:
    """Suspend and mark the job, stream the replicas' last output (``stream``) until every one has
    ended, and return run's exit code: 128 + the first signal (none: the output went away, a hang-up).
    Signals stay recorded only (``signals.record``); one more than had come when it began kills now.
    On a cluster (``backend.replicas_here`` false) the operator deletes the pods (SIGTERM, SIGKILL
    after their grace period) and the job is kept: ``run --rm`` deletes it afterwards."""
    from trainop.backends.base import NotFoundError

    signum = signals.received or signal.SIGHUP
    name, ns, here = job.name, job.namespace, backend.replicas_here
    flags = f" -n {ns}" if ns != "default" else ""
    by = "" if signum == signal.SIGINT else f" by {describe_signal(signum)}"
    if here:
        again = "Ctrl-C again" if signum == signal.SIGINT else "a second signal"
        after = "the job and its logs are kept" if keep else "then the job is deleted (--rm)"
        say(
            f"interrupted{by}: stopping {job.kind} {name}'s replicas (SIGTERM, SIGKILL after their grace "
            f"period; {again} kills them now); {after}"
        )
    else:
        say(
            f"interrupted{by}: suspending {job.kind} {name} (the operator stops its pods: SIGTERM, SIGKILL "
            "after their grace period; a second signal deletes them now); the job is kept"
        )
    try:
        backend.set_suspend(name, True, ns, interrupted=True)
        stopped = _wait_stopped(backend, job, signals, say, stream)
        stream()
    except NotFoundError:
        say(f"{job.kind} {name} is gone (deleted elsewhere)")
        return compute_exit_code(signum)
    if not here:
        kube = " --backend kubernetes"
        say(
            f"{job.kind} {name} interrupted: its pods were stopped; the job is kept (trainop resume "
            f"{name}{flags}{kube} runs it again; trainop delete {name}{flags}{kube} removes it)"
            if stopped
            else f"{job.kind} {name} interrupted, but its pods are not all gone yet; the job is kept "
            f"(trainop get pods {name}{flags}{kube} shows them)"
        )
    elif not keep:
        say(f"{job.kind} {name} interrupted: {'its replicas were stopped' if stopped else 'stopping it'}")
    elif stopped:
        say(
            f"{job.kind} {name} interrupted: its replicas were stopped; the job and its logs are kept "
            f"(trainop logs {name}{flags}; trainop resume {name}{flags} runs it again; "
            f"trainop delete {name}{flags} removes it)"
        )
    else:
        say(
            f"{job.kind} {name} interrupted, but its supervisor has not reported every replica stopped; "
            f"the job is kept (trainop get pods {name}{flags} shows them; trainop delete {name}{flags} "
            "stops and removes it)"
        )
    return compute_exit_code(signum)


def _wait_stopped(
    backend: JobClient,
    job: TrainingJob,
    signals: StopSignals,
    say: Callable[[str], None],
    stream: Callable[[], None],
) -> bool:
    """Stream and poll until the stop is complete (True) or given up on. Here run kills the replicas
    itself past the longest grace period and waits ``MARGIN`` more for the supervisor's record; a
    cluster's operator kills its pods itself, so run gives up there at the deadline."""
    name, ns, here = job.name, job.namespace, backend.replicas_here
    deadline = time.monotonic() + compute_longest_grace(job) + MARGIN
    give_up = deadline + MARGIN if here else deadline
    seen_signals = 1  # two already (both while run watched): the second says kill now
    kill = killed = False
    while True:
        stream()
        current = backend.get(name, ns)
        unfinished = count_unfinished(backend, name, ns) if here else 0
        if detect_stopped(current, len(backend.pods(name, ns)), unfinished):
            return True
        now = time.monotonic()
        if signals.count > seen_signals and not kill:
            kill = True
            if here:
                say("killing now")
        if not killed and ((kill and detect_suspend_seen(current)) or (here and now >= deadline)):
            backend.kill_replicas(name, ns)
            killed = True
        if now >= give_up:
            return False
        time.sleep(POLL)
