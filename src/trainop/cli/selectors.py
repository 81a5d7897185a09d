"""kubectl's label selectors (``-l``): ``a=b``, ``a==b``, ``a!=b``, ``a``, ``!a``, ``a in (x,y)``,
``a notin (x,y)``, joined by commas (all must hold), parsed as apimachinery's labels.Parse reads
them. Pure.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass


class SelectorError(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class Requirement:
    key: str
    op: str  # = != in notin exists !
    values: frozenset[str] = frozenset()


_SET = re.compile(r"^\s*(!?)([A-Za-z0-9_./-]+)\s+(in|notin)\s+\(([^)]*)\)\s*$")
_EQ = re.compile(r"^\s*([A-Za-z0-9_./-]+)\s*(==|=|!=)\s*([A-Za-z0-9_.-]*)\s*$")
_EXISTS = re.compile(r"^\s*(!?)([A-Za-z0-9_./-]+)\s*$")


def _split(text: str) -> list[str]:
    """Split on commas outside parentheses."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return parts


def parse_selector(text: str) -> list[Requirement]:
    reqs = []
    for part in _split(text):
        if not part.strip():
            raise SelectorError(f'selector "{text}": an empty requirement (a stray comma?)')
        if m := _SET.match(part):
            if m.group(1):
                raise SelectorError(f'selector "{text}": "!" goes before a key alone, not with in/notin')
            values = frozenset(v.strip() for v in m.group(4).split(",") if v.strip())
            reqs.append(Requirement(m.group(2), m.group(3), values))
        elif m := _EQ.match(part):
            reqs.append(Requirement(m.group(1), "!=" if m.group(2) == "!=" else "=", frozenset({m.group(3)})))
        elif m := _EXISTS.match(part):
            reqs.append(Requirement(m.group(2), "!" if m.group(1) else "exists"))
        else:
            raise SelectorError(
                f'selector "{text}": cannot read "{part.strip()}"; use key=value, key!=value, key, !key, '
                "key in (a,b) or key notin (a,b)"
            )
    return reqs


def matches(labels: Mapping[str, str] | None, reqs: list[Requirement]) -> bool:
    """True when every requirement holds (``!=`` and ``notin`` hold for a missing key, as upstream)."""
    labels = labels or {}
    for r in reqs:
        has, value = r.key in labels, labels.get(r.key)
        ok = {
            "=": has and value in r.values,
            "in": has and value in r.values,
            "!=": not has or value not in r.values,
            "notin": not has or value not in r.values,
            "exists": has,
            "!": not has,
        }[r.op]
        if not ok:
            return False
    return True
