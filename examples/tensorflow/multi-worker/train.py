"""Synchronous multi-worker training with tf.distribute.MultiWorkerMirroredStrategy on CPU.

The only input is the TF_CONFIG the operator injects (contract §3.5: the cluster of every replica type
and this replica's task). TensorFlow resolves it itself; the script prints what it resolved so the
e2e test can compare it with the job. Every replica computes gradients on its own shard of the data
and the strategy all-reduces them, so all replicas end with identical weights.
Lines prefixed TRAINOP_E2E are JSON that tests/e2e reads.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from typing import Any

import numpy as np
import tensorflow as tf

STEPS = int(os.environ.get("STEPS", "60"))
PER_REPLICA_BATCH = 32
FEATURES = 8
LEARNING_RATE = 0.1


def report(event: str, **fields: Any) -> None:
    # One write per line, so output of other threads or processes cannot land inside it.
    sys.stdout.write("TRAINOP_E2E " + json.dumps({"event": event, **fields}, sort_keys=True) + "\n")
    sys.stdout.flush()


def main() -> None:
    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    # MultiWorkerMirroredStrategy must be created before any other TF op (it starts the gRPC server).
    strategy = tf.distribute.MultiWorkerMirroredStrategy(cluster_resolver=resolver)
    report(
        "resolved",
        cluster_spec=resolver.cluster_spec().as_dict(),
        task_type=resolver.task_type,
        task_id=resolver.task_id,
        num_replicas_in_sync=strategy.num_replicas_in_sync,
    )

    # One dataset from a fixed seed; each replica reads its own rows of every global batch.
    global_batch = PER_REPLICA_BATCH * strategy.num_replicas_in_sync
    rng = np.random.default_rng(0)
    w_true = rng.normal(size=(FEATURES, 1)).astype(np.float32)
    x_all = rng.normal(size=(global_batch * STEPS, FEATURES)).astype(np.float32)
    y_all = x_all @ w_true + 0.01 * rng.normal(size=(global_batch * STEPS, 1)).astype(np.float32)

    def dataset_fn(ctx: tf.distribute.InputContext) -> tf.data.Dataset:
        ds = tf.data.Dataset.from_tensor_slices((x_all, y_all))
        ds = ds.shard(ctx.num_input_pipelines, ctx.input_pipeline_id)
        return ds.batch(ctx.get_per_replica_batch_size(global_batch))

    with strategy.scope():
        # The gradient is all-reduced explicitly below, so every replica applies the same update;
        # ONLY_FIRST_REPLICA lets a replica-context assign write it to every mirror.
        w = tf.Variable(
            tf.zeros((FEATURES, 1)), name="w", aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA
        )

    @tf.function
    def step(batch: tuple[tf.Tensor, tf.Tensor]) -> tf.Tensor:
        def replica_step(x: tf.Tensor, y: tf.Tensor) -> tf.Tensor:
            with tf.GradientTape() as tape:
                per_example = tf.reduce_sum((tf.matmul(x, w) - y) ** 2, axis=1)
                loss = tf.nn.compute_average_loss(per_example, global_batch_size=global_batch)
            # Explicit cross-worker all-reduce of the gradient (sum of per-replica averages = global mean).
            grad = tf.distribute.get_replica_context().all_reduce("sum", tape.gradient(loss, w))
            w.assign_sub(LEARNING_RATE * grad)
            return loss

        per_replica = strategy.run(replica_step, args=batch)
        return strategy.reduce("sum", per_replica, axis=None)

    losses = [float(step(batch)) for batch in strategy.distribute_datasets_from_function(dataset_fn)]
    weights = w.numpy()
    report(
        "done",
        task_type=resolver.task_type,
        task_id=resolver.task_id,
        steps=len(losses),
        first_loss=round(losses[0], 5),
        final_loss=round(losses[-1], 6),
        max_error=round(float(np.max(np.abs(weights - w_true))), 5),
        weights_sha256=hashlib.sha256(weights.tobytes()).hexdigest(),
    )


if __name__ == "__main__":
    main()
