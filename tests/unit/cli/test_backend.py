"""Which backend a command talks to (backends/selection.py), and what a cluster's pod statuses say about the
runs of its containers (backends/kubernetes/jobs.py's build_pod_runs): both pure."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

from trainop.backends.kubernetes.jobs import PodRun, build_pod_runs
from trainop.backends.selection import Selection, SelectionError, build_selection


@pytest.mark.parametrize(
    ("flags", "env", "want"),
    [
        pytest.param((None, None, None), {}, Selection("local"), id="nothing said: this machine"),
        pytest.param(
            ("kubernetes", None, None),
            {},
            Selection("kubernetes"),
            id="--backend kubernetes: the kubeconfig's",
        ),
        pytest.param(
            (None, None, None), {"TRAINOP_BACKEND": "kubernetes"}, Selection("kubernetes"), id="env"
        ),
        pytest.param(
            ("local", None, None), {"TRAINOP_BACKEND": "kubernetes"}, Selection("local"), id="flag over env"
        ),
        pytest.param(
            (None, "/k", None), {}, Selection("kubernetes", "/k"), id="a kubeconfig alone: kubernetes"
        ),
        pytest.param(
            (None, None, "c"), {}, Selection("kubernetes", None, "c"), id="a context alone: kubernetes"
        ),
        pytest.param(("K8s", None, None), {}, Selection("kubernetes"), id="k8s is kubernetes"),
    ],
)
def test_build_selection(
    flags: tuple[str | None, str | None, str | None], env: dict[str, str], want: Selection
) -> None:
    assert build_selection(*flags, env) == want


@pytest.mark.parametrize(
    ("flags", "env", "want"),
    [
        pytest.param(
            ("docker", None, None),
            {},
            'unknown backend "docker" (--backend); use local or kubernetes',
            id="flag",
        ),
        pytest.param(
            (None, None, None),
            {"TRAINOP_BACKEND": "slurm"},
            'unknown backend "slurm" ($TRAINOP_BACKEND); use local or kubernetes',
            id="env",
        ),
        pytest.param(
            ("local", "/k", None),
            {},
            "--kubeconfig names a cluster, but the backend is local: add --backend kubernetes",
            id="a kubeconfig for local",
        ),
    ],
)
def test_build_selection_refuses(
    flags: tuple[str | None, str | None, str | None], env: dict[str, str], want: str
) -> None:
    with pytest.raises(SelectionError) as err:
        build_selection(*flags, env)
    assert str(err.value) == want


def _pod(name: str, *statuses: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": name}, "status": {"containerStatuses": list(statuses)}}


T0, T1 = "2026-01-01T00:00:00Z", "2026-01-01T00:00:05Z"


@pytest.mark.parametrize(
    ("pods", "want"),
    [
        pytest.param(
            [
                _pod(
                    "j-worker-0",
                    {"name": "pytorch", "restartCount": 0, "state": {"running": {"startedAt": T0}}},
                )
            ],
            [PodRun("j-worker-0", "pytorch", 0, None, 1767225600.0, None)],
            id="running: one unfinished run",
        ),
        pytest.param(
            [
                _pod(
                    "j-worker-0",
                    {
                        "name": "pytorch",
                        "restartCount": 2,
                        "lastState": {"terminated": {"exitCode": 1, "finishedAt": T0}},
                        "state": {"terminated": {"exitCode": 137, "startedAt": T0, "finishedAt": T1}},
                    },
                )
            ],
            [
                PodRun("j-worker-0", "pytorch", 1, 1, None, 1767225600.0),
                PodRun("j-worker-0", "pytorch", 2, 137, 1767225600.0, 1767225605.0),
            ],
            id="restarted then failed: the previous run and the last",
        ),
        pytest.param(
            [
                _pod(
                    "j-master-0",
                    {"name": "pytorch", "restartCount": 0, "state": {"waiting": {"reason": "X"}}},
                )
            ],
            [],
            id="waiting: no run yet",
        ),
    ],
)
def test_build_pod_runs(pods: list[dict[str, Any]], want: list[PodRun]) -> None:
    assert build_pod_runs(pods) == want


CLIENT_CLASSES = frozenset({"LocalBackend", "KubernetesBackend"})
CLI = Path(__file__).resolve().parents[3] / "src" / "trainop" / "cli"


def names_of_client_classes(source: str) -> list[tuple[int, str]]:
    """(line, name) for each import, name or attribute in ``source`` that names a backend's client
    class: what builds one, or checks a client's class (``isinstance``)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            found += [(node.lineno, a.name) for a in node.names if a.name in CLIENT_CLASSES]
        elif isinstance(node, ast.Name) and node.id in CLIENT_CLASSES:
            found.append((node.lineno, node.id))
        elif isinstance(node, ast.Attribute) and node.attr in CLIENT_CLASSES:
            found.append((node.lineno, node.attr))
    return sorted(found)


def test_the_cli_reaches_jobs_only_through_the_job_client_protocol() -> None:
    """The CLI gets its client from backends/selection.py and asks it through JobClient (and its
    ``replicas_here``); it never builds a backend's class nor checks a client's class (issue 22)."""
    named = {
        f"{path.name}:{line}: {name}"
        for path in sorted(CLI.glob("*.py"))
        for line, name in names_of_client_classes(path.read_text())
    }
    assert named == set()


def test_the_client_class_check_sees_what_it_must() -> None:
    source = (
        "from trainop.backends.local.api import LocalBackend\n"
        "def f(b):\n"
        "    from trainop.backends.kubernetes import jobs\n"
        "    return isinstance(b, LocalBackend) or jobs.KubernetesBackend()\n"
    )
    assert names_of_client_classes(source) == [
        (1, "LocalBackend"),
        (4, "KubernetesBackend"),
        (4, "LocalBackend"),
    ]
