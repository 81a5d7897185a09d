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
