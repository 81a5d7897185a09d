"""``trainop get`` as kubectl's: jobs or their replicas as pods (``get pods``), ``-l`` selectors,
``-o wide|name|yaml|json|jsonpath=…``, ``-w`` (a row each time one changes), and the job selection
``delete --all / -l`` shares. Reads through the ``JobClient`` (backends/base.py); changes nothing.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TextIO

from trainop.cli.format import build_pod_row, format_age, format_replicas, running_pid
from trainop.cli.selectors import Requirement, matches

if TYPE_CHECKING:
    from trainop.api.common import TrainingJob
    from trainop.backends.base import JobClient

POD_WORDS = ("pods", "pod", "po")
OUTPUTS = ("yaml", "json", "wide", "name", "jsonpath=TEMPLATE")
WATCH_POLL = 0.5


class OutputError(ValueError):
    pass


def check_output(output: str | None) -> None:
    if output is None or output in ("yaml", "json", "wide", "name") or output.startswith("jsonpath="):
        return
    if output.startswith("jsonpath"):
        raise OutputError(f'"{output}": write -o jsonpath=TEMPLATE, e.g. -o jsonpath={{.metadata.name}}')
    raise OutputError(f'unknown output format "{output}"; use one of: {", ".join(OUTPUTS)}')


def select_jobs(
    backend: JobClient, namespace: str | None, kind: str | None, selector: list[Requirement] | None
) -> list[TrainingJob]:
    jobs = backend.list_jobs(namespace, kind)
    return [j for j in jobs if selector is None or matches(j.metadata.labels, selector)]


def job_restarts(pods: Sequence[dict[str, Any]]) -> int:
    return sum(
        int(cs.get("restartCount") or 0)
        for p in pods
        for cs in (p.get("status") or {}).get("containerStatuses") or []
    )


def compute_display_state(job: TrainingJob) -> str:
    """The STATE column: the newest True condition, ``Interrupted`` for a job ``trainop run``'s Ctrl-C
    suspended (annotated trainop.dev/interrupted) rather than a user's suspend."""
    from trainop.api.constants import ANNOTATION_INTERRUPTED
    from trainop.backends.base import detect_state

    state = detect_state(job)
    if state == "Suspended" and ANNOTATION_INTERRUPTED in (job.metadata.annotations or {}):
        return "Interrupted"
    return state


def job_reason(job: TrainingJob) -> str:
    """The reason of the job's newest True condition ("" when none): ``get``'s REASON column, and
    the web view's (ui/views.py)."""
    for cond in reversed((job.status.conditions if job.status else None) or []):
        if cond.status == "True":
            return cond.reason or ""
    return ""


@dataclass
class Table:
    """Plain columns as kubectl prints them (three spaces apart); rows printed later (``-w``) keep
    the widths seen so far."""

    columns: list[str]
    out: TextIO
    widths: list[int] = field(default_factory=list)

    def print_rows(self, rows: Sequence[Sequence[str]], header: bool) -> None:
        lines = ([self.columns] if header else []) + [list(r) for r in rows]
        if not self.widths:
            self.widths = [0] * len(self.columns)
        for r in lines:
            self.widths = [max(w, len(c)) for w, c in zip(self.widths, r, strict=True)]
        for r in lines:
            text = "   ".join(c.ljust(w) for c, w in zip(r, self.widths, strict=True)).rstrip()
            self.out.write(text + "\n")
        self.out.flush()


def build_job_columns(all_namespaces: bool, kind: str | None, wide: bool) -> list[str]:
    cols = (["NAMESPACE"] if all_namespaces else []) + ["NAME"] + ([] if kind else ["KIND"])
    cols += ["STATE", "AGE"] + (["RESTARTS", "REASON"] if wide else []) + ["REPLICAS"]
    return cols


def build_job_row(
    job: TrainingJob, state: str, all_namespaces: bool, kind: str | None, restarts: int | None, now: float
) -> list[str]:
    created = job.metadata.creation_timestamp
    age = format_age(now - created.timestamp()) if created else "?"
    row = ([job.namespace] if all_namespaces else []) + [job.name] + ([] if kind else [job.kind])
    row += (
        [state, age]
        + ([str(restarts), job_reason(job)] if restarts is not None else [])
        + [format_replicas(job)]
    )
    return row


POD_COLUMNS = ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
POD_WIDE = ["PID", "PORT", "NODE", "JOB"]


def list_pods(
    backend: JobClient, namespace: str | None, name: str | None, selector: list[Requirement] | None
) -> list[tuple[TrainingJob, dict[str, Any], int | None]]:
    """(job, pod, port) of every pod in scope: ``name`` is a pod's name, or a job's (its pods)."""
    out = []
    for job, pod, port in backend.replica_pods(namespace):
        meta = pod.get("metadata") or {}
        if name is not None and name not in (meta.get("name"), job.name):
            continue
        if selector is not None and not matches(meta.get("labels"), selector):
            continue
        out.append((job, pod, port))
    return out


def build_pod_cells(
    job: TrainingJob, pod: dict[str, Any], port: int | None, wide: bool, now: float
) -> list[str]:
    cells = build_pod_row(pod, now)
    if wide:
        containers = (pod.get("status") or {}).get("containerStatuses") or []
        pids = [pid for cs in containers if (pid := running_pid(cs))]
        node = str((pod.get("spec") or {}).get("nodeName") or "<none>")
        cells += [",".join(pids) or "<none>", str(port) if port else "<none>", node, job.name]
    return cells


def render_objects(objs: list[dict[str, Any]], output: str, single: bool) -> str:
    """yaml, json, name or jsonpath text for ``objs`` (one object when ``single``, else a List)."""
    from trainop.cli.jsonpath import render_jsonpath

    if output == "name":
        return "".join(f"{_resource(o)}/{o['metadata']['name']}\n" for o in objs)
    doc: Any = objs[0] if single else {"apiVersion": "v1", "kind": "List", "items": objs}
    if output.startswith("jsonpath="):
        return render_jsonpath(output.removeprefix("jsonpath="), doc)
    if output == "json":
        return json.dumps(doc, indent=2) + "\n"
    import yaml

    return str(yaml.safe_dump(doc, sort_keys=False))


def _resource(obj: dict[str, Any]) -> str:
    kind = str(obj.get("kind", ""))
    return "pod" if kind == "Pod" else f"{kind.lower()}.kubeflow.org"


_AGO = re.compile(r" \([^()]* ago\)$")  # RESTARTS' "1 (5s ago)": the clock, not the pod, moves it


def watch_rows(
    snapshot: Callable[[], dict[tuple[str, str], list[str]]],
    table: Table,
    gone_row: Callable[[list[str]], list[str]],
    first: dict[tuple[str, str], list[str]],
    stable: Callable[[list[str]], list[str]],
    poll: float = WATCH_POLL,
) -> None:
    """``-w``: after the first table, a row each time an object changes (its AGE aside, and how long
    ago a restart was), and one for each that goes away. Runs until interrupted."""

    def key(row: list[str]) -> list[str]:
        return [_AGO.sub("", cell) for cell in stable(row)]

    seen = {k: key(v) for k, v in first.items()}
    rows = dict(first)
    while True:
        time.sleep(poll)
        now_rows = snapshot()
        changed = [r for k, r in now_rows.items() if seen.get(k) != key(r)]
        gone = [gone_row(rows[k]) for k in rows if k not in now_rows]
        if changed or gone:
            table.print_rows(changed + gone, header=False)
        seen = {k: key(v) for k, v in now_rows.items()}
        rows = now_rows
