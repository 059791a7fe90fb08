"""Gate 2, no-tool screens: one model at one setting answers the question three times, options shuffled.

A screen is a :class:`ScreenSpec`: a model spec (as ``--model`` takes it) plus the request options that define
its setting (temperature, reply length, reasoning effort) and a name. On the command line it is one string,
``SPEC[,key=value...]`` (:func:`parse_screen_spec`)::

    gold                                              the reference: always the right letter (a ceiling screen)
    http://127.0.0.1:8000/v1#m,temperature=0.7        an OpenAI-compatible server at temperature 0.7
    openai:gpt-5.5,reasoning_effort=medium,name=strong

Keys: ``temperature`` (a number >= 0), ``max_tokens`` (an integer >= 1), ``reasoning_effort`` (sent as the
API's ``reasoning_effort``: ``none``, ``minimal``, ``low``, ``medium``, ``high``...), ``name`` (the screen's
name in records, reports and its role; default: the text without ``name=``, password masked). Options not given
are not sent, so the server's defaults apply (a reasoning model's default effort, an unbounded reply).

:func:`screen_candidate` runs one screen on one candidate: three calls through ``ctx.generate(..., role=role)``
(the driver holds each screen's client under its role, ``screen:<name>``), each showing the options in the
order drawn from its own recorded seed; the reply must name one letter, which is mapped back to the
candidate's own option and compared with the proposed one. Two or three correct calls reject the candidate as
``too_easy`` under that screen (:func:`toolgauge.benchmarks.toolgate.answers.screen_verdict`).

Each call is one request; the response cache answers a repeated request (the same displayed order of the same
candidate, as in every call of ``fixed_order``) with its first reply. Give ``--no-cache`` when the three
calls of a screen at temperature > 0 must be three samples even then.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from toolgauge.benchmarks.toolgate.answers import (
    CALLS_PER_SCREEN,
    IDENTITY,
    grade_call,
    new_seed,
    permutation_from_seed,
    present,
    screen_prompt,
    screen_verdict,
    to_displayed,
)
from toolgauge.benchmarks.toolgate.records import Candidate, Letter, ScreenCall, ScreenResult
from toolgauge.errors import UsageError
from toolgauge.records import AssistantTurn, GenerateOptions, Message

if TYPE_CHECKING:
    from toolgauge.engine import EpisodeContext
    from toolgauge.models.base import ModelClient

OPTION_KEYS = ("temperature", "max_tokens", "reasoning_effort", "name")
ROLE_PREFIX = "screen:"
_EFFORT = re.compile(r"[a-z][a-z0-9_-]*")
_NAME = re.compile(r"[^\s,]+")


class ScreenSpec(BaseModel):
    """One screen: a model at one setting.

    Attributes:
        name: the screen's name (records, reports, and its role ``screen:<name>``); unique within a run.
        spec: the model spec, as ``--model`` takes it (``gold``, ``openai:MODEL``, ``URL#MODEL``...).
        temperature: the sampling temperature (None: not sent, the server's default).
        max_tokens: the reply length limit (None: not sent).
        reasoning_effort: the API's ``reasoning_effort`` (None: not sent, the server's default).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1)
    spec: str = Field(min_length=1)
    temperature: float | None = Field(default=None, ge=0)
    max_tokens: int | None = Field(default=None, ge=1)
    reasoning_effort: str | None = None

    @property
    def role(self) -> str:
        """The driver role whose client answers this screen's calls: ``screen:<name>``."""
        return ROLE_PREFIX + self.name

    def options(self) -> GenerateOptions:
        """The request options of every call of this screen."""
        return GenerateOptions(
            temperature=self.temperature, max_tokens=self.max_tokens, reasoning_effort=self.reasoning_effort
        )

    def settings(self) -> dict[str, Any]:
        """What a screen result records as its setting: the model (password masked) and the options."""
        from toolgauge.models.spec import display_spec

        return {
            "model": display_spec(self.spec),
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "reasoning_effort": self.reasoning_effort,
        }

    def record(self) -> dict[str, Any]:
        """The screen as a run's config stores it (name and settings; password masked)."""
        return {"name": self.name, **self.settings()}

    def client(self, *, timeout: float = 120.0) -> ModelClient:
        """The client of this screen's model.

        Raises:
            UsageError: the model spec names no model (``replay:`` specs are refused: a screen has no
                recorded outputs of its own).
        """
        from toolgauge.models.spec import resolve_model

        if self.spec.startswith("replay:"):
            raise UsageError(f"screen {self.name!r}: replay:PATH cannot answer a screen; use scripted:PATH")
        return resolve_model(self.spec, timeout=timeout)


