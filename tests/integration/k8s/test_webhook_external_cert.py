"""--manage-webhook-cert=false, the chart's cert-manager mode (webhook.certManager.enabled): the operator
serves the certificate it finds in --cert-dir (where the Deployment mounts cert-manager's Secret) and
neither writes a Secret nor touches the caBundle, which cert-manager's CA injector owns. Here the test
plays cert-manager: it issues the certificate and injects the CA."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import yaml
from k8s_harness import Cluster
from test_webhook import SELECTOR_LABEL, serving_webhook

from trainop.testing.builders import pytorch_job
from trainop.testing.testenv import K8sEnv


def test_the_webhook_serves_a_mounted_certificate(
    k8s_env: K8sEnv, crds: None, cluster: Cluster, tmp_path: Path
) -> None:
    certs = tmp_path / "certs"
    certs.mkdir()
    pair = k8s_env.issue_serving_cert(tmp_path, hosts=("127.0.0.1",))
    shutil.copy(pair.cert_file, certs / "tls.crt")
    shutil.copy(pair.key_file, certs / "tls.key")
    with serving_webhook(k8s_env, tmp_path, "--manage-webhook-cert=false") as wh:
        # cert-manager's CA injector.
        hooks = k8s_env.kubectl_json("get", "validatingwebhookconfiguration", wh.vwc)["webhooks"]
        patch = [
            {"op": "add", "path": f"/webhooks/{i}/clientConfig/caBundle", "value": pair.ca_bundle_b64}
            for i in range(len(hooks))
        ]
        k8s_env.kubectl(
            "patch", "validatingwebhookconfiguration", wh.vwc, "--type=json", "-p", json.dumps(patch)
        )
        k8s_env.kubectl("label", "namespace", cluster.namespace, f"{SELECTOR_LABEL}={wh.token}")
        bad = {**pytorch_job("bad").master(2).build_dict(), "metadata": {"name": "bad"}}
        got = k8s_env.kubectl(
            "apply", "-f", "-", input=yaml.safe_dump(bad), namespace=cluster.namespace, check=False
        )
        assert (
            "denied the request: spec.pytorchReplicaSpecs[Master].replicas: Forbidden: must be 1"
            in got.stderr
        )
        # Nothing of the operator's own certificate machinery ran.
        vwc = k8s_env.kubectl_json("get", "validatingwebhookconfiguration", wh.vwc)
        assert {w["clientConfig"]["caBundle"] for w in vwc["webhooks"]} == {pair.ca_bundle_b64}
        assert k8s_env.kubectl("get", "secret", wh.secret, namespace=wh.pod_ns, check=False).returncode != 0
