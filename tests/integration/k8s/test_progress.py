"""Training progress on a cluster (issues 27 and 23, KEP-2779): with ``--trainer-progress`` the operator
gives every pod of a job the contract's env and a projected token, and takes the pods' posts on its
webhook server. A token the API server issued for one of the job's pods (``kubectl create token
--bound-object-kind Pod``: kwok's pods are API objects) lands in the v1 job's annotation, which
``trainop ui`` shows, or in the TrainJob's ``status.trainerStatus``; a pod of another job, the API
server's own audience, or no token at all are refused. Without the flag, pods are unchanged.
"""

from __future__ import annotations

import base64
import json
import ssl
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import test_trainjob
from k8s_harness import Cluster, StartOperator, env_of
from test_trainjob import trainjob
from test_webhook import Webhook, serving_webhook

from trainop.api.constants import (
    ANNOTATION_TRAINER_STATUS,
    ENV_TRAINER_SERVER_CA_CERT,
    ENV_TRAINER_SERVER_TOKEN,
    ENV_TRAINER_SERVER_URL,
)
from trainop.backends.kubernetes import resources as r
from trainop.core.progress import AUDIENCE, MOUNT_PATH, VOLUME_NAME
from trainop.operator.trainjobs import TrainJobResource
from trainop.testing.browser import start_ui
from trainop.testing.builders import pytorch_job
from trainop.testing.testenv import K8sEnv, wait_for
from trainop.trainer_progress import post_progress

runtimes = test_trainjob.runtimes  # the shipped runtimes, applied once per module


@pytest.fixture
def progress_op(k8s_env: K8sEnv, crds: None, tmp_path: Path) -> Iterator[Webhook]:
    with serving_webhook(k8s_env, tmp_path, "--trainer-progress") as wh:
        yield wh


def port_of(wh: Webhook) -> int:
    flag = next(a for a in wh.op.args if a.startswith("--webhook-server-port="))
    return int(flag.split("=", 1)[1])


def running_pods(cluster: Cluster, labels: dict[str, str], count: int) -> list[dict[str, Any]]:
    def check() -> list[dict[str, Any]] | None:
        pods = [dict(p) for p in cluster.client.list(r.Pod, namespace=cluster.namespace, labels=labels)]
        return pods if len(pods) == count else None

    return wait_for(check, 60, f"{count} pods labelled {labels}")


def token_for(env: K8sEnv, namespace: str, pod: str, *audience: str) -> str:
    args = ["create", "token", "default", "--bound-object-kind", "Pod", "--bound-object-name", pod]
    for a in audience:
        args += ["--audience", a]
    return env.kubectl(*args, namespace=namespace).stdout.strip()


def post(url: str, ca: Path, token: str | None, body: bytes) -> tuple[int, str]:
    headers = {"Content-Type": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    req = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=30, context=ssl.create_default_context(cafile=ca)) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def check_injected(pod: dict[str, Any], url: str) -> None:
    for c in pod["spec"]["containers"]:
        env = env_of(c)
        assert env[ENV_TRAINER_SERVER_URL] == url, env
        assert env[ENV_TRAINER_SERVER_CA_CERT] == f"{MOUNT_PATH}/ca.crt"
        assert env[ENV_TRAINER_SERVER_TOKEN] == f"{MOUNT_PATH}/token"
        assert {"name": VOLUME_NAME, "mountPath": MOUNT_PATH, "readOnly": True} in c["volumeMounts"]
    volume = next(v for v in pod["spec"]["volumes"] if v["name"] == VOLUME_NAME)
    token, cm = volume["projected"]["sources"]
    assert token["serviceAccountToken"] == {"audience": AUDIENCE, "expirationSeconds": 3600, "path": "token"}
    assert cm["configMap"]["items"] == [{"key": "ca.crt", "path": "ca.crt"}]


