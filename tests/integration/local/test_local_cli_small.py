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


def test_a_mistyped_gpu_resource_is_run_with_a_warning_naming_the_field(home: Path, tmp_path: Path) -> None:
    job = (
        pytorch_job("typo")
        .master(1)
        .gpu("Master", 1, resource="nvidia.com/gpus")
        .restart_policy("Never")
        .command(["sh", "-c", "exit 0"])
        .build_dict()
    )
    result = run_cli("run", "--no-logs", str(write_manifest(tmp_path / "typo.yaml", job)))
    warnings = [line for line in result.stderr.splitlines() if line.startswith("Warning:")]
    assert (result.returncode, warnings) == (
        0,
        [
            "Warning: spec.pytorchReplicaSpecs[Master].template.spec.containers[0].resources.limits"
            '[nvidia.com/gpus]: no node offers "nvidia.com/gpus" (extended resource names are free-form, '
            "so it is accepted, and the pod would wait for it forever on a cluster); did you mean "
            '"nvidia.com/gpu"?'
        ],
    ), result.stderr


def test_run_rm_deletes_the_job_after_printing_its_logs_and_keeps_the_exit_code(home: Path) -> None:
    failed = run_cli("run", "--rm", "--name", "rm-fail", "--", "sh", "-c", "echo last words; exit 3")
    succeeded = run_cli("run", "--rm", "--name", "rm-ok", "--", "sh", "-c", "echo fine")
    listed = run_cli("get", "-o", "name")
    assert {
        "failed": (failed.returncode, "master-0 | last words" in failed.stdout),
        "succeeded": (succeeded.returncode, "master-0 | fine" in succeeded.stdout),
        "left": listed.stdout,
        "state and logs": sorted(str(p.relative_to(home)) for p in home.rglob("rm-*")),
    } == {
        "failed": (1, True),
        "succeeded": (0, True),
        "left": "",
        "state and logs": [],
    }, (failed.stdout + failed.stderr, succeeded.stderr)


def test_completion_offers_a_real_jobs_replicas(home: Path, tmp_path: Path) -> None:
    """As bash asks for ``trainop logs NAME --replica <TAB>`` and ``-r w<TAB>``: the job's replicas."""
    import subprocess
    import sys

    job = pytorch_job("comp").master(1).workers(2).command(["sh", "-c", "sleep 60"]).build_dict()
    assert run_cli("submit", str(write_manifest(tmp_path / "comp.yaml", job))).returncode == 0
    script = run_cli("completion", "bash").stdout
    probe = (
        f"export PATH={Path(sys.executable).parent}:$PATH\n{script}\n"
        "COMP_WORDS=(trainop logs comp --replica ''); COMP_CWORD=4; _trainop_completion trainop; "
        "echo ${COMPREPLY[@]}\n"
        "COMP_WORDS=(trainop logs comp -r w); COMP_CWORD=4; _trainop_completion trainop; "
        "echo ${COMPREPLY[@]}\n"
    )
    ran = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, timeout=60)
    assert ran.stdout.splitlines() == ["master-0 worker-0 worker-1", "worker-0 worker-1"], ran.stderr
    assert run_cli("delete", "comp", "--grace-period", "0").returncode == 0
