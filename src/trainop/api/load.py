"""Parse YAML/JSON manifests (multi-document too) into job models, with field-path errors.

Bad input is refused with a clear error, never a traceback or a hang (issue 10, finding 5): files
over 3 MiB, nesting deeper than ``MAX_DEPTH``, more than ``MAX_VALUES`` values once aliases are
expanded, go-yaml's "excessive aliasing", recursive aliases, duplicate keys, and bytes that are not
UTF-8 (or UTF-16/32 with a BOM). Pure: takes text or dicts, reads files only in ``read_manifest``.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import ValidationError

from trainop.api.common import KubeModel, TrainingJob
from trainop.api.constants import API_VERSION
from trainop.api.errors import FieldError, InvalidJobError, not_supported, render_value
from trainop.api.kinds import JOB_MODELS

try:  # libyaml: 10 MB scalars in 0.2 s where the pure-Python loader takes 7 to 13 s
    from yaml import CSafeLoader as _BaseLoader
except ImportError:  # pragma: no cover - PyYAML built without libyaml
    from yaml import SafeLoader as _BaseLoader  # type: ignore[assignment]

_M = TypeVar("_M", bound=KubeModel)
MAX_MANIFEST_BYTES = 3 * 1024 * 1024  # the Kubernetes API server refuses larger request bodies
MAX_DEPTH = 100  # a pod template's deepest field (affinity terms) is about 15 levels down
MAX_VALUES = 100_000  # scalars and collections, aliases expanded; a large real job has a few thousand
_BOMS = (  # longest first: the UTF-32 LE mark starts with the UTF-16 LE one
    (b"\xff\xfe\x00\x00", "utf-32-le"),
    (b"\x00\x00\xfe\xff", "utf-32-be"),
    (b"\xef\xbb\xbf", "utf-8"),
    (b"\xff\xfe", "utf-16-le"),
    (b"\xfe\xff", "utf-16-be"),
)


class ManifestError(InvalidJobError):
    """A problem with a whole file or document rather than one field; its message says where (a
    line and column, or a byte offset) and what to change."""

    def __init__(self, errors: list[FieldError], *, source: str = "", kind: str = "", name: str = "") -> None:
        super().__init__(errors, kind=kind, name=name)
        self.source = source


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
    from trainop.api.podschema import DATE_TIME_MSG, SCALAR_CHECKS  # off the operator's hot start

    ctx = error.get("ctx") or {}
    scalar = {"int_type": "integer", "bool_type": "boolean", "string_type": "string"}.get(kind)
    if scalar is not None:  # the words a pod template's field of that type gets (api/podschema.py)
        return SCALAR_CHECKS[scalar](value) or str(error["msg"])
    if kind in ("dict_type", "model_type", "model_attributes_type"):
        return "must be an object (a mapping of fields)"
    if kind == "list_type":
        return "must be a list"
    if kind == "less_than_equal":
        return f"must be less than or equal to {ctx.get('le')}"
    if kind == "greater_than_equal":
        return f"must be greater than or equal to {ctx.get('ge')}"
    if kind.startswith(("datetime_", "date_")):
        return DATE_TIME_MSG
    return str(error["msg"])


def parse_job(obj: Any) -> TrainingJob:
    """One manifest dict → the kind's model. Raises InvalidJobError with field paths.

    Keys are matched by their camelCase names only (as Kubernetes does): a snake_case key such as
    ``backoff_limit`` is kept as an unknown field, which validation reports with a suggestion.
    """
    if not isinstance(obj, dict):
        raise ManifestError(
            [FieldError("", f"expected a mapping (a Kubernetes object), got {type(obj).__name__}")]
        )
    kind = obj.get("kind")
    if not isinstance(kind, str) or kind not in JOB_MODELS:  # `kind: [x]` is no dict key (finding 5)
        if kind is None:
            kinds = ", ".join(f'"{k}"' for k in JOB_MODELS)
            raise InvalidJobError([FieldError("kind", f"Required value: must be one of {kinds}")])
        raise InvalidJobError([not_supported("kind", kind, list(JOB_MODELS))])
    return parse_model(JOB_MODELS[kind], obj, API_VERSION)


def parse_model(model: type[_M], obj: dict[str, Any], api_version: str) -> _M:
    """``obj`` (of a known kind) → ``model``, once its apiVersion is ``api_version``; InvalidJobError
    with field paths otherwise."""
    kind = str(obj.get("kind"))
    got = obj.get("apiVersion")
    if got != api_version:
        if got is None:
            error = FieldError("apiVersion", f'Required value: must be "{api_version}"')
        else:
            error = not_supported("apiVersion", got, [api_version])
        raise InvalidJobError([error], kind=kind)
    meta = obj.get("metadata")
    name = str(meta.get("name", "")) if isinstance(meta, dict) else ""
    try:
        return model.model_validate(obj, by_alias=True, by_name=False)
    except ValidationError as exc:
        raise InvalidJobError(errors_from_pydantic(exc), kind=kind, name=name) from None


def load_documents(text: str | bytes, *, source: str = "") -> list[Any]:
    """YAML or JSON (several ``---`` documents allowed; bytes in UTF-8, or UTF-16/32 with a BOM) → the
    non-empty documents. Bounded: size, nesting, values and aliases (module docstring); a problem with
    the whole file raises ``ManifestError`` saying where and what to change (``source`` names the file)."""
    if isinstance(text, bytes):
        text = decode_manifest(text, source=source)
    docs = _safe_load_all(text, source)
    out: list[Any] = []
    for d in docs:
        # `kind: List` (kubectl get -o yaml) holds its objects under items
        if isinstance(d, dict) and d.get("kind") == "List" and isinstance(d.get("items"), list):
            out.extend(d["items"])
        else:
            out.append(d)
    return out


def load_jobs(text: str | bytes, *, source: str = "") -> list[TrainingJob]:
    return [parse_job(d) for d in load_documents(text, source=source)]


def load_file(path: str | Path) -> list[TrainingJob]:
    return load_jobs(read_manifest(path), source=str(path))


def read_manifest(path: str | Path) -> bytes:
    """A manifest file's bytes, refusing one over ``MAX_MANIFEST_BYTES`` before reading it all."""
    with open(path, "rb") as f:
        data = f.read(MAX_MANIFEST_BYTES + 1)
    check_manifest_size(len(data), source=str(path))
    return data


