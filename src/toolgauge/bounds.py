"""The bounded types of the run options, declared once: the shared option groups (:mod:`toolgauge.options`) use them.

``--temperature -5`` on the command line and ``temperature = -5`` in a sweep file get the same refusal, and so do
``limit = 0``, ``limit = true`` (strict types: a boolean is no number), ``temperature = nan`` and an epoch count
no run could hold. The CLI takes each option's ``min``/``max`` from its field (:func:`range_of`); what a range
cannot say (NaN, infinity, booleans) is checked by ``toolgauge.options.check_options``.
"""

from __future__ import annotations

import math
import typing
from typing import Annotated, Any

from annotated_types import Ge, Gt, Le
from pydantic import Field
from pydantic.fields import FieldInfo
from pydantic_core import ErrorDetails

from toolgauge.errors import UsageError

MAX_EPOCHS = 1000
"""The most tries of every sample a run may make (``--epochs``, a sweep's ``epochs``)."""

MAX_TEMPERATURE = 2.0
"""The sampling temperature's upper bound, as the OpenAI API has it (the lower one is 0)."""


# The bounded types, declared once: the options models (toolgauge.options) use them, so ``eval``'s options, the
# API's keywords and a sweep file's keys get the same refusal. Strict: no bool for a number.
Limit = Annotated[int, Field(ge=1, strict=True)]
Temperature = Annotated[float, Field(ge=0.0, le=MAX_TEMPERATURE, allow_inf_nan=False, strict=True)]
MaxTokens = Annotated[int, Field(ge=1, strict=True)]
Epochs = Annotated[int, Field(ge=1, le=MAX_EPOCHS, strict=True)]
Seed = Annotated[int, Field(ge=0, strict=True)]
Concurrency = Annotated[int, Field(ge=1, strict=True)]
Timeout = Annotated[float, Field(ge=0.1, allow_inf_nan=False, strict=True)]
MaxRetries = Annotated[int, Field(ge=0, strict=True)]
TopP = Annotated[float, Field(gt=0.0, le=1.0, allow_inf_nan=False, strict=True)]
ThinkingBudget = Annotated[int, Field(ge=1, strict=True)]


class OptionOutOfBounds(UsageError):
    """A bounded option given a value its declaration refuses; ``name`` and ``problem`` say which and why."""

    def __init__(self, name: str, problem: str):
        super().__init__(f"--{name.replace('_', '-')}: {problem}")
        self.name = name
        self.problem = problem


def constraints_of(field: FieldInfo) -> list[Any]:
    """The constraints of a field, those of an optional bounded type (``Limit | None``) included."""
    found = list(field.metadata)
    for member in typing.get_args(field.annotation):
        if typing.get_origin(member) is Annotated:
            for extra in typing.get_args(member)[1:]:
                found.extend(extra.metadata if isinstance(extra, FieldInfo) else [extra])
    return found


def range_of(field: FieldInfo) -> dict[str, Any]:
    """The ``min``/``max`` keywords of ``typer.Option`` for a field with bounds (none for others)."""
    found: dict[str, Any] = {}
    for constraint in constraints_of(field):
        if isinstance(constraint, Ge | Gt):
            found["min"] = constraint.ge if isinstance(constraint, Ge) else constraint.gt
        elif isinstance(constraint, Le):
            found["max"] = constraint.le
    return found


def problem_of(error: ErrorDetails, value: Any) -> str:
    """One pydantic error as ``input should be ..., got VALUE`` (how every bad option value is told)."""
    message = error["msg"]
    shown = (
        str(value).lower()
        if isinstance(value, bool) or (isinstance(value, float) and math.isnan(value))
        else repr(value)
    )
    return f"{message[:1].lower()}{message[1:]}, got {shown}"
