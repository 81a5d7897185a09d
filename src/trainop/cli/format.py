"""Pure formatting helpers of the CLI: durations in; ages, replica summaries and pod rows out. No I/O.

The API models load only when a replica summary is asked for, so ``trainop --version`` and
``--help`` start without pydantic.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from trainop.api.common import TrainingJob


class DurationError(ValueError):
    pass


def parse_duration(text: str) -> float:
    """``90``, ``30s``, ``10m``, ``1h``, ``1h30m`` → seconds."""
    text = text.strip()
    if re.fullmatch(r"\d+(\.\d+)?", text):
        return float(text)
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)", text)
    if not parts or "".join(a + b for a, b in parts) != text:
        raise DurationError(f'"{text}" is not a duration; use e.g. 30s, 10m or 1h')
    scale = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}
    return sum(float(a) * scale[b] for a, b in parts)


def format_age(seconds: float) -> str:
    """kubectl's ages (apimachinery's HumanDuration): 42s, 5m3s, 47m, 3h20m, 2d4h, 30d, 2y15d."""
    s = int(max(seconds, 0))
    minutes, hours, days = s // 60, s // 3600, s // 86400
    if s < 120:
        return f"{s}s"
    if minutes < 10:
        return f"{minutes}m{s % 60}s" if s % 60 else f"{minutes}m"
    if minutes < 3 * 60:
        return f"{minutes}m"
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 8 * 24:
        return f"{days}d{hours % 24}h" if hours % 24 else f"{days}d"
    if hours < 2 * 365 * 24:
        return f"{days}d"
    years = days // 365
    if years < 8:
        return f"{years}y{days % 365}d" if days % 365 else f"{years}y"
    return f"{years}y"


def compute_replica_counts(job: TrainingJob) -> list[tuple[str, int, int, int]]:
    """(type, running or done, wanted, failed) per replica type, in the spec's order."""
    from trainop.api.defaults import apply_defaults

    statuses = (job.status.replica_statuses if job.status else None) or {}
    out = []
    for rtype, spec in apply_defaults(job).replica_specs.items():
        st = statuses.get(rtype)
        ready = ((st.active or 0) + (st.succeeded or 0)) if st else 0
        out.append((rtype, ready, spec.replicas or 0, (st.failed or 0) if st else 0))
    return out


def format_replicas(job: TrainingJob, counts: list[tuple[str, int, int, int]] | None = None) -> str:
    """``Master 1/1, Worker 2/2``: replicas running or done, of those wanted, per type (``counts``:
    ``compute_replica_counts(job)``, when the caller has it already)."""
    rows = compute_replica_counts(job) if counts is None else counts
    return ", ".join(
        f"{rtype} {ready}/{wanted}" + (f" ({failed} failed)" if failed else "")
        for rtype, ready, wanted, failed in rows
    )


def running_pid(cs: Mapping[str, Any]) -> str | None:
    """The process id of a container status running on this machine (containerID ``local://PID``)."""
    container_id = str(cs.get("containerID", ""))
    running = "running" in (cs.get("state") or {}) and container_id.startswith("local://")
    return container_id.removeprefix("local://") if running else None


def _ended_reason(term: Mapping[str, Any]) -> str:
    return str(term.get("reason") or f"ExitCode:{term.get('exitCode')}")


def _init_reason(inits: list[Mapping[str, Any]]) -> str | None:
    """``Init:…`` for the first init container that has not succeeded: how it ended, what it waits on,
    or its position; None once every one has."""
    for i, cs in enumerate(inits):
        state = cs.get("state") or {}
        term, waiting = state.get("terminated"), str((state.get("waiting") or {}).get("reason") or "")
        if term and term.get("exitCode") == 0:
            continue
        if term:
            return "Init:" + _ended_reason(term)
        if waiting and waiting != "PodInitializing":
            return "Init:" + waiting
        return f"Init:{i}/{len(inits)}"
    return None


def _state_reason(state: Mapping[str, Any]) -> str:
    """What a container's state says: the reason it waits, or how it ended; "" while it runs."""
    term = state.get("terminated")
    return str((state.get("waiting") or {}).get("reason") or (_ended_reason(term) if term else ""))


def _container_reason(containers: list[Mapping[str, Any]], reason: str) -> str:
    """What the first container with something to say waits on or ended with (else ``reason``);
    ``Completed`` reads ``Running`` while another container runs and is ready."""
    running = any((cs.get("state") or {}).get("running") and cs.get("ready") for cs in containers)
    said = next((r for cs in containers if (r := _state_reason(cs.get("state") or {}))), reason)
    return "Running" if said == "Completed" and running else said


def format_pod_status(pod: Mapping[str, Any]) -> str:
    """kubectl get pods' STATUS (kubectl's printPod): the phase, or what an init container, then a
    container, is waiting on or ended with; ``Terminating`` while being deleted."""
    if (pod.get("metadata") or {}).get("deletionTimestamp"):
        return "Terminating"
    status = pod.get("status") or {}
    reason = str(status.get("reason") or status.get("phase") or "Pending")
    return _init_reason(status.get("initContainerStatuses") or []) or _container_reason(
        status.get("containerStatuses") or [], reason
    )


def build_pod_row(pod: Mapping[str, Any], now: float) -> list[str]:
    """NAME, READY, STATUS, RESTARTS (with how long ago the last one was), AGE: kubectl get pods."""
    from trainop.core.status import parse_time

    status = pod.get("status") or {}
    containers = status.get("containerStatuses") or []
    ready = sum(1 for cs in containers if cs.get("ready"))
    wanted = len(((pod.get("spec") or {}).get("containers")) or containers)
    restarts = sum(int(cs.get("restartCount") or 0) for cs in containers)
    restart_text = str(restarts)
    last = [
        t.timestamp()
        for cs in containers
        if (t := parse_time(((cs.get("lastState") or {}).get("terminated") or {}).get("finishedAt")))
    ]
    if restarts and last:
        restart_text += f" ({format_age(now - max(last))} ago)"
    meta = pod.get("metadata") or {}
    created = parse_time(meta.get("creationTimestamp")) or parse_time(status.get("startTime"))
    age = format_age(now - created.timestamp()) if created else "?"
    return [str(meta.get("name", "")), f"{ready}/{wanted}", format_pod_status(pod), restart_text, age]
