"""The answer rules (pure): a solution's ``ANSWER:`` line, a screen's reply, and seeded option permutations.

Solution output (gate 1)
    Only stdout counts. A line counts when it starts with ``ANSWER:``; there must be exactly one (two identical
    lines are two answers). ``<x>``, the text after the prefix with surrounding whitespace removed, is an option
    letter ``A``-``D`` (upper case) or an option's value. A value selects the option whose trimmed text equals
    it; failing that, when ``<x>`` and an option both parse as numbers (any float notation: ``0.25``,
    ``-3``, ``1.5e-3``), the option within half a unit of that option's last printed decimal
    (``0.060723`` accepts ``[0.0607225, 0.0607235]``; ``1.5e-3`` accepts ``[1.45e-3, 1.55e-3]``; bounds
    included). Two such options make the answer ambiguous. Numbers are compared as exact decimals.

Screen replies (gate 2)
    A reply is parsed when it names exactly one distinct letter ``A``-``D`` standing alone (not inside a word:
    ``"B"``, ``"(B)"``, ``"**B**"``, ``"The answer is B."``); anything else is ``unparsable`` and counts as wrong.

Permutations
    ``permutation[i]`` is the original letter of the option displayed as the i-th letter. Each screen call draws
    its own from its own recorded seed (:func:`permutation_from_seed`); grading maps the displayed letter back to
    the original option, so a screen that always picks the right value is right under every order.
"""

from __future__ import annotations

import hashlib
import random
import re
import secrets
from collections.abc import Sequence
from decimal import Decimal, InvalidOperation

from pydantic import BaseModel

from toolgauge.benchmarks.toolgate.records import (
    LETTERS,
    Candidate,
    Letter,
    ScreenCall,
    ScreenResult,
    VerifyReason,
    letter_index,
)

ANSWER_PREFIX = "ANSWER:"
CALLS_PER_SCREEN = 3
TOO_EASY_AT = 2  # correct calls (of 3) that make a candidate too easy for a screen
IDENTITY: tuple[Letter, ...] = LETTERS
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_LONE_LETTER = re.compile(r"(?<![A-Za-z0-9_])([ABCD])(?![A-Za-z0-9_])")
_SHOWN = 80  # characters of an answer or reply quoted in a detail


def _quote(text: str) -> str:
    return repr(text if len(text) <= _SHOWN else text[:_SHOWN] + "...")


class AnswerReading(BaseModel):
    """What a solution's stdout answered.

    Attributes:
        selected: the option it selected (candidate's own order), None when it selected none.
        answer: the text of its one ``ANSWER:`` line after the prefix, trimmed (None unless exactly one line).
        reason: why no option is selected, or ``mismatch`` once compared with the proposal; None when fine.
        detail: free text for the reason.
    """

    selected: Letter | None = None
    answer: str | None = None
    reason: VerifyReason | None = None
    detail: str | None = None


def answer_lines(stdout: str) -> list[str]:
    """Return the stdout lines that start with ``ANSWER:`` (a trailing carriage return dropped), in order."""
    return [line.removesuffix("\r") for line in stdout.split("\n") if line.startswith(ANSWER_PREFIX)]


def parse_number(text: str) -> Decimal | None:
    """Parse a decimal number in any float notation (``-0.5``, ``.5``, ``1.5e-3``); None when it is not one."""
    text = text.strip()
    if not _NUMBER.fullmatch(text):
        return None
    try:
        return Decimal(text)
    except InvalidOperation:  # pragma: no cover - the pattern admits only valid decimals
        return None


def half_unit(text: str) -> Decimal | None:
    """Half a unit of the last printed decimal of a number (``"0.0607"`` -> 0.00005, ``"1.5e-3"`` -> 0.00005)."""
    number = parse_number(text)
    if number is None:
        return None
    exponent = number.as_tuple().exponent
    assert isinstance(exponent, int)  # finite: the pattern admits no NaN or Infinity
    return Decimal(5).scaleb(exponent - 1)


def select_option(answer: str, options: Sequence[str]) -> AnswerReading:
    """Select the option an answer names: a letter, an equal trimmed text, else the one number within tolerance.

    Args:
        answer: the text after ``ANSWER:`` (it is trimmed here).
        options: the four options in the candidate's own order.

    Returns:
        ``selected`` set, or ``reason`` ``no_matching_option`` / ``ambiguous_option`` with a detail.
    """
    text = answer.strip()
    if text in LETTERS:
        return AnswerReading(selected=text, answer=text)
    for letter, option in zip(LETTERS, options, strict=True):
        if option.strip() == text:
            return AnswerReading(selected=letter, answer=text)
    value = parse_number(text)
    if value is None:
        detail = "empty answer" if not text else f"{_quote(text)} is no letter, option text or number"
        return AnswerReading(answer=text, reason="no_matching_option", detail=detail)
    within: list[Letter] = []
    for letter, option in zip(LETTERS, options, strict=True):
        number, half = parse_number(option), half_unit(option)
        if number is not None and half is not None and abs(value - number) <= half:
            within.append(letter)
    if len(within) == 1:
        return AnswerReading(selected=within[0], answer=text)
    if not within:
        return AnswerReading(
            answer=text, reason="no_matching_option", detail=f"{_quote(text)} is within no option's last decimal"
        )
    return AnswerReading(
        answer=text, reason="ambiguous_option", detail=f"{_quote(text)} matches options {', '.join(within)}"
    )


