"""Collective data-parallel Paddle on CPU (gloo), started by `python -m paddle.distributed.launch train.py`.

The launcher reads the PaddleJob env itself (contract §3.7): PADDLE_MASTER (worker 0's address and
port: the rendezvous), PADDLE_NNODES and PADDLE_JOB_ID; it then hands this script its rank among all
nodes. Each rank trains on its own shard; paddle.DataParallel all-reduces the gradients, so every rank
ends with the same weights. Lines prefixed TRAINOP_E2E are JSON that tests/e2e reads.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from typing import Any

import numpy as np
import paddle
import paddle.distributed as dist

STEPS = int(os.environ.get("STEPS", "100"))
ROWS_PER_RANK = 128
FEATURES = 8


def report(event: str, **fields: Any) -> None:
    # One write per line, so output of other threads or processes cannot land inside it.
    sys.stdout.write("TRAINOP_E2E " + json.dumps({"event": event, **fields}, sort_keys=True) + "\n")
    sys.stdout.flush()


def main() -> None:
    paddle.set_device("cpu")
    dist.init_parallel_env()  # the launcher set PADDLE_DISTRI_BACKEND=gloo on a CPU-only machine
    rank, world = dist.get_rank(), dist.get_world_size()

    # The all-reduce, checked directly: the sum of (rank + 1) over every rank.
    probe = paddle.to_tensor([float(rank + 1)])
    dist.all_reduce(probe)
    report(
        "joined",
        rank=rank,
        world_size=world,
        allreduce_sum=float(probe.numpy()[0]),
        backend=os.environ.get("PADDLE_DISTRI_BACKEND", ""),
        trainer_endpoints=os.environ.get("PADDLE_TRAINER_ENDPOINTS", "").split(","),
    )

    # One dataset from a fixed seed; each rank keeps its own rows.
    rng = np.random.default_rng(0)
    w_true = rng.normal(size=(FEATURES, 1)).astype(np.float32)
    x_all = rng.normal(size=(world * ROWS_PER_RANK, FEATURES)).astype(np.float32)
    y_all = x_all @ w_true + 0.01 * rng.normal(size=(world * ROWS_PER_RANK, 1)).astype(np.float32)
    mine = slice(rank * ROWS_PER_RANK, (rank + 1) * ROWS_PER_RANK)
    x, y = paddle.to_tensor(x_all[mine]), paddle.to_tensor(y_all[mine])

    paddle.seed(0)
    model = paddle.DataParallel(paddle.nn.Linear(FEATURES, 1))
    opt = paddle.optimizer.SGD(learning_rate=0.1, parameters=model.parameters())
    losses = []
    for _ in range(STEPS):
        loss = paddle.mean((model(x) - y) ** 2)
        loss.backward()  # DataParallel all-reduces the gradients here
        opt.step()
        opt.clear_grad()
        losses.append(float(loss.numpy()))

    weight = model.parameters()[0].numpy()
    report(
        "done",
        rank=rank,
        first_loss=round(losses[0], 5),
        final_loss=round(losses[-1], 6),
        max_error=round(float(np.max(np.abs(weight - w_true))), 5),
        params_sha256=hashlib.sha256(b"".join(p.numpy().tobytes() for p in model.parameters())).hexdigest(),
    )


if __name__ == "__main__":
    main()
