"""``trainop run``'s SIGINT (Ctrl-C), SIGTERM (``timeout``, a CI cancel) and SIGHUP (a closed terminal),
handled alike at every moment from start to exit. Before ``record`` a signal raises ``Interrupted`` at
once (no job exists yet: there is nothing to stop); from then on it is only recorded and counted, and
``run`` acts on it where it chooses (it stops the job and keeps it; one more signal kills the
replicas now: cli/interrupt.py). It never stops a job itself.
"""

from __future__ import annotations

import os
import signal
from types import FrameType

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Interrupted(KeyboardInterrupt):
    """A stop signal before the submit (a KeyboardInterrupt, so that nothing on the way, typer
    included, takes SIGTERM or SIGHUP for anything other than Ctrl-C)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def compute_exit_code(signum: int) -> int:
    """128 + the signal, as a shell reports it: 130 for Ctrl-C, 143 for SIGTERM, 129 for SIGHUP."""
    return 128 + signum


def describe_signal(signum: int) -> str:
    return "Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name


class StopSignals:
    """The handlers of one ``run``: ``received`` is the first stop signal, ``count`` how many came."""

    def __init__(self) -> None:
        self.received: int | None = None
        self.count = 0
        self._raise = True
        self._pid = os.getpid()

    @classmethod
    def install(cls) -> StopSignals:
        """Handle the three signals, except one this process was started with ignored: nohup's
        SIGHUP, a background job's SIGINT are the parent's wish, as for any Unix command."""
        handlers = cls()
        for sig in STOP_SIGNALS:
            if signal.getsignal(sig) is not signal.SIG_IGN:
                signal.signal(sig, handlers._on_signal)
        return handlers

    def _on_signal(self, signum: int, _frame: FrameType | None) -> None:
        if os.getpid() != self._pid:
            return  # a child forked to become a supervisor, before it resets its handlers: not run
        self.count += 1
        if self.received is None:
            self.received = signum
        if self._raise:
            self._raise = False  # one raise: a second signal cannot interrupt the handling of the first
            raise Interrupted(signum)

    def record(self) -> None:
        """From now on signals are only recorded (the job may exist: run decides what to do)."""
        self._raise = False
