"""``trainop describe``'s printout: spec summary, conditions, replicas (pods and processes), events.

Formatting only: it reads a ``JobDetails`` the backend returned and never touches state.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from trainop.api.common import TrainingJob
from trainop.api.constants import ANNOTATION_INTERRUPTED
from trainop.api.defaults import apply_defaults
from trainop.api.failure_policy import ACTION_USE_RESTART_POLICY, build_failure_policy
from trainop.api.kinds import kind_info
from trainop.api.rules import detect_queue_name
from trainop.backends.base import JobDetails, detect_state, replica_label
from trainop.cli.format import format_age, running_pid
from trainop.core.queue import build_queue_not_managed_message
from trainop.core.status import parse_time


def _age(ts: float) -> str:
    return format_age(time.time() - ts)


def print_table(console: Console, columns: tuple[str, ...], rows: Sequence[tuple[str, ...]]) -> None:
    """A table without the trailing blanks rich pads its last column with (piped output stays clean)."""
    t = Table(box=None, pad_edge=False, show_edge=False, header_style="bold", padding=(0, 2, 0, 0))
    for c in columns:
        t.add_column(c, overflow="fold")
    for row in rows:
        t.add_row(*row)
    with console.capture() as captured:
        console.print(t)
    console.file.write("".join(line.rstrip() + "\n" for line in captured.get().splitlines()))


def _section(
    console: Console, title: str, empty: str, columns: tuple[str, ...], rows: Sequence[tuple[str, ...]]
) -> None:
    """``title:`` and its table, or ``empty`` under it when there are no rows."""
    console.print(f"\n[bold]{title}:[/]")
    if rows:
        print_table(console, columns, rows)
    else:
        console.print(f"  {empty}")


def _iso_age(value: str | None) -> str:
    ts = parse_time(value)
    return (value or "") if ts is None else _age(ts.timestamp())


def _container_facts(cs: dict[str, Any]) -> tuple[str | None, str | None, list[str]]:
    """(pid while running here, last exit, messages) of one container status."""
    state = cs.get("state") or {}
    pid = running_pid(cs)
    term = state.get("terminated") or (cs.get("lastState") or {}).get("terminated")
    last_exit = f"{term.get('exitCode')} ({term.get('reason', '')})" if term else None
    messages = [
        str(m) for m in ((state.get("waiting") or {}).get("message"), (term or {}).get("message")) if m
    ]
    return pid, last_exit, messages


def _pod_summary(pod: dict[str, Any]) -> tuple[str, int, str, str, str]:
    """(phase, restarts, pid, last exit, message) for one pod."""
    status = pod.get("status") or {}
    restarts = 0
    pids: list[str] = []
    last_exit = ""
    messages: list[str] = []
    for cs in status.get("containerStatuses") or []:
        restarts += int(cs.get("restartCount") or 0)
        pid, exited, said = _container_facts(cs)
        if pid is not None:
            pids.append(pid)
        last_exit = exited or last_exit
        messages.extend(said)
    for cond in status.get("conditions") or []:
        if cond.get("status") == "False" and cond.get("reason") == "Unschedulable":
            messages.append(str(cond.get("message", "")))
    if status.get("message"):
        messages.append(str(status["message"]))
    phase = str(status.get("phase", "Pending"))
    if (pod.get("metadata") or {}).get("deletionTimestamp"):
        phase += " (terminating)"
    return phase, restarts, ",".join(pids), last_exit, "; ".join(dict.fromkeys(messages))


def print_details(console: Console, d: JobDetails) -> None:
    defaulted = apply_defaults(d.job)
    for key, value in _header_fields(d, defaulted):
        console.print(f"[bold]{key + ':':<13}[/]{escape(str(value))}")
    _print_failure_policy(console, defaulted)
    _print_replica_specs(console, defaulted)
    _print_conditions(console, d.job)
    _print_replicas(console, d)
    _print_events(console, d)


def _state(d: JobDetails) -> str:
    """The newest True condition, ``(deleting)`` while deleted; an interrupted run says how to go on."""
    job = d.job
    interrupted = (job.metadata.annotations or {}).get(ANNOTATION_INTERRUPTED)
    if interrupted and detect_state(job) == "Suspended":
        return (
            f"Interrupted at {interrupted} (trainop run was stopped; its replicas were stopped, its "
            f"logs kept: trainop resume {job.name} runs it again, trainop delete {job.name} removes it)"
        )
    return detect_state(job) + (" (deleting)" if d.deleting else "")


def _header_fields(d: JobDetails, defaulted: TrainingJob) -> list[tuple[str, str]]:
    job = d.job
    rp = defaulted.run_policy
    created = job.metadata.creation_timestamp
    local = created.astimezone() if created else None  # the API's UTC, shown in this machine's zone
    fields = [
        ("Name", job.name),
        ("Namespace", job.namespace),
        ("Kind", job.kind),
        ("Created", f"{local:%Y-%m-%d %H:%M:%S %Z} ({_age(local.timestamp())} ago)" if local else "?"),
        ("State", _state(d)),
        *_where_fields(d),
        (
            "Run policy",
            f"cleanPodPolicy={rp.clean_pod_policy} backoffLimit={_opt(rp.backoff_limit)} "
            f"activeDeadlineSeconds={_opt(rp.active_deadline_seconds)} "
            f"ttlSecondsAfterFinished={_opt(rp.ttl_seconds_after_finished)} "
            f"suspend={'true' if rp.suspend else 'false'}",
        ),
    ]
    queue = detect_queue_name(job)
    if queue:
        unqueued = build_queue_not_managed_message(job, kind_info(job))
        where = "(Kueue LocalQueue)" if unqueued is None else f"- {unqueued}"
        fields.append(("Queue", f"{queue} {where}"))
    return fields


def _print_replica_specs(console: Console, defaulted: TrainingJob) -> None:
    rows = []
    for rtype, rs in defaulted.replica_specs.items():
        cmds = []
        for c in rs.containers:
            if isinstance(c, dict):
                argv = [*(c.get("command") or []), *(c.get("args") or [])]
                cmds.append(f"{c.get('name')}: {shlex.join(str(a) for a in argv) or '(no command)'}")
        rows.append((rtype, str(rs.replicas), str(rs.restart_policy), escape("\n".join(cmds))))
    _section(console, "Replica specs", "", ("TYPE", "REPLICAS", "RESTART POLICY", "COMMAND"), rows)


def _print_conditions(console: Console, job: TrainingJob) -> None:
    rows = []
    for c in (job.status.conditions if job.status else None) or []:
        age = _age(c.last_transition_time.timestamp()) if c.last_transition_time else ""
        rows.append((c.type, c.status, c.reason or "", age, escape(c.message or "")))
    _section(console, "Conditions", "none yet", ("TYPE", "STATUS", "REASON", "AGE", "MESSAGE"), rows)


def _print_replicas(console: Console, d: JobDetails) -> None:
    ports = {f"{rtype.lower()}-{i}": port for (rtype, i), port in d.ports.items()}
    rows = []
    for pod in d.pods:
        label = replica_label(d.job.name, pod["metadata"]["name"])
        phase, restarts, pid, last_exit, message = _pod_summary(pod)
        age = _iso_age((pod.get("status") or {}).get("startTime") or pod["metadata"].get("creationTimestamp"))
        rows.append(
            (label, phase, str(restarts), str(ports.get(label, "")), pid, last_exit, age, escape(message))
        )
    columns = ("REPLICA", "PHASE", "RESTARTS", "PORT", "PID", "LAST EXIT", "AGE", "MESSAGE")
    _section(console, "Replicas", _no_pods(d), columns, rows)


def _print_events(console: Console, d: JobDetails) -> None:
    rows = [(e.type, e.reason, _age(e.last_ts), str(e.count), escape(e.message)) for e in d.events]
    _section(console, "Events", "none", ("TYPE", "REASON", "AGE", "COUNT", "MESSAGE"), rows)


def _where_fields(d: JobDetails) -> list[tuple[str, str]]:
    """Where the job runs: a cluster (its images run there), or this machine (the working dir and the
    job's supervisor; images are not used)."""
    if d.cluster:
        return [("Cluster", d.cluster), ("Images", ", ".join(d.images) or "none")]
    sup = d.supervisor
    if sup is None:
        sup_text = "none"
    elif sup.alive:
        sup_text = f"pid {sup.pid} (running)"
    elif sup.state == "exited":
        sup_text = "exited (the job needs no more supervision)"
    else:
        sup_text = f"{sup.state}, not alive (the next trainop command recovers it)"
    images = (
        f"{', '.join(d.images)}  (not used here: the local backend runs each container's command as a "
        "host process)"
        if d.images
        else "none (the local backend runs each container's command as a host process)"
    )
    return [
        ("Working dir", f"{d.base_dir}  (where relative workingDirs and commands resolve)"),
        ("Images", images),
        ("Supervisor", sup_text),
    ]


def _print_failure_policy(console: Console, job: Any) -> None:
    """The effective failure policy (docs/failure-policy.md), defaults filled in; nothing without one."""
    policy, errors = build_failure_policy(job)
    if errors:
        console.print(f"[bold]Failure policy:[/] invalid: {escape(str(errors[0]))}")
        return
    if policy is None:
        return
    deadlines = [
        f"startupDeadlineSeconds={_opt(policy.startup_deadline_seconds)}",
        f"startErrorDeadlineSeconds={_opt(policy.start_error_deadline_seconds)}",
    ]
    console.print(
        f"[bold]Failure policy:[/] maxRestarts={policy.max_restarts} "
        f"restartStrategy={policy.restart_strategy} {' '.join(deadlines)}"
    )
    rows = []
    for i, rule in enumerate(policy.rules):
        matches = []
        if rule.on_exit_codes is not None:
            m = rule.on_exit_codes
            where = f" of {m.container}" if m.container else ""
            matches.append(f"exit code{where} {m.operator} {list(m.values)}")
        if rule.on_reasons:
            matches.append(f"reason in {list(rule.on_reasons)}")
        if rule.on_replica_types:
            matches.append(f"replica type in {list(rule.on_replica_types)}")
        rows.append((str(i), rule.name or "", rule.action, escape(" and ".join(matches) or "any failure")))
    rows.append(("", "(no match)", ACTION_USE_RESTART_POLICY, "the replica's own restartPolicy"))
    print_table(console, ("#", "RULE", "ACTION", "MATCHES"), rows)


def _no_pods(d: JobDetails) -> str:
    """Why a job has no pod to show."""
    state = detect_state(d.job)
    if state == "Suspended":
        return f"none: the job is suspended (trainop resume {d.job.name} starts its replicas again)"
    if state in ("Succeeded", "Failed"):
        policy = apply_defaults(d.job).run_policy.clean_pod_policy
        return f"none left: they were removed when the job finished (cleanPodPolicy: {policy})"
    return "none yet"


def _opt(value: object) -> str:
    return "-" if value is None else str(value)
