"""create_job's argument rules (contract §7.3): what job each call builds, and each ValueError.

Pure: ``build_create_request`` turns arguments into Kubernetes JSON without a backend; the scenario
tests (test_scenarios.py) run the same calls for real.
"""

from __future__ import annotations

import textwrap
from typing import Any

import pytest
from kubernetes import client as k8s

from trainop.api.errors import InvalidJobError
from trainop.sdk import (
    KubeflowOrgV1PyTorchJob,
    KubeflowOrgV1PyTorchJobSpec,
    KubeflowOrgV1ReplicaSpec,
    KubeflowOrgV1RunPolicy,
    constants,
)
from trainop.sdk.client import build_create_request


def train_fn(args):  # type: ignore[no-untyped-def]
    print("lr", args["lr"], "cost: $HOME `x`")


def no_args_fn():  # type: ignore[no-untyped-def]
    print("hello")


DEFAULTS: dict[str, Any] = dict(
    job=None,
    name=None,
    namespace=None,
    default_namespace="team-a",
    labels=None,
    annotations=None,
    job_kind=None,
    default_kind="PyTorchJob",
    base_image=None,
    train_func=None,
    parameters=None,
    num_workers=1,
    num_procs_per_worker=None,
    resources_per_worker=None,
    num_chief_replicas=None,
    num_ps_replicas=None,
    packages_to_install=None,
    pip_index_url=constants.DEFAULT_PIP_INDEX_URL,
    env_vars=None,
    queue_name=None,
    volumes=None,
    volume_mounts=None,
)

TRAIN_FN_SOURCE = textwrap.dedent(
    """\
    def train_fn(args):  # type: ignore[no-untyped-def]
        print("lr", args["lr"], "cost: $HOME `x`")
    """
)

# The exact script of a python -u function job with parameters (the format both backends run).
TRAIN_FN_SCRIPT = (
    "program_path=$(mktemp -d)\n"
    "read -r -d '' SCRIPT << 'EOM'\n" + TRAIN_FN_SOURCE.rstrip() + "\n\ntrain_fn({'lr': 0.1})\n"
    "EOM\n"
    'printf "%s" "$SCRIPT" > "$program_path/ephemeral_script.py"\n'
    'python -u "$program_path/ephemeral_script.py"\n'
)


def template(
    script: str | None, image: str = constants.PYTORCHJOB_BASE_IMAGE, **container: Any
) -> dict[str, Any]:
    c: dict[str, Any] = {"name": "pytorch", "image": image}
    if script is not None:
        c["command"] = ["bash", "-c"]
        c["args"] = [script]
    c.update(container)
    return {"metadata": {"annotations": {"sidecar.istio.io/inject": "false"}}, "spec": {"containers": [c]}}


def pytorch(
    name: str, specs: dict[str, Any], ns: str = "team-a", labels: dict[str, str] | None = None, **spec: Any
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": ns, **({"labels": labels} if labels else {})}
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": meta,
        "spec": {"runPolicy": {}, "pytorchReplicaSpecs": specs, **spec},
    }


K8S_MODEL_JOB = KubeflowOrgV1PyTorchJob(
    api_version=constants.API_VERSION,
    kind=constants.PYTORCHJOB_KIND,
    metadata=k8s.V1ObjectMeta(name="from-models", labels={"team": "a"}),
    spec=KubeflowOrgV1PyTorchJobSpec(
        run_policy=KubeflowOrgV1RunPolicy(clean_pod_policy="None"),
        pytorch_replica_specs={
            "Master": KubeflowOrgV1ReplicaSpec(
                replicas=1,
                restart_policy="OnFailure",
                template=k8s.V1PodTemplateSpec(
                    metadata=k8s.V1ObjectMeta(annotations={"sidecar.istio.io/inject": "false"}),
                    spec=k8s.V1PodSpec(
                        containers=[
                            k8s.V1Container(
                                name="pytorch",
                                image="img",
                                image_pull_policy="IfNotPresent",
                                command=["python", "-c", "print(1)"],
                                env=[k8s.V1EnvVar(name="A", value="1")],
                            )
                        ]
                    ),
                ),
            )
        },
    ),
)

K8S_MODEL_WANT = {
    "apiVersion": "kubeflow.org/v1",
    "kind": "PyTorchJob",
    "metadata": {"name": "from-models", "namespace": "team-a", "labels": {"team": "a"}},
    "spec": {
        "runPolicy": {"cleanPodPolicy": "None"},
        "pytorchReplicaSpecs": {
            "Master": {
                "replicas": 1,
                "restartPolicy": "OnFailure",
                "template": {
                    "metadata": {"annotations": {"sidecar.istio.io/inject": "false"}},
                    "spec": {
                        "containers": [
                            {
                                "name": "pytorch",
                                "image": "img",
                                "imagePullPolicy": "IfNotPresent",
                                "command": ["python", "-c", "print(1)"],
                                "env": [{"name": "A", "value": "1"}],
                            }
                        ]
                    },
                },
            }
        },
    },
}

