"""Replica output with ``\\r`` and ``\\b`` renders as a terminal shows it (tqdm and Keras bars)."""

from __future__ import annotations

import pytest

from trainop.cli.lines import prefix_label, render_line


@pytest.mark.parametrize(
    ("text", "want"),
    [
        pytest.param("epoch 1 loss 0.3", "epoch 1 loss 0.3", id="a plain line as is"),
        pytest.param(
            "training [....] 0/40\rtraining [#...] 1/40\rtraining [####] 40/40",
            "training [####] 40/40",
            id="a tqdm bar: its last state",
        ),
        pytest.param(
            "100%|###| 9/9\rdone", "done|###| 9/9", id="a shorter rewrite keeps the tail, as a terminal"
        ),
        pytest.param("ready\r", "ready", id="a trailing carriage return (CRLF) changes nothing"),
        pytest.param(
            "1/3 [==>...]\b\b\b\b\b\b\b\b\b\b\b\b3/3 [======]", "3/3 [======]", id="Keras backspaces"
        ),
        pytest.param("\x1b[A\x1b[2Kstep 2\r\x1b[Kstep 3", "step 3", id="cursor and erase codes dropped"),
        pytest.param("", "", id="empty"),
    ],
)
def test_render_line_as_a_terminal_shows_it(text: str, want: str) -> None:
    assert render_line(text) == want


@pytest.mark.parametrize(
    ("container", "want"),
    [
        pytest.param("pytorch", "worker-1", id="the default container: the replica alone"),
        pytest.param("sidecar", "worker-1/sidecar", id="another container: replica/container"),
    ],
)
def test_prefix_label(container: str, want: str) -> None:
    assert prefix_label("worker-1", container, {"pytorch"}) == want
