"""The local supervisor's former module path (it is the local backend's: backends/local/supervisor.py,
and its spawners backends/local/spawn.py; issue 14). Kept only so that ``python -m
trainop.controller.local_supervisor --home H UID``, which older docs and releases spawn, still
supervises a job, and so that an import of ``spawn_forked`` from here keeps working; new code
imports neither from here.
"""

from __future__ import annotations

import sys

from trainop.backends.local.spawn import spawn_forked
from trainop.backends.local.supervisor import main

__all__ = ["main", "spawn_forked"]

if __name__ == "__main__":
    sys.exit(main())
