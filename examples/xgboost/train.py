"""Distributed XGBoost (histogram method) on scikit-learn's breast-cancer data, one shard per replica.

Reads only the env the operator injects (contract §3.6): MASTER_ADDR/MASTER_PORT name the collective
tracker, WORLD_SIZE the number of training processes and RANK this one (the Master is rank 0). Rank 0
starts the tracker in-process; every rank then joins the collective and trains on its own rows, so the
histograms are all-reduced and every rank must end with the same model. Lines prefixed TRAINOP_E2E are
JSON that tests/e2e reads.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from typing import Any

import numpy as np
import xgboost as xgb
from sklearn.datasets import load_breast_cancer
from xgboost import collective
from xgboost.tracker import RabitTracker

ROUNDS = int(os.environ.get("ROUNDS", "30"))


def report(event: str, **fields: Any) -> None:
    # One write per line, so output of other threads or processes cannot land inside it.
    sys.stdout.write("TRAINOP_E2E " + json.dumps({"event": event, **fields}, sort_keys=True) + "\n")
    sys.stdout.flush()


def main() -> None:
    addr, port = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
    world, rank = int(os.environ["WORLD_SIZE"]), int(os.environ["RANK"])

    tracker = None
    if rank == 0:
        # Listen on this pod's own address (POD_IP, from the downward API: 127.0.0.1 on the local
        # backend), where MASTER_ADDR leads; every interface when the manifest does not set it.
        host = os.environ.get("POD_IP", "0.0.0.0")
        tracker = RabitTracker(n_workers=world, host_ip=host, port=port, sortby="task")
        tracker.start()

    # Every fifth row is held out; the rest is split into one shard per rank.
    x_all, y_all = load_breast_cancer(return_X_y=True)
    held_out = np.arange(len(y_all)) % 5 == 0
    x_test, y_test = x_all[held_out], y_all[held_out]
    x, y = x_all[~held_out][rank::world], y_all[~held_out][rank::world]
    params = {"objective": "binary:logistic", "tree_method": "hist", "max_depth": 4, "eta": 0.3, "seed": 0}

    # Zero-padded task ids sort like the ranks, so the collective's rank equals RANK.
    # Generous connect retries: a worker may start long before the Master pod (image pulls, scheduling).
    args = {
        "dmlc_tracker_uri": addr,
        "dmlc_tracker_port": port,
        "dmlc_task_id": f"{rank:06d}",
        "dmlc_retry": 8,
    }
    with collective.CommunicatorContext(**args):
        got_rank, got_world = collective.get_rank(), collective.get_world_size()
        # A direct check of the collective: the sum over ranks of (rank + 1).
        total = collective.allreduce(np.array([rank + 1.0]), collective.Op.SUM)
        report("joined", rank=rank, collective_rank=got_rank, world_size=got_world, allreduce=float(total[0]))
        booster = xgb.train(params, xgb.DMatrix(x, label=y), num_boost_round=ROUNDS)

    model = bytes(booster.save_raw(raw_format="json"))
    pred = booster.predict(xgb.DMatrix(x_test)) > 0.5
    report(
        "done",
        rank=rank,
        rows=len(y),
        model_sha256=hashlib.sha256(model).hexdigest(),
        test_accuracy=round(float(np.mean(pred == y_test)), 4),
    )
    if tracker is not None:
        tracker.wait_for()


if __name__ == "__main__":
    main()
