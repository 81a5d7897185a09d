"""The ``trainop`` command line (``main.py``), its ``describe`` printout and formatting helpers.

Importing the package pauses the garbage collector: the command's start-up allocates a few hundred
thousand objects that live as long as the process (typer, pydantic, the API models), and collector
passes over them while they are being imported are wasted work (about 10 ms of every command, on
the path from ``trainop submit`` to the replicas running). ``main._backend`` freezes what start-up
made and switches collection back on, so long-running commands (``run``, ``logs -f``) collect as usual.
"""

import gc

gc.disable()
