"""Field-path errors, the one way every layer reports bad input (contract §2.1 formats).

A ``FieldError`` renders like Kubernetes' ``field.Error``: ``<path>: <message>``.
"""

from __future__ import annotations

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


def invalid(path: str, value: object, msg: str) -> FieldError:
    return FieldError(path, f'Invalid value: "{value}": {msg}')


def not_supported(path: str, value: object, supported: tuple[str, ...] | list[str]) -> FieldError:
    opts = ", ".join(f'"{s}"' for s in supported)
    return FieldError(path, f'Unsupported value: "{value}": supported values: {opts}')
