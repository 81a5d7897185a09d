"""Pod templates checked against the Kubernetes core/v1 schema: unknown fields and wrong types.

Our CRDs keep replica templates schemaless to stay small (contract §1.1), so neither the API server
nor the local backend would otherwise see ``env: notalist`` before a reconcile or a render tripped
over it (issue 10, finding 7). The schema is podschema.json, generated from the ``kubernetes``
package's models by hack/gen_podschema.py (not hand-typed). Pure: dicts in, ``FieldError``s out.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterable, Mapping
from functools import cache
from importlib import resources
from typing import Any

from trainop.api.errors import FieldError, render_value
from trainop.api.kinds import KIND_INFO

# apimachinery's resource.Quantity grammar (k8s.io/apimachinery/pkg/api/resource): the pattern the CRDs
# carry for a quantity (so a cluster's API server refuses what this refuses: "1.2.3Mi" too); the message
# is ParseQuantity's, which names the looser regular expression it splits a quantity with.
_NUMBER = r"(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))"
_QUANTITY_RE = re.compile(rf"^(\+|-)?{_NUMBER}(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?{_NUMBER}))?$")
_QUANTITY_MSG = (
    "must be a quantity, a number with an optional suffix such as 500m, 2 or 4Gi "
    "(quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$')"
)
_SHOWN_MAX = 60  # characters of a bad value quoted in a message
DATE_TIME_MSG = "must be an RFC 3339 date-time, e.g. 2024-01-01T00:00:00Z"


@cache
def schema() -> dict[str, Any]:
    """The committed schema: {"source", "root", "types": {TypeName: {jsonField: type}}}."""
    text = resources.files("trainop.api").joinpath("podschema.json").read_text(encoding="utf-8")
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def template_errors(job_or_dict: Any, *, reported: Iterable[FieldError] = ()) -> list[FieldError]:
    """Every schema error in every replica template of a job (a ``TrainingJob`` or a manifest dict),
    under the manifest's paths (``spec.<kind>ReplicaSpecs[<Type>].template...``). Errors at or under a
    path already in ``reported`` are left out (another rule said it first). Never raises."""
    errs: list[FieldError] = []
    for path, template in _templates(job_or_dict):
        check_value(template, schema()["root"], path, errs)
    done = [e.path for e in reported]
    return [e for e in errs if not any(_at_or_under(e.path, p) for p in done)]


def check_value(value: Any, typ: str, path: str, errs: list[FieldError]) -> None:
    """Append to ``errs`` what is wrong with ``value`` as a ``typ`` (a schema type) at ``path``.
    ``null`` is an unset field, as the API server reads it."""
    if value is None:
        return
    if typ.startswith("[]"):
        _check_list(value, typ[2:], path, errs)
    elif typ.startswith("map[string]"):
        _check_map(value, typ[len("map[string]") :], path, errs)
    elif typ in SCALAR_CHECKS:
        message = SCALAR_CHECKS[typ](value)
        if message is not None:
            errs.append(FieldError(path, f"Invalid value: {_shown(value)}: {message}"))
    else:
        _check_object(value, typ, path, errs)


def _check_object(value: Any, typ: str, path: str, errs: list[FieldError]) -> None:
    if not isinstance(value, dict):
        errs.append(FieldError(path, f"Invalid value: {_shown(value)}: must be an object ({_a(typ)})"))
        return
    fields: dict[str, str] = schema()["types"][typ]
    for key, item in value.items():
        child = join_path(path, str(key) if key != "" else '""')
        field_type = fields.get(key) if isinstance(key, str) else None
        if field_type is None:
            errs.append(FieldError(child, unknown_field_message(str(key), list(fields))))
        else:
            check_value(item, field_type, child, errs)


def _check_list(value: Any, item_type: str, path: str, errs: list[FieldError]) -> None:
    if not isinstance(value, list):
        errs.append(
            FieldError(path, f"Invalid value: {_shown(value)}: must be a list of {_plural(item_type)}")
        )
        return
    for i, item in enumerate(value):
        if item is None:  # a null item is not an unset field: the list holds a value there
            errs.append(FieldError(f"{path}[{i}]", f"Invalid value: null: must be {_a(item_type)}"))
        else:
            check_value(item, item_type, f"{path}[{i}]", errs)


def _check_map(value: Any, item_type: str, path: str, errs: list[FieldError]) -> None:
    if not isinstance(value, dict):
        what = f"an object (a map of strings to {_plural(item_type)})"
        errs.append(FieldError(path, f"Invalid value: {_shown(value)}: must be {what}"))
        return
    for key, item in value.items():
        child = f"{path}[{key}]"
        if not isinstance(key, str):
            errs.append(
                FieldError(child, f'Invalid value: {_shown(key)}: a key must be a string: quote it, "{key}"')
            )
        elif item is None:
            errs.append(FieldError(child, f"Invalid value: null: must be {_a(item_type)}"))
        else:
            check_value(item, item_type, child, errs)


# --- scalars -------------------------------------------------------------------------------------


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _string(value: Any) -> str | None:
    if isinstance(value, str):
        return None
    if isinstance(value, bool | int | float):
        return f'must be a string: quote it, "{json.dumps(value)}"'
    return "must be a string"


def _integer(value: Any) -> str | None:
    if _is_int(value):
        return None
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return f"must be an integer: write {value.strip()} without quotes"
    return "must be an integer"


def _number(value: Any) -> str | None:
    return None if _is_int(value) or isinstance(value, float) else "must be a number"


def _boolean(value: Any) -> str | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return f"must be a boolean: write {value.strip().lower()} without quotes"
    return "must be a boolean (true or false)"


def _date_time(value: Any) -> str | None:
    # YAML reads an unquoted timestamp as a datetime, which JSON writes as the string it was.
    if isinstance(value, str) or type(value).__name__ in ("datetime", "date"):
        return None
    return DATE_TIME_MSG


def _int_or_string(value: Any) -> str | None:
    return None if _is_int(value) or isinstance(value, str) else "must be an integer or a string"


def _quantity(value: Any) -> str | None:
    if _is_int(value) or isinstance(value, float):
        return None
    if isinstance(value, str) and _QUANTITY_RE.match(value.strip()):
        return None
    return _QUANTITY_MSG


def _any(value: Any) -> str | None:
    return None


SCALAR_CHECKS = {
    "string": _string,
    "integer": _integer,
    "number": _number,
    "boolean": _boolean,
    "date-time": _date_time,
    "int-or-string": _int_or_string,
    "quantity": _quantity,
    "any": _any,
}
_SCALAR_PLURALS = {
    "string": "strings",
    "integer": "integers",
    "number": "numbers",
    "boolean": "booleans",
    "date-time": "date-times",
    "int-or-string": "integers or strings",
    "quantity": "quantities",
    "any": "values",
}


def _plural(typ: str) -> str:
    if typ in _SCALAR_PLURALS:
        return _SCALAR_PLURALS[typ]
    if typ.startswith("[]"):
        return "lists"
    if typ.startswith("map["):
        return "objects"
    return f"{typ} objects"


def _a(typ: str) -> str:
    if typ in _SCALAR_PLURALS:
        return {"integer": "an integer", "int-or-string": "an integer or a string"}.get(typ, f"a {typ}")
    if typ.startswith("[]"):
        return "a list"
    if typ.startswith("map["):
        return "an object"
    return f"an {typ}" if typ[:1] in "AEIOU" else f"a {typ}"


# --- messages and paths --------------------------------------------------------------------------


def unknown_field_message(key: str, known: list[str]) -> str:
    """An unknown field (a template's or a job's; api/validation.py uses it too).

    Says what Kubernetes does with it, and gives a did-you-mean.
    """
    folded = {k.casefold(): k for k in known}
    guess = folded.get(key.replace("_", "").replace("-", "").casefold())
    if guess is None:
        close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
        guess = close[0] if close else None
    head = "Unsupported field: Kubernetes would drop it"
    if guess is not None:
        return f'{head}; did you mean "{guess}"?'
    return f"{head}; the fields here are " + ", ".join(f'"{k}"' for k in sorted(known))


def _shown(value: Any) -> str:
    """A bad value as field.Error prints it, cut to a readable length."""
    if isinstance(value, str) and len(value) > _SHOWN_MAX:
        return render_value(value[:_SHOWN_MAX] + "…") + f" ({len(value)} characters)"
    if isinstance(value, dict | list):
        text = render_value(value)
        return text if len(text) <= _SHOWN_MAX else f"{'an object' if isinstance(value, dict) else 'a list'}"
    try:
        return render_value(value)
    except (TypeError, ValueError):
        return type(value).__name__


def join_path(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _at_or_under(path: str, prefix: str) -> bool:
    return path == prefix or path.startswith((prefix + ".", prefix + "["))


def _templates(job_or_dict: Any) -> list[tuple[str, Any]]:
    """(path, template) of each replica type: from a TrainingJob's replica specs or a manifest dict."""
    if isinstance(job_or_dict, Mapping):
        spec = job_or_dict.get("spec")
        kind = job_or_dict.get("kind")
        info = KIND_INFO.get(kind) if isinstance(kind, str) else None
        if not isinstance(spec, Mapping) or info is None:
            return []
        specs = spec.get(info.replica_map)
        if not isinstance(specs, Mapping):
            return []
        out = []
        for rtype, rs in specs.items():
            if isinstance(rs, Mapping) and "template" in rs:
                out.append((f"spec.{info.replica_map}[{rtype}].template", rs["template"]))
        return out
    info = KIND_INFO.get(getattr(job_or_dict, "kind", ""))
    if info is None:
        return []
    return [
        (f"spec.{info.replica_map}[{rtype}].template", rs.template)
        for rtype, rs in job_or_dict.replica_specs.items()
    ]