def check_manifest_size(size: int, *, source: str = "") -> None:
    if size > MAX_MANIFEST_BYTES:
        raise _whole(
            source,
            f"the manifest is over {MAX_MANIFEST_BYTES} bytes (3 MiB, the Kubernetes API server's request "
            "limit): split it into several files, or move large data out of it (a ConfigMap, a volume)",
        )


def decode_manifest(data: bytes, *, source: str = "") -> str:
    """Bytes → text as kubectl reads a file: a UTF-8, UTF-16 or UTF-32 byte-order mark picks the
    encoding (and is dropped), anything else must be UTF-8 (k8s.io/cli-runtime's unicode reader)."""
    check_manifest_size(len(data), source=source)
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            try:
                return data[len(bom) :].decode(encoding)
            except UnicodeDecodeError as exc:
                raise _whole(
                    source,
                    f"not valid {encoding.upper()} at byte {exc.start + len(bom)} (the file starts with "
                    f"a {encoding.upper()} byte-order mark): save it as UTF-8",
                ) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        bad = data[exc.start : exc.start + 1].hex()
        raise _whole(
            source,
            f"not UTF-8 at byte {exc.start} (0x{bad}): save the file as UTF-8 (or UTF-16 with a "
            "byte-order mark)",
        ) from None


# --- bounded YAML ----------------------------------------------------------------------------------


class _Loader(_BaseLoader):
    """The C safe loader (pure Python where libyaml is missing) with timestamps kept as the strings
    they are, as kubectl's YAML-to-JSON conversion keeps them."""


def _timestamp_as_string(loader: Any, node: Any) -> Any:
    return loader.construct_scalar(node)


_Loader.add_constructor("tag:yaml.org,2002:timestamp", _timestamp_as_string)


def _safe_load_all(text: str, source: str) -> list[Any]:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise _whole(source, f"character {exc.start} is a lone surrogate, which no file can hold") from None
    try:
        _check_events(text, source)  # before composing: libyaml's composer recurses in C
        loader = _Loader(text)
        try:
            docs = []
            while loader.check_node():
                node = loader.get_node()
                if node is None:
                    continue
                _check_graph(node, source)
                data = loader.construct_document(node)
                if data is not None:
                    docs.append(data)
            return docs
        finally:
            loader.dispose()
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "unknown position"
        problem = getattr(exc, "problem", None) or str(exc)
        if mark is None and isinstance(exc, yaml.reader.ReaderError):  # a character YAML refuses
            before = text[: exc.position]
            column = exc.position - (before.rfind("\n") + 1) + 1
            where = f"line {before.count(chr(10)) + 1}, column {column}"
            code = exc.character if isinstance(exc.character, int) else ord(str(exc.character)[:1] or " ")
            problem = (
                f"character U+{code:04X} is a control character, which YAML does not allow in a file; remove "
                f'it, or write it as "\\x{code:02x}" inside double quotes'
            )
        if "maximum nesting depth" in problem:  # libyaml's own limit (1000), met while scanning ahead
            raise _whole(source, _too_deep(where)) from None
        raise _whole(source, f"not valid YAML at {where}: {problem}") from None
    except RecursionError:  # in depth: the limits above keep every structure far from this
        raise _whole(source, f"nested too deeply: keep it under {MAX_DEPTH} levels") from None