def test_posts_from_a_jobs_own_pods_land_on_the_job_and_others_are_refused(
    progress_op: Webhook, cluster: Cluster, k8s_env: K8sEnv, tmp_path: Path
) -> None:
    ns = cluster.namespace
    for name in ("prog", "other"):
        cluster.create(pytorch_job(name).master(1).workers(1).build_dict())
    pods = running_pods(cluster, {"training.kubeflow.org/job-name": "prog"}, 2)
    path = f"/apis/kubeflow.org/v1/namespaces/{ns}/pytorchjobs/prog/status"
    for pod in pods:
        check_injected(pod, f"https://training-operator.{progress_op.pod_ns}.svc{path}")
    # The CA the pods mount: the operator's, in a ConfigMap the job owns.
    cm = wait_for(lambda: cluster.get(r.ConfigMap, "prog-tls-config"), 30, "prog-tls-config")
    secret = cluster.client.get(r.Secret, progress_op.secret, namespace=progress_op.pod_ns)
    assert cm["data"]["ca.crt"] == base64.b64decode(dict(secret)["data"]["ca.crt"]).decode()
    assert cm["metadata"]["ownerReferences"][0]["name"] == "prog"
    ca = tmp_path / "ca.crt"
    ca.write_text(cm["data"]["ca.crt"])

    url = f"https://127.0.0.1:{port_of(progress_op)}{path}"
    token = tmp_path / "token"
    token.write_text(token_for(k8s_env, ns, "prog-worker-0", AUDIENCE))
    env = {
        ENV_TRAINER_SERVER_URL: url,
        ENV_TRAINER_SERVER_CA_CERT: str(ca),
        ENV_TRAINER_SERVER_TOKEN: str(token),
    }
    assert post_progress(
        percentage=40, remaining_seconds=90, metrics={"loss": 0.42, "epoch": 2}, env=env, timeout=30
    )
    stored = json.loads(
        (cluster.job("PyTorchJob", "prog") or {})["metadata"]["annotations"][ANNOTATION_TRAINER_STATUS]
    )
    assert stored["progressPercentage"] == 40 and stored["estimatedRemainingSeconds"] == 90
    assert stored["metrics"] == [{"name": "loss", "value": "0.42"}, {"name": "epoch", "value": "2"}]
    with start_ui("--kubeconfig", str(k8s_env.kubeconfig)) as ui:
        status, body = ui.get(f"/api/jobs/{ns}/prog")
        assert status == 200, body
        latest = json.loads(body)["progress"]["latest"]
        assert latest["progressPercentage"] == 40, latest

    good = token.read_text()
    bad_body = json.dumps({"trainerStatus": {"progressPercentage": 140}}).encode()
    status, text = post(url, ca, good, bad_body)
    assert (status, text.strip()) == (
        400,
        "trainerStatus.progressPercentage: must be an integer 0 to 100, got 140",
    )
    body = json.dumps({"trainerStatus": {"progressPercentage": 50}}).encode()
    status, text = post(url, ca, token_for(k8s_env, ns, "other-worker-0", AUDIENCE), body)
    assert status == 403 and "does not belong to pytorchjob" in text, (status, text)
    status, text = post(url, ca, token_for(k8s_env, ns, "prog-worker-0"), body)  # the API server's audience
    assert status == 401, (status, text)
    assert post(url, ca, None, body)[0] == 401
    assert post(url.replace("/pytorchjobs/", "/widgets/"), ca, good, body)[0] == 404
    stored = json.loads(
        (cluster.job("PyTorchJob", "prog") or {})["metadata"]["annotations"][ANNOTATION_TRAINER_STATUS]
    )
    assert stored["progressPercentage"] == 40  # no refused post changed it

    # A job deleted and made again under its name: the new one's pods need the ConfigMap again,
    # owned by the new job (the garbage collector takes the old job's).
    cluster.delete_job("PyTorchJob", "other")
    uid = cluster.create(pytorch_job("other").master(1).build_dict())["metadata"]["uid"]

    def owned_by_new() -> dict[str, Any] | None:
        cm = cluster.get(r.ConfigMap, "other-tls-config")
        return cm if cm and cm["metadata"]["ownerReferences"][0]["uid"] == uid else None

    wait_for(owned_by_new, 60, "other-tls-config owned by the new job")


@pytest.mark.usefixtures("runtimes")
def test_a_trainjobs_pods_post_to_its_trainer_status(
    progress_op: Webhook, cluster: Cluster, k8s_env: K8sEnv, tmp_path: Path
) -> None:
    ns = cluster.namespace
    job = trainjob(
        "tj", "torch-distributed", {"node": ""}, trainer={"numNodes": 1, "command": ["torchrun", "t.py"]}
    )
    job["metadata"]["namespace"] = ns
    cluster.client.create(TrainJobResource(job))
    (pod,) = running_pods(cluster, {"jobset.sigs.k8s.io/jobset-name": "tj"}, 1)
    path = f"/apis/trainer.kubeflow.org/v1alpha1/namespaces/{ns}/trainjobs/tj/status"
    check_injected(pod, f"https://training-operator.{progress_op.pod_ns}.svc{path}")
    cm = wait_for(lambda: cluster.get(r.ConfigMap, "tj-tls-config"), 30, "tj-tls-config")
    ca = tmp_path / "ca.crt"
    ca.write_text(cm["data"]["ca.crt"])
    token = tmp_path / "token"
    token.write_text(token_for(k8s_env, ns, pod["metadata"]["name"], AUDIENCE))
    url = f"https://127.0.0.1:{port_of(progress_op)}{path}"
    env = {
        ENV_TRAINER_SERVER_URL: url,
        ENV_TRAINER_SERVER_CA_CERT: str(ca),
        ENV_TRAINER_SERVER_TOKEN: str(token),
    }
    assert post_progress(percentage=25, metrics={"loss": "1.5"}, env=env, timeout=30)
    status = dict(cluster.client.get(TrainJobResource, "tj", namespace=ns).to_dict())["status"]
    assert status["trainerStatus"]["progressPercentage"] == 25
    assert status["trainerStatus"]["metrics"] == [{"name": "loss", "value": "1.5"}]
    assert post_progress(percentage=30, env=env, timeout=30)  # a later post replaces the whole trainerStatus
    status = dict(cluster.client.get(TrainJobResource, "tj", namespace=ns).to_dict())["status"]
    assert status["trainerStatus"]["progressPercentage"] == 30 and "metrics" not in status["trainerStatus"]
    assert status["jobsStatus"], status  # the controller's own status is still there

    # A new CA (the Secret wiped, as test_webhook does): the operator's next check (30 s) rotates it
    # and rewrites the job's ConfigMap, and the server answers with a certificate the new CA signs.
    secret = dict(cluster.client.get(r.Secret, progress_op.secret, namespace=progress_op.pod_ns))
    cluster.client.replace(r.Secret({**secret, "data": {}}))
    old = cm["data"]["ca.crt"]

    def rotated() -> str | None:
        new = (cluster.get(r.ConfigMap, "tj-tls-config") or {}).get("data", {}).get("ca.crt")
        return new if new and new != old else None

    ca.write_text(wait_for(rotated, 120, "tj-tls-config with the new CA"))
    assert post_progress(percentage=35, env=env, timeout=30)


