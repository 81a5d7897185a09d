"""Field-path errors, the one way every layer reports bad input (contract §2.1 formats).

A ``FieldError`` renders like Kubernetes' ``field.Error``: ``<path>: <message>``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class FieldError:
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


class InvalidJobError(ValueError):
    """Raised when a manifest cannot be parsed or fails validation; carries every error found."""

    def __init__(self, errors: list[FieldError], *, kind: str = "", name: str = "") -> None:
        self.errors = list(errors)
        self.kind = kind
        self.name = name
        head = f"{kind} {name!r} is invalid" if kind else "invalid manifest"
        super().__init__(head + ": " + "; ".join(str(e) for e in self.errors))


def required(path: str, msg: str) -> FieldError:
    return FieldError(path, f"Required value: {msg}")


def forbidden(path: str, msg: str) -> FieldError:
    return FieldError(path, f"Forbidden: {msg}")


def render_value(value: object) -> str:
    """A bad value as apimachinery's ``field.Error`` prints it: strings quoted, numbers and booleans
    bare, nil as ``"null"``, anything else as compact JSON."""
    if value is None:
        return '"null"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return json.dumps(value, ensure_ascii=False, default=str, separators=(",", ":"))


def invalid(path: str, value: object, msg: str) -> FieldError:
    return FieldError(path, f"Invalid value: {render_value(value)}: {msg}")


def not_supported(path: str, value: object, supported: tuple[str, ...] | list[str]) -> FieldError:
    opts = ", ".join(json.dumps(s, ensure_ascii=False) for s in supported)
    return FieldError(path, f"Unsupported value: {render_value(value)}: supported values: {opts}")
