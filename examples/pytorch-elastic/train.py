"""Elastic data-parallel training of a small MLP on scikit-learn's digits, started by `torchrun train.py`.

torchrun reads every launcher setting from the PET_* env the operator injects (PET_NNODES=min:max,
PET_RDZV_ENDPOINT, PET_RDZV_BACKEND=c10d, PET_NPROC_PER_NODE, PET_MAX_RESTARTS, PET_RDZV_CONF), so this
script only sees what torchrun hands each worker process: RANK, WORLD_SIZE, MASTER_ADDR/PORT, GROUP_RANK
and TORCHELASTIC_RESTART_COUNT. When a node dies the surviving agents restart their workers and the
group re-forms; training resumes from the newest checkpoint any node kept under CHECKPOINT_DIR.
Each line printed with the prefix TRAINOP_E2E is JSON that tests/e2e reads.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from sklearn.datasets import load_digits
from torch import nn
from torch.nn.parallel import DistributedDataParallel

EPOCHS = int(os.environ.get("EPOCHS", "40"))
BATCH = 16
SEED = 0


def report(event: str, **fields: Any) -> None:
    # One write per line, so output of other threads or processes cannot land inside it.
    sys.stdout.write("TRAINOP_E2E " + json.dumps({"event": event, **fields}, sort_keys=True) + "\n")
    sys.stdout.flush()


def build_model() -> nn.Module:
    torch.manual_seed(SEED)  # every rank starts from identical weights (DDP also broadcasts rank 0's)
    return nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 10))


def resume(model: nn.Module, opt: torch.optim.Optimizer, ckpt: Path | None) -> int:
    """Agree with the other nodes where to resume, and return the first epoch to run.

    Every node keeps its own checkpoint (an emptyDir on Kubernetes, a per-replica directory locally),
    so no shared volume is needed: the newest one any node holds is broadcast from that node. A node
    that just (re)started has none; a surviving node has the state of the last finished epoch.
    """
    state = torch.load(ckpt, weights_only=True) if ckpt is not None and ckpt.exists() else None
    epochs: list[int] = [-1] * dist.get_world_size()
    dist.all_gather_object(epochs, int(state["epoch"]) if state is not None else -1)
    newest = max(epochs)
    if newest < 0:
        return 0
    box = [state if dist.get_rank() == epochs.index(newest) else None]
    dist.broadcast_object_list(box, src=epochs.index(newest))
    model.load_state_dict(box[0]["model"])
    opt.load_state_dict(box[0]["opt"])
    return newest + 1


def save_checkpoint(path: Path, model: nn.Module, opt: torch.optim.Optimizer, epoch: int) -> None:
    tmp = path.with_suffix(".tmp")
    torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "epoch": epoch}, tmp)
    tmp.replace(path)  # atomic: a node killed mid-write never leaves a torn checkpoint


def params_digest(model: nn.Module) -> str:
    h = hashlib.sha256()
    for p in model.parameters():
        h.update(p.detach().numpy().tobytes())
    return h.hexdigest()[:16]


def main() -> None:
    dist.init_process_group("gloo")  # env:// — the agent sets MASTER_ADDR/PORT, RANK, WORLD_SIZE per round
    rank, world = dist.get_rank(), dist.get_world_size()
    restart = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
    ckpt_dir = os.environ.get("CHECKPOINT_DIR")
    ckpt = Path(ckpt_dir) / "checkpoint.pt" if ckpt_dir else None

    x_all, y_all = load_digits(return_X_y=True)
    x = torch.tensor(x_all / 16.0, dtype=torch.float32)
    y = torch.tensor(y_all, dtype=torch.long)
    model = build_model()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    start = resume(model, opt, ckpt)
    ddp = DistributedDataParallel(model)
    report(
        "joined",
        rank=rank,
        world_size=world,
        restart=restart,
        start_epoch=start,
        group_rank=int(os.environ.get("GROUP_RANK", "0")),
    )

    # Each rank trains on its own stride of the data; DDP all-reduces the gradients.
    shard_x, shard_y = x[rank::world], y[rank::world]
    loss_fn = nn.CrossEntropyLoss()
    gen = torch.Generator().manual_seed(SEED)
    for epoch in range(start, EPOCHS):
        gen.manual_seed(SEED + epoch)
        order = torch.randperm(len(shard_x), generator=gen)
        total = torch.zeros(2)
        for i in range(0, len(order), BATCH):
            idx = order[i : i + BATCH]
            opt.zero_grad()
            loss = loss_fn(ddp(shard_x[idx]), shard_y[idx])
            loss.backward()
            opt.step()
            total += torch.tensor([loss.item() * len(idx), len(idx)])
        dist.all_reduce(total)  # the group's mean loss, a collective over every node of this round
        if ckpt is not None and int(os.environ.get("LOCAL_RANK", "0")) == 0:
            save_checkpoint(ckpt, model, opt, epoch)  # one copy per node
        report(
            "epoch",
            rank=rank,
            world_size=world,
            restart=restart,
            epoch=epoch,
            loss=round(float(total[0] / total[1]), 5),
        )

    with torch.no_grad():
        acc = float((model(x).argmax(dim=1) == y).float().mean())
    report(
        "done",
        rank=rank,
        world_size=world,
        restart=restart,
        accuracy=round(acc, 4),
        params=params_digest(model),
    )
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
