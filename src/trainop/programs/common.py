"""What both programs share: the error a user can act on, and ``run_main``, which prints it as one
line on stderr (never a traceback) and exits non-zero. No heavy import here."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from importlib import metadata
from typing import Any

EXIT_USAGE = 2  # like argparse: the arguments (or what they point at) are wrong


class ProgramError(Exception):
    """A problem the user fixes by changing an argument, a file or a version; ``str`` says which."""


def run_main(prog: str, main: Callable[[Sequence[str] | None], int], argv: Sequence[str] | None) -> int:
    """``main(argv)``, with a ProgramError printed as ``<prog>: error: <message>`` and exit code 2."""
    try:
        return main(argv)
    except ProgramError as e:
        print(f"{prog}: error: {e}", file=sys.stderr, flush=True)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130


def parse_json_object(text: str, arg: str) -> dict[str, Any]:
    """``text`` as a JSON object, or a ProgramError naming the argument ``arg``."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        raise ProgramError(f"{arg}: not valid JSON ({e.msg} at line {e.lineno} column {e.colno})") from None
    if not isinstance(value, dict):
        raise ProgramError(f"{arg}: must be a JSON object, got {type(value).__name__}")
    return value


def version_of(dist: str) -> str:
    """The installed version of ``dist``, or ``not installed``."""
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def need(module: str, dist: str) -> Any:
    """Import ``module`` or say how to install the ``finetune`` extra that provides ``dist``."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise ProgramError(
            f"{dist} is needed ({e}); install trainop's finetune extra: pip install 'trainop[finetune]'"
        ) from None
