"""YuniKorn gang scheduling on the real API server (issue 25). A module of its own: another module's
operator (test_gang's Volcano one) would reconcile the same jobs.

YuniKorn's scheduler is not served by the Go module proxy, so nothing schedules these pods; what is
real is the operator's pass and the API server storing YuniKorn's labels and annotations.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from k8s_harness import Cluster, OperatorProcess

from trainop.testing.builders import pytorch_job
from trainop.testing.testenv import wait_for


def one_cpu(template: dict[str, Any]) -> None:
    for c in template["spec"]["containers"]:
        c["resources"] = {"requests": {"cpu": "1"}, "limits": {"cpu": "1"}}


def test_yunikorn_gang_is_written_on_the_pods_the_api_server_stores(
    start_operator: Callable[..., OperatorProcess], cluster: Cluster
) -> None:
    """The operator with --gang-scheduler-name=yunikorn starts without any PodGroup CRD check, creates
    no PodGroup, and the API server accepts and stores YuniKorn's labels and annotations on every pod (no
    YuniKorn runs, so the pods stay unscheduled; the contract: tests/unit/core/test_gang_yunikorn.py)."""
    start_operator("--enable-webhook=false", "--gang-scheduler-name=YuniKorn")
    job = pytorch_job("yk").master(1).workers(3).template(one_cpu)
    created = cluster.create(job.run_policy(scheduling_policy={"queue": "root.train"}).build_dict())
    pods = wait_for(lambda: len(cluster.live_pods("yk")) == 4 and cluster.live_pods("yk"), 60, "4 pods")
    uid = created["metadata"]["uid"]
    want_groups = [
        {"name": "master", "minMember": 1, "minResource": {"cpu": "1"}},
        {"name": "worker", "minMember": 3, "minResource": {"cpu": "1"}},
    ]
    for p in pods:
        meta = p["metadata"]
        assert p["spec"]["schedulerName"] == "yunikorn"
        assert meta["labels"]["yunikorn.apache.org/app-id"] == uid
        assert meta["labels"]["yunikorn.apache.org/queue"] == "root.train"
        assert (
            meta["annotations"]["yunikorn.apache.org/task-group-name"]
            == (meta["labels"]["training.kubeflow.org/replica-type"])
        )
        assert json.loads(meta["annotations"]["yunikorn.apache.org/task-groups"]) == want_groups
        assert not p["spec"].get("nodeName")  # nobody schedules for "yunikorn" here
    for crd in ("podgroups.scheduling.volcano.sh", "podgroups.scheduling.x-k8s.io"):
        # No PodGroup (where the CRD is not installed, kubectl fails and prints none either).
        got = cluster.env.kubectl("get", crd, "-o", "name", namespace=cluster.namespace, check=False)
        assert got.stdout.strip() == ""
