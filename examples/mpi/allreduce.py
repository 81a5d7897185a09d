"""An MPI allreduce over every rank `mpirun` started on the job's Worker replicas (mpi4py, OpenMPI).

The Launcher runs `mpirun -np N python allreduce.py`; mpirun finds the workers in the hostfile the
operator writes (OMPI_MCA_orte_default_hostfile) and starts its daemons on them through the rsh agent
(OMPI_MCA_plm_rsh_agent; kubexec.sh on Kubernetes, the local backend's agent on one machine), contract
§3.9. Each rank reports where it runs and the result of a sum and a vector allreduce.
Lines prefixed TRAINOP_E2E are JSON that tests/e2e reads.
"""

from __future__ import annotations

import json
import os
import socket
import sys
from typing import Any

import numpy as np
from mpi4py import MPI


def report(event: str, **fields: Any) -> None:
    # One write per line, so output of other threads or processes cannot land inside it.
    sys.stdout.write("TRAINOP_E2E " + json.dumps({"event": event, **fields}, sort_keys=True) + "\n")
    sys.stdout.flush()


def main() -> None:
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()

    # The replica this rank runs in: the job sets REPLICA_NAME from the pod name (downward API),
    # which tells whether mpirun really started each rank inside a different worker.
    where = os.environ.get("REPLICA_NAME") or socket.gethostname()
    hosts = comm.allgather(where)

    # A scalar sum (1 + 2 + ... + size) and an elementwise vector sum, both as allreduce.
    total = comm.allreduce(rank + 1, op=MPI.SUM)
    vec = np.arange(4, dtype=np.float64) * (rank + 1)
    out = np.empty_like(vec)
    comm.Allreduce(vec, out, op=MPI.SUM)

    report(
        "allreduce",
        rank=rank,
        size=size,
        host=where,
        hosts=hosts,
        sum=total,
        expected_sum=size * (size + 1) // 2,
        vector=out.tolist(),
        mpi=MPI.Get_library_version().splitlines()[0].strip("\x00 "),
    )


if __name__ == "__main__":
    main()
