"""The option groups every benchmark shares, declared once as pydantic models (issue 23).

A benchmark's options model (``BenchmarkSpec.options``) inherits the groups it has: :class:`SamplingOptions`
(what a model request is asked with) and :class:`LimitOptions`, and adds its own fields (``data``, ``variant``,
``mode``, ...). The model is the one declaration of those options: the ``eval`` command is generated from it
(``toolgauge.cli.generated``), ``toolgauge.api.evaluate`` and a sweep file's keys are validated by it, and a run
stores ``options.model_dump(mode="json")`` as its config, which ``rescore`` validates back into the model.
:class:`EngineOptions` are how a run is carried out (not stored with the benchmark's options).

A field's description is its help text; :class:`Cli` in a field's metadata says how the command line spells it
where the field's name and type do not say it alone. Nothing here imports typer.
"""

from __future__ import annotations

import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from toolgauge.bounds import (
    Concurrency,
    Epochs,
    Limit,
    MaxRetries,
    MaxTokens,
    OptionOutOfBounds,
    Seed,
    Temperature,
    ThinkingBudget,
    Timeout,
    TopP,
    problem_of,
    range_of,
)
from toolgauge.engine.cache import CacheMode
from toolgauge.errors import UsageError
from toolgauge.settings import CallSettings, ReasoningEffort, ToolChoiceMode

M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class Cli:
    """How the command line spells a field, where its name and type do not say it alone.

    Attributes:
        names: The option's names (``("--quiet/--progress", "-q")``); default ``--field-name``.
        repeatable: A list given by repeating the option (``--stop A --stop B``) rather than as a comma list.
        json: The value is given as one JSON text (``--extra-body '{"k": 1}'``).
        metavar: What the help shows for the value.
        choices: The choices the command offers, where it offers fewer than the field takes (a mode only the
            ``score`` command sets).
        required: The command asks for it though the model has a default (a default another path fills in).
        hidden: Not an option of the command (set by another path, e.g. ``score``'s ``--predictions``).
    """

    names: tuple[str, ...] = ()
    repeatable: bool = False
    json: bool = False
    metavar: str | None = None
    choices: tuple[str, ...] | None = None
    required: bool = False
    hidden: bool = False


def _comma_list(value: Any) -> Any:
    """A comma list (``"S-S,M-M"``, as the command line gives it) as a list; other values unchanged."""
    if not isinstance(value, str):
        return value
    parts = [part.strip() for part in value.split(",") if part.strip()]
    if not parts:
        raise ValueError("an empty list was given")
    return parts


CommaList = Annotated[list[str], BeforeValidator(_comma_list)]
"""A list of names, also given as one comma list (``"a,b"``) as on the command line."""


class OptionsModel(BaseModel):
    """The base of every options model: unknown keys are refused (a misspelt option is no silent default)."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class SamplingOptions(OptionsModel):
    """What every model request of a run is asked with (``settings.CallSettings``), and stored with the run."""

    temperature: Temperature = Field(0.0, description="Sampling temperature.")
    max_tokens: MaxTokens = Field(512, description="Max tokens per model reply.")
    top_p: TopP | None = Field(None, description="Nucleus sampling: the probability mass sampled from (0 < p <= 1).")
    seed: Seed | None = Field(None, description="Sampling seed sent with every request (where the provider takes one).")
    stop: Annotated[tuple[str, ...] | None, Cli(repeatable=True, metavar="TEXT")] = Field(
        None, description="A stop sequence (repeat the option for several)."
    )
    reasoning_effort: ReasoningEffort | None = Field(None, description="Reasoning effort of a reasoning model.")
    thinking_budget: ThinkingBudget | None = Field(
        None, description="Token budget of a model's extended thinking (where the provider has one)."
    )
    extra_body: Annotated[dict[str, Any] | None, Cli(json=True, metavar="JSON")] = Field(
        None, description="Extra fields merged into every request body, as one JSON object."
    )
    provider_defaults: bool = Field(
        False,
        description="Send no sampling option (temperature, top_p): each provider's own defaults "
        "(the WildToolBench paper's setting).",
    )

    def call_settings(self, tool_choice: ToolChoiceMode = "auto") -> CallSettings:
        """The settings the calling protocols ask every request with."""
        fields = SamplingOptions.model_fields
        return CallSettings(tool_choice=tool_choice, **{name: getattr(self, name) for name in fields})

    def model_options(self) -> dict[str, Any]:
        """The sampling options set (None and an unset flag left out), for the run's provenance."""
        chosen = {name: getattr(self, name) for name in SamplingOptions.model_fields}
        return {
            k: list(v) if isinstance(v, tuple) else v for k, v in chosen.items() if v is not None and v is not False
        }


class LimitOptions(OptionsModel):
    """How many samples a run takes."""

    limit: Limit | None = Field(None, description="Run only the first N samples (of each split or category).")


