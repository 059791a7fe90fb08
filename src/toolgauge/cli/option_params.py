"""An options model's fields as typer options: one field, one option, with its help, choices and bounds.

Names are the fields' with ``-`` for ``_`` (``max_tokens`` is ``--max-tokens``) unless the field's
:class:`~toolgauge.options.Cli` names them; the help is the field's description; a ``Literal`` field offers its
choices; a bounded number gets its range from its type (:mod:`toolgauge.bounds`); a ``bool`` is a flag; a list
is one comma list, or a repeatable option where the field says so; a ``Cli(json=True)`` field takes one JSON text.
:func:`command_values` turns what typer gives back into values the model validates.
"""

from __future__ import annotations

import inspect
import json
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

import typer
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from toolgauge.bounds import range_of
from toolgauge.errors import UsageError
from toolgauge.options import cli_of, literal_choices


def option_name(field: str) -> str:
    """The command-line name of the field ``field`` (``max_tokens`` -> ``--max-tokens``)."""
    return "--" + field.replace("_", "-")


def _members(annotation: Any) -> tuple[list[Any], bool]:
    """The types of a (possibly optional, possibly annotated) annotation, None left out; and whether None was in."""
    if typing.get_origin(annotation) is Annotated:
        annotation = typing.get_args(annotation)[0]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        members = list(typing.get_args(annotation))
    else:
        members = [annotation]
    plain = [typing.get_args(m)[0] if typing.get_origin(m) is Annotated else m for m in members]
    kept = [m for m in plain if m is not type(None)]
    return kept, len(kept) != len(plain)


def _cli_type(field: FieldInfo) -> tuple[Any, dict[str, Any]]:
    """The annotation typer is given for ``field``, and the extra ``typer.Option`` keywords it needs."""
    cli = cli_of(field.metadata, field.annotation)
    members, optional = _members(field.annotation)
    extra: dict[str, Any] = {}
    if cli.metavar:
        extra["metavar"] = cli.metavar
    choices = cli.choices or literal_choices(field.annotation)
    if choices is not None:  # typer offers a Literal's choices itself
        literal: Any = Literal.__getitem__(choices)
        return (literal | None) if optional else literal, extra
    if cli.json:
        return str | None, extra
    base = members[0] if len(members) == 1 else str
    origin = typing.get_origin(base)
    if cli.repeatable:
        return list[str] | None, extra
    if origin in (list, tuple):
        return (str | None) if optional else str, extra  # a comma list, split by the model
    if base is bool:
        return (bool | None) if optional else bool, extra
    if base in (int, float, str, Path):
        extra.update(range_of(field))
        return (base | None) if optional else base, extra
    return (str | None) if optional else str, extra


def option_parameters(model: type[BaseModel], defaults: Mapping[str, Any] | None = None) -> list[inspect.Parameter]:
    """The keyword parameters (typer annotations included) of the fields of ``model``, in declaration order.

    ``defaults`` replaces a field's default on the command line (a command whose engine waits longer).
    """
    params = []
    for name in _own_fields_first(model):
        field = model.model_fields[name]
        cli = cli_of(field.metadata, field.annotation)
        if cli.hidden:
            continue
        annotation, extra = _cli_type(field)
        names = cli.names or (option_name(name),)
        if field.is_required() or cli.required:
            default: Any = ...
        else:
            default = (defaults or {}).get(name, field.default)
        if isinstance(default, tuple | dict):
            default = None
        option = typer.Option(*names, help=field.description, **extra)
        params.append(
            inspect.Parameter(
                name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=Annotated[annotation, option]
            )
        )
    return params


def _own_fields_first(model: type[BaseModel]) -> list[str]:
    """The fields of ``model``: its own first (``--data``, ``--variant``), then its groups' (sampling last)."""
    names: list[str] = []
    for cls in model.__mro__:
        names += [n for n in getattr(cls, "__annotations__", {}) if n in model.model_fields and n not in names]
    return names


def command_values(model: type[BaseModel], values: Mapping[str, Any]) -> dict[str, Any]:
    """What typer gave for the fields of ``model`` as values the model validates (JSON texts read, no empty lists).

    Raises:
        UsageError: a JSON option's text is not JSON.
    """
    found: dict[str, Any] = {}
    for name, field in model.model_fields.items():
        if name not in values:
            continue
        value = values[name]
        cli = cli_of(field.metadata, field.annotation)
        if cli.json and isinstance(value, str):
            try:
                value = json.loads(value)
            except json.JSONDecodeError as exc:
                raise UsageError(f"{option_name(name)}: not JSON: {exc}") from None
        elif cli.repeatable and not value:
            value = None
        found[name] = value
    return found
