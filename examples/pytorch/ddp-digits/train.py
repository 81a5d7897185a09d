"""Data-parallel training of a small MLP on scikit-learn's bundled digits (8x8 images, no download).

Every replica runs this script. It reads only what the operator injects (MASTER_ADDR, MASTER_PORT,
RANK, WORLD_SIZE: torch.distributed's env:// rendezvous), trains its shard of the data with
DistributedDataParallel over gloo (CPU), and rank 0 reports loss and test accuracy per epoch.

With CHECKPOINT set to a file path every replica can read (one host, or a shared volume), rank 0
saves the model and optimizer after each epoch and every replica resumes from it when it starts: under
trainop's whole-job restart (docs/failure-policy.md) a killed replica costs at most one epoch, and the
final accuracy is the same as without the kill (each epoch's shuffle is seeded by its number).
PAUSE_AFTER_EPOCH (seconds) slows the demo down enough to kill a replica by hand.

Each rank posts its own loss per epoch to Kubeflow Trainer v2's progress endpoint when the job has one
($KUBEFLOW_TRAINER_SERVER_URL: trainop's local backend serves it, and `trainop ui` plots it), through
trainop.trainer_progress where trainop is installed; elsewhere (this image) it posts nothing.
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

try:
    from trainop.trainer_progress import post_progress
except ImportError:  # the example's image has no trainop: no progress posts

    def post_progress(**_: object) -> bool:
        return False


EPOCHS = int(os.environ.get("EPOCHS", "12"))
CHECKPOINT = os.environ.get("CHECKPOINT", "")
PAUSE_AFTER_EPOCH = float(os.environ.get("PAUSE_AFTER_EPOCH", "0"))
BATCH = 32
TARGET_ACCURACY = 0.9


def save_checkpoint(model: nn.Module, optimizer: torch.optim.Optimizer, epoch: int) -> None:
    """Written next to its final name, then renamed: a replica killed mid-write leaves the last one whole."""
    tmp = f"{CHECKPOINT}.tmp"
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch}, tmp)
    os.replace(tmp, CHECKPOINT)


def main() -> int:
    torch.set_num_threads(1)  # several replicas share this machine's cores
    dist.init_process_group("gloo", init_method="env://")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)

    x, y = load_digits(return_X_y=True)
    x_train, x_test, y_train, y_test = train_test_split(
        x / 16.0, y, test_size=0.25, random_state=0, stratify=y
    )
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
    first = 1
    if CHECKPOINT and os.path.exists(CHECKPOINT):
        state = torch.load(CHECKPOINT, weights_only=True)
        model.module.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        first = int(state["epoch"]) + 1
        with torch.no_grad():  # the accuracy so far, should the checkpoint be the last epoch's
            accuracy = (model(x_test_t).argmax(dim=1) == y_test_t).float().mean().item()
        if rank == 0:
            print(f"resumed from {CHECKPOINT} after epoch {first - 1}", flush=True)
    for epoch in range(first, EPOCHS + 1):
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
        own_loss = float(total[0] / total[1])  # this rank's shard, before the all-reduce
        dist.all_reduce(total)  # the epoch's mean loss over every replica's samples
        model.eval()
        with torch.no_grad():
            accuracy = (model(x_test_t).argmax(dim=1) == y_test_t).float().mean().item()
        if rank == 0:
            print(
                f"epoch {epoch:2d}/{EPOCHS}  loss {total[0] / total[1]:.4f}  "
                f"test accuracy {accuracy:.4f}  ({time.monotonic() - started:.2f}s)",
                flush=True,
            )
            if CHECKPOINT:
                save_checkpoint(model.module, optimizer, epoch)
        post_progress(
            percentage=100 * epoch / EPOCHS,
            remaining_seconds=(EPOCHS - epoch) * (time.monotonic() - started),
            metrics={
                "loss": round(own_loss, 6),
                "accuracy": round(accuracy, 6),
                "epoch": epoch,
                "totalEpochs": EPOCHS,
            },
            replica=str(rank),
        )
        if PAUSE_AFTER_EPOCH:
            time.sleep(PAUSE_AFTER_EPOCH)

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
