"""What `trainop render|submit FILE` does with input that is not a plain UTF-8 job (issue 10, finding 5).

Each of these printed a Python traceback before: the CLI read the file as UTF-8 text itself, and
render wrote into a ``metadata`` that was not an object; render -b kubernetes of a huge replica count
never ended. Now: the job, or one line with a path and what to change, exit 2.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from trainop.cli.main import app

REPO = Path(__file__).resolve().parents[3]
DEMO = (REPO / "examples" / "pytorch" / "ddp-digits" / "pytorchjob.yaml").read_text()


def render(tmp_path: Path, data: bytes, *args: str) -> tuple[int, str]:
    path = tmp_path / "job.yaml"
    path.write_bytes(data)
    result = CliRunner().invoke(
        app, ["render", *args, str(path)], env={"TRAINOP_HOME": str(tmp_path / "home"), "COLUMNS": "300"}
    )
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.output


@pytest.mark.parametrize("encoding", ["utf-16", "utf-8-sig", "utf-32"])
def test_a_file_with_a_byte_order_mark_is_read_as_kubectl_reads_it(tmp_path: Path, encoding: str) -> None:
    code, out = render(tmp_path, DEMO.encode(encoding))
    assert (code, out.count("kind: Pod")) == (0, 3), out


def test_a_latin_1_file_is_one_line_naming_the_byte(tmp_path: Path) -> None:
    code, out = render(tmp_path, DEMO.replace("ddp-digits", "dd\xe9").encode("latin-1"))
    assert code == 2 and "not UTF-8 at byte" in out and "(0xe9)" in out, out


@pytest.mark.parametrize("meta", ["[]", "x", "7"])
def test_metadata_that_is_not_an_object(tmp_path: Path, meta: str) -> None:
    code, out = render(
        tmp_path, f"apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {meta}\n".encode()
    )
    assert code == 2 and "metadata: Invalid value" in out and "must be an object" in out, out


def test_render_for_a_cluster_refuses_a_replica_count_it_cannot_print(tmp_path: Path) -> None:
    huge = DEMO.replace("replicas: 2\n", "replicas: 2147483647\n")
    assert huge != DEMO
    code, out = render(tmp_path, huge.encode(), "-b", "kubernetes")
    assert code == 2 and "spec.pytorchReplicaSpecs[Worker].replicas: Invalid value: 2147483647" in out, out


def test_a_job_on_standard_input_is_read_once_for_every_look(tmp_path: Path) -> None:
    # `run -` asks "is it a TrainJob?" before the v1 path reads the manifest: a second read of the
    # consumed pipe found nothing ("- holds no job", exit 2).
    result = CliRunner().invoke(
        app,
        ["run", "--dry-run", "-"],
        input=DEMO,
        env={"TRAINOP_HOME": str(tmp_path / "home"), "COLUMNS": "300"},
    )
    assert result.exit_code == 0 and "holds no job" not in result.output, result.output
