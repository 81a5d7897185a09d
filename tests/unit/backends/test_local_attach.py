"""When a local job's supervisor stops it because the ``trainop run`` it is attached to is gone: only
for a client ``run`` recorded, only once that very process (pid, start time, boot) has ended, and
never for a finished or suspended job."""

from __future__ import annotations

import subprocess
from typing import Any

import pytest

from trainop.api.constants import ANNOTATION_ATTACHED_CLIENT, ANNOTATION_INTERRUPTED
from trainop.backends.local.attach import (
    Client,
    build_client,
    build_interrupted_manifest,
    detect_client_gone,
    drop_dead_client,
    format_client,
    parse_client,
)


def ended_client() -> Client:
    proc = subprocess.Popen(["true"])
    client = build_client(proc.pid)
    proc.wait()
    return client


ME = build_client()
ENDED = ended_client()
REUSED = Client(ME.pid, (ME.ticks or 0) + 1, ME.boot)  # this pid, another start: not the client
RUNNING: dict[str, Any] = {}
SUCCEEDED = {"conditions": [{"type": "Succeeded", "status": "True"}]}
FAILED = {"conditions": [{"type": "Running", "status": "False"}, {"type": "Failed", "status": "True"}]}


def manifest(annotation: str | None, suspend: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "a"}
    if annotation is not None:
        meta["annotations"] = {ANNOTATION_ATTACHED_CLIENT: annotation}
    return {"metadata": meta, "spec": {"runPolicy": {"suspend": suspend}}}


@pytest.mark.parametrize(
    ("doc", "status", "stopped"),
    [
        pytest.param(manifest(format_client(ENDED)), RUNNING, True, id="client ended, job runs: stop"),
        pytest.param(manifest(format_client(REUSED)), RUNNING, True, id="its pid reused by another process"),
        pytest.param(manifest(format_client(ME)), RUNNING, False, id="client alive"),
        pytest.param(manifest(None), RUNNING, False, id="submitted: no client"),
        pytest.param(manifest(format_client(ENDED)), SUCCEEDED, False, id="run ends after Succeeded"),
        pytest.param(manifest(format_client(ENDED)), FAILED, False, id="run ends after Failed"),
        pytest.param(
            manifest(format_client(ENDED), suspend=True), RUNNING, False, id="suspended: nothing runs"
        ),
        pytest.param(manifest("pid 12"), RUNNING, False, id="a value no run wrote"),
        pytest.param(manifest('{"pid": true, "bootId": ""}'), RUNNING, False, id="a bool is no pid"),
    ],
)
def test_detect_client_gone(doc: dict[str, Any], status: dict[str, Any], stopped: bool) -> None:
    assert (detect_client_gone(doc, status) is not None) == stopped


def test_the_annotation_round_trips() -> None:
    assert parse_client(manifest(format_client(ME))) == ME


@pytest.mark.parametrize(
    ("client", "kept"),
    [
        pytest.param(ME, True, id="alive: still attached"),
        pytest.param(ENDED, False, id="ended: the resumed job runs detached"),
    ],
)
def test_resume_forgets_only_a_client_that_ended(client: Client, kept: bool) -> None:
    annotations = {ANNOTATION_ATTACHED_CLIENT: format_client(client), "other": "x"}
    drop_dead_client(annotations)
    assert (ANNOTATION_ATTACHED_CLIENT in annotations, annotations["other"]) == (kept, "x")


def test_build_interrupted_manifest_suspends_marks_and_bumps_the_generation() -> None:
    """What the supervisor writes once run is gone: the spec update run's Ctrl-C makes, other
    annotations and the spec kept, the stored manifest untouched."""
    stored: dict[str, Any] = {
        "metadata": {"name": "a", "annotations": {"team": "x"}, "generation": 3},
        "spec": {"runPolicy": {"backoffLimit": 2}, "pytorchReplicaSpecs": {}},
    }
    got = build_interrupted_manifest(stored, 3, "2026-01-02T03:04:05Z")
    want = {
        "metadata": {
            "name": "a",
            "annotations": {"team": "x", ANNOTATION_INTERRUPTED: "2026-01-02T03:04:05Z"},
            "generation": 4,
        },
        "spec": {"runPolicy": {"backoffLimit": 2, "suspend": True}, "pytorchReplicaSpecs": {}},
    }
    assert (got, stored["spec"]["runPolicy"]) == (want, {"backoffLimit": 2})
