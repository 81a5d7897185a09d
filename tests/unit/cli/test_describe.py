"""``trainop describe``'s printer over a ``JobDetails``: what a cluster's job shows and what this
machine's shows (pure formatting, read from a terminal-less console)."""

from __future__ import annotations

import io
from typing import Any

import pytest
from rich.console import Console

from trainop.backends.base import JobDetails, JobEvent
from trainop.backends.local.api import SupervisorInfo
from trainop.cli.describe import print_details
from trainop.testing.builders import pytorch_job


def render(d: JobDetails) -> list[str]:
    out = io.StringIO()
    print_details(Console(file=out, width=200, color_system=None), d)
    return [line.rstrip() for line in out.getvalue().splitlines()]


def details(**kw: Any) -> JobDetails:
    job = pytorch_job("a").master(1).workers(2).command(["python", "train.py"]).build()
    fields: dict[str, Any] = {
        "job": job,
        "base_dir": "",
        "pods": [],
        "objects": [],
        "events": [],
        "processes": [],
        "ports": {},
        "supervisor": None,
    }
    return JobDetails(**{**fields, **kw})


@pytest.mark.parametrize(
    ("d", "want", "absent"),
    [
        pytest.param(
            details(cluster="the cluster at https://k:6443 (context kind)", images=["busybox"]),
            ["Cluster:     the cluster at https://k:6443 (context kind)", "Images:      busybox"],
            ["Working dir", "Supervisor"],
            id="a cluster's job names the cluster and its images",
        ),
        pytest.param(
            details(base_dir="/w", supervisor=SupervisorInfo("running", 42, True)),
            [
                "Working dir: /w  (where relative workingDirs and commands resolve)",
                "Supervisor:  pid 42 (running)",
            ],
            ["Cluster:"],
            id="this machine's names its working dir and supervisor",
        ),
        pytest.param(
            details(
                cluster="c",
                events=[JobEvent("Warning", "Failed", "it broke", 3, 1.0, 2.0)],
                deleting=True,
            ),
            ["State:       Pending (deleting)"],
            ["Events:\n  none"],
            id="events listed and a deletion shown in the state",
        ),
    ],
)
def test_describe(d: JobDetails, want: list[str], absent: list[str]) -> None:
    lines = render(d)
    text = "\n".join(lines)
    assert [w for w in want if w not in lines] == [], text
    assert [a for a in absent if a in text] == [], text
    assert "Replica specs:" in lines and any(
        "master" in line.lower() and "python train.py" in line for line in lines
    )


def test_describe_lists_events() -> None:
    lines = render(details(cluster="c", events=[JobEvent("Warning", "Failed", "it broke", 3, 1.0, 2.0)]))
    events = lines[lines.index("Events:") + 1 :]
    assert [e.split()[:2] + e.split()[-3:] for e in events if "Failed" in e] == [
        ["Warning", "Failed", "3", "it", "broke"]
    ]
