"""The same train() call through kubeflow-training 1.9.4 and through trainop.sdk leaves the same
PersistentVolumeClaim and PyTorchJob on the API server (issue 21).

One call, written against upstream's API only (its ``kubeflow.storage_initializer`` parameter classes,
``transformers``/``peft`` objects), runs with each client into its own namespace of the test control
plane; the objects are read back with kubectl and compared whole. The only difference allowed is the
documented one (docs/finetune.md): trainop's trainer containers carry TRAINOP_CLIENT_VERSIONS.
"""

from __future__ import annotations

import importlib
from typing import Any

import pytest

pytestmark = [
    pytest.mark.integration,
    pytest.mark.k8s,
    pytest.mark.timeout(300),
    # transformers and peft warn about their own deprecations while they load
    pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::DeprecationWarning", "ignore::UserWarning"),
]

# Server-set metadata: differs between any two objects.
SERVER_FIELDS = ("uid", "resourceVersion", "creationTimestamp", "managedFields", "generation", "namespace")
DOCUMENTED_ENV = "TRAINOP_CLIENT_VERSIONS"  # docs/finetune.md, "Differences from upstream"


def call_train(package: str, kubeconfig: str, namespace: str, training_args: Any) -> None:
    """Notebook code for kubeflow-training 1.9.4; only the TrainingClient import differs."""
    import transformers
    from kubeflow.storage_initializer.hugging_face import (
        HuggingFaceModelParams,
        HuggingFaceTrainerParams,
    )
    from kubeflow.storage_initializer.s3 import S3DatasetParams
    from peft import LoraConfig

    client_class = importlib.import_module(package).TrainingClient
    client = client_class(config_file=kubeconfig, namespace=namespace)
    try:
        client.train(
            name="llm",
            labels={"team": "nlp"},
            annotations={"purpose": "dual-import"},
            num_workers=3,
            num_procs_per_worker=2,
            resources_per_worker={"cpu": "2", "memory": "4Gi", "GPU": "1"},
            model_provider_parameters=HuggingFaceModelParams(
                model_uri="hf://google-bert/bert-base-cased",
                transformer_type=transformers.AutoModelForSequenceClassification,
                num_labels=5,
            ),
            dataset_provider_parameters=S3DatasetParams(
                endpoint_url="http://minio.example:9000",
                bucket_name="corpora",
                file_key="yelp",
                region_name="us-east-1",
                access_key="AKID",
                secret_key="secret",
            ),
            trainer_parameters=HuggingFaceTrainerParams(
                training_parameters=training_args,
                lora_config=LoraConfig(r=8, lora_alpha=8, lora_dropout=0.1, bias="none"),
            ),
            init_env_vars={"HF_HUB_OFFLINE": "1"},
            env_vars=[{"name": "NCCL_DEBUG", "value": "INFO"}],
            storage_config={"size": "5Gi", "storage_class": "standard", "access_modes": ["ReadWriteOnce"]},
            queue_name="team-queue",
        )
    finally:
        close = getattr(getattr(client, "backend", None), "close", None)
        if close is not None:
            close()


def read_back(k8s_env: Any, namespace: str) -> dict[str, Any]:
    got = {
        "pvc": k8s_env.kubectl_json("get", "persistentvolumeclaim", "llm", "-o", "json", namespace=namespace),
        "job": k8s_env.kubectl_json("get", "pytorchjob", "llm", "-o", "json", namespace=namespace),
    }
    for obj in got.values():
        obj.pop("status", None)
        for f in SERVER_FIELDS:
            obj["metadata"].pop(f, None)
        # Set by the PVC controller once the claim binds (or not), at its own time.
        for key in ("pv.kubernetes.io/bind-completed", "volume.beta.kubernetes.io/storage-provisioner"):
            obj["metadata"].get("annotations", {}).pop(key, None)
        if obj["metadata"].get("annotations") == {}:
            obj["metadata"].pop("annotations")
        obj["metadata"].pop("finalizers", None)
    return got


def strip_documented(job: dict[str, Any]) -> list[str]:
    """Remove the documented env var from each trainer container; where it was found."""
    found = []
    for rtype, spec in job["spec"]["pytorchReplicaSpecs"].items():
        for c in spec["template"]["spec"]["containers"]:
            env = c.get("env") or []
            kept = [e for e in env if e["name"] != DOCUMENTED_ENV]
            if len(kept) != len(env):
                found.append(f"{rtype}/{c['name']}")
                c["env"] = kept
    return found


def test_train_creates_upstreams_pvc_and_pytorchjob(
    k8s_env: Any, k8s_operator: Any, k8s_namespace: str
) -> None:
    pytest.importorskip("kubeflow.training", reason="kubeflow-training==1.9.4 (a dev dependency) is missing")
    import transformers

    args = transformers.TrainingArguments(
        output_dir="test_trainer", save_strategy="no", eval_strategy="no", do_eval=False, num_train_epochs=1
    )
    theirs_ns = k8s_namespace
    ours_ns = k8s_env.create_namespace(f"{k8s_namespace}-ours"[:63], labels={"trainop.dev/test": "true"})
    try:
        call_train("kubeflow.training", str(k8s_env.kubeconfig), theirs_ns, args)
        call_train("trainop.sdk", str(k8s_env.kubeconfig), ours_ns, args)
        theirs = read_back(k8s_env, theirs_ns)
        ours = read_back(k8s_env, ours_ns)
    finally:
        k8s_env.delete_namespace(ours_ns)
    assert strip_documented(ours["job"]) == ["Master/pytorch", "Worker/pytorch"]
    assert strip_documented(theirs["job"]) == []
    assert ours == theirs
    # What the call made, as upstream makes it (a few fields, so a change on both sides is seen).
    job = theirs["job"]
    assert job["metadata"]["labels"] == {"team": "nlp", "kueue.x-k8s.io/queue-name": "team-queue"}
    assert job["spec"]["nprocPerNode"] == "2"
    assert {k: v["replicas"] for k, v in job["spec"]["pytorchReplicaSpecs"].items()} == {
        "Master": 1,
        "Worker": 2,
    }
    master = job["spec"]["pytorchReplicaSpecs"]["Master"]["template"]
    assert master["metadata"]["annotations"] == {"sidecar.istio.io/inject": "false"}
    assert [c["name"] for c in master["spec"]["initContainers"]] == ["storage-initializer"]
    assert theirs["pvc"]["spec"]["accessModes"] == ["ReadWriteOnce"]
