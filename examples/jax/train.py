"""Data-parallel linear regression in JAX across processes on CPU, from the JAXJob env only.

The operator injects COORDINATOR_ADDRESS/COORDINATOR_PORT (replica 0), NUM_PROCESSES and PROCESS_ID
(contract §3.8); `jax.distributed.initialize` turns them into one global device mesh. Each process
holds its own shard of the data; the jitted gradient step reduces over the whole mesh, so XLA emits a
cross-process all-reduce (gloo on CPU). Lines prefixed TRAINOP_E2E are JSON that tests/e2e reads.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec

STEPS = int(os.environ.get("STEPS", "200"))
ROWS_PER_PROCESS = 256
FEATURES = 8


def report(event: str, **fields: Any) -> None:
    # One write per line, so output of other threads or processes cannot land inside it.
    sys.stdout.write("TRAINOP_E2E " + json.dumps({"event": event, **fields}, sort_keys=True) + "\n")
    sys.stdout.flush()


def main() -> None:
    # CPU collectives across processes need an implementation; gloo ships with jaxlib.
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    process_id = int(os.environ["PROCESS_ID"])
    jax.distributed.initialize(
        coordinator_address=f"{os.environ['COORDINATOR_ADDRESS']}:{os.environ['COORDINATOR_PORT']}",
        num_processes=int(os.environ["NUM_PROCESSES"]),
        process_id=process_id,
    )
    n = jax.process_count()
    mesh = Mesh(np.array(jax.devices()), ("data",))
    rows = NamedSharding(mesh, PartitionSpec("data"))
    replicated = NamedSharding(mesh, PartitionSpec())

    # The all-reduce, checked directly: every process contributes (id + 1); the global sum is n(n+1)/2.
    mine = np.full((jax.local_device_count(),), process_id + 1.0, dtype=np.float32)
    total = jax.jit(jnp.sum, out_shardings=replicated)(jax.make_array_from_process_local_data(rows, mine))
    gathered = multihost_utils.process_allgather(jnp.array([process_id]))
    report(
        "joined",
        process_id=jax.process_index(),
        process_count=n,
        global_devices=jax.device_count(),
        allreduce_sum=float(total),
        allgather=[int(v) for v in np.asarray(gathered).ravel()],
    )

    # One dataset, same seed everywhere; each process keeps only its own rows.
    rng = np.random.default_rng(0)
    w_true = rng.normal(size=(FEATURES,)).astype(np.float32)
    x_all = rng.normal(size=(n * ROWS_PER_PROCESS, FEATURES)).astype(np.float32)
    y_all = x_all @ w_true + 0.01 * rng.normal(size=(n * ROWS_PER_PROCESS,)).astype(np.float32)
    mine_rows = slice(process_id * ROWS_PER_PROCESS, (process_id + 1) * ROWS_PER_PROCESS)
    x = jax.make_array_from_process_local_data(rows, x_all[mine_rows])
    y = jax.make_array_from_process_local_data(rows, y_all[mine_rows])

    def loss(w: jax.Array, x: jax.Array, y: jax.Array) -> jax.Array:
        return jnp.mean((x @ w - y) ** 2)

    @jax.jit
    def step(w: jax.Array, x: jax.Array, y: jax.Array) -> tuple[jax.Array, jax.Array]:
        value, grad = jax.value_and_grad(loss)(w, x, y)  # the mean over global rows: an all-reduce
        return w - 0.1 * grad, value

    w = jax.device_put(jnp.zeros((FEATURES,), dtype=jnp.float32), replicated)
    first = last = None
    for _ in range(STEPS):
        w, value = step(w, x, y)
        first = float(value) if first is None else first
        last = float(value)

    w_local = np.asarray(w.addressable_data(0))
    report(
        "done",
        process_id=process_id,
        first_loss=round(first or 0.0, 5),
        final_loss=round(last or 0.0, 6),
        max_error=round(float(np.max(np.abs(w_local - w_true))), 5),
        params_sha256=hashlib.sha256(w_local.tobytes()).hexdigest(),
    )
    jax.distributed.shutdown()


if __name__ == "__main__":
    main()