def _option_value(key: str, value: str, text: str) -> Any:
    shown = f"screen {text!r}: {key}={value!r}"
    if key == "temperature":
        try:
            number = float(value)
        except ValueError:
            raise UsageError(f"{shown}: expected a number") from None
        if not math.isfinite(number) or number < 0:
            raise UsageError(f"{shown}: expected a finite number >= 0")
        return number
    if key == "max_tokens":
        if not value.isdigit() or int(value) < 1:
            raise UsageError(f"{shown}: expected an integer >= 1")
        return int(value)
    if key == "reasoning_effort":
        if not _EFFORT.fullmatch(value):
            raise UsageError(f"{shown}: expected a lower-case word such as low, medium or high")
        return value
    if not _NAME.fullmatch(value):
        raise UsageError(f"{shown}: a name has no spaces or commas")
    return value


def parse_screen_spec(text: str) -> ScreenSpec:
    """Parse ``SPEC[,key=value...]`` (see the module docstring) into a :class:`ScreenSpec`.

    Raises:
        UsageError: an empty spec, an unknown or repeated key, a value of the wrong kind.
    """
    from toolgauge.models.spec import display_spec

    raw = text.strip()
    spec, *parts = [p.strip() for p in raw.split(",")]
    if not spec:
        raise UsageError(f"screen {raw!r}: give a model spec first, e.g. gold or http://HOST/v1#MODEL")
    values: dict[str, Any] = {}
    for part in parts:
        key, sep, value = part.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or key not in OPTION_KEYS:
            raise UsageError(
                f"screen {display_spec(raw)!r}: {part!r} is not one of {', '.join(k + '=...' for k in OPTION_KEYS)}"
            )
        if key in values:
            raise UsageError(f"screen {display_spec(raw)!r}: {key} is given twice")
        values[key] = _option_value(key, value, display_spec(raw))
    name = values.pop("name", None)
    if name is None:
        name = display_spec(spec) + "".join(f",{key}={values[key]}" for key in OPTION_KEYS if key in values)
    return ScreenSpec(name=name, spec=spec, **values)


def check_screen_names(screens: Sequence[ScreenSpec]) -> None:
    """Refuse two screens with one name (their records and roles would mix).

    Raises:
        UsageError: naming the repeated name.
    """
    seen: set[str] = set()
    for screen in screens:
        if screen.name in seen:
            raise UsageError(f"two screens are named {screen.name!r}; give one of them name=... (--screen SPEC,name=X)")
        seen.add(screen.name)


def call_seeds(count: int = CALLS_PER_SCREEN) -> list[int]:
    """Fresh seeds for a screen's calls, one per call."""
    return [new_seed() for _ in range(count)]


async def screen_candidate(
    ctx: EpisodeContext,
    candidate: Candidate,
    screen: ScreenSpec,
    *,
    role: str,
    seeds: list[int] | None = None,
    fixed_order: bool = False,
) -> ScreenResult:
    """Run one screen on one candidate: three no-tool calls, each with its own shuffled order.

    Args:
        ctx: the episode's context; the calls go through ``ctx.generate(..., role=role)`` (cache, retries and
            the call log apply).
        candidate: the candidate; the screen sees only its question and options.
        screen: the screen (its options go with every call).
        role: the driver role holding the screen's client (``screen.role`` by convention).
        seeds: one seed per call (three); None draws fresh ones. Each call's order is
            ``permutation_from_seed(seed)``, recorded with the call.
        fixed_order: show the original order in every call (the paper's biased protocol, for audits); the
            calls then record no seed.

    Returns:
        The screen's record; ``too_easy`` when at least two calls were correct.

    Raises:
        ValueError: ``seeds`` is not one seed per call.
        ModelError: a call failed for good (no verdict: the candidate was not screened).
    """
    if seeds is not None and len(seeds) != CALLS_PER_SCREEN:
        raise ValueError(f"a screen makes {CALLS_PER_SCREEN} calls: give {CALLS_PER_SCREEN} seeds, not {len(seeds)}")
    plan: list[tuple[int | None, list[Letter]]]
    if fixed_order:
        plan = [(None, list(IDENTITY)) for _ in range(CALLS_PER_SCREEN)]
    else:
        plan = [(seed, permutation_from_seed(seed)) for seed in (seeds if seeds is not None else call_seeds())]
    calls: list[ScreenCall] = []
    options = screen.options()
    for seed, permutation in plan:
        prompt = screen_prompt(candidate.question, present(candidate.options, permutation))
        # The reference answer for the ``gold`` client: the letter the right option is displayed at.
        gold = AssistantTurn(content=to_displayed(candidate.answer, permutation), finish_reason="stop")
        turn = await ctx.generate([Message(role="user", content=prompt)], None, options, gold=gold, role=role)
        calls.append(grade_call(turn.content or "", permutation, candidate.answer, seed=seed))
    return screen_verdict(screen.name, calls, fixed_order=fixed_order, settings=screen.settings())
