"""What ``trainop run`` says while a job runs and when it ends: status lines per replica type (phase
counts, restarts, why a replica waits), the crash-loop notice, the failure summary, the note on
replicas left running, the ending of a job deleted elsewhere. Pure: job, pods, processes, log tails
and ``now`` in, lines of text out; no I/O, no clock.
"""

from __future__ import annotations

import re
import signal
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from trainop.api.constants import LABEL_REPLICA_TYPE
from trainop.cli.format import format_age

if TYPE_CHECKING:
    from trainop.api.common import ReplicaStatus, TrainingJob
    from trainop.backends.base import ContainerRun

TAIL_LINES = 5  # lines of a replica's output quoted in a notice or summary
WAITS_SHOWN = 3  # waiting replicas named per type (the rest are counted)
_PHASE_ORDER = ("Running", "CrashLoopBackOff", "Pending", "Terminating", "Succeeded", "Failed", "Unknown")


@dataclass(frozen=True, slots=True)
class Exit:
    """How a container's process ended (from the pod's terminated state or the process row)."""

    code: int
    reason: str
    message: str = ""


@dataclass(frozen=True, slots=True)
class ReplicaView:
    label: str  # worker-1
    rtype: str  # Worker (the spec's key)
    phase: str
    restarts: int
    waiting: str  # why it waits; "" when it does not
    last_exit: Exit | None


def compute_state(job: TrainingJob) -> str:
    """The job's state for the live line: the newest True condition, ``Submitted`` before the first
    (``Pending`` then ``Created`` read backwards: the record exists, no controller pass has run)."""
    for cond in reversed((job.status.conditions if job.status else None) or []):
        if cond.status == "True":
            return cond.type
    return "Submitted"


def _killed_by(signum: int) -> str:
    """``killed by SIGKILL``; ``Error`` when ``signum`` names no signal."""
    try:
        return f"killed by {signal.Signals(signum).name}"
    except ValueError:
        return "Error"


def _signal_reason(code: int) -> str:
    return _killed_by(code - 128) if code > 128 else "Error"


def _exit_of(term: Mapping[str, Any]) -> Exit:
    code = int(term.get("exitCode") or 0)
    return Exit(code, str(term.get("reason") or _signal_reason(code)), str(term.get("message") or ""))


