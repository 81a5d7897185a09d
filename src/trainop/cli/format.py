"""Pure formatting helpers of the CLI: durations in, ages and replica summaries out. No I/O.

The API models load only when a replica summary is asked for, so ``trainop --version`` and
``--help`` start without pydantic.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from trainop.api.common import TrainingJob


class DurationError(ValueError):
    pass


def parse_duration(text: str) -> float:
    """``90``, ``30s``, ``10m``, ``1h``, ``1h30m`` → seconds."""
    text = text.strip()
    if re.fullmatch(r"\d+(\.\d+)?", text):
        return float(text)
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)", text)
    if not parts or "".join(a + b for a, b in parts) != text:
        raise DurationError(f'"{text}" is not a duration; use e.g. 30s, 10m or 1h')
    scale = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}
    return sum(float(a) * scale[b] for a, b in parts)


def format_age(seconds: float) -> str:
    """kubectl's short ages: 42s, 5m3s, 3h, 2d4h."""
    s = int(max(seconds, 0))
    if s < 120:
        return f"{s}s"
    if s < 600:
        return f"{s // 60}m{s % 60}s" if s % 60 else f"{s // 60}m"
    if s < 3 * 3600:
        return f"{s // 60}m"
    if s < 48 * 3600:
        return f"{s // 3600}h"
    return f"{s // 86400}d{(s % 86400) // 3600}h" if (s % 86400) // 3600 else f"{s // 86400}d"


def format_replicas(job: TrainingJob) -> str:
    """``Master 1/1, Worker 2/2``: replicas running or done, of those wanted, per type."""
    from trainop.api.defaults import apply_defaults

    statuses = (job.status.replica_statuses if job.status else None) or {}
    out = []
    for rtype, spec in apply_defaults(job).replica_specs.items():
        st = statuses.get(rtype)
        ready = ((st.active or 0) + (st.succeeded or 0)) if st else 0
        text = f"{rtype} {ready}/{spec.replicas or 0}"
        if st and st.failed:
            text += f" ({st.failed} failed)"
        out.append(text)
    return ", ".join(out)
