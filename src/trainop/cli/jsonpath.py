"""kubectl's ``-o jsonpath=TEMPLATE``, the part people use: text, ``{.a.b}``, ``{.a[0]}``,
``{.a[*].b}``, ``{.a['x.y']}``, ``{range .items[*]}…{end}``, ``{"\\n"}`` literals, ``{@}``. Values
print as kubectl prints them (strings bare, lists space-joined, objects as JSON). Pure.
"""

from __future__ import annotations

import json
import re
from typing import Any


class JsonPathError(ValueError):
    pass


_STEP = re.compile(r"\.([A-Za-z0-9_-]+)|\[(\*|-?\d+)\]|\['([^']*)'\]|\[\"([^\"]*)\"\]|\.\.")


def _select(path: str, roots: list[Any]) -> list[Any]:
    path = path.strip()
    if path in ("@", "$", "."):
        return roots
    path = path.removeprefix("$").removeprefix("@")
    pos, current = 0, roots
    while pos < len(path):
        m = _STEP.match(path, pos)
        if m is None:
            raise JsonPathError(f'cannot read "{path[pos:]}" in "{path}"; use e.g. {{.metadata.name}}')
        field, index, quoted, dquoted = m.group(1), m.group(2), m.group(3), m.group(4)
        key = field if field is not None else quoted if quoted is not None else dquoted
        nxt: list[Any] = []
        for v in current:
            if key is not None:
                if isinstance(v, dict) and key in v:
                    nxt.append(v[key])
            elif index == "*":
                nxt.extend(v if isinstance(v, list) else v.values() if isinstance(v, dict) else [])
            elif index is not None and isinstance(v, list):
                i = int(index)
                if -len(v) <= i < len(v):
                    nxt.append(v[i])
        current = nxt
        pos = m.end()
    return current


def _text(v: Any) -> str:
    if isinstance(v, str):
        return v
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return ""
    if isinstance(v, dict | list):
        return json.dumps(v, separators=(",", ":"))
    return str(v)


def _tokens(template: str) -> list[tuple[str, str]]:
    """(``text``|``expr``, value) pieces of a template."""
    out, pos = [], 0
    while pos < len(template):
        start = template.find("{", pos)
        if start < 0:
            out.append(("text", template[pos:]))
            break
        if start > pos:
            out.append(("text", template[pos:start]))
        end = template.find("}", start)
        if end < 0:
            raise JsonPathError(f'unclosed "{{" in "{template}"')
        out.append(("expr", template[start + 1 : end].strip()))
        pos = end + 1
    return out


def render_jsonpath(template: str, obj: Any) -> str:
    """``{range .items[*]}{.metadata.name}{"\\n"}{end}`` over ``obj`` → the text kubectl prints."""
    tokens = _tokens(template)
    out, _ = _render(tokens, 0, obj)
    return out


def _render(tokens: list[tuple[str, str]], i: int, obj: Any, stop_at_end: bool = False) -> tuple[str, int]:
    out = []
    while i < len(tokens):
        kind, value = tokens[i]
        if kind == "text":
            out.append(value)
        elif value == "end":
            if not stop_at_end:
                raise JsonPathError('"{end}" without "{range …}"')
            return "".join(out), i
        elif value.startswith("range "):
            items = _select(value[len("range ") :], [obj])
            body_end = i
            for item in items or [None]:
                text, body_end = _render(tokens, i + 1, item, stop_at_end=True)
                if items:
                    out.append(text)
            i = body_end
        elif len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            out.append(value[1:-1].encode().decode("unicode_escape"))
        else:
            out.append(" ".join(_text(v) for v in _select(value, [obj])))
        i += 1
    if stop_at_end:
        raise JsonPathError('"{range …}" without "{end}"')
    return "".join(out), i
