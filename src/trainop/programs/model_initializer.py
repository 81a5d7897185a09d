"""Kubeflow Trainer v2's model initializer on this machine: ``STORAGE_URI`` into
``<workspace>/model`` (trainop.programs.v2_initializer).

``python -m trainop.programs.model_initializer [--workspace DIR]``
"""

from __future__ import annotations

from collections.abc import Sequence

from trainop.programs.common import run_main
from trainop.programs.v2_initializer import main_for

PROG = "model-initializer"


def main(argv: Sequence[str] | None = None) -> int:
    return main_for("model", PROG, argv)


if __name__ == "__main__":
    raise SystemExit(run_main(PROG, main, None))
