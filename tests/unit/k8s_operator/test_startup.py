"""What the operator's start costs: modules only a rare path needs stay out of it, and the collector,
paused while start-up builds its long-lived objects, is on again however ``main`` returns."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

# Imported only where they are used: the admission rules (and the pod schema they load) when a pass
# cannot be reconciled or the webhook serves, cryptography when the webhook starts.
NOT_ON_THE_HOT_START = ("trainop.api.validation", "trainop.api.podschema", "cryptography")


def run_python(code: str, env: dict[str, str] | None = None) -> object:
    """``code`` in a fresh interpreter (a module imported once stays imported); its last line prints
    JSON, which is returned."""
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True, timeout=60, env=env
    )
    return json.loads(out.stdout.splitlines()[-1])


def test_operator_modules_leave_rare_paths_out() -> None:
    code = (
        "import json, sys\n"
        "import trainop.operator.__main__, trainop.operator.manager\n"
        f"print(json.dumps([m for m in {list(NOT_ON_THE_HOT_START)!r} if m in sys.modules]))\n"
    )
    assert run_python(code) == []


@pytest.mark.parametrize(
    ("argv", "env", "want"),
    [
        pytest.param(["--zap-log-level=loud"], {}, [2, True, "__all__"], id="bad flag: collector on again"),
        pytest.param(
            ["--zap-log-level=loud"],
            {"PYDANTIC_DISABLE_PLUGINS": "logfire"},
            [2, True, "logfire"],
            id="the user's pydantic plugin setting is kept",
        ),
    ],
)
def test_main_returns_with_the_collector_on(argv: list[str], env: dict[str, str], want: list[object]) -> None:
    code = (
        "import gc, json, os\n"
        "from trainop.operator.__main__ import main\n"
        f"rc = main({argv!r})\n"
        "print(json.dumps([rc, gc.isenabled(), os.environ.get('PYDANTIC_DISABLE_PLUGINS')]))\n"
    )
    base = {k: v for k, v in os.environ.items() if k != "PYDANTIC_DISABLE_PLUGINS"}
    assert run_python(code, {**base, **env}) == want


def test_end_of_start_up_freezes_and_collects_with_the_operators_thresholds() -> None:
    code = (
        "import gc, json\n"
        "from trainop.operator.__main__ import GC_THRESHOLDS, end_startup_gc_pause\n"
        "gc.disable()\n"
        "end_startup_gc_pause()\n"
        "frozen = gc.get_freeze_count() > 0\n"
        "print(json.dumps([gc.isenabled(), frozen, gc.get_threshold() == GC_THRESHOLDS]))\n"
    )
    assert run_python(code) == [True, True, True]
