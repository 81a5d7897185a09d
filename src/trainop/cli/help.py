"""Help text in the notation users know from click, kubectl and git: ``NAME``, ``[KIND]``, ``NAME...``,
``--namespace TEXT``, not typer's ``{name}``, ``[[KIND]]``, ``<str>`` and ``<bool>``. Adjusts
typer's parameter classes once, at start-up (three attributes: no import beyond typer's own).
"""

from __future__ import annotations

from typing import Any

from typer.core import TyperArgument, TyperOption

# Python annotations as click has always named them in help.
_TYPE_NAMES = {"str": "TEXT", "int": "INTEGER", "float": "FLOAT", "Path": "PATH", "path": "PATH"}


def _type_name(param: Any) -> str:
    label = str(param.display_type(None)).strip("<>")
    # A list option is repeated (-e A=1 -e B=2), one value each time: its element's name.
    label = label.removeprefix("list[").removesuffix("]")
    if "|" in label:  # a choice: its values, as click lists them
        return "[" + label + "]"
    return _TYPE_NAMES.get(label, label.upper())


def _option_type(self: TyperOption, ctx: Any) -> str | None:
    if self.metavar is not None:
        return self.metavar
    if self.is_flag or self.count:
        return None  # a flag takes no value: nothing to show
    return _type_name(self)


def _argument_name(self: TyperArgument) -> str:
    return self.metavar if self.metavar is not None else (self.name or "").upper()


def _argument_usage(self: TyperArgument) -> str:
    name = _argument_name(self).removesuffix("...")
    if not self.required:
        name = f"[{name}]"
    return name + "..." if self.nargs != 1 else name


def install_plain_help() -> None:
    """Switch typer's help notation to the usual one (idempotent)."""
    TyperOption.display_type_rich = _option_type  # type: ignore[method-assign]
    TyperArgument.display_type_rich = lambda self, ctx: None  # type: ignore[method-assign]  # the name says it
    TyperArgument.display_name_raw = property(_argument_name)  # type: ignore[assignment,method-assign]
    TyperArgument._usage_display_name = _argument_usage  # type: ignore[method-assign]