YAML_JOB = """
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: from-yaml, namespace: other}
spec:
  tfReplicaSpecs:
    Worker:
      replicas: 2
      template: {spec: {containers: [{name: tensorflow, image: img}]}}
"""


@pytest.mark.parametrize(
    ("args", "want", "want_isolated"),
    [
        pytest.param(
            dict(name="fn", train_func=train_fn, parameters={"lr": 0.1}),
            pytorch("fn", {"Master": {"replicas": 1, "template": template(TRAIN_FN_SCRIPT)}}),
            False,
            id="function, one worker: Master only, python -u, source written verbatim ($ and backticks kept)",
        ),
        pytest.param(
            dict(name="fn", train_func=no_args_fn, num_workers=3, namespace="ns2", labels={"l": "1"}),
            pytorch(
                "fn",
                {
                    "Master": {"replicas": 1, "template": template(None)},
                    "Worker": {"replicas": 2, "template": template(None)},
                },
                ns="ns2",
                labels={"l": "1"},
            ),
            False,
            id="function, three workers: Master 1 + Worker 2 running torchrun, labels on the job",
        ),
        pytest.param(
            dict(name="fn", train_func=no_args_fn, num_procs_per_worker=4),
            pytorch("fn", {"Master": {"replicas": 1, "template": template(None)}}, nprocPerNode="4"),
            False,
            id="num_procs_per_worker alone: torchrun and nprocPerNode as a string",
        ),
        pytest.param(
            dict(
                name="fn",
                train_func=no_args_fn,
                base_image="my/image:1",
                resources_per_worker={"CPU": "2", "GPU": 1, "Memory": "1Gi"},
                env_vars={"A": "1", "B": 2},
                volumes=[k8s.V1Volume(name="data", empty_dir=k8s.V1EmptyDirVolumeSource())],
                volume_mounts=[k8s.V1VolumeMount(name="data", mount_path="/data")],
            ),
            "resources",
            False,
            id="resources lower-cased, gpu renamed, used as requests and limits; env dict; volumes",
        ),
        pytest.param(
            dict(
                name="fn",
                train_func=train_fn,
                parameters={"lr": 0.1},
                packages_to_install=["numpy>=1.26", "tqdm"],
            ),
            "packages",
            True,
            id="packages_to_install: pip runs first (requirements quoted), job needs an isolated env",
        ),
        pytest.param(
            dict(
                name="tf",
                job_kind="TFJob",
                base_image="tf:1",
                num_workers=2,
                num_chief_replicas=1,
                num_ps_replicas=1,
            ),
            {
                "apiVersion": "kubeflow.org/v1",
                "kind": "TFJob",
                "metadata": {"name": "tf", "namespace": "team-a"},
                "spec": {
                    "runPolicy": {},
                    "tfReplicaSpecs": {
                        "Chief": {"replicas": 1, "template": template(None, "tf:1", name="tensorflow")},
                        "PS": {"replicas": 1, "template": template(None, "tf:1", name="tensorflow")},
                        "Worker": {"replicas": 2, "template": template(None, "tf:1", name="tensorflow")},
                    },
                },
            },
            False,
            id="image mode TFJob: Chief, PS and Worker share one template, no command",
        ),
        pytest.param(
            dict(job=K8S_MODEL_JOB),
            K8S_MODEL_WANT,
            False,
            id="job built from kubernetes.client models inside KubeflowOrgV1 models",
        ),
        pytest.param(
            dict(job=YAML_JOB, labels={"x": "y"}, annotations={"a": "b"}, queue_name="q1"),
            {
                "apiVersion": "kubeflow.org/v1",
                "kind": "TFJob",
                "metadata": {
                    "name": "from-yaml",
                    "namespace": "other",
                    "labels": {"x": "y", "kueue.x-k8s.io/queue-name": "q1"},
                    "annotations": {"a": "b"},
                },
                "spec": {
                    "tfReplicaSpecs": {
                        "Worker": {
                            "replicas": 2,
                            "template": {"spec": {"containers": [{"name": "tensorflow", "image": "img"}]}},
                        }
                    }
                },
            },
            False,
            id="job as YAML text keeps its namespace; labels, annotations and the Kueue queue label "
            "are added",
        ),
    ],
)
def test_build_create_request(args: dict[str, Any], want: Any, want_isolated: bool) -> None:
    got, isolated = build_create_request(**{**DEFAULTS, **args})
    if want == "resources":
        c = got["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]
        want_c = {
            "containers": [
                {
                    "name": "pytorch",
                    "image": "my/image:1",
                    "command": ["bash", "-c"],
                    "args": c["containers"][0]["args"],
                    "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                    "resources": {
                        "requests": {"cpu": "2", "nvidia.com/gpu": 1, "memory": "1Gi"},
                        "limits": {"cpu": "2", "nvidia.com/gpu": 1, "memory": "1Gi"},
                    },
                    "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                }
            ],
            "volumes": [{"name": "data", "emptyDir": {}}],
        }
        assert c == want_c
    elif want == "packages":
        script = got["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]["args"][0]
        assert script == (
            'if ! [ -x "$(command -v pip)" ]; then\n'
            "    python -m ensurepip || python -m ensurepip --user || apt-get install python-pip\n"
            "fi\n"
            "PIP_DISABLE_PIP_VERSION_CHECK=1 python -m pip install --quiet --no-warn-script-location "
            "--index-url https://pypi.org/simple 'numpy>=1.26' tqdm\n" + TRAIN_FN_SCRIPT
        )
    else:
        # Scripts of the torchrun cases are checked for their entrypoint, the rest as whole objects.
        for rs in got["spec"].get("pytorchReplicaSpecs", {}).values():
            c = rs["template"]["spec"]["containers"][0]
            if args.get("train_func") is no_args_fn:
                entry = (
                    "torchrun"
                    if args.get("num_workers", 1) > 1 or args.get("num_procs_per_worker")
                    else "python -u"
                )
                assert c["args"][0].endswith(f'{entry} "$program_path/ephemeral_script.py"\n')
                assert "\nno_args_fn()\n" in c["args"][0]
                del c["command"], c["args"]
        assert got == want
    assert isolated is want_isolated


@pytest.mark.parametrize(
    ("args", "error", "message"),
    [
        pytest.param(
            dict(job=K8S_MODEL_JOB, name="x"),
            ValueError,
            "If `job` is set only `namespace`, `labels`, and `annotations` arguments are allowed. "
            "Argument `name` must be None.",
            id="job plus name",
        ),
        pytest.param(
            dict(job=K8S_MODEL_JOB, volumes=[]),
            ValueError,
            "If `job` is set only `namespace`, `labels`, and `annotations` arguments are allowed. "
            "Argument `volumes` must be None.",
            id="job plus volumes",
        ),
        pytest.param(
            dict(train_func=no_args_fn),
            ValueError,
            "Job name must be set to configure Job from function or image",
            id="function without a name",
        ),
        pytest.param(
            dict(name="x", train_func=no_args_fn, num_workers=0),
            ValueError,
            "At least one Worker for PyTorchJob must be set",
            id="zero workers",
        ),
        pytest.param(
            dict(name="x", train_func="not a function"),
            ValueError,
            "Training function must be callable, got function type: <class 'str'>",
            id="train_func not callable",
        ),
        pytest.param(
            dict(name="x", train_func=no_args_fn, job_kind="XGBoostJob"),
            ValueError,
            "Job kind XGBoostJob can't be created using function or image. Number of Workers must be set.",
            id="function mode for a kind other than PyTorchJob/TFJob",
        ),
        pytest.param(
            dict(name="x", train_func=no_args_fn, job_kind="MXJob"),
            ValueError,
            "Job kind must be one of these: ['TFJob', 'PyTorchJob', 'XGBoostJob', 'MPIJob', 'PaddleJob', "
            "'JAXJob']",
            id="unknown kind",
        ),
        pytest.param(
            dict(name="x", job_kind="TFJob", base_image="i", num_procs_per_worker=2),
            ValueError,
            "TFJob doesn't support num_procs_per_worker",
            id="TFJob with procs per worker",
        ),
        pytest.param(
            dict(name="x", train_func=no_args_fn, volumes=[{"name": "v", "emptyDir": {}}]),
            ValueError,
            "Volumes and VolumeMounts must be the same length: 1 vs. 0",
            id="volumes without mounts",
        ),
        pytest.param(
            dict(
                job="apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {name: x}\nspec: "
                "{pytorchReplicaSpecs: 3}\n"
            ),
            InvalidJobError,
            "PyTorchJob 'x' is invalid: spec.pytorchReplicaSpecs: ",
            id="malformed job: trainop.api InvalidJobError (a ValueError, before any request) with the "
            "field path",
        ),
        pytest.param(
            dict(job=42),
            ValueError,
            "Job must be one of these types: ",
            id="a job that is no object",
        ),
    ],
)
def test_build_create_request_errors(args: dict[str, Any], error: type[Exception], message: str) -> None:
    with pytest.raises(error) as got:
        build_create_request(**{**DEFAULTS, **args})
    assert str(got.value).startswith(message), str(got.value)
    assert isinstance(got.value, ValueError)