def read_answer(stdout: str, options: Sequence[str]) -> AnswerReading:
    """Apply the ``ANSWER:`` rules to a solution's stdout: exactly one line, then :func:`select_option`."""
    lines = answer_lines(stdout)
    if not lines:
        return AnswerReading(reason="no_answer", detail="no stdout line starts with 'ANSWER:'")
    if len(lines) > 1:
        shown = "; ".join(_quote(line) for line in lines[:3]) + ("; ..." if len(lines) > 3 else "")
        return AnswerReading(reason="several_answers", detail=f"{len(lines)} 'ANSWER:' lines: {shown}")
    return select_option(lines[0][len(ANSWER_PREFIX) :], options)


def grade_answer(stdout: str, options: Sequence[str], proposed: Letter) -> AnswerReading:
    """Read the answer and compare it with the proposed letter (``mismatch`` names the option selected)."""
    reading = read_answer(stdout, options)
    selected = reading.selected
    if selected is not None and selected != proposed:
        detail = f"selected {selected} ({_quote(options[letter_index(selected)])}), proposed {proposed}"
        return reading.model_copy(update={"reason": "mismatch", "detail": detail})
    return reading


# --- permutations and screens ----------------------------------------------------------------------------


def new_seed() -> int:
    """Draw a fresh seed for one screen call or one release shuffle (63 random bits)."""
    return secrets.randbits(63)


def derive_seed(*parts: object) -> int:
    """A reproducible 63-bit seed from parts such as (run seed, candidate id, screen, call index)."""
    digest = hashlib.sha256("\x1f".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def permutation_from_seed(seed: int) -> list[Letter]:
    """The option order drawn from ``seed``: ``result[i]`` is the original letter displayed i-th."""
    order = list(LETTERS)
    random.Random(seed).shuffle(order)
    return order


def present(options: Sequence[str], permutation: Sequence[Letter]) -> list[str]:
    """The options in displayed order: displayed i-th is ``options[permutation[i]]``."""
    return [options[letter_index(original)] for original in permutation]


def to_original(displayed: Letter, permutation: Sequence[Letter]) -> Letter:
    """Map a displayed letter back to the candidate's own letter."""
    return permutation[letter_index(displayed)]


def to_displayed(original: Letter, permutation: Sequence[Letter]) -> Letter:
    """Where the candidate's option ``original`` is displayed."""
    return LETTERS[list(permutation).index(original)]


def shuffled(candidate: Candidate, seed: int) -> Candidate:
    """The candidate with its options re-ordered by ``seed`` and the answer letter updated (release shuffles)."""
    permutation = permutation_from_seed(seed)
    return candidate.model_copy(
        update={
            "options": present(candidate.options, permutation),
            "answer": to_displayed(candidate.answer, permutation),
        }
    )


def parse_reply(reply: str) -> tuple[Letter | None, str | None]:
    """The one letter a screen's reply names, or ``(None, what it named instead)``."""
    named = sorted(set(_LONE_LETTER.findall(reply)))
    if len(named) == 1:
        return named[0], None
    if not named:
        return None, "the reply names no letter A-D"
    return None, f"the reply names several letters: {', '.join(named)}"


def grade_call(reply: str, permutation: Sequence[Letter], answer: Letter, *, seed: int | None) -> ScreenCall:
    """Grade one screen call: parse the reply, map its letter back to the original option, compare by value."""
    displayed, problem = parse_reply(reply)
    if displayed is None:
        return ScreenCall(
            seed=seed,
            permutation=list(permutation),
            reply=reply,
            correct=False,
            reason="unparsable",
            detail=problem,
        )
    chosen = to_original(displayed, permutation)
    return ScreenCall(
        seed=seed,
        permutation=list(permutation),
        reply=reply,
        displayed=displayed,
        chosen=chosen,
        correct=chosen == answer,
    )


def screen_verdict(
    screen: str, calls: Sequence[ScreenCall], *, fixed_order: bool = False, settings: dict[str, object] | None = None
) -> ScreenResult:
    """Decide one screen: rejected as ``too_easy`` when at least two calls are correct."""
    correct = sum(call.correct for call in calls)
    passed = correct < TOO_EASY_AT
    return ScreenResult(
        screen=screen,
        passed=passed,
        correct=correct,
        calls=list(calls),
        reason=None if passed else "too_easy",
        detail=f"{correct} of {len(calls)} calls correct",
        fixed_order=fixed_order,
        settings=dict(settings or {}),
    )


def screen_prompt(question: str, displayed_options: Sequence[str]) -> str:
    """The text a screen sees: the question, the displayed options, and the one-letter reply rule."""
    lines = [question.strip(), ""]
    lines += [f"({letter}) {option}" for letter, option in zip(LETTERS, displayed_options, strict=True)]
    lines += ["", "Reply with exactly one letter: A, B, C or D."]
    return "\n".join(lines)
