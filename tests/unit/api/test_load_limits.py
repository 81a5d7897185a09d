"""Input limits with clear errors (issue 10, finding 5): encodings, size, nesting, aliases, duplicate
keys, and what the local backend can run. Each case raised a traceback, or never ended, before."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from trainop.api.errors import InvalidJobError
from trainop.api.load import (
    MAX_MANIFEST_BYTES,
    ManifestError,
    load_documents,
    load_file,
    load_jobs,
    read_manifest,
)
from trainop.backends.local.api import LocalBackend
from trainop.testing.builders import mpi_job, pytorch_job

JOB = pytorch_job("a").master(1).workers(1).build_dict()
TEXT = yaml.safe_dump(JOB)
BOMB = (
    "a: &a [x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
    "d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: &f "
    "[*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"
)


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(TEXT.encode("utf-16"), id="UTF-16 with a BOM (as PowerShell writes it)"),
        pytest.param(TEXT.encode("utf-16-be").join([b"\xfe\xff", b""]), id="UTF-16 BE with a BOM"),
        pytest.param(TEXT.encode("utf-32"), id="UTF-32 with a BOM"),
        pytest.param(b"\xef\xbb\xbf" + TEXT.encode(), id="UTF-8 with a BOM"),
    ],
)
def test_a_file_in_another_unicode_encoding_loads(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "job.yaml"
    path.write_bytes(data)
    assert [j.to_dict() for j in load_file(path)] == [j.to_dict() for j in load_jobs(TEXT)]


def _error(data: bytes | str, source: str = "job.yaml") -> tuple[str, list[str]]:
    with pytest.raises(InvalidJobError) as info:
        load_documents(data, source=source)
    return type(info.value).__name__, [str(e) for e in info.value.errors]


@pytest.mark.parametrize(
    ("data", "want"),
    [
        pytest.param("kind: Py\xe9\n".encode("latin-1"),
                     ["job.yaml: not UTF-8 at byte 8 (0xe9): save the file as UTF-8 (or UTF-16 with a "
                      "byte-order mark)"], id="latin-1"),
        pytest.param(b"\xff\xfe" + b"k\x00\x00\xd8",
                     ["job.yaml: not valid UTF-16-LE at byte 4 (the file starts with a UTF-16-LE "
                      "byte-order mark): save it as UTF-8"], id="a UTF-16 BOM, then a lone surrogate"),
        pytest.param(b"[" * 5000 + b"]" * 5000,
                     ["job.yaml: nested deeper than 100 levels at line 1, column 1001: a Kubernetes "
                      "object needs far fewer; flatten it"],
                     id="flow nesting past the recursion limit (libyaml's 1000 first)"),
        pytest.param(b"[" * 500 + b"]" * 500,
                     ["job.yaml: nested deeper than 100 levels at line 1, column 101: a Kubernetes "
                      "object needs far fewer; flatten it"], id="flow nesting"),
        pytest.param(("a:\n" + "".join("  " * (i + 1) + f"k{i}:\n" for i in range(150))).encode(),
                     ["job.yaml: nested deeper than 100 levels at line 101, column 201: a Kubernetes "
                      "object needs far fewer; flatten it"], id="block nesting"),
        pytest.param(BOMB.encode(),
                     ["job.yaml: document contains excessive aliasing (at line 3, column 4: 4670 values, "
                      "4631 of them from aliases), as kubectl refuses it: write the values out"],
                     id="an alias bomb of 1 KB"),
        pytest.param(b"a: &a [1, *a]\n",
                     ["job.yaml: a recursive alias at line 1, column 4 (a[1]): it refers to a node that "
                      "contains it; an alias must refer to a node outside itself"], id="a recursive alias"),
        pytest.param(TEXT.replace("kind: PyTorchJob\n", "kind: PyTorchJob\nkind: TFJob\n").encode(),
                     ['kind: Duplicate value: "kind" at line '
                      f'{TEXT.splitlines().index("kind: PyTorchJob") + 2}, '
                      "column 1 is already set at line "
                      f"{TEXT.splitlines().index('kind: PyTorchJob') + 1}, column 1: "
                      "keep one"], id="a duplicate key, with its path"),
        pytest.param(b"a: [" + b"1," * 100_001 + b"]",
                     ["job.yaml: the manifest has more than 100000 values (at line 1, column 199999): a "
                      "training job needs far fewer; move large data out of it (a ConfigMap, a volume)"],
                     id="too many values"),
        pytest.param(b"a: " + b"x" * MAX_MANIFEST_BYTES,
                     ["job.yaml: the manifest is over 3145728 bytes (3 MiB, the Kubernetes API server's "
                      "request limit): split it into several files, or move large data out of it (a "
                      "ConfigMap, a volume)"],
                     id="over 3 MiB"),
        pytest.param("kind: \ud800",
                     ["job.yaml: character 6 is a lone surrogate, which no file can hold"],
                     id="text (the SDK's) with a lone surrogate"),
    ],
)  # fmt: skip
def test_bad_input_is_a_clear_error(data: bytes | str, want: list[str]) -> None:
    assert _error(data) == ("ManifestError", want)


def test_read_manifest_refuses_a_big_file_without_reading_it_all(tmp_path: Path) -> None:
    path = tmp_path / "big.yaml"
    path.write_bytes(b"a: " + b"x" * (MAX_MANIFEST_BYTES * 4))
    with pytest.raises(ManifestError) as info:
        read_manifest(path)
    assert str(info.value.errors[0]).startswith(f"{path}: the manifest is over 3145728 bytes")


def test_aliases_used_as_intended_load() -> None:
    text = TEXT + "x-env: &env [{name: A, value: b}]\nx-more: *env\n"
    assert load_documents(text)[0]["x-more"] == [{"name": "A", "value": "b"}]


def test_timestamps_stay_strings_as_kubectl_reads_them() -> None:
    assert load_documents("a: 2024-01-01\nb: 2024-01-01T00:00:00Z\n") == [
        {"a": "2024-01-01", "b": "2024-01-01T00:00:00Z"}
    ]


def set_container(**fields: Any) -> Any:
    def op(template: dict[str, Any]) -> None:
        template["spec"]["containers"][0].update(fields)

    return op


@pytest.mark.timeout(120)  # before the fix, render never ended
@pytest.mark.parametrize(
    ("obj", "want"),
    [
        pytest.param(
            pytorch_job("a").master(1).workers(2147483647).build_dict(),
            "spec.pytorchReplicaSpecs[Worker].replicas: Invalid value: 2147483647: the local backend "
            "runs each replica as processes on this machine, which can run at most ",
            id="replicas 2147483647",
        ),
        pytest.param(
            mpi_job("m").launcher(1).workers(1).template(set_container(env="notalist"),
                                                         "Worker").build_dict(),
            'spec.mpiReplicaSpecs[Worker].template.spec.containers[0].env: Invalid value: "notalist": '
            "must be a list of EnvVar objects",
            id="an env that is a string (AttributeError in the MPI plugin)",
        ),
        pytest.param(
            pytorch_job("a").master(1).workers(1).template(set_container(env=[{"name": ["a"]}]),
                                                           "Worker").build_dict(),
            'spec.pytorchReplicaSpecs[Worker].template.spec.containers[0].env[0].name: Invalid value: '
            '["a"]: must '
            "be a string",
            id="an env name that is a list (accepted, then render crashed)",
        ),
    ],
)  # fmt: skip
def test_local_render_refuses_with_a_field_path(tmp_path: Path, obj: dict[str, Any], want: str) -> None:
    with pytest.raises(InvalidJobError) as info:
        LocalBackend(home=tmp_path).render(obj, "local")
    assert [str(e)[: len(want)] for e in info.value.errors] == [want]


def test_the_replica_cap_names_what_this_machine_can_run(tmp_path: Path) -> None:
    obj = pytorch_job("a").master(1).workers(10_000).build_dict()
    with pytest.raises(InvalidJobError) as info:
        LocalBackend(home=tmp_path).render(obj, "local")
    message = str(info.value.errors[0])
    assert (
        "replicas per job (" in message
        and "(10001 in all); lower it, or run the job on Kubernetes" in message
    )
    assert LocalBackend(home=tmp_path).render(
        pytorch_job("a").master(1).workers(63).command(["true"]).build_dict(), "local"
    )
