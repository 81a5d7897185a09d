"""The ``trainop`` command line (``main.py``), its ``describe`` printout and formatting helpers.

Importing the package pauses the garbage collector: the command's start-up allocates a few hundred
thousand objects that live as long as the process (typer, pydantic, the API models), and collector
passes over them while they are being imported are wasted work (about 10 ms of every command, on
the path from ``trainop submit`` to the replicas running). ``main._backend`` freezes what start-up
made and switches collection back on, so long-running commands (``run``, ``logs -f``) collect as usual.

When the process is the ``trainop`` command itself, a stop signal during its start-up (the ~0.2 s of
imports before a command's own handling; ``run``: until its handlers are in place) ends it at once
with one line and 128 + the signal, where Python would print a KeyboardInterrupt traceback: nothing
has been done yet. ``main._root`` puts the defaults back for every command but ``run``.
"""

import gc
import itertools
import os
import signal
import sys

gc.disable()

_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _started_as_the_command() -> bool:
    """The console script, or ``python -m trainop.cli.main``; not a program importing the package
    (tests, the web view, a notebook), whose signals are its own."""
    argv = list(sys.orig_argv)
    as_module = any(a == "-m" and b == "trainop.cli.main" for a, b in itertools.pairwise(argv))
    return as_module or os.path.basename(sys.argv[0] if sys.argv else "") == "trainop"


def _stop_while_starting(signum: int, _frame: object) -> None:
    name = "Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name
    os.write(2, f"interrupted by {name} while trainop was starting; nothing was done\n".encode())
    os._exit(128 + signum)


def restore_stop_signals() -> None:
    """The defaults back (a command handles its own stops from here), where start-up's handler is."""
    for sig in _STOP_SIGNALS:
        if signal.getsignal(sig) is _stop_while_starting:
            signal.signal(sig, signal.default_int_handler if sig == signal.SIGINT else signal.SIG_DFL)


if _started_as_the_command():
    for _sig in _STOP_SIGNALS:
        if signal.getsignal(_sig) is not signal.SIG_IGN:  # nohup's SIGHUP stays ignored
            signal.signal(_sig, _stop_while_starting)
