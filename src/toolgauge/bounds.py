"""The bounds of the run options, declared once: ``eval``'s options and a sweep file's keys are checked by these.

``--temperature -5`` on the command line and ``temperature = -5`` in a sweep file get the same refusal, and so do
``limit = 0``, ``limit = true`` (strict types: a boolean is no number), ``temperature = nan`` and an epoch count
no run could hold. The CLI takes each option's ``min``/``max`` from here (:func:`cli_range`); what a range
cannot say (NaN, infinity, booleans) is checked by :func:`check_options`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from annotated_types import Ge, Gt, Le
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from toolgauge.errors import UsageError

MAX_EPOCHS = 1000
"""The most tries of every sample a run may make (``--epochs``, a sweep's ``epochs``)."""

MAX_TEMPERATURE = 2.0
"""The sampling temperature's upper bound, as the OpenAI API has it (the lower one is 0)."""


class RunBounds(BaseModel):
    """Every bounded run option, by its ``eval`` name with ``-`` as ``_`` (the sweep file's key)."""

    model_config = ConfigDict(strict=True, extra="forbid")

    limit: int | None = Field(default=None, ge=1)
    temperature: float = Field(default=0.0, ge=0.0, le=MAX_TEMPERATURE, allow_inf_nan=False)
    max_tokens: int = Field(default=512, ge=1)
    epochs: int = Field(default=1, ge=1, le=MAX_EPOCHS)
    seed: int = Field(default=0, ge=0)
    concurrency: int = Field(default=4, ge=1)
    timeout: float = Field(default=60.0, ge=0.1, allow_inf_nan=False)
    max_retries: int = Field(default=0, ge=0)


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
    found: dict[str, Any] = {}
    for constraint in RunBounds.model_fields[name].metadata:
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
        message = exc.errors()[0]["msg"]
        shown = (
            str(value).lower()
            if isinstance(value, bool) or (isinstance(value, float) and math.isnan(value))
            else repr(value)
        )
        raise OptionOutOfBounds(name, f"{message[:1].lower()}{message[1:]}, got {shown}") from None
    return getattr(checked, name)


def check_options(values: Mapping[str, Any]) -> None:
    """Check every bounded option of ``values`` (others are left alone).

    Raises:
        OptionOutOfBounds: for the first value that breaks its declaration.
    """
    for name, value in values.items():
        if name in BOUNDED:
            check_option(name, value)
