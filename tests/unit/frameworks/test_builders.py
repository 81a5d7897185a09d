"""The shared test builders produce the objects they promise (whole dicts)."""

from __future__ import annotations

from trainop.testing.builders import mpi_job, pod, pytorch_job

OWNER = {
    "apiVersion": "kubeflow.org/v1",
    "kind": "PyTorchJob",
    "name": "a",
    "uid": "u1",
    "controller": True,
    "blockOwnerDeletion": True,
}


def test_job_builder_builds_the_users_manifest() -> None:
    got = (
        pytorch_job("a")
        .namespace("ns")
        .uid("u1")
        .master(1)
        .workers(3)
        .command(["python", "train.py"])
        .restart_policy("ExitCode", "Worker")
        .run_policy(backoff_limit=3, clean_pod_policy="All")
        .elastic(min=1, max=3, rdzv_conf={"timeout": "900"})
        .build()
        .to_dict()
    )
    container = {"name": "pytorch", "image": "example.com/pytorch:test", "command": ["python", "train.py"]}
    assert got == {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "a", "namespace": "ns", "uid": "u1"},
        "spec": {
            "runPolicy": {"cleanPodPolicy": "All", "backoffLimit": 3},
            "pytorchReplicaSpecs": {
                "Master": {"replicas": 1, "template": {"spec": {"containers": [container]}}},
                "Worker": {
                    "replicas": 3,
                    "template": {"spec": {"containers": [container]}},
                    "restartPolicy": "ExitCode",
                },
            },
            "elasticPolicy": {
                "minReplicas": 1,
                "maxReplicas": 3,
                "rdzvConf": [{"key": "timeout", "value": "900"}],
            },
        },
    }


def test_pod_builder_failed_pod() -> None:
    job = pytorch_job("a").namespace("ns").uid("u1").master(1).workers(2).build()
    got = pod(job, "Worker", 1).failed(exit_code=137, reason="OOMKilled").restart_count(2).build()
    assert got == {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "a-worker-1",
            "namespace": "ns",
            "uid": "a-worker-1-uid",
            "labels": {
                "training.kubeflow.org/operator-name": "pytorchjob-controller",
                "training.kubeflow.org/job-name": "a",
                "training.kubeflow.org/replica-type": "worker",
                "training.kubeflow.org/replica-index": "1",
            },
            "ownerReferences": [OWNER],
        },
        "spec": {
            "containers": [{"name": "pytorch", "image": "example.com/pytorch:test"}],
            "restartPolicy": "OnFailure",
        },
        "status": {
            "phase": "Failed",
            "containerStatuses": [
                {
                    "name": "pytorch",
                    "image": "example.com/pytorch:test",
                    "ready": False,
                    "restartCount": 2,
                    "state": {
                        "terminated": {
                            "exitCode": 137,
                            "reason": "OOMKilled",
                            "startedAt": "2024-01-01T00:00:00Z",
                            "finishedAt": "2024-01-01T00:00:00Z",
                        }
                    },
                }
            ],
        },
    }


def test_pod_builder_mpi_launcher_has_no_replica_index() -> None:
    got = pod(mpi_job("m").launcher().workers(1), "Launcher", 0).running().deleting().build()["metadata"]
    assert got == {
        "name": "m-launcher",
        "namespace": "default",
        "uid": "m-launcher-uid",
        "labels": {
            "training.kubeflow.org/operator-name": "mpijob-controller",
            "training.kubeflow.org/job-name": "m",
            "training.kubeflow.org/replica-type": "launcher",
            "training.kubeflow.org/job-role": "master",
        },
        "deletionTimestamp": "2024-01-01T00:00:00Z",
        "ownerReferences": [{**OWNER, "kind": "MPIJob", "name": "m", "uid": "m-uid"}],
    }
