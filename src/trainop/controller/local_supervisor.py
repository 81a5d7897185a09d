"""The local supervisor's former module path (it is the local backend's: backends/local/supervisor.py,
started by backends/local/spawn.py; issue 14). Kept only so that ``python -m
trainop.controller.local_supervisor --home H UID``, as docs/local-backend.md and earlier releases
start it, still supervises a job; nothing in trainop imports this module.
"""

from __future__ import annotations

import sys

from trainop.backends.local.supervisor import main

if __name__ == "__main__":
    sys.exit(main())
