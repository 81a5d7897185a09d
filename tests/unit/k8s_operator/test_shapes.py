"""The watch decoder of owned pods and Services gives exactly what ``slim_owned`` makes of the whole
object (so the cache holds the same thing whether an object came from a list or a watch), and falls
back to the whole object for lines of another shape."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from trainop.backends.kubernetes.cache import slim_owned
from trainop.backends.kubernetes.shapes import watch_decoder

OWNER = {
    "apiVersion": "kubeflow.org/v1",
    "kind": "PyTorchJob",
    "name": "j",
    "uid": "job-uid",
    "controller": True,
    "blockOwnerDeletion": True,
}
META: dict[str, Any] = {
    "name": "j-worker-0",
    "namespace": "ns",
    "uid": "pod-uid",
    "resourceVersion": "1234",
    "generation": 1,
    "creationTimestamp": "2026-11-26T22:00:00Z",
    "deletionTimestamp": "2026-11-26T22:05:00Z",
    "deletionGracePeriodSeconds": 30,
    "labels": {"training.kubeflow.org/job-name": "j", "training.kubeflow.org/replica-type": "worker"},
    "annotations": {"a": "b"},
    "ownerReferences": [OWNER],
    "finalizers": ["f"],
    "managedFields": [{"manager": "trainop", "fieldsV1": {"f:spec": {"f:containers": {}}}}],
}
POD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": META,
    "spec": {
        "containers": [{"name": "pytorch", "image": "x", "env": [{"name": "RANK", "value": "1"}]}],
        "volumes": [{"name": "v", "emptyDir": {}}],
        "tolerations": [{"key": "k", "operator": "Exists"}],
        "restartPolicy": "Never",
        "terminationGracePeriodSeconds": 30,
        "dnsPolicy": "ClusterFirst",
        "serviceAccountName": "default",
        "serviceAccount": "default",
        "nodeName": "kwok-node-3",
        "schedulerName": "default-scheduler",
        "priority": 0,
        "enableServiceLinks": True,
        "preemptionPolicy": "PreemptLowerPriority",
        "hostNetwork": False,
        "subdomain": "j",
        "hostname": "j-worker-0",
    },
    "status": {
        "phase": "Running",
        "conditions": [{"type": "Ready", "status": "True", "lastProbeTime": None}],
        "containerStatuses": [
            {
                "name": "pytorch",
                "state": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}},
                "lastState": {},
                "restartCount": 2,
            }
        ],
        "startTime": "2026-11-26T22:00:01Z",
    },
}
SERVICE: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Service",
    "metadata": {**META, "name": "j-worker-0"},
    "spec": {
        "clusterIP": "None",
        "clusterIPs": ["None"],
        "type": "ClusterIP",
        "sessionAffinity": "None",
        "ipFamilyPolicy": "SingleStack",
        "internalTrafficPolicy": "Cluster",
        "publishNotReadyAddresses": True,
        "selector": {"training.kubeflow.org/job-name": "j"},
        "ports": [{"name": "pytorchjob-port", "port": 23456, "protocol": "TCP", "targetPort": 23456}],
    },
    "status": {"loadBalancer": {}},
}


def line(kind: str, obj: Any) -> bytes:
    return json.dumps({"type": kind, "object": obj}).encode()


@pytest.mark.parametrize("obj", [POD, SERVICE], ids=["pod", "service"])
@pytest.mark.parametrize("event", ["ADDED", "MODIFIED", "DELETED"])
def test_a_watched_object_is_what_slim_owned_makes_of_it(obj: dict[str, Any], event: str) -> None:
    kind, got, shaped = watch_decoder(obj["kind"])(line(event, obj))
    assert (kind, shaped) == (event, True)
    assert got == slim_owned(copy.deepcopy(obj))
    assert "managedFields" not in got["metadata"] and "containers" not in got.get("spec", {})


def test_a_minimal_object_stays_minimal() -> None:
    bare = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "resourceVersion": "7"}}
    assert watch_decoder("Pod")(line("ADDED", bare)) == ("ADDED", bare, True)


def test_an_error_event_and_unexpected_shapes_come_back_whole() -> None:
    status = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 410, "reason": "Expired"}
    assert watch_decoder("Pod")(line("ERROR", status)) == ("ERROR", status, False)
    odd = copy.deepcopy(POD)
    odd["spec"]["priority"] = "high"  # not what the API serves: decoded whole, slimmed by the informer
    assert watch_decoder("Pod")(line("MODIFIED", odd)) == ("MODIFIED", odd, False)
