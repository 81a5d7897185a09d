"""Loopback ports for replicas: ask the kernel for a free one.

I/O adapter only; which job gets which port (and that no two get the same) is the store's registry.
"""

from __future__ import annotations

import socket


def probe_free_port(address: str = "127.0.0.1") -> int:
    """A port that was free a moment ago (bind to 0, read it back, release it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((address, 0))
        return int(s.getsockname()[1])
