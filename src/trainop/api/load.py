"""Parse YAML/JSON manifests (multi-document too) into job models, with field-path errors.

Pure: takes text or dicts, never reads files except through ``load_file``'s explicit path.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from trainop.api.common import TrainingJob
from trainop.api.constants import API_VERSION
from trainop.api.errors import FieldError, InvalidJobError, not_supported, render_value
from trainop.api.kinds import JOB_MODELS


def _render_loc(loc: Iterable[int | str]) -> str:
    out = ""
    prev = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif prev.endswith("ReplicaSpecs") or prev in ("replicaStatuses", "minResources"):
            out += f"[{part}]"  # map keys render as [Key] (§2.1)
        else:
            out += ("." if out else "") + part
        prev = str(part)
    return out


def errors_from_pydantic(exc: ValidationError) -> list[FieldError]:
    """pydantic's errors as ``FieldError``s in Kubernetes' format, each saying what to write instead."""
    errs = []
    for e in exc.errors():
        loc = [p for p in e["loc"] if not (isinstance(p, str) and p.startswith("function-"))]
        path = _render_loc(loc)
        if e["type"] == "missing":
            errs.append(FieldError(path, "Required value"))
            continue
        value = e.get("input")
        errs.append(
            FieldError(path, f"Invalid value: {render_value(value)}: {_explain(e['type'], value, e)}")
        )
    return errs


def _explain(kind: str, value: Any, error: Any) -> str:
    """A message for one pydantic error type that says what the field needs."""
    ctx = error.get("ctx") or {}
    if kind == "int_type":
        if isinstance(value, str) and value.strip().lstrip("-").isdigit():
            return f"must be an integer: write {value.strip()} without quotes"
        return "must be an integer"
    if kind == "bool_type":
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return f"must be a boolean: write {value.strip().lower()} without quotes"
        return "must be a boolean (true or false)"
    if kind == "string_type":
        if isinstance(value, int | float | bool):
            shown = json.dumps(value)
            return f'must be a string: quote it, "{shown}"'
        return "must be a string"
    if kind in ("dict_type", "model_type", "model_attributes_type"):
        return "must be an object (a mapping of fields)"
    if kind == "list_type":
        return "must be a list"
    if kind == "less_than_equal":
        return f"must be less than or equal to {ctx.get('le')}"
    if kind == "greater_than_equal":
        return f"must be greater than or equal to {ctx.get('ge')}"
    if kind.startswith(("datetime_", "date_")):
        return "must be an RFC 3339 date-time, e.g. 2024-01-01T00:00:00Z"
    return str(error["msg"])


def parse_job(obj: Any) -> TrainingJob:
    """One manifest dict → the kind's model. Raises InvalidJobError with field paths.

    Keys are matched by their camelCase names only (as Kubernetes does): a snake_case key such as
    ``backoff_limit`` is kept as an unknown field, which validation reports with a suggestion.
    """
    if not isinstance(obj, dict):
        raise InvalidJobError(
            [FieldError("", f"expected a mapping (a Kubernetes object), got {type(obj).__name__}")]
        )
    kind = obj.get("kind")
    if kind not in JOB_MODELS:
        if kind is None:
            raise InvalidJobError(
                [FieldError("kind", "Required value: must be one of " + _quoted(JOB_MODELS))]
            )
        raise InvalidJobError([not_supported("kind", kind, list(JOB_MODELS))])
    api_version = obj.get("apiVersion")
    if api_version != API_VERSION:
        if api_version is None:
            raise InvalidJobError(
                [FieldError("apiVersion", f'Required value: must be "{API_VERSION}"')], kind=str(kind)
            )
        raise InvalidJobError([not_supported("apiVersion", api_version, [API_VERSION])], kind=str(kind))
    name = str((obj.get("metadata") or {}).get("name", "")) if isinstance(obj.get("metadata"), dict) else ""
    try:
        return JOB_MODELS[kind].model_validate(obj, by_alias=True, by_name=False)
    except ValidationError as exc:
        raise InvalidJobError(errors_from_pydantic(exc), kind=str(kind), name=name) from None


def _quoted(values: Iterable[str]) -> str:
    return ", ".join(f'"{v}"' for v in values)


def load_documents(text: str) -> list[Any]:
    """YAML or JSON text (several ``---`` documents allowed) → the non-empty documents."""
    try:
        docs = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "unknown position"
        problem = getattr(exc, "problem", None) or str(exc)
        raise InvalidJobError([FieldError("", f"not valid YAML at {where}: {problem}")]) from None
    out: list[Any] = []
    for d in docs:
        # `kind: List` (kubectl get -o yaml) holds its objects under items
        if isinstance(d, dict) and d.get("kind") == "List" and isinstance(d.get("items"), list):
            out.extend(d["items"])
        else:
            out.append(d)
    return out


def load_jobs(text: str) -> list[TrainingJob]:
    return [parse_job(d) for d in load_documents(text)]


def load_file(path: str | Path) -> list[TrainingJob]:
    return load_jobs(Path(path).read_text())


def dump_job(job: TrainingJob) -> dict[str, Any]:
    """The job as Kubernetes JSON, camelCase, unset fields omitted."""
    return job.to_dict()
