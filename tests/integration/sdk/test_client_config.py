"""TrainingClient's constructor (contract §7.3): which backend, cluster and namespace it talks to."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s

from trainop import TrainingClient
from trainop.sdk import SDKError


@pytest.mark.parametrize(
    ("kwargs", "env", "message"),
    [
        pytest.param(
            dict(job_kind="MXJob"),
            {},
            "Job kind must be one of these: ['TFJob', 'PyTorchJob', 'XGBoostJob', 'MPIJob', 'PaddleJob', "
            "'JAXJob']",
            id="unknown job_kind (upstream's message)",
        ),
        pytest.param(
            dict(backend="docker"),
            {},
            "backend: unknown backend 'docker'; use one of ['local', 'kubernetes']",
            id="unknown backend argument",
        ),
        pytest.param(
            dict(backend="local", config_file="kubeconfig", context="c"),
            {},
            "config_file, context: only for the Kubernetes backend, not backend='local'",
            id="cluster arguments with the local backend",
        ),
        pytest.param(
            {},
            {"TRAINOP_BACKEND": "nomad"},
            "$TRAINOP_BACKEND: unknown backend 'nomad'; use one of ['local', 'kubernetes']",
            id="unknown backend in the environment names the variable",
        ),
    ],
)
def test_constructor_rejects(
    kwargs: dict[str, Any], env: dict[str, str], message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    with pytest.raises(ValueError) as err:
        TrainingClient(**kwargs)
    assert str(err.value) == message


def test_backend_from_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TRAINOP_BACKEND", "local")
    monkeypatch.setenv("TRAINOP_HOME", str(tmp_path / "home"))
    client = TrainingClient(job_kind="TFJob")
    got = (client.backend.name, client.namespace, client.job_kind, client.list_jobs())
    assert got == ("local", "default", "TFJob", [])


def test_missing_kubeconfig_says_what_to_do(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("TRAINOP_BACKEND", raising=False)
    with pytest.raises(RuntimeError) as err:
        TrainingClient(config_file=str(tmp_path / "nope.yaml"))
    assert isinstance(err.value, SDKError)
    assert 'TrainingClient(backend="local")' in str(err.value)


@pytest.mark.k8s
def test_kubernetes_from_file_context_and_client_configuration(
    k8s_env: Any, k8s_operator: Any, k8s_namespace: str, tmp_path: Path
) -> None:
    # A second context whose namespace is the test's: the client's default namespace comes from it.
    conf = yaml.safe_load(Path(k8s_env.kubeconfig).read_text())
    ctx = dict(conf["contexts"][0])
    ctx = {"name": "sdk-test", "context": {**ctx["context"], "namespace": k8s_namespace}}
    conf["contexts"].append(ctx)
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump(conf))

    by_context = TrainingClient(config_file=str(kubeconfig), context="sdk-test")
    assert (by_context.backend.name, by_context.namespace) == ("kubernetes", k8s_namespace)
    assert by_context.list_jobs() == []

    cfg = k8s.Configuration(host=k8s_env.server, api_key={"authorization": f"Bearer {k8s_env.token}"})
    cfg.ssl_ca_cert = str(k8s_env.ca_file)
    by_configuration = TrainingClient(client_configuration=cfg, namespace=k8s_namespace)
    by_configuration.create_job(
        {
            "apiVersion": "kubeflow.org/v1",
            "kind": "PyTorchJob",
            "metadata": {"name": "cfg"},
            "spec": {
                "pytorchReplicaSpecs": {
                    "Master": {
                        "replicas": 1,
                        "template": {"spec": {"containers": [{"name": "pytorch", "image": "i"}]}},
                    }
                }
            },
        }
    )
    assert [j.metadata.name for j in by_context.list_jobs()] == ["cfg"]
    assert by_context.get_job("cfg").metadata.namespace == k8s_namespace
    for client in (by_context, by_configuration):
        client.backend.close()  # its HTTP connections (unclosed sockets otherwise)