class EngineOptions(OptionsModel):
    """How a run is carried out: not stored with the benchmark's options, and the same for every benchmark.

    One field here is one option of every ``eval`` command, every sweep entry and ``api.evaluate``.
    """

    concurrency: Annotated[Concurrency, Cli(names=("--concurrency", "-c"))] = Field(
        4, description="Samples run at once."
    )
    timeout: Timeout = Field(120.0, description="Seconds per model request.")
    max_retries: MaxRetries = Field(4, description="Retries on 429/5xx/timeouts.")
    no_cache: bool = Field(False, description="Neither read nor write the response cache.")
    resume: str | None = Field(None, description="Continue an interrupted run by id.")
    epochs: Epochs = Field(
        1, description="Run every sample this many times; report mean, stderr, 95% CI, pass@k and pass^k."
    )
    cache: Annotated[CacheMode | None, Cli(metavar="on|off|read|write")] = Field(
        None, description="Response cache: on (default) | off | read (use, store nothing) | write (store only)."
    )
    max_cost: Annotated[float | None, Cli(metavar="USD")] = Field(
        None, ge=0, description="Stop (resumable) before a call would cross this USD spend."
    )
    max_tokens_total: Annotated[int | None, Cli(metavar="N")] = Field(
        None, ge=1, description="Stop (resumable) before calls cross N tokens in+out."
    )
    price: Annotated[str | None, Cli(metavar="IN,OUT")] = Field(
        None, description="IN,OUT: USD per million input and output tokens (self-hosted models)."
    )
    # --name and --tag label every run, a score's too: the shared options declare them for the command line.
    name: Annotated[str | None, Cli(hidden=True)] = Field(
        None, description="A name for the run, shown in runs, reports, leaderboards."
    )
    tag: Annotated[tuple[str, ...] | None, Cli(hidden=True)] = Field(
        None, description="KEY=VALUE label for the run (repeatable; runs --tag filters)."
    )


# Each bounded option (a field with a range) of the groups every benchmark shares, by name: the one declaration
# ``eval``'s options, the API's keywords and a sweep file's keys are checked by.
_BOUNDED_IN: dict[str, type[OptionsModel]] = {
    name: group
    for group in (SamplingOptions, LimitOptions, EngineOptions)
    for name, field in group.model_fields.items()
    if range_of(field)
}
BOUNDED = frozenset(_BOUNDED_IN)
"""The names of the bounded options."""


def check_option(name: str, value: Any) -> Any:
    """``value`` as the declaration of the bounded option ``name`` accepts it (a whole number is taken for a float).

    Raises:
        OptionOutOfBounds: the value breaks the declaration (wrong type, out of range, NaN or infinite).
    """
    group = _BOUNDED_IN[name]
    try:
        checked = group.model_validate({name: value})
    except ValidationError as exc:
        raise OptionOutOfBounds(name, problem_of(exc.errors()[0], value)) from None
    return getattr(checked, name)


def check_options(values: Mapping[str, Any]) -> None:
    """Check every bounded option of ``values`` (others are left alone).

    Raises:
        OptionOutOfBounds: for the first value that breaks its declaration.
    """
    for name, value in values.items():
        if name in BOUNDED:
            check_option(name, value)


def options_listing(model: type[BaseModel]) -> str:
    """The names of ``model``'s options for a message: its own sorted, then the request-only sampling options."""
    extra = [name for name in SamplingOptions.model_fields if name not in ("temperature", "max_tokens")]
    main = sorted(name for name in model.model_fields if name not in extra)
    rest = [name for name in extra if name in model.model_fields]
    return ", ".join(main) + (f"; sampling: {', '.join(rest)}" if rest else "")


def validated(model: type[M], values: Mapping[str, Any], *, prefix: str = "") -> M:
    """``values`` as ``model`` accepts them.

    Raises:
        UsageError: one line naming the first bad field (``PREFIXfield: problem``) and, for an unknown one,
            the nearest known name.
    """
    try:
        return model.model_validate(dict(values))
    except ValidationError as exc:
        raise UsageError(option_problem(model, exc, values, prefix=prefix)) from None


def option_problem(model: type[BaseModel], exc: ValidationError, values: Mapping[str, Any], *, prefix: str) -> str:
    """The first error of validating ``values`` as ``model``, as one line ``PREFIXfield: problem``."""
    from toolgauge.unknown_fields import did_you_mean

    error = exc.errors()[0]
    field = str(error["loc"][0]) if error["loc"] else ""
    name = field.replace("_", "-") if prefix == "--" else field
    if error["type"] == "extra_forbidden":
        known = list(model.model_fields)
        return f"{prefix}{name}: not an option{did_you_mean(name, known)} (options: {options_listing(model)})"
    if error["type"] == "missing":
        return f"{prefix}{name}: missing: it has no default"
    return f"{prefix}{name}: {problem_of(error, values.get(field, error.get('input')))}"


def literal_choices(annotation: Any) -> tuple[str, ...] | None:
    """The choices of a ``Literal`` type (optional or not), or None."""
    for member in (annotation, *typing.get_args(annotation)):
        if typing.get_origin(member) is typing.Literal:
            return tuple(str(choice) for choice in typing.get_args(member))
    return None


def cli_of(field_metadata: list[Any], annotation: Any) -> Cli:
    """The :class:`Cli` marker of a field (in its metadata or its optional type's), or the default."""
    for item in field_metadata:
        if isinstance(item, Cli):
            return item
    for member in typing.get_args(annotation):
        if typing.get_origin(member) is Annotated:
            for extra in typing.get_args(member)[1:]:
                if isinstance(extra, Cli):
                    return extra
    return Cli()


class ToolChoiceOptions(OptionsModel):
    """How native requests set tool choice."""

    tool_choice: ToolChoiceMode = Field(
        "auto", description="auto | none | expected (force the reference tool by name)."
    )
