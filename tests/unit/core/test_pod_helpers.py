"""The one set of pod readers (core/pods.py) the core and the plugins share: a replica index is a
non-negative integer label or nothing (issue 22: the plugins' own ``pod_index('-1')`` said -1 where
the core said None, so a pod the core leaves alone could count as a replica in a plugin's rule)."""

from __future__ import annotations

from typing import Any

import pytest

from trainop.api.constants import LABEL_JOB_NAME, LABEL_REPLICA_INDEX, LABEL_REPLICA_TYPE
from trainop.core.pods import detect_index, detect_phase


def pod(
    name: str, rtype: str = "worker", index: Any = "0", job: str = "a", phase: str = ""
) -> dict[str, Any]:
    labels = {LABEL_JOB_NAME: job, LABEL_REPLICA_TYPE: rtype}
    if index is not None:
        labels[LABEL_REPLICA_INDEX] = index
    return {"metadata": {"name": name, "labels": labels}, "status": {"phase": phase} if phase else {}}


@pytest.mark.parametrize(
    ("index", "want"),
    [
        pytest.param("0", 0, id="zero"),
        pytest.param("12", 12, id="a number"),
        pytest.param("-1", None, id="negative: not an index (upstream leaves such pods alone)"),
        pytest.param("1.0", None, id="not an integer"),
        pytest.param("x", None, id="not a number"),
        pytest.param("", None, id="empty"),
        pytest.param(None, None, id="absent"),
        pytest.param(3, None, id="not a string (labels are strings)"),
    ],
)
def test_detect_index(index: Any, want: int | None) -> None:
    assert detect_index(pod("p", index=index)) == want


@pytest.mark.parametrize(
    ("obj", "want"),
    [
        pytest.param(pod("p", phase="Running"), "Running", id="a phase"),
        pytest.param({"metadata": {}}, "", id="no status"),
        pytest.param(None, "", id="no pod"),
    ],
)
def test_detect_phase(obj: Any, want: str) -> None:
    assert detect_phase(obj) == want