def _check_events(text: str, source: str) -> None:
    """Nesting depth and value count from the parser's event stream (flat, no recursion)."""
    loader = _Loader(text)
    try:
        depth = values = 0
        while loader.check_event():
            event: Any = loader.get_event()
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                values += 1
                if depth > MAX_DEPTH:
                    raise _whole(source, _too_deep(_at(event.start_mark)))
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
            elif isinstance(event, yaml.ScalarEvent):
                values += 1
            if values > MAX_VALUES:
                raise _whole(source, _too_many_values(event.start_mark))
    finally:
        loader.dispose()


def _check_graph(root: yaml.Node, source: str) -> None:
    """One walk of a composed document (aliases not expanded): recursive aliases, duplicate keys, the
    size the document has once its aliases are expanded, and go-yaml's "excessive aliasing" rule,
    which kubectl applies (sigs.k8s.io/yaml → gopkg.in/yaml decode.go: more than 100 values from
    aliases and more than 1000 in all, with a share from aliases over allowedAliasRatio)."""
    sizes: dict[int, int] = {}  # id(node) → values once expanded, for nodes already walked
    on_stack: set[int] = set()
    decoded = aliased = 1
    # frames: [node, children, next child index, expanded size so far, label]
    frames: list[list[Any]] = [[root, _children(root, source, []), 0, 1, ""]]
    on_stack.add(id(root))
    while frames:
        frame = frames[-1]
        node, children, i = frame[0], frame[1], frame[2]
        if i == len(children):
            frames.pop()
            on_stack.discard(id(node))
            sizes[id(node)] = frame[3]
            if frames:
                frames[-1][3] += frame[3]
            continue
        frame[2] = i + 1
        label, child = children[i]
        if id(child) in on_stack:
            raise _whole(
                source,
                f"a recursive alias at {_at(child.start_mark)} ({_path(frames, label)}): it refers to a node "
                "that contains it; an alias must refer to a node outside itself",
            )
        if id(child) in sizes:  # an alias: go-yaml decodes the alias node, then its target again
            size = sizes[id(child)]
            frame[3] += 1 + size
            decoded += 1 + size
            aliased += size
        else:
            decoded += 1
            frames.append([child, _children(child, source, frames, label), 0, 1, label])
            on_stack.add(id(child))
        if decoded > MAX_VALUES:
            raise _whole(source, _too_many_values(child.start_mark, expanded=True))
        if aliased > 100 and decoded > 1000 and aliased / decoded > _allowed_alias_ratio(decoded):
            raise _whole(
                source,
                f"document contains excessive aliasing (at {_at(child.start_mark)}: {decoded} values, "
                f"{aliased} of them from aliases), as kubectl refuses it: write the values out",
            )


def _children(
    node: yaml.Node, source: str, frames: list[list[Any]], label: str = ""
) -> list[tuple[str, Any]]:
    if isinstance(node, yaml.SequenceNode):
        return [(f"[{i}]", child) for i, child in enumerate(node.value)]
    if not isinstance(node, yaml.MappingNode):
        return []
    out: list[tuple[str, Any]] = []
    seen: dict[tuple[str, str], Any] = {}
    for key, value in node.value:
        name = key.value if isinstance(key, yaml.ScalarNode) else "?"
        if isinstance(key, yaml.ScalarNode) and key.tag != "tag:yaml.org,2002:merge":
            first = seen.setdefault((key.tag, key.value), key)
            if first is not key:
                error = FieldError(
                    _path(frames, label, "." + name),
                    f"Duplicate value: {render_value(name)} at {_at(key.start_mark)} is already set at "
                    f"{_at(first.start_mark)}: keep one",
                )
                raise ManifestError([error], source=source)
        out.append(("." + name, key))
        out.append(("." + name, value))
    return out


def _path(frames: list[list[Any]], *labels: str) -> str:
    return "".join([f[4] for f in frames[1:]] + list(labels)).lstrip(".")


def _allowed_alias_ratio(decoded: int) -> float:
    low, high = 400_000, 4_000_000  # go-yaml's alias_ratio_range_low/high
    if decoded <= low:
        return 0.99
    if decoded >= high:
        return 0.10
    return 0.99 - 0.89 * (decoded - low) / (high - low)


def _too_many_values(mark: Any, *, expanded: bool = False) -> str:
    what = "values once its aliases are expanded" if expanded else "values"
    return (
        f"the manifest has more than {MAX_VALUES} {what} (at {_at(mark)}): a training job needs far "
        "fewer; move large data out of it (a ConfigMap, a volume)"
    )


def _too_deep(where: str) -> str:
    return (
        f"nested deeper than {MAX_DEPTH} levels at {where}: a Kubernetes object needs far fewer; flatten it"
    )


def _at(mark: Any) -> str:
    return f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else "unknown position"


def _whole(source: str, message: str) -> ManifestError:
    return ManifestError([FieldError("", f"{source}: {message}" if source else message)], source=source)
