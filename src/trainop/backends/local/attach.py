"""Which ``trainop run`` a local job is attached to, and whether that process is still there.

``run`` records itself (pid, start time, boot) in the job's ``trainop.dev/attached-client``
annotation; once that process is gone the job's supervisor stops the unfinished job as run's Ctrl-C
does (suspended and marked interrupted: its record and logs stay), so a ``run`` killed with SIGKILL
(or whose terminal vanished) never leaves its job running. Jobs from ``submit`` or the SDK have no
attached client. Decides nothing else; reads /proc only through ``procs``.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeGuard

from trainop.api.constants import (
    ANNOTATION_ATTACHED_CLIENT,
    ANNOTATION_INTERRUPTED,
    COND_FAILED,
    COND_SUCCEEDED,
)
from trainop.backends.local import procs


@dataclass(frozen=True, slots=True)
class Client:
    """A process as /proc names it for good: a pid is reused, (pid, start ticks, boot id) is not."""

    pid: int
    ticks: int | None
    boot: str


def build_client(pid: int | None = None) -> Client:
    """This process (or ``pid``) as an attached client."""
    pid = os.getpid() if pid is None else pid
    return Client(pid, procs.start_ticks(pid), procs.boot_id())


def format_client(client: Client) -> str:
    return json.dumps({"pid": client.pid, "startTicks": client.ticks, "bootId": client.boot})


def parse_client(manifest: Mapping[str, Any]) -> Client | None:
    """The attached client a stored manifest names; None when it names none (or something unreadable,
    which no ``run`` wrote: a job is never stopped because of a value a user typed)."""
    meta = manifest.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, Mapping) else None
    raw = annotations.get(ANNOTATION_ATTACHED_CLIENT) if isinstance(annotations, Mapping) else None
    if not isinstance(raw, str):
        return None
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(value, dict):
        return None
    pid, ticks, boot = value.get("pid"), value.get("startTicks"), value.get("bootId")
    if _is_int(pid) and pid > 0 and (ticks is None or _is_int(ticks)) and isinstance(boot, str):
        return Client(pid, ticks, boot)
    return None


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def is_client_alive(client: Client) -> bool:
    return procs.is_alive(client.pid, client.ticks, client.boot or None)


def _is_finished(status: Mapping[str, Any]) -> bool:
    conditions = status.get("conditions")
    return isinstance(conditions, list) and any(
        isinstance(c, Mapping)
        and c.get("type") in (COND_SUCCEEDED, COND_FAILED)
        and c.get("status") == "True"
        for c in conditions
    )


def _is_suspended(manifest: Mapping[str, Any]) -> bool:
    spec = manifest.get("spec")
    run_policy = spec.get("runPolicy") if isinstance(spec, Mapping) else None
    return isinstance(run_policy, Mapping) and run_policy.get("suspend") is True


def detect_client_gone(manifest: Mapping[str, Any], status: Mapping[str, Any]) -> str | None:
    """Why the job must be stopped because the ``trainop run`` it is attached to is gone; None when
    it has no attached client, the client lives, or nothing runs that it would stop (the job has
    finished: ``run`` exits after that; or it is suspended)."""
    client = parse_client(manifest)
    if client is None or _is_finished(status) or _is_suspended(manifest) or is_client_alive(client):
        return None
    return (
        f"trainop run (pid {client.pid}), which this job is attached to, ended without stopping it "
        "(killed, or its terminal vanished); the job is stopped as run's Ctrl-C does: suspended and "
        "marked interrupted, its record and logs kept"
    )


def build_interrupted_manifest(manifest: Mapping[str, Any], generation: int, at: str) -> dict[str, Any]:
    """``manifest`` suspended and marked interrupted at ``at`` (RFC 3339): the spec update run's
    Ctrl-C makes through ``LocalBackend.set_suspend(..., interrupted=True)``, for the supervisor to
    make itself once run is gone. ``generation``: the stored one (a spec change bumps it)."""
    doc = copy.deepcopy(dict(manifest))
    meta = _child(doc, "metadata")
    _child(meta, "annotations")[ANNOTATION_INTERRUPTED] = at
    _child(_child(doc, "spec"), "runPolicy")["suspend"] = True
    meta["generation"] = generation + 1
    return doc


def _child(parent: dict[str, Any], key: str) -> dict[str, Any]:
    """``parent[key]``, replaced by an empty dict first when it is not one."""
    if not isinstance(parent.get(key), dict):
        parent[key] = {}
    child: dict[str, Any] = parent[key]
    return child


def drop_dead_client(annotations: dict[str, Any]) -> None:
    """Forget an attached client that is gone (a job resumed after its ``run`` ended runs detached,
    as a submitted one, instead of being stopped again at once)."""
    client = parse_client({"metadata": {"annotations": annotations}})
    if ANNOTATION_ATTACHED_CLIENT in annotations and (client is None or not is_client_alive(client)):
        del annotations[ANNOTATION_ATTACHED_CLIENT]
