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
from trainop.api.errors import FieldError, InvalidJobError
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
    errs = []
    for e in exc.errors():
        loc = [p for p in e["loc"] if not (isinstance(p, str) and p.startswith("function-"))]
        msg = e["msg"]
        if "input" in e and e["type"] not in ("missing",):
            msg = f'Invalid value: {json.dumps(e["input"], default=str)}: {msg}'
        else:
            msg = f"Required value: {msg}" if e["type"] == "missing" else msg
        errs.append(FieldError(_render_loc(loc), msg))
    return errs


def parse_job(obj: Any) -> TrainingJob:
    """One manifest dict → the kind's model. Raises InvalidJobError with field paths."""
    if not isinstance(obj, dict):
        raise InvalidJobError([FieldError("", f"expected a mapping (a Kubernetes object), got {type(obj).__name__}")])
    kind = obj.get("kind")
    if kind not in JOB_MODELS:
        supported = ", ".join(JOB_MODELS)
        raise InvalidJobError([FieldError("kind", f'Unsupported value: "{kind}": supported values: {supported}')])
    api_version = obj.get("apiVersion")
    if api_version != API_VERSION:
        raise InvalidJobError(
            [FieldError("apiVersion", f'Unsupported value: "{api_version}": supported values: "{API_VERSION}"')],
            kind=str(kind),
        )
    name = str((obj.get("metadata") or {}).get("name", "")) if isinstance(obj.get("metadata"), dict) else ""
    try:
        return JOB_MODELS[kind].model_validate(obj)
    except ValidationError as exc:
        raise InvalidJobError(errors_from_pydantic(exc), kind=str(kind), name=name) from None


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
