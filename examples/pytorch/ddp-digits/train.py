"""Data-parallel training of a small MLP on scikit-learn's bundled digits (8x8 images, no download).

Every replica runs this script. It reads only what the operator injects (MASTER_ADDR, MASTER_PORT,
RANK, WORLD_SIZE: torch.distributed's env:// rendezvous), trains its shard of the data with
DistributedDataParallel over gloo (CPU), and rank 0 reports loss and test accuracy per epoch.
"""

from __future__ import annotations

import os
import sys
import time

import torch
import torch.distributed as dist
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from torch import nn
from torch.nn.parallel import DistributedDataParallel

EPOCHS = int(os.environ.get("EPOCHS", "12"))
BATCH = 32
TARGET_ACCURACY = 0.9


def main() -> int:
    torch.set_num_threads(1)  # several replicas share this machine's cores
    dist.init_process_group("gloo", init_method="env://")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)

    x, y = load_digits(return_X_y=True)
    x_train, x_test, y_train, y_test = train_test_split(x / 16.0, y, test_size=0.25, random_state=0, stratify=y)
    x_train_t = torch.tensor(x_train, dtype=torch.float32)
    y_train_t = torch.tensor(y_train, dtype=torch.long)
    x_test_t = torch.tensor(x_test, dtype=torch.float32)
    y_test_t = torch.tensor(y_test, dtype=torch.long)

    # Equal shards, so every rank takes the same number of steps (DDP all-reduces at each one).
    per_rank = len(x_train_t) // world
    model = DistributedDataParallel(nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    if rank == 0:
        print(f"world size {world}: {per_rank} training samples per replica, {len(x_test_t)} test samples")

    accuracy = 0.0
    for epoch in range(1, EPOCHS + 1):
        started = time.monotonic()
        order = torch.randperm(len(x_train_t), generator=torch.Generator().manual_seed(epoch))
        shard = order[rank * per_rank : (rank + 1) * per_rank]
        model.train()
        total = torch.zeros(2)
        for i in range(0, per_rank, BATCH):
            idx = shard[i : i + BATCH]
            optimizer.zero_grad()
            loss = loss_fn(model(x_train_t[idx]), y_train_t[idx])
            loss.backward()  # gradients are averaged across replicas here
            optimizer.step()
            total += torch.tensor([loss.item() * len(idx), len(idx)])
        dist.all_reduce(total)  # the epoch's mean loss over every replica's samples
        model.eval()
        with torch.no_grad():
            accuracy = (model(x_test_t).argmax(dim=1) == y_test_t).float().mean().item()
        if rank == 0:
            print(
                f"epoch {epoch:2d}/{EPOCHS}  loss {total[0] / total[1]:.4f}  "
                f"test accuracy {accuracy:.4f}  ({time.monotonic() - started:.2f}s)"
            )

    dist.barrier()
    dist.destroy_process_group()
    if rank == 0:
        print(f"final test accuracy: {accuracy:.4f}")
        if accuracy < TARGET_ACCURACY:
            print(f"below the target of {TARGET_ACCURACY}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
