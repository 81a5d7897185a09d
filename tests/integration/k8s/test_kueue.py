"""Kueue's Kubeflow integration, played with a real client against the real API server (issue 11).

Kueue itself cannot be built here (its module is not served by the Go module proxy), so the test makes
exactly the writes its job reconciler makes (kubernetes-sigs/kueue
pkg/controller/jobs/kubeflow/kubeflowjob: ``Suspend``, ``RunWithPodSetsInfo``,
``RestorePodSetsInfo``, each followed by an Update of the whole job): the job arrives suspended with
its queue label (Kueue's mutating webhook), is admitted (suspend=false and the pod sets' node
selectors, tolerations, labels and annotations merged into each template, one Update), evicted
(suspend=true), restored once no replica is active (templates back as they were), and admitted again.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest
from k8s_harness import Cluster, annotate, job_resource
from lightkube import ApiError
from test_webhook import SELECTOR_LABEL, Webhook, serving_webhook

from trainop.testing.builders import JobBuilder, mpi_job, pytorch_job
from trainop.testing.testenv import SIM_OUTCOME, SIM_RUN_DURATION, K8sEnv, wait_for

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"


@pytest.fixture(scope="module")
def webhook(k8s_env: K8sEnv, crds: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Webhook]:
    """One operator that reconciles AND admits: Kueue's updates go through trainop's webhook."""
    with serving_webhook(k8s_env, tmp_path_factory.mktemp("kueue-webhook")) as wh:
        yield wh


@pytest.fixture
def admitted_ns(webhook: Webhook, cluster: Cluster) -> Cluster:
    webhook.env.kubectl("label", "namespace", cluster.namespace, f"{SELECTOR_LABEL}={webhook.token}")
    return cluster


def admission(rtype: str) -> dict[str, Any]:
    """One pod set's PodSetInfo as Kueue's flavor assignment produces it."""
    return {
        "nodeSelector": {"type": "kwok"},
        "tolerations": [{"key": "example.com/spot", "operator": "Exists", "effect": "NoSchedule"}],
        "labels": {"kueue.x-k8s.io/podset": rtype.lower()},
        "annotations": {"kueue.x-k8s.io/workload": "wl-1"},
    }


def specs(obj: dict[str, Any]) -> dict[str, Any]:
    key = next(k for k in obj["spec"] if k.endswith("ReplicaSpecs"))
    return dict(obj["spec"][key])


def update(cluster: Cluster, kind: str, name: str, change: Any) -> None:
    """GET, change, Update (PUT with the read resourceVersion): how Kueue's controller writes a job."""
    obj = cluster.job(kind, name)
    assert obj is not None
    change(obj)
    cluster.client.replace(job_resource(kind)(obj), namespace=cluster.namespace)


def run_with_pod_sets_info(obj: dict[str, Any]) -> None:
    obj["spec"]["runPolicy"]["suspend"] = False
    for rtype, spec in specs(obj).items():
        info = admission(rtype)
        tmpl = spec["template"]
        meta = tmpl.setdefault("metadata", {})
        meta.setdefault("labels", {}).update(info["labels"])
        meta.setdefault("annotations", {}).update(info["annotations"])
        tmpl["spec"].setdefault("nodeSelector", {}).update(info["nodeSelector"])
        tmpl["spec"]["tolerations"] = [*tmpl["spec"].get("tolerations", []), *info["tolerations"]]


def suspend(obj: dict[str, Any]) -> None:
    obj["spec"]["runPolicy"]["suspend"] = True


def restore(original: dict[str, Any]) -> Any:
    def change(obj: dict[str, Any]) -> None:
        for rtype, spec in specs(obj).items():
            spec["template"] = copy.deepcopy(specs(original)[rtype]["template"])

    return change


@pytest.mark.parametrize(
    ("job", "running_pods"),
    [
        pytest.param(pytorch_job("kq").master(1).workers(1), 2, id="PyTorchJob"),
        pytest.param(mpi_job("kq").launcher(1).workers(1), 2, id="MPIJob"),
    ],
)
def test_kueue_admission_eviction_readmission(
    webhook: Webhook, admitted_ns: Cluster, job: JobBuilder, running_pods: int
) -> None:
    cluster, operator = admitted_ns, webhook.op
    kind = job.kind
    created = cluster.create(job.labels(**{QUEUE_LABEL: "user-queue"}).suspend().build_dict())
    original = copy.deepcopy(created)
    cluster.wait_condition(kind, "kq", "Suspended")
    cluster.settled(operator, kind, "kq")
    assert cluster.pods("kq") == []

    # The webhook is in the path of these updates: one it must deny is denied.
    def invalid(obj: dict[str, Any]) -> None:
        next(iter(specs(obj).values()))["template"]["spec"]["containers"][0]["ports"] = "notalist"

    with pytest.raises(ApiError, match="denied the request"):
        update(cluster, kind, "kq", invalid)
    update(cluster, kind, "kq", run_with_pod_sets_info)  # admitted
    pods = wait_for(
        lambda: len(cluster.live_pods("kq")) == running_pods and cluster.live_pods("kq"), 60, "pods"
    )
    for p in pods:
        rtype = p["metadata"]["labels"]["training.kubeflow.org/replica-type"]
        info = admission(rtype)
        assert p["spec"]["nodeSelector"] == info["nodeSelector"]
        assert info["tolerations"][0] in p["spec"]["tolerations"]
        assert p["metadata"]["labels"]["kueue.x-k8s.io/podset"] == rtype
        assert p["metadata"]["annotations"]["kueue.x-k8s.io/workload"] == "wl-1"
    cluster.wait_condition(kind, "kq", "Running")

    update(cluster, kind, "kq", suspend)  # evicted
    cluster.wait_condition(kind, "kq", "Suspended")
    wait_for(lambda: cluster.live_pods("kq") == [] or None, 60, "pods deleted on eviction")
    wait_for(
        lambda: all(
            not (s or {}).get("active")
            for s in (cluster.job(kind, "kq") or {})["status"]["replicaStatuses"].values()
        )
        or None,
        60,
        "no replica active (Kueue restores the templates only then)",
    )  # fmt: skip
    update(cluster, kind, "kq", restore(original))  # RestorePodSetsInfo
    assert specs(cluster.job(kind, "kq") or {}) == specs(original)

    def finish(obj: dict[str, Any]) -> None:
        succeed = annotate({SIM_OUTCOME: "succeed", SIM_RUN_DURATION: "1s"})
        for rtype, spec in specs(obj).items():
            if kind != "MPIJob" or rtype == "Launcher":
                succeed(spec["template"])
        run_with_pod_sets_info(obj)

    update(cluster, kind, "kq", finish)  # admitted again
    cluster.wait_condition(kind, "kq", "Succeeded", timeout=120)
