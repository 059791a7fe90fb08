"""The bounds of the run options, declared once: ``eval``'s options and a sweep file's keys are checked by these.

``--temperature -5`` on the command line and ``temperature = -5`` in a sweep file get the same refusal, and so do
``limit = 0``, ``limit = true`` (strict types: a boolean is no number), ``temperature = nan`` and an epoch count
no run could hold. The CLI takes each option's ``min``/``max`` from here (:func:`cli_range`); what a range
cannot say (NaN, infinity, booleans) is checked by :func:`check_options`.
"""

from __future__ import annotations

import math
import typing
from collections.abc import Mapping
from typing import Annotated, Any

from annotated_types import Ge, Gt, Le
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.fields import FieldInfo
from pydantic_core import ErrorDetails

from toolgauge.errors import UsageError

MAX_EPOCHS = 1000
"""The most tries of every sample a run may make (``--epochs``, a sweep's ``epochs``)."""

MAX_TEMPERATURE = 2.0
"""The sampling temperature's upper bound, as the OpenAI API has it (the lower one is 0)."""


# The bounded types, declared once: RunBounds below and the options models (toolgauge.options) use them, so
# ``eval``'s options, the API's keywords and a sweep file's keys get the same refusal. Strict: no bool for a number.
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


class RunBounds(BaseModel):
    """Every bounded run option, by its ``eval`` name with ``-`` as ``_`` (the sweep file's key)."""

    model_config = ConfigDict(strict=True, extra="forbid")

    limit: Limit | None = None
    temperature: Temperature = 0.0
    max_tokens: MaxTokens = 512
    epochs: Epochs = 1
    seed: Seed = 0
    concurrency: Concurrency = 4
    timeout: Timeout = 60.0
    max_retries: MaxRetries = 0
    top_p: TopP | None = None
    thinking_budget: ThinkingBudget | None = None


BOUNDED = frozenset(RunBounds.model_fields)
"""The names of the bounded options."""


class OptionOutOfBounds(UsageError):
    """A bounded option given a value its declaration refuses; ``name`` and ``problem`` say which and why."""

    def __init__(self, name: str, problem: str):
        super().__init__(f"--{name.replace('_', '-')}: {problem}")
        self.name = name
        self.problem = problem


def cli_range(name: str) -> dict[str, Any]:
    """The ``min``/``max`` keywords of ``typer.Option`` for the bounded option ``name``."""
    return range_of(RunBounds.model_fields[name])


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


def check_option(name: str, value: Any) -> Any:
    """``value`` as the declaration of option ``name`` accepts it (a whole number is taken for a float).

    Raises:
        OptionOutOfBounds: the value breaks the declaration (wrong type, out of range, NaN or infinite).
    """
    try:
        checked = RunBounds.model_validate({name: value})
    except ValidationError as exc:
        raise OptionOutOfBounds(name, problem_of(exc.errors()[0], value)) from None
    return getattr(checked, name)


def problem_of(error: ErrorDetails, value: Any) -> str:
    """One pydantic error as ``input should be ..., got VALUE`` (how every bad option value is told)."""
    message = error["msg"]
    shown = (
        str(value).lower()
        if isinstance(value, bool) or (isinstance(value, float) and math.isnan(value))
        else repr(value)
    )
    return f"{message[:1].lower()}{message[1:]}, got {shown}"


def check_options(values: Mapping[str, Any]) -> None:
    """Check every bounded option of ``values`` (others are left alone).

    Raises:
        OptionOutOfBounds: for the first value that breaks its declaration.
    """
    for name, value in values.items():
        if name in BOUNDED:
            check_option(name, value)
