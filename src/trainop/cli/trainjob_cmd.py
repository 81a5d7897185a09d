"""``trainop run FILE`` for Kubeflow Trainer v2 files: a TrainJob (with any runtimes beside it) runs
in the foreground on this machine; ``--dry-run`` prints the pods and objects it becomes on a cluster.

Thin: reads the file, hands it to ``backends.local.trainjob``, prints errors as the CLI does.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from trainop.api.trainer_rules import is_trainer_object


def holds_trainjob(docs: list[dict[str, Any]]) -> bool:
    return any(is_trainer_object(d) for d in docs)


def run_trainjob(docs: list[dict[str, Any]], base_dir: Path, *, namespace: str | None, dry_run: bool) -> int:
    """Exit code: 0 Complete, 1 Failed; InvalidJobError propagates to the CLI's error printer."""
    from trainop.backends.local.trainjob import render_trainjob, run_trainjob_file

    if dry_run:
        import yaml

        sys.stdout.write(yaml.safe_dump_all(render_trainjob(docs), sort_keys=False))
        return 0
    return run_trainjob_file(docs, base_dir, sys.stdout, namespace=namespace)


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
