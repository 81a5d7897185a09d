"""How a job's supervisor (backends/local/supervisor.py) is started, detached from the caller: a fresh
``python -m`` process (the default of LocalBackend and the SDK), or a double fork of the caller (the
CLI: no interpreter start, the imports already made are reused). The supervisor module is imported
here only when a supervisor is started, so that importing the local backend stays light; the
supervisor imports nothing of this module or of backends/local/api.py. I/O adapter.
"""

from __future__ import annotations

import gc
import os
import signal
import subprocess
import sys
import threading
import traceback
from collections.abc import Callable, Mapping
from pathlib import Path

from trainop.backends.local.paths import StatePaths, open_log

# Starts a job's supervisor: (state paths, job uid, environment, supervisor log file).
Spawner = Callable[[StatePaths, str, Mapping[str, str], Path], None]


def spawn_supervisor_process(paths: StatePaths, uid: str, env: Mapping[str, str], log_path: Path) -> None:
    """Start ``python -m trainop.backends.local.supervisor`` detached: its own session, and not our
    child (``sh -c '… &'`` exits at once), so it outlives this process and never lingers as our zombie."""
    from trainop.backends.local import supervisor

    argv = [sys.executable, "-m", supervisor.__name__, "--home", str(paths.home), uid]
    with open_log(log_path) as out:
        subprocess.run(
            ["/bin/sh", "-c", 'exec "$@" </dev/null &', "sh", *argv],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=dict(env),
            start_new_session=True,
            close_fds=True,
            check=True,
        )


def spawn_forked(paths: StatePaths, uid: str, env: Mapping[str, str], log_path: Path) -> None:
    """Start the job's supervisor by forking this process twice (detached in its own session, and
    nobody's zombie). It skips an interpreter start and reuses the imports the caller already made,
    which is most of the time from ``trainop submit`` to the replicas running. Only safe in a
    single-threaded process: with other threads alive it falls back to a fresh process."""
    if threading.active_count() > 1:
        spawn_supervisor_process(paths, uid, env, log_path)
        return
    # Imported before the fork, so that the child reuses them (and a broken install fails here).
    from trainop.backends.local.supervisor import main

    sys.stdout.flush()
    sys.stderr.flush()
    # Python's advice for a process that forks workers: the child's collections then skip every
    # object it inherited, so they never write to (and copy) the pages it shares with its parent.
    gc.freeze()
    first = os.fork()
    if first > 0:
        os.waitpid(first, 0)  # the intermediate child exits at once
        return
    code = 1
    try:
        os.setsid()
        if os.fork() > 0:
            os._exit(0)
        gc.enable()  # a long-running process, whatever its parent's setting
        out = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(out, 1)
        os.dup2(out, 2)
        os.environ.clear()
        os.environ.update(env)
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGPIPE):
            signal.signal(sig, signal.SIG_DFL)
        code = main(["--home", str(paths.home), uid])
    except BaseException:
        traceback.print_exc()
    finally:
        os._exit(code)  # never return into the caller's stack (the CLI), never run its atexit hooks
