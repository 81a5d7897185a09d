"""``python -m trainop.operator``: run the Kubernetes operator (flags: ``--help``; contract §6.4).

Parses flags (a bad one exits 2 with what to change), sets up logging, runs the Operator until
SIGTERM/SIGINT, then releases the lease and closes connections. Exits 1 if leadership is lost.
"""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

# Only gc, os and sys at the top: everything else is imported once main() has paused the collector.
if TYPE_CHECKING:
    import asyncio

    from trainop.operator.flags import OperatorConfig

# asyncio's SSLProtocol gives every TLS connection a 256 KiB read buffer, allocated and zeroed up
# front: with the client's ~50 connections to the API server (32 + 8 status + one per watch) that was
# 13 MB of the operator's RSS. 32 KiB is about two full TLS records; a larger answer takes more reads.
SSL_READ_BUFFER = 32 * 1024

LOG_LEVELS = {"debug": "DEBUG", "info": "INFO", "warn": "WARNING", "warning": "WARNING",
              "error": "ERROR"}  # fmt: skip

# pydantic looks for plugins in every installed distribution's entry points when it builds its first
# model. The operator uses none (nor does the CLI: cli/main.py) and starts no process that would
# inherit the setting; a value the user set is kept.
PYDANTIC_PLUGINS = "PYDANTIC_DISABLE_PLUGINS"

# A young-generation pass after 10,000 net new container objects instead of the interpreter's 700.
# The operator allocates fast (decoded watch events, request and plan objects) and nearly all of it
# is freed by reference counting, not by the collector: 200 x (1+3) jobs at 200/400 made ~110 young
# passes that found 62 garbage objects in all. Older generations keep their ratios (10, 10).
GC_THRESHOLDS = (10_000, 10, 10)


async def serve(cfg: OperatorConfig) -> int:
    import asyncio
    import logging
    import signal

    from lightkube.core.exceptions import ConfigError
    from prometheus_client import disable_created_metrics

    from trainop.operator.manager import LeadershipLost, Operator, StartupError

    disable_created_metrics()  # type: ignore[no-untyped-call]  # upstream's counters have no *_created series
    try:
        op = Operator(cfg)
    except (ConfigError, ValueError, OSError) as exc:
        print(
            f"trainop operator: cannot reach Kubernetes: {exc} (pass --kubeconfig or set KUBECONFIG)",
            file=sys.stderr,
        )
        return 1
    end_startup_gc_pause()
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(quiet_closed_tls)
    main = asyncio.current_task()
    assert main is not None
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, main.cancel)
    try:
        await op.run()
        return 0
    except LeadershipLost as exc:
        logging.getLogger("trainop.operator").error("%s; exiting so a standby can take over", exc)
        return 1
    except StartupError as exc:
        print(f"trainop operator: {exc}", file=sys.stderr)
        return 1
    except asyncio.CancelledError:
        return 0
    finally:
        await op.shutdown()


def quiet_closed_tls(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """The loop's exception handler, except for one report: uvloop calls "Fatal error on SSL
    protocol" (with a traceback) a TLS connection that receives bytes after its socket was closed
    under it, which happens to the API server's watch connections when the operator stops while
    events are arriving (test_operator_faults' SIGTERM during start-up). The connection is being
    dropped on purpose; that report goes to the debug log."""
    exc = context.get("exception")
    if (
        context.get("message") == "Fatal error on SSL protocol"
        and isinstance(exc, RuntimeError)
        and "handler is closed" in str(exc)
    ):
        import logging

        logging.getLogger("trainop.operator").debug("TLS connection closed with data pending: %s", exc)
        return
    loop.default_exception_handler(context)


def set_ssl_read_buffer(size: int = SSL_READ_BUFFER) -> None:
    """Make asyncio's TLS read buffer ``size`` bytes for this process (the operator's entrypoint only:
    the SDK and CLI keep the interpreter's default)."""
    from asyncio import sslproto

    if isinstance(getattr(sslproto.SSLProtocol, "max_size", None), int):
        sslproto.SSLProtocol.max_size = size


def end_startup_gc_pause() -> None:
    """What start-up made is frozen (no collection scans it again; reference counting still frees
    it) and the collector runs from here on, with GC_THRESHOLDS. See ``main``."""
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
    gc.enable()


def main(argv: Sequence[str] | None = None) -> int:
    # Start-up (the imports, pydantic's validators, the Operator's wiring) makes ~90,000 objects that
    # live as long as the process. Collector passes while they are being made find next to nothing
    # (~800 objects) and cost ~25 ms of CPU, and every full collection of the run would scan them
    # again. So the collector is paused until the Operator is built (serve), then what exists is
    # frozen, as the CLI does for its commands (cli/__init__.py).
    gc.disable()
    try:
        return _main(argv)
    finally:
        gc.enable()  # also after an early return: a bad flag, no cluster


def _main(argv: Sequence[str] | None) -> int:
    import asyncio
    import logging

    os.environ.setdefault(PYDANTIC_PLUGINS, "__all__")  # before the flags import the API models
    from trainop.operator.flags import FlagError, parse_flags

    try:
        cfg = parse_flags(sys.argv[1:] if argv is None else argv)
    except FlagError as exc:
        print(f"trainop operator: {exc}", file=sys.stderr)
        return 2
    logging.basicConfig(
        level=LOG_LEVELS.get(cfg.log_level, "INFO"),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    logging.getLogger("httpx2").setLevel(logging.WARNING)
    logging.getLogger("httpcore2").setLevel(logging.WARNING)
    set_ssl_read_buffer()
    from trainop.backends.kubernetes.client import event_loop_factory

    try:
        with asyncio.Runner(loop_factory=event_loop_factory()) as runner:
            return runner.run(serve(cfg))
    except KeyboardInterrupt:
        return 0


if __name__ == "__main__":
    sys.exit(main())
