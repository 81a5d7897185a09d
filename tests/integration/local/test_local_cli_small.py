"""Small CLI items of issue 24 (item 8): what a command says is what it did."""

from __future__ import annotations

from pathlib import Path

from local_harness import run_cli, write_manifest

from trainop.testing.builders import pytorch_job


def test_suspend_or_resume_of_a_finished_job_says_nothing_changed(home: Path, tmp_path: Path) -> None:
    job = pytorch_job("done").master(1).restart_policy("Never").command(["sh", "-c", "exit 0"]).build_dict()
    assert run_cli("run", "--no-logs", str(write_manifest(tmp_path / "done.yaml", job))).returncode == 0
    suspended = run_cli("suspend", "done")
    resumed = run_cli("resume", "done")
    state = run_cli("get", "done", "-o", "jsonpath={.spec.runPolicy.suspend}").stdout
    assert (suspended.returncode, suspended.stdout, resumed.stdout, state) == (
        0,
        "pytorchjob.kubeflow.org/done unchanged: it already Succeeded, so there is nothing to suspend "
        "(submit it again to run it again)\n",
        "pytorchjob.kubeflow.org/done unchanged: it already Succeeded, so there is nothing to resume "
        "(submit it again to run it again)\n",
        "",
    )


def test_delete_ignore_not_found(home: Path) -> None:
    plain = run_cli("delete", "nope")
    ignored = run_cli("delete", "nope", "--ignore-not-found")
    assert (plain.returncode, ignored.returncode, ignored.stdout, ignored.stderr) == (3, 0, "", "")


def test_a_bad_namespace_with_no_manifest_names_the_option(home: Path) -> None:
    for command in ("get", "logs", "delete"):
        result = run_cli(command, "x", "-n", "../x")
        head = result.stderr.split(":")[0:2]
        assert (result.returncode, head, "manifest" in result.stderr) == (
            2,
            ["error", " -n/--namespace"],
            False,
        )


def test_run_on_a_service_and_a_job_says_what_is_not_a_job(home: Path, tmp_path: Path) -> None:
    import yaml

    job = pytorch_job("svc").master(1).command(["sh", "-c", "exit 0"]).build_dict()
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "svc"},
        "spec": {"ports": [{"port": 80}]},
    }
    path = tmp_path / "both.yaml"
    path.write_text(yaml.safe_dump_all([service, job]))
    result = run_cli("run", str(path))
    assert (result.returncode, "use submit" in result.stderr, "Service is not a job" in result.stderr) == (
        2,
        False,
        True,
    ), result.stderr
