"""Pod templates against the Kubernetes core/v1 schema (issue 10, finding 7: its template part)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

from trainop.api.podschema import schema, template_errors
from trainop.api.validation import validate_for_apply
from trainop.testing.builders import (
    JobBuilder,
    jax_job,
    mpi_job,
    paddle_job,
    pytorch_job,
    tf_job,
    xgboost_job,
)

REPO = Path(__file__).resolve().parents[3]
W = "spec.mpiReplicaSpecs[Worker].template.spec.containers[0]"


def set_container(**fields: Any) -> Any:
    def op(template: dict[str, Any]) -> None:
        template["spec"]["containers"][0].update(fields)

    return op


def set_spec(**fields: Any) -> Any:
    def op(template: dict[str, Any]) -> None:
        template["spec"].update(fields)

    return op


def mpi(op: Any) -> dict[str, Any]:
    return mpi_job("m").launcher(1).workers(1).template(op, "Worker").build_dict()


@pytest.mark.parametrize(
    ("obj", "want"),
    [
        pytest.param(mpi(set_container(env="notalist")),
                     [f'{W}.env: Invalid value: "notalist": must be a list of EnvVar objects'],
                     id="env that is a string (finding 7 as reported)"),
        pytest.param(mpi(set_container(env=[{"name": ["a"]}])),
                     [f'{W}.env[0].name: Invalid value: ["a"]: must be a string'],
                     id="an env name that is a list (finding 5: render crashed)"),
        pytest.param(mpi(set_container(env=[{"name": "A", "value": 1}])),
                     [f'{W}.env[0].value: Invalid value: 1: must be a string: quote it, "1"'],
                     id="an env value that is a number says to quote it"),
        pytest.param(mpi(set_container(resources="big")),
                     [f'{W}.resources: Invalid value: "big": must be an object (a ResourceRequirements)'],
                     id="resources not an object"),
        pytest.param(mpi(set_container(resources={"limits": {"cpu": 1, "memory": "4Gi"},
                                                  "requests": {"cpu": 0.5}})),
                     [], id="quantities: numbers and suffixed strings"),
        pytest.param(mpi(set_container(resources={"limits": {"cpu": "lots"}})),
                     [f'{W}.resources.limits[cpu]: Invalid value: "lots": must be a quantity, a number '
                      "with an optional suffix such as 500m, 2 or 4Gi (quantities must match the regular "
                      "expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$')"],
                     id="a quantity that is not one"),
        pytest.param(mpi(set_container(resources={"limits": {"memory": "1.2.3Mi"}})),
                     [f'{W}.resources.limits[memory]: Invalid value: "1.2.3Mi": must be a quantity, a number '
                      "with an optional suffix such as 500m, 2 or 4Gi (quantities must match the regular "
                      "expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$')"],
                     id="two decimal points: the CRD's pattern refuses it too"),
        pytest.param(mpi(set_container(resources={"limits": {"cpu": ".5", "memory": "1e3", "x": "+2Ki"}})),
                     [], id="quantities: a leading point, an exponent, a sign"),
        pytest.param(mpi(set_container(livenessProbe={"httpGet": {"port": "http"},
                                                      "tcpSocket": {"port": 80}})),
                     [], id="int-or-string ports: a name or a number"),
        pytest.param(mpi(set_container(livenessProbe={"httpGet": {"port": [80]}})),
                     [f"{W}.livenessProbe.httpGet.port: Invalid value: [80]: must be an integer or a string"],
                     id="int-or-string port that is a list"),
        pytest.param(mpi(set_container(envv=[{"name": "A"}])),
                     [f'{W}.envv: Unsupported field: Kubernetes would drop it; did you mean "env"?'],
                     id="unknown container field with a did-you-mean"),
        pytest.param(mpi(set_container(image_pull_policy="Always")),
                     [f'{W}.image_pull_policy: Unsupported field: Kubernetes would drop it; did you mean '
                      '"imagePullPolicy"?'],
                     id="snake_case field"),
        pytest.param(mpi(set_container(stdin="true", command="python train.py")),
                     [f'{W}.stdin: Invalid value: "true": must be a boolean: write true without quotes',
                      f'{W}.command: Invalid value: "python train.py": must be a list of strings'],
                     id="a quoted boolean and a command that is a string"),
        pytest.param(mpi(set_container(command=["python", None])),
                     [f"{W}.command[1]: Invalid value: null: must be a string"], id="a null list item"),
        pytest.param(mpi(set_spec(terminationGracePeriodSeconds="30", nodeSelector={"a": 1})),
                     ["spec.mpiReplicaSpecs[Worker].template.spec.terminationGracePeriodSeconds: "
                      'Invalid value: "30": must be an integer: write 30 without quotes',
                      "spec.mpiReplicaSpecs[Worker].template.spec.nodeSelector[a]: Invalid value: 1: "
                      'must be a string: quote it, "1"'],
                     id="pod spec fields: an integer quoted, a label value that is a number"),
        pytest.param(mpi(set_spec(volumes=[{"name": "v", "emptyDir": {"sizeLimit": "1Gi"}}],
                                  tolerations=None)),
                     [], id="a null field is unset; emptyDir's sizeLimit is a quantity"),
        pytest.param(mpi(set_container(ports="notalist")),
                     [f'{W}.ports: Invalid value: "notalist": must be a list of ports'],
                     id="what the template shape rule reports is said once"),
    ],
)  # fmt: skip
def test_validate_for_apply_checks_templates(obj: dict[str, Any], want: list[str]) -> None:
    assert [str(e) for e in validate_for_apply(obj)] == want


BUILDERS: dict[str, JobBuilder] = {
    "PyTorchJob": pytorch_job("j").master(1).workers(1),
    "TFJob": tf_job("j").workers(1),
    "XGBoostJob": xgboost_job("j").master(1).workers(1),
    "MPIJob": mpi_job("j").launcher(1).workers(1),
    "PaddleJob": paddle_job("j").workers(1),
    "JAXJob": jax_job("j").workers(1),
}


@pytest.mark.parametrize("kind", list(BUILDERS))
def test_every_kind_and_both_inputs(kind: str) -> None:
    obj = BUILDERS[kind].template(set_container(env="x"), "Worker").build_dict()
    key = next(k for k in obj["spec"] if k.endswith("ReplicaSpecs"))
    want = [
        f'spec.{key}[Worker].template.spec.containers[0].env: Invalid value: "x": must be a list of '
        "EnvVar objects"
    ]
    assert [str(e) for e in template_errors(obj)] == want
    assert [str(e) for e in validate_for_apply(obj)] == want


@pytest.mark.parametrize(
    "obj",
    [
        pytest.param({}, id="empty"),
        pytest.param({"kind": ["x"], "spec": 1}, id="kind unhashable"),
        pytest.param({"kind": "MPIJob", "spec": {"mpiReplicaSpecs": {"Worker": {"template": "x"}}}},
                     id="template a string"),
        pytest.param({"kind": "MPIJob",
                      "spec": {"mpiReplicaSpecs": {"Worker": {"template": {1: {True: None}}}}}},
                     id="keys that are not strings"),
    ],
)  # fmt: skip
def test_template_errors_never_raises(obj: dict[str, Any]) -> None:
    template_errors(obj)


def _generator() -> Any:
    spec = importlib.util.spec_from_file_location("gen_podschema", REPO / "hack" / "gen_podschema.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_committed_schema_is_a_fresh_generation() -> None:
    """podschema.json is generated from the kubernetes package (a dev dependency), never hand-edited.
    With the kubernetes version it was generated from it must be identical; with another (a fresh
    environment may resolve another), every field both know must have the same type."""
    gen = _generator()
    fresh = gen.build_schema()
    path = REPO / "src" / "trainop" / "api" / "podschema.json"
    committed = json.loads(path.read_text())
    assert committed == schema()
    regen = "regenerate it: .venv/bin/python hack/gen_podschema.py"
    if committed["source"] == fresh["source"]:
        assert gen.render(fresh) == path.read_text(), regen
    else:
        differ = {
            f"{t}.{f}": (typ, fresh["types"][t][f])
            for t, fields in committed["types"].items()
            for f, typ in fields.items()
            if f in fresh["types"].get(t, {}) and fresh["types"][t][f] != typ
        }
        assert differ == {}, regen


def test_a_quantity_is_checked_with_the_pattern_the_crds_carry() -> None:
    """Locally as on a cluster: the API server checks a quantity in a job against its CRD's pattern."""
    import re
    from pathlib import Path

    from trainop.api.podschema import _QUANTITY_RE

    crd = (Path(__file__).resolve().parents[3] / "manifests/crds/kubeflow.org_pytorchjobs.yaml").read_text()
    patterns = set(re.findall(r"pattern: (\^\(\\\+\|-\)\?.*)", crd))
    assert patterns == {_QUANTITY_RE.pattern}