def _all_statuses(status: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The init containers' statuses, then the containers'."""
    return [*(status.get("initContainerStatuses") or []), *(status.get("containerStatuses") or [])]


def _unscheduled_reason(status: Mapping[str, Any]) -> str | None:
    """The scheduler's reason and message when it could not place the pod; None when it could."""
    for cond in status.get("conditions") or []:
        if cond.get("type") == "PodScheduled" and cond.get("status") == "False":
            message = str(cond.get("message") or "")
            what = "waiting for GPUs" if "nvidia.com/gpu" in message else str(cond.get("reason") or "")
            return f"{what}: {message}" if message else what
    return None


def _container_wait(status: Mapping[str, Any], phase: str, now: float | None) -> str:
    """The first container's wait worth saying: a back-off at any phase, any reason while Pending."""
    for cs in _all_statuses(status):
        waiting = (cs.get("state") or {}).get("waiting") or {}
        reason, message = str(waiting.get("reason") or ""), str(waiting.get("message") or "")
        if reason == "CrashLoopBackOff":
            return _backoff_text(cs, message, now)
        if waiting and phase == "Pending":
            return reason + (f": {message}" if message else "")
    return ""


def _wait_reason(pod: Mapping[str, Any], phase: str, now: float | None) -> str:
    """Why a pod is not (yet) running, as the scheduler and kubelet say it; "" when nothing waits."""
    status = pod.get("status") or {}
    if (pod.get("metadata") or {}).get("deletionTimestamp"):
        return "Terminating"
    unscheduled = _unscheduled_reason(status)
    if unscheduled is not None:
        return unscheduled
    if status.get("message") and phase == "Pending":
        return str(status["message"])
    return _container_wait(status, phase, now)


def _backoff_text(cs: Mapping[str, Any], message: str, now: float | None) -> str:
    """``CrashLoopBackOff: back-off 4s (restarts in 3s), last exit 1 (Error)``; no countdown without
    ``now`` (a log file gets the status only when it changes, not every second)."""
    from trainop.core.status import parse_time

    text = "CrashLoopBackOff"
    term = (cs.get("lastState") or {}).get("terminated") or {}
    delay = None
    for word in message.split():
        if word.endswith("s") and word[:-1].replace(".", "", 1).isdigit():
            delay = float(word[:-1])
            break
    finished = parse_time(term.get("finishedAt"))
    if delay is not None:
        text += f": back-off {delay:g}s"
        if finished is not None and now is not None:
            left = finished.timestamp() + delay - now
            text += f" (restarts in {left:.0f}s)" if left > 0 else " (restarting)"
    if term:
        e = _exit_of(term)
        text += f", last exit {e.code} ({e.reason})"
    return text


def _display_phase(pod: Mapping[str, Any]) -> str:
    """kubectl get pods' STATUS: the phase, unless a container waits out a crash loop (a pod in
    CrashLoopBackOff is Running by phase, which would hide the loop) or the pod is being deleted."""
    status = pod.get("status") or {}
    phase = str(status.get("phase") or "Pending")
    if (pod.get("metadata") or {}).get("deletionTimestamp") and phase not in ("Succeeded", "Failed"):
        return "Terminating"
    for cs in status.get("containerStatuses") or []:
        if ((cs.get("state") or {}).get("waiting") or {}).get("reason") == "CrashLoopBackOff":
            return "CrashLoopBackOff"
    return phase


def _last_exit(statuses: Sequence[Mapping[str, Any]]) -> Exit | None:
    """How the containers last ended: the last non-zero exit, else the first; None before any ends."""
    last: Exit | None = None
    for cs in statuses:
        term = (cs.get("state") or {}).get("terminated") or (cs.get("lastState") or {}).get("terminated")
        if term and (last is None or int(term.get("exitCode") or 0) != 0):
            last = _exit_of(term)
    return last


def _replica_view(
    pod: Mapping[str, Any], job_name: str, rtypes: Mapping[str, str], now: float | None
) -> ReplicaView:
    meta = pod.get("metadata") or {}
    status = pod.get("status") or {}
    phase = _display_phase(pod)
    statuses = _all_statuses(status)
    return ReplicaView(
        label=str(meta.get("name", "")).removeprefix(f"{job_name}-"),
        rtype=rtypes.get(str((meta.get("labels") or {}).get(LABEL_REPLICA_TYPE, "")), ""),
        phase=phase,
        restarts=sum(int(cs.get("restartCount") or 0) for cs in statuses),
        waiting="" if phase in ("Succeeded", "Failed") else _wait_reason(pod, str(status.get("phase")), now),
        last_exit=_last_exit(statuses),
    )


def build_replica_views(
    job: TrainingJob, pods: Sequence[Mapping[str, Any]], now: float | None
) -> list[ReplicaView]:
    """One view per pod, in the job's replica type order, then by name."""
    rtypes = {k.lower(): k for k in job.replica_specs}
    order = {k: i for i, k in enumerate(job.replica_specs)}
    views = [_replica_view(pod, job.name, rtypes, now) for pod in pods]
    views.sort(key=lambda v: (order.get(v.rtype, len(order)), v.label))
    return views


def _type_counts(mine: Sequence[ReplicaView], wanted: int, st: ReplicaStatus | None) -> list[str]:
    """``1/2 Running``, the other phases' counts (unknown phases last) and the replicas not created yet;
    with no pods, how many finished before their pods were removed."""
    if not mine:
        done = ((st.succeeded or 0) + (st.failed or 0)) if st else 0
        return [f"0/{wanted} Running" + (f" ({done} finished, pods removed)" if done else "")]
    counts = Counter(v.phase for v in mine)
    parts = [f"{counts.pop('Running', 0)}/{wanted} Running"]
    parts += [f"{counts[p]} {p}" for p in _PHASE_ORDER if counts.get(p)]
    parts += [f"{n} {p}" for p, n in sorted(counts.items()) if p not in _PHASE_ORDER]
    if len(mine) < wanted:
        parts.append(f"{wanted - len(mine)} not created")
    return parts


def _waiting_lines(mine: Sequence[ReplicaView]) -> list[str]:
    """Why each waiting replica waits: the first ``WAITS_SHOWN``, then how many more."""
    waiting = [v for v in mine if v.waiting]
    lines = [f"    {v.label}: {v.waiting}" for v in waiting[:WAITS_SHOWN]]
    if len(waiting) > WAITS_SHOWN:
        lines.append(f"    … and {len(waiting) - WAITS_SHOWN} more waiting")
    return lines


def build_status_lines(
    job: TrainingJob, pods: Sequence[Mapping[str, Any]], elapsed: float, now: float | None
) -> list[str]:
    """``PyTorchJob demo: Running  12s`` then a line per replica type: ``Worker  1/2 Running, 1 Pending
    · 3 restarts``, and under it why each waiting replica waits."""
    from trainop.api.defaults import apply_defaults

    lines = [f"{job.kind} {job.name}: {compute_state(job)}  {format_age(elapsed)}"]
    views = build_replica_views(job, pods, now)
    statuses = (job.status.replica_statuses if job.status else None) or {}
    width = max((len(k) for k in job.replica_specs), default=0)
    for rtype, spec in apply_defaults(job).replica_specs.items():
        mine = [v for v in views if v.rtype == rtype]
        restarts = sum(v.restarts for v in mine)
        text = f"  {rtype:<{width}}  " + ", ".join(
            _type_counts(mine, spec.replicas or 0, statuses.get(rtype))
        )
        lines.append(text + (f" · {restarts} restart{'s' if restarts != 1 else ''}" if restarts else ""))
        lines += _waiting_lines(mine)
    return lines


def detect_first_restarts(noticed: frozenset[str], views: Sequence[ReplicaView]) -> list[ReplicaView]:
    """The replicas that have restarted and were not noticed yet (a notice is given once per replica)."""
    return [v for v in views if v.restarts > 0 and v.label not in noticed]


def build_restart_notice(view: ReplicaView, restart_policy: str, tail: Sequence[str] | None) -> list[str]:
    """``worker-0 restarted (restart 1, restartPolicy OnFailure): exit code 2 (Error); its last lines:``."""
    e = view.last_exit
    why = f"exit code {e.code} ({e.reason})" if e else "its process ended"
    if e and e.message:
        why += f": {e.message}"
    head = f"{view.label} restarted (restart {view.restarts}, restartPolicy {restart_policy}): {why}"
    return _with_tail(head, view.label, tail)


def _with_tail(head: str, label: str, tail: Sequence[str] | None) -> list[str]:
    """``head`` and the replica's last lines; ``None``: its output cannot be read (a cluster that
    serves no logs for its pod), which is not the same as printing nothing."""
    if tail is None:
        return [head + "; its output is not available (the cluster serves no logs for its pod)"]
    if not tail:
        return [head + "; it printed nothing"]
    return [head + "; its last lines:", *(f"  {label} | {t}" for t in tail[-TAIL_LINES:])]


def detect_finish_time(job: TrainingJob) -> float | None:
    """When the job finished (its Succeeded or Failed condition's transition, to the second), if it has."""
    for cond in (job.status.conditions if job.status else None) or []:
        if cond.type in ("Succeeded", "Failed") and cond.status == "True" and cond.last_transition_time:
            return cond.last_transition_time.timestamp()
    return None


def _last_runs(processes: Sequence[ContainerRun], finished: float | None) -> list[ContainerRun]:
    """Each container's newest run, of those started by ``finished`` (whole seconds, as the API server
    stores it: the end was within the second after it, and a run of that second, a whole-job
    restart's started at once, still counts)."""
    latest: dict[tuple[str, str], ContainerRun] = {}
    for p in processes:
        if finished is not None and p.started_at is not None and p.started_at >= finished + 1.0:
            continue
        key = (p.pod, p.container)
        if key not in latest or p.attempt > latest[key].attempt:
            latest[key] = p
    return list(latest.values())


def detect_failed_replica(
    job_name: str,
    processes: Sequence[ContainerRun],
    views: Sequence[ReplicaView],
    finished: float | None = None,
) -> tuple[str, str, Exit, int] | None:
    """(label, pod, exit, others): the replica whose process failed first, with how it ended; ``others``
    counts the further replicas that ended non-zero (often killed by the job's own cleanup).

    Each container's last run counts, as of ``finished`` (the job's end): a run started after it is a
    restart that cleanPodPolicy None leaves to the restartPolicy (a crash loop goes on), which cannot
    be why the job failed, so the run before it counts."""
    failed = sorted(
        (
            p
            for p in _last_runs(processes, finished)
            if p.exit_code not in (None, 0) and p.finished_at is not None
        ),
        key=lambda p: (p.finished_at or 0.0, p.pod),
    )
    if not failed:
        return None
    first = failed[0]
    code = int(first.exit_code or 0)
    label = first.pod.removeprefix(f"{job_name}-")
    view = next((v for v in views if v.label == label), None)
    e = view.last_exit if view and view.last_exit and view.last_exit.code == code else None
    others = len({p.pod for p in failed}) - 1
    return label, first.pod, e or Exit(code, _signal_reason(code)), others


@dataclass(frozen=True, slots=True)
class RankFailure:
    """The rank torchrun's footer names as the root cause, and that rank's own last lines."""

    rank: str
    local_rank: str
    code: int
    lines: list[str]

    @property
    def reason(self) -> str:
        return _killed_by(-self.code) if self.code < 0 else "Error"  # torchrun writes signal n as -n


_ROOT_CAUSE = "Root Cause (first observed failure):"
_AGENT_LOG = re.compile(r"^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ ")  # torchrun's own log lines (glog's form)
_TRACEBACK = "Traceback (most recent call last):"


def detect_torchrun_failure(lines: Sequence[str]) -> RankFailure | None:
    """From a replica's output that ends with torchrun's failure footer (ChildFailedError, whose
    ``error_file: <N/A>`` says nothing): the root-cause rank, its exit code, and its own last lines,
    the output before torchrun's own traceback less torchrun's log lines, from the last traceback on
    when there is one. None when the output holds no footer."""
    roots = [i for i, line in enumerate(lines) if line.strip() == _ROOT_CAUSE]
    if not roots:
        return None
    root = roots[-1]
    fields: dict[str, str] = {}
    for line in lines[root + 1 : root + 12]:
        key, sep, value = line.strip().partition(":")
        if sep:
            fields.setdefault(key.strip(), value.strip())
    rank = re.match(r"(\d+) \(local_rank: (\d+)\)", fields.get("rank", ""))
    code = re.match(r"(-?\d+)", fields.get("exitcode", ""))
    if rank is None or code is None:
        return None
    end = root
    failed_error = next((i for i in range(root - 1, -1, -1) if "ChildFailedError" in lines[i]), None)
    if failed_error is not None:
        agent = [i for i in range(failed_error) if lines[i].startswith(_TRACEBACK)]
        end = agent[-1] if agent else failed_error
    own = [line for line in lines[:end] if not _AGENT_LOG.match(line) and line.strip()]
    starts = [i for i, line in enumerate(own) if line.startswith(_TRACEBACK)]
    if starts:
        own = own[starts[-1] :]
    return RankFailure(rank.group(1), rank.group(2), int(code.group(1)), own[-TAIL_LINES:])


def build_failure_summary(
    job: TrainingJob,
    processes: Sequence[ContainerRun],
    views: Sequence[ReplicaView],
    tails: Mapping[str, Sequence[str] | None],
    flags: str = "",
) -> list[str]:
    """The lines under ``Failed after …``: the job's reason, the replica that failed first (exit code,
    reason, restarts, last lines) and where to look further."""
    state = compute_state(job)
    lines = []
    for cond in (job.status.conditions if job.status else None) or []:
        if cond.type == state and cond.message:
            lines.append(f"  {cond.reason}: {cond.message}")
    culprit = detect_failed_replica(job.name, processes, views, detect_finish_time(job))
    logs_hint = ""
    if culprit is not None:
        label, _, e, others = culprit
        view = next((v for v in views if v.label == label), None)
        tail = tails.get(label, ())
        rank = detect_torchrun_failure(tail) if tail else None
        if rank is not None:  # torchrun's footer: the rank that failed, in its own words
            head = (
                f"  {label} failed first: its rank {rank.rank} (local rank {rank.local_rank}) ended with "
                f"exit code {rank.code} ({rank.reason}) under torchrun"
            )
            tail = rank.lines
        else:
            head = f"  {label} failed first: exit code {e.code} ({e.reason})"
        if e.message:
            head += f": {e.message}"
        if view and view.restarts:
            head += f", after {view.restarts} restart{'s' if view.restarts != 1 else ''}"
        if others:
            head += f"; {others} other replica{'s' if others != 1 else ''} ended non-zero after it"
        lines += _with_tail(head, label, tail)
        logs_hint = f" --replica {label}"
    lines.append(
        f"  details: trainop describe {job.name}{flags}; output: trainop logs {job.name}{flags}{logs_hint}"
    )
    return lines


_LEFT_PHASES = frozenset({"Running", "CrashLoopBackOff", "Pending"})


def detect_leftovers(views: Sequence[ReplicaView], running: Sequence[str]) -> list[str]:
    """The replicas a finished job leaves behind: a process still running, or a pod neither done nor
    being deleted. A crash-looping pod counts whether or not its process is up at this moment: its
    restartPolicy starts it again, as the kubelet would."""
    terminating = {v.label for v in views if v.phase == "Terminating"}
    return sorted({*running, *(v.label for v in views if v.phase in _LEFT_PHASES)} - terminating)


def build_leftover_note(
    job: TrainingJob, running: Sequence[str], flags: str = "", views: Sequence[ReplicaView] = ()
) -> list[str]:
    """Replicas that keep running after the job finished (cleanPodPolicy None/Running leaves them):
    say so, which are crash-looping (by ``views``), and how to stop them."""
    if not running:
        return []
    from trainop.api.defaults import apply_defaults

    spec = apply_defaults(job)
    policies = {k: rs.restart_policy for k, rs in spec.replica_specs.items()}
    looping = {v.label: policies.get(v.rtype) for v in views if v.phase == "CrashLoopBackOff"}
    named = [
        f"{x} (in CrashLoopBackOff: restartPolicy {looping[x]} restarts it)" if x in looping else x
        for x in running
    ]
    n, policy = len(running), spec.run_policy.clean_pod_policy
    return [
        f"note: {n} replica{'s' if n != 1 else ''} still running after the job {compute_state(job)} "
        f"(cleanPodPolicy: {policy}): {', '.join(named)}; they run until they exit, as pods do. "
        f"Stop them: trainop delete {job.name}{flags}"
    ]


def build_gone_lines(last: TrainingJob, elapsed: float) -> list[str]:
    """The ending when the job disappeared while ``run`` watched it."""
    state = compute_state(last)
    if state in ("Succeeded", "Failed"):
        ttl = last.spec.run_policy.ttl_seconds_after_finished if last.spec.run_policy else None
        why = f" (ttlSecondsAfterFinished: {ttl})" if ttl is not None else " (by another command)"
        return [f"{last.kind} {last.name} {state}; then it was deleted{why} after {elapsed:.1f}s"]
    return [
        f"{last.kind} {last.name} was deleted by another command while {state}, after {elapsed:.1f}s: "
        "its replicas were stopped and its record and logs removed"
    ]