@pytest.mark.usefixtures("runtimes")
def test_a_v1_job_and_a_trainjob_of_one_name_share_their_tls_config(
    progress_op: Webhook, cluster: Cluster
) -> None:
    """``<name>-tls-config`` is one ConfigMap for a PyTorchJob and a TrainJob both called ``twin`` (the
    name is upstream's): each job adds its own ownerReference, none is the controller, so deleting one
    job leaves the other's pods their CA."""
    ns = cluster.namespace
    v1_uid = cluster.create(pytorch_job("twin").master(1).build_dict())["metadata"]["uid"]
    (v1_pod,) = running_pods(cluster, {"training.kubeflow.org/job-name": "twin"}, 1)
    job = trainjob(
        "twin", "torch-distributed", {"node": ""}, trainer={"numNodes": 1, "command": ["torchrun", "t.py"]}
    )
    job["metadata"]["namespace"] = ns
    tj_uid = dict(cluster.client.create(TrainJobResource(job)).to_dict())["metadata"]["uid"]
    (tj_pod,) = running_pods(cluster, {"jobset.sigs.k8s.io/jobset-name": "twin"}, 1)
    server = f"https://training-operator.{progress_op.pod_ns}.svc/apis"
    for pod, path in (
        (v1_pod, f"kubeflow.org/v1/namespaces/{ns}/pytorchjobs/twin/status"),
        (tj_pod, f"trainer.kubeflow.org/v1alpha1/namespaces/{ns}/trainjobs/twin/status"),
    ):
        check_injected(pod, f"{server}/{path}")
        volume = next(v for v in pod["spec"]["volumes"] if v["name"] == VOLUME_NAME)
        assert volume["projected"]["sources"][1]["configMap"]["name"] == "twin-tls-config"

    def owners() -> dict[str, dict[str, Any]]:
        cm = cluster.get(r.ConfigMap, "twin-tls-config") or {"metadata": {}}
        return {o["uid"]: o for o in cm["metadata"].get("ownerReferences") or ()}

    secret = cluster.client.get(r.Secret, progress_op.secret, namespace=progress_op.pod_ns)
    ca = base64.b64decode(dict(secret)["data"]["ca.crt"]).decode()
    assert (cluster.get(r.ConfigMap, "twin-tls-config") or {})["data"]["ca.crt"] == ca
    assert tj_uid in owners()  # the TrainJob's pass wrote last

    # The TrainJob goes: the garbage collector drops its reference and keeps the ConfigMap for the
    # PyTorchJob; once that goes too, the ConfigMap goes.
    cluster.client.delete(TrainJobResource, "twin", namespace=ns)
    wait_for(lambda: tj_uid not in owners() or None, 60, "the TrainJob's reference dropped")
    assert owners().keys() == {v1_uid}, "twin-tls-config went with the TrainJob"
    assert not owners()[v1_uid].get("controller")
    cluster.delete_job("PyTorchJob", "twin")
    wait_for(lambda: cluster.get(r.ConfigMap, "twin-tls-config") is None or None, 60, "twin-tls-config gone")


def test_without_the_flag_pods_are_unchanged(start_operator: StartOperator, cluster: Cluster) -> None:
    op = start_operator("--enable-webhook=false")
    cluster.create(pytorch_job("plain").master(1).build_dict())
    (pod,) = running_pods(cluster, {"training.kubeflow.org/job-name": "plain"}, 1)
    names = {e["name"] for c in pod["spec"]["containers"] for e in c.get("env") or ()}
    assert ENV_TRAINER_SERVER_URL not in names
    assert all(v["name"] != VOLUME_NAME for v in pod["spec"].get("volumes") or ())
    cluster.settled(op, "PyTorchJob", "plain")
    assert cluster.get(r.ConfigMap, "plain-tls-config") is None
