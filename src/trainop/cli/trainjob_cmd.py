"""Kubeflow Trainer v2 in the CLI: ``trainop convert`` (a v1 job as a TrainJob), and what ``get`` and
``describe`` print for a TrainJob the backend serves (``JobClient.get_trainjob``). ``trainop run
FILE`` hands a TrainJob to ``backends.local.trainjob`` (cli/main.py ``_run_trainjob_file``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from trainop.api.trainer_rules import is_trainer_object


def convert_file(docs: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
    """Each kubeflow.org/v1 job of ``docs`` as a TrainJob, and the notes (prefixed by the job's name
    when there are several). Raises InvalidJobError or NoTrainJobEquivalentError."""
    from trainop.api.load import parse_job
    from trainop.core.convert import NoTrainJobEquivalentError, build_trainjob
    from trainop.frameworks.registry import REGISTRY

    out: list[dict[str, Any]] = []
    notes: list[str] = []
    for doc in docs:
        if is_trainer_object(doc):
            raise NoTrainJobEquivalentError(f"{doc.get('kind')} is already a trainer.kubeflow.org object")
        job = parse_job(doc)
        conversion = build_trainjob(job, REGISTRY.get(job.kind))
        out.append(conversion.trainjob)
        prefix = f"{job.kind}/{job.name}: " if len(docs) > 1 else ""
        notes += [prefix + n for n in conversion.notes]
    return out, notes


TRAINJOB_WORDS = ("trainjob", "trainjobs", "trainjob.trainer.kubeflow.org", "trainjobs.trainer.kubeflow.org")


def _newest_true(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """The newest True condition ({} before any)."""
    conditions = (obj.get("status") or {}).get("conditions") or []
    return next((c for c in reversed(conditions) if c.get("status") == "True"), {})


def trainjob_state(obj: Mapping[str, Any]) -> str:
    """The newest True condition's type (Complete, Failed, Suspended), else Running."""
    return str(_newest_true(obj).get("type") or "Running")


def _age(meta: Mapping[str, Any], now: float) -> str:
    from trainop.cli.format import format_age
    from trainop.core.status import parse_time

    created = parse_time(meta.get("creationTimestamp"))
    return format_age(now - created.timestamp()) if created is not None else "?"


def build_trainjob_rows(
    objs: Sequence[Mapping[str, Any]], all_namespaces: bool, now: float
) -> tuple[list[str], list[list[str]]]:
    """``get trainjobs``' columns and rows: NAME STATE RUNTIME AGE (NAMESPACE first with -A)."""
    columns = ["NAMESPACE"] * all_namespaces + ["NAME", "STATE", "RUNTIME", "AGE"]
    rows = []
    for o in objs:
        meta = o.get("metadata") or {}
        runtime = str(((o.get("spec") or {}).get("runtimeRef") or {}).get("name", ""))
        ns = [str(meta.get("namespace") or "default")] * all_namespaces
        rows.append([*ns, str(meta.get("name")), trainjob_state(o), runtime, _age(meta, now)])
    return columns, rows


def format_trainjob_steps(obj: Mapping[str, Any]) -> str:
    """The REPLICAS cell of a TrainJob in ``get``'s table of every kind: per step, its child Jobs
    ready or done of all (``jobsStatus``, as JobSet counts them), ``node 1/1 (1 failed)``."""
    cells = []
    for js in (obj.get("status") or {}).get("jobsStatus") or []:
        counts = {k: int(js.get(k) or 0) for k in ("ready", "succeeded", "failed", "active", "suspended")}
        wanted = counts["active"] + counts["succeeded"] + counts["failed"] + counts["suspended"]
        failed = f" ({counts['failed']} failed)" if counts["failed"] else ""
        cells.append(f"{js.get('name')} {counts['ready'] + counts['succeeded']}/{wanted}{failed}")
    return ", ".join(cells)


def build_trainjob_job_row(obj: Mapping[str, Any], all_namespaces: bool, wide: bool, now: float) -> list[str]:
    """A TrainJob's row in ``get``'s table of every kind (cli.listing.build_job_columns, no kind):
    KIND TrainJob; wide RESTARTS are JobSet's whole-job restarts, REASON its newest condition's."""
    from trainop.api.constants import ANNOTATION_JOBSET_RESTARTS

    meta = obj.get("metadata") or {}
    row = [str(meta.get("namespace") or "default")] * all_namespaces
    row += [str(meta.get("name")), "TrainJob", trainjob_state(obj), _age(meta, now)]
    if wide:
        restarts = str((meta.get("annotations") or {}).get(ANNOTATION_JOBSET_RESTARTS) or 0)
        row += [restarts, str(_newest_true(obj).get("reason") or "")]
    return [*row, format_trainjob_steps(obj)]


def describe_trainjob(obj: Mapping[str, Any], pods: Sequence[Mapping[str, Any]]) -> list[str]:
    """``describe``'s lines for a TrainJob: what it runs on, its conditions, steps and pods."""
    meta, spec, status = obj.get("metadata") or {}, obj.get("spec") or {}, obj.get("status") or {}
    ref = spec.get("runtimeRef") or {}
    lines = [
        f"Name:         {meta.get('name')}",
        f"Namespace:    {meta.get('namespace') or 'default'}",
        f"Kind:         TrainJob ({obj.get('apiVersion')})",
        f"Runtime:      {ref.get('kind', 'ClusterTrainingRuntime')}/{ref.get('name')}",
        f"Created:      {meta.get('creationTimestamp')}",
        f"State:        {trainjob_state(obj)}",
        "Conditions:",
    ]
    conds = status.get("conditions") or []
    lines += [
        f"  {c.get('type')}={c.get('status')} {c.get('reason', '')}: {c.get('message', '')}" for c in conds
    ] or ["  <none>"]
    lines.append("Steps (jobsStatus):")
    for js in status.get("jobsStatus") or []:
        counts = ", ".join(f"{k} {js.get(k, 0)}" for k in ("active", "ready", "succeeded", "failed"))
        lines.append(f"  {js.get('name')}: {counts}")
    lines.append("Pods:")
    for p in pods:
        st = p.get("status") or {}
        code = f" (exit code {st['exitCode']})" if st.get("exitCode") not in (None, 0) else ""
        lines.append(f"  {p['metadata']['name']}: {st.get('phase', 'Pending')}{code}")
    return lines
