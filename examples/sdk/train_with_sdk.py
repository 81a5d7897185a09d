"""A notebook-style script written with kubeflow-training's documented SDK calls, through trainop.

``trainop.sdk`` keeps kubeflow-training's API: code written for ``kubeflow.training`` runs after its
import lines point at ``trainop.sdk`` (tests/integration/sdk/test_example.py shows this script still
does what upstream's examples do). It runs in every environment the README makes (``make dev``,
``make demo``, ``pip install trainop``): jobs run as processes on this machine unless
``TRAINOP_BACKEND=kubernetes`` sends them to your kube-config's cluster. The pod template is written
as plain dicts, so the ``kubernetes`` client package is not needed.
"""

import os
import sys

from trainop.sdk import (  # was: from kubeflow.training import (
    KubeflowOrgV1PyTorchJob,
    KubeflowOrgV1PyTorchJobSpec,
    KubeflowOrgV1ReplicaSpec,
    KubeflowOrgV1RunPolicy,
    TrainingClient,
    constants,
)

# This machine unless told otherwise: TrainingClient() alone would need a kube-config and a cluster.
os.environ.setdefault("TRAINOP_BACKEND", "local")

JOB_NAME = "sdk-example-object"
FUNC_JOB_NAME = "sdk-example-func"

# Each replica prints its rank; the real work of a training script goes here.
TRAIN_CODE = "import os; print('replica', os.environ['RANK'], 'of', os.environ['WORLD_SIZE'], 'trained')"


def build_job() -> KubeflowOrgV1PyTorchJob:
    container = {
        "name": "pytorch",
        "image": "docker.io/pytorch/pytorch:2.1.2-cuda11.8-cudnn8-runtime",
        "command": ["python", "-c", TRAIN_CODE],
    }
    replica_spec = KubeflowOrgV1ReplicaSpec(
        replicas=1,
        restart_policy="OnFailure",
        template={
            "metadata": {"annotations": {"sidecar.istio.io/inject": "false"}},
            "spec": {"containers": [container]},
        },
    )
    worker_spec = KubeflowOrgV1ReplicaSpec(
        replicas=2,
        restart_policy="OnFailure",
        template={"spec": {"containers": [container]}},
    )
    return KubeflowOrgV1PyTorchJob(
        api_version=constants.API_VERSION,
        kind=constants.PYTORCHJOB_KIND,
        metadata={"name": JOB_NAME},
        spec=KubeflowOrgV1PyTorchJobSpec(
            run_policy=KubeflowOrgV1RunPolicy(clean_pod_policy="None"),
            pytorch_replica_specs={"Master": replica_spec, "Worker": worker_spec},
        ),
    )


def train_func(parameters):
    # Runs in every replica; imports live inside the function, as the SDK sends only its source.
    import os

    print("function training with lr", parameters["lr"], "on rank", os.environ.get("RANK"))


def main() -> int:
    training_client = TrainingClient()

    # 1. A job from model objects.
    training_client.create_job(build_job())
    job = training_client.wait_for_job_conditions(JOB_NAME, wait_timeout=240, polling_interval=1)
    print("conditions:", [c.type for c in training_client.get_job_conditions(job=job)])
    if not training_client.is_job_succeeded(JOB_NAME):
        print("the job did not succeed", file=sys.stderr)
        return 1
    print("pods:", training_client.get_job_pod_names(JOB_NAME))
    master_logs, _ = training_client.get_job_logs(JOB_NAME)
    worker_logs, _ = training_client.get_job_logs(
        JOB_NAME, is_master=False, replica_type="worker", replica_index=1
    )
    print("master says:", " ".join(master_logs.values()).strip())
    print("worker 1 says:", " ".join(worker_logs.values()).strip())

    # 2. A job from a Python function.
    training_client.create_job(
        name=FUNC_JOB_NAME,
        train_func=train_func,
        parameters={"lr": 0.01},
        num_workers=1,
    )
    training_client.wait_for_job_conditions(FUNC_JOB_NAME, wait_timeout=240, polling_interval=1)
    logs, _ = training_client.get_job_logs(FUNC_JOB_NAME, follow=True)
    print("function job says:", " ".join(logs.values()).strip())

    # 3. List and clean up.
    print("jobs:", sorted(j.metadata.name for j in training_client.list_jobs()))
    training_client.delete_job(JOB_NAME)
    training_client.delete_job(FUNC_JOB_NAME)
    print("done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
