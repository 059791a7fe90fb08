"""Recovery from feedback (the rebuttal's A2): after a wrong reply, the model is told what kind of error it made.

A2 tries three kinds of simulated tool feedback, "a) tool parsing errors, b) incorrect tool selection, and
c) incorrect parameter selection", adds the model's reply and the feedback to the dialogue and asks again.
``feedback`` picks which kinds are given: ``none`` (the released protocol), ``parse``, ``tool``, ``param`` or
``all``. A reply gets the feedback of its error (:func:`feedback_kind` of the verdict's ``error_type``) when
that kind is enabled, and one more attempt. The feedback names the kind of error only, never the gold answer.

The first attempt is what every released metric scores, so the no-feedback score is unchanged; the second
attempt is scored by the same rules and reported as the recovery rate per feedback kind (:func:`recovery_metrics`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, get_args

from toolgauge.results import Metric

MtuFeedback = Literal["none", "parse", "tool", "param", "all"]
FeedbackKind = Literal["parse", "tool", "param"]
FEEDBACK_KINDS: tuple[FeedbackKind, ...] = get_args(FeedbackKind)

# The verdict error types (``MtuItemVerdict.error_type``) each kind of feedback answers.
_KIND_OF_ERROR: dict[str, FeedbackKind] = {
    "unparsable": "parse",
    "no_call": "tool",
    "unexpected_call": "tool",
    "wrong_tool": "tool",
    "missing_call": "tool",
    "extra_call": "tool",
    "wrong_order": "tool",
    "wrong_parameters": "param",
}

# What the model is told: the kind of error, as a tool would report it, and that it may try again.
FEEDBACK_TEXT: dict[FeedbackKind, str] = {
    "parse": "Tool parsing error: the tool call in your reply could not be parsed. Check the call format and "
    "the JSON of the action input, then answer again.",
    "tool": "Incorrect tool selection: the tools called in your reply are not the ones this request needs "
    "(wrong, missing, extra, or a call where none is needed). Answer again.",
    "param": "Incorrect parameter selection: the tool is right but its parameters are wrong. Answer again.",
}


def feedback_kind(error_type: str | None, enabled: MtuFeedback) -> FeedbackKind | None:
    """The feedback a wrong reply gets under ``enabled`` (None: a right reply, or its kind is not enabled)."""
    if error_type is None or enabled == "none":
        return None
    kind = _KIND_OF_ERROR.get(error_type)
    return kind if kind is not None and enabled in ("all", kind) else None


def recovery_metrics(given: Sequence[tuple[FeedbackKind, bool]], items: int, first_right: int) -> list[Metric]:
    """The recovery rates: per feedback kind (``by="feedback"``) and over all feedback, beside the first-try score.

    Args:
        given: For each reply that got feedback, its kind and whether the second attempt was right.
        items: The number of items.
        first_right: How many were right at the first attempt.

    Returns:
        ``recovery_rate`` (recovered / given) overall and per kind, ``feedback_given`` counts, and
        ``accuracy_without_feedback`` / ``accuracy_with_feedback``: the share of items right at the first attempt,
        and right at the first or (after feedback) the second.
    """
    recovered = sum(1 for _, ok in given if ok)
    out = [
        Metric(name="accuracy_without_feedback", value=first_right / items if items else None, n=items),
        Metric(name="accuracy_with_feedback", value=(first_right + recovered) / items if items else None, n=items),
        Metric(name="recovery_rate", value=recovered / len(given) if given else None, n=len(given)),
        Metric(name="feedback_given", value=len(given), kind="count"),
    ]
    for kind in FEEDBACK_KINDS:
        of_kind = [ok for k, ok in given if k == kind]
        if of_kind:
            out.append(Metric(name="recovery_rate", value=sum(of_kind) / len(of_kind), group=kind, by="feedback",
                              n=len(of_kind)))  # fmt: skip
            out.append(Metric(name="feedback_given", value=len(of_kind), group=kind, by="feedback", kind="count"))
    return out
