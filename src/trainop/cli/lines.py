"""Replica output as a terminal would show it: ``\\r`` returns to the line's start and what follows
overwrites it (tqdm, Keras), ``\\b`` steps back one column. Pure: text in, text out; the caller
decides where a line goes (above the live status when complete, in place inside it while partial).
"""

from __future__ import annotations

import re

# Cursor movements and colour codes that progress bars emit (tqdm's multi-bar ESC[A, ESC[K …): a
# prefixed, interleaved stream cannot honour them, and they would garble the line.
_ESCAPES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def render_line(text: str) -> str:
    """What a terminal shows for ``text`` (no newline in it): ``"a 1/3\\ra 2/3\\ra 3/3"`` → ``"a 3/3"``;
    a shorter rewrite leaves the old line's tail, as on a terminal (tqdm pads its bar for this)."""
    if "\r" not in text and "\b" not in text and "\x1b" not in text:
        return text
    text = _ESCAPES.sub("", text)
    screen: list[str] = []
    col = 0
    for ch in text:
        if ch == "\r":
            col = 0
        elif ch == "\b":
            col = max(col - 1, 0)
        else:
            if col < len(screen):
                screen[col] = ch
            else:
                screen.append(ch)
            col += 1
    return "".join(screen).rstrip()


def prefix_label(replica: str, container: str, default_containers: set[str]) -> str:
    """``worker-1`` for the default container, ``worker-1/sidecar`` for another."""
    return replica if container in default_containers else f"{replica}/{container}"
