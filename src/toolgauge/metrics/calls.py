"""MTU-Bench's call metrics, for any benchmark whose turns are scored by the calls they make (MTU-Bench, suite).

``reference`` follows MTU-Bench-Team/MTU-Bench ``MTU-Eval/cal_score.py`` and ``util.py`` rule for rule
(value normalisation, substring matching, the argument order of each comparison, tool-number and
tool-order accuracy built by walking the gold) with only its crash bugs fixed. ``strict`` changes
four things: extra predicted calls count against tool-number accuracy, tool-order accuracy follows
the prediction's own order, repeated calls to one tool are kept, and values must be equal after
normalisation. Every formula and deviation is written up in ``docs/metrics/mtu-bench.md``.

Here are the rules that judge calls against calls, one turn of a dialogue, the dialogue metrics and the
typed metrics of a summary; MTU-Bench's own items and splits are scored in ``toolgauge.benchmarks.mtu.metrics``.
All fractions are in [0, 1]; ``round(x * 100, 2)`` gives the reference's printed percentage.
"""

from __future__ import annotations

import math
from array import array
from collections import Counter
from collections.abc import Iterable, Sequence
from difflib import SequenceMatcher
from typing import Any, Literal

from pydantic import BaseModel, Field

from toolgauge.records import ToolCall
from toolgauge.results import Metric

MtuVariant = Literal["reference", "strict"]

# Digit-to-word replacement in the reference's order: "0" goes first, so "10" never survives to
# be replaced by "ten" (it becomes "onezero").
_DIGIT_WORDS = (
    ("0", "zero"), ("1", "one"), ("2", "two"), ("3", "three"), ("4", "four"), ("5", "five"),
    ("6", "six"), ("7", "seven"), ("8", "eight"), ("9", "nine"), ("10", "ten"),
)  # fmt: skip
# The reference's date-to-weekday table. It runs after the digits became words, so the dates never
# match; only its "today" replacement fires (with the first day, "monday"). Kept to stay exact.
_DATE_DAYS = (
    ("2024-01-04", "monday"), ("2024-01-05", "tuesday"), ("2024-01-06", "wednesday"),
    ("2024-01-07", "thursday"), ("2024-01-08", "friday"), ("2024-01-09", "saturday"),
    ("2024-01-10", "sunday"),
)  # fmt: skip
# Values the reference drops from both sides before comparing (after lower-casing).
_IGNORED_VALUE = "hotel"
_WRONG_SUFFIX = "wrong"


class MtuItemVerdict(BaseModel):
    """How one item (or one turn of toolgauge's own dialogues) was judged.

    Single-call items fill ``tool_correct`` / ``parameters_correct``; multi-call items fill
    ``tool_number_accuracy`` / ``tool_order_accuracy``. ``turn_correct`` is what the dialogue
    metrics use. ``error_type`` is None when the turn is correct, otherwise one of ``no_call``,
    ``unexpected_call``, ``unparsable``, ``wrong_tool``, ``missing_call``, ``wrong_parameters``,
    ``extra_call``, ``wrong_order`` (the first that applies, in that order).
    """

    id: str
    split: str
    predicted: list[ToolCall]
    expected: list[ToolCall]
    tool_correct: bool | None = None
    parameters_correct: bool | None = None
    tool_number_accuracy: float | None = None
    tool_order_accuracy: float | None = None
    turn_correct: bool
    error_type: str | None = None


class TurnOutcome(BaseModel):
    """One turn of a toolgauge multi-turn dialogue: the calls expected and the calls made."""

    dialogue_id: str
    turn: int = Field(ge=0)
    expected: list[ToolCall]
    predicted: list[ToolCall]


# --- value matching -------------------------------------------------------------------------


def normalize_value(value: str) -> str:
    """The reference's ``normalize_value``: sequential replaces on an already lower-cased value."""
    value = value.replace("my ", "")
    for digit, word in _DIGIT_WORDS:
        value = value.replace(digit, word)
    value = value.replace("findprovider.", "bookappointment.")
    for date, day in _DATE_DAYS:
        value = value.replace(date, day).replace("today", day)
    return value


def lowered_values(arguments: dict[str, Any]) -> dict[str, str]:
    """``str(value).lower()`` for every argument, as the reference does before comparing."""
    return {key: str(value).lower() for key, value in arguments.items()}


def reference_values_match(required: dict[str, str], candidate: dict[str, str]) -> bool:
    """The reference's ``compare_dicts(required, candidate)`` on lower-cased values.

    Entries whose value is ``hotel`` are dropped from both sides; the sizes must then agree, every
    key of ``required`` must be in ``candidate``, and each normalised ``required`` value must be a
    substring of the normalised ``candidate`` value. Not symmetric: callers pass gold first for
    tool/parameter accuracy and the prediction first for tool-number accuracy, as the reference does.
    """
    required = {key: value for key, value in required.items() if value != _IGNORED_VALUE}
    candidate = {key: value for key, value in candidate.items() if value != _IGNORED_VALUE}
    if len(required) != len(candidate):
        return False
    for key, value in required.items():
        if key not in candidate or normalize_value(value) not in normalize_value(candidate[key]):
            return False
    return True


def strict_values_match(first: dict[str, str], second: dict[str, str]) -> bool:
    """Like ``reference_values_match`` but the normalised values must be equal (so it is symmetric)."""
    first = {key: value for key, value in first.items() if value != _IGNORED_VALUE}
    second = {key: value for key, value in second.items() if value != _IGNORED_VALUE}
    if first.keys() != second.keys():
        return False
    return all(normalize_value(value) == normalize_value(second[key]) for key, value in first.items())


# --- tool number and order ------------------------------------------------------------------


def collapse_calls(calls: Sequence[ToolCall]) -> dict[str, dict[str, Any]]:
    """The reference's dict of calls: a repeated name keeps its first position and its last arguments."""
    collapsed: dict[str, dict[str, Any]] = {}
    for call in calls:
        collapsed[call.name] = call.arguments
    return collapsed


def reference_tool_number(
    predicted: dict[str, dict[str, Any]], gold: dict[str, dict[str, Any]]
) -> tuple[float, list[str]]:
    """The reference's ``calculate_num_acc_hard``; returns TN and the labelled prediction keys.

    Both sides have their names stripped. Both empty scores 1, one empty 0. Otherwise the gold is
    walked in order: a gold tool the prediction has is labelled with its name when the predicted
    values match (prediction-first substring test) and with ``name + "wrong"`` when not; predicted
    tools that are not in the gold are never added, so they cost nothing. TN is the Jaccard index of
    the labels and the gold names.
    """
    predicted = {name.strip(): arguments for name, arguments in predicted.items()}
    gold = {name.strip(): arguments for name, arguments in gold.items()}
    if not predicted and not gold:
        return 1.0, []
    if not predicted or not gold:
        return 0.0, list(predicted)
    labels: list[str] = []
    for name, gold_arguments in gold.items():
        if name not in predicted:
            continue
        if reference_values_match(lowered_values(predicted[name]), lowered_values(gold_arguments)):
            labels.append(name)
        else:
            labels.append(name + _WRONG_SUFFIX)
    union = set(labels) | set(gold)
    return (len(set(labels) & set(gold)) / len(union) if union else 0.0), labels


def order_accuracy(predicted: Sequence[str], gold: Sequence[str]) -> float:
    """The reference's ``calculate_order_acc``.

    Equal sequences score 1 and an empty side 0. Otherwise take the longest common contiguous block
    (difflib ``find_longest_match``) of size L starting at index i of the prediction P:
    ``cos(pi/2 * i/len(P)) * L/len(G)``.
    """
    pred = [label.strip() for label in predicted]
    gold_labels = [label.strip() for label in gold]
    if pred == gold_labels:
        return 1.0
    if not pred or not gold_labels:
        return 0.0
    match = SequenceMatcher(None, gold_labels, pred).find_longest_match(0, len(gold_labels), 0, len(pred))
    return math.cos((math.pi / 2) * (match.b / len(pred))) * match.size / len(gold_labels)


def strict_tool_number_and_order(predicted: Sequence[ToolCall], gold: Sequence[ToolCall]) -> tuple[float, float, int]:
    """Strict TN and TO over all calls (repeats kept); returns (TN, TO, number of correct calls).

    Each gold call, in order, is matched to the first unused predicted call with the same stripped
    name, decodable arguments and equal normalised values. TN is the multiset Jaccard index
    ``correct / (len(gold) + len(predicted) - correct)`` (1 when both are empty), so extra and
    wrong calls both lower it. TO is ``order_accuracy`` on the prediction in its own order, each
    predicted call labelled by the gold call it matched or by a label no gold call has.
    """
    if not predicted and not gold:
        return 1.0, 1.0, 0
    gold_values = [(call.name.strip(), lowered_values(call.arguments)) for call in gold]
    pred_values = [(call.name.strip(), lowered_values(call.arguments)) for call in predicted]
    used = [False] * len(predicted)
    pred_labels = [f"unmatched#{index}" for index in range(len(predicted))]
    correct = 0
    for gold_index, (gold_name, gold_args) in enumerate(gold_values):
        for pred_index, (pred_name, pred_args) in enumerate(pred_values):
            if (
                not used[pred_index]
                and pred_name == gold_name
                and predicted[pred_index].parse_error is None
                and strict_values_match(gold_args, pred_args)
            ):
                used[pred_index] = True
                pred_labels[pred_index] = f"gold#{gold_index}"
                correct += 1
                break
    number = correct / (len(gold) + len(predicted) - correct)
    order = order_accuracy(pred_labels, [f"gold#{index}" for index in range(len(gold))])
    return number, order, correct


# --- dialogue metrics (shared by MTU M-S / M-M and toolgauge's own dialogues) ----------------


def soft_turn_scores(results: Sequence[bool]) -> list[float]:
    """SATS per turn: 0 for a wrong turn, 1 before any error, else ``1 - exp(-(j - i))``.

    ``i`` is the index of the most recent wrong turn before ``j``.
    """
    scores: list[float] = []
    last_wrong = -1
    for index, correct in enumerate(results):
        if not correct:
            scores.append(0)
            last_wrong = index
        elif last_wrong == -1:
            scores.append(1)
        else:
            scores.append(1 - math.exp(-(index - last_wrong)))
    return scores


def task_process_rate(results: Sequence[bool]) -> float:
    """TPR of one dialogue: the number of correct turns before the first wrong one, over all turns."""
    leading = 0
    for correct in results:
        if not correct:
            break
        leading += 1
    return leading / len(results)


def dialogue_results(turns: Iterable[tuple[str, int, bool]]) -> list[list[bool]]:
    """Group ``(dialogue id, turn index, correct)`` into per-dialogue result lists in turn order.

    As in the reference, each dialogue is a list indexed by turn: a later entry for the same turn
    overwrites the earlier one, and dialogues come in order of first appearance. Turn indices that
    never appear (gaps) are left out; the reference would crash on them.
    """
    slots: dict[str, list[bool | None]] = {}
    for dialogue_id, turn, correct in turns:
        dialogue = slots.setdefault(dialogue_id, [])
        while len(dialogue) <= turn:
            dialogue.append(None)
        dialogue[turn] = correct
    return [[result for result in dialogue if result is not None] for dialogue in slots.values()]


def dialogue_metrics(dialogues: Sequence[Sequence[bool]]) -> dict[str, float | int]:
    """SR, ATS, SATS and TPR averaged over dialogues (each dialogue weighs the same).

    ``success_rate``: share of dialogues with every turn correct. ``turn_success_rate`` (ATS): mean
    share of correct turns. ``soft_turn_success_rate`` (SATS): mean of per-dialogue mean
    ``soft_turn_scores``. ``task_process_rate`` (TPR): mean ``task_process_rate``.
    """
    if not dialogues:
        return {"n_dialogues": 0}
    per_dialogue = [one_dialogue_scores(results) for results in dialogues]
    summary: dict[str, float | int] = {
        name: sum(scores[name] for scores in per_dialogue) / len(per_dialogue) for name in DIALOGUE_METRICS
    }
    summary["n_dialogues"] = len(dialogues)
    return summary


def one_dialogue_scores(results: Sequence[bool]) -> dict[str, float]:
    """SR, ATS, SATS and TPR of one dialogue (its correctness by turn): what :func:`dialogue_metrics` averages.

    A unit that stands for the dialogue carries these with weight 1, so that each dialogue metric is
    the plain mean of them over the dialogues (see :func:`dialogue_unit_scores`).
    """
    soft = soft_turn_scores(results)
    return {
        "success_rate": 1.0 if sum(results) == len(results) else 0.0,
        "turn_success_rate": sum(results) / len(results),
        "soft_turn_success_rate": sum(soft) / len(soft),
        "task_process_rate": task_process_rate(results),
    }


def dialogue_unit_scores(turns: Sequence[tuple[str, int, bool]]) -> dict[int, dict[str, float]]:
    """For each dialogue, its last turn's position in ``turns`` -> the dialogue's :func:`one_dialogue_scores`.

    ``turns`` are ``(dialogue id, turn index, correct)`` in unit order, grouped as :func:`dialogue_results`
    groups them (a later entry for the same turn overwrites the earlier one). The dialogue metrics are
    carried by one unit per dialogue, its last, so that each is the mean of that unit's score over the
    units that have it.
    """
    last: dict[str, int] = {}
    for position, (dialogue_id, _, _) in enumerate(turns):
        last[dialogue_id] = position
    results = dialogue_results(turns)
    return {last[dialogue_id]: one_dialogue_scores(r) for dialogue_id, r in zip(last, results, strict=True)}


def unit_scores_row(
    verdict_fields: dict[str, Any], verdict: MtuItemVerdict, dialogue_scores: dict[str, float] | None = None
) -> dict[str, float | int | bool | str | None]:
    """A unit's ``SampleScore.scores``: the verdict's scalar fields, then the metrics it counts in.

    A metric the unit does not count in is left out rather than given as None (a single-call item has
    no ``tool_number_accuracy``), so that "the units that have the metric" are the ones it is over.
    """
    row: dict[str, float | int | bool | str | None] = {
        k: v
        for k, v in verdict_fields.items()
        if (isinstance(v, int | float | bool | str) or v is None) and not (v is None and k in TURN_METRICS)
    }
    row.update(verdict_unit_scores(verdict))
    row.update(dialogue_scores or {})
    return row


def verdict_unit_scores(verdict: MtuItemVerdict) -> dict[str, float]:
    """The turn metrics one verdict counts in, as 0/1 or a fraction, named as the metrics.

    ``tool_accuracy`` / ``parameter_accuracy`` for a single-call item or a dialogue turn, and
    ``tool_number_accuracy`` / ``tool_order_accuracy`` for a multi-call item or a dialogue turn: each
    metric over units is the mean of these (weight 1) over the units that have it.
    """
    scores: dict[str, float] = {}
    if verdict.tool_correct is not None:
        scores["tool_accuracy"] = 1.0 if verdict.tool_correct else 0.0
    if verdict.parameters_correct is not None:
        scores["parameter_accuracy"] = 1.0 if verdict.parameters_correct else 0.0
    if verdict.tool_number_accuracy is not None:
        scores["tool_number_accuracy"] = verdict.tool_number_accuracy
    if verdict.tool_order_accuracy is not None:
        scores["tool_order_accuracy"] = verdict.tool_order_accuracy
    return scores


def _multi_error(
    expected: Sequence[ToolCall], predicted: Sequence[ToolCall], correct_calls: int, variant: MtuVariant
) -> str:
    """The ``error_type`` of a wrong multi-call item or dialogue turn: the first that applies, in the verdict's order.

    ``correct_calls`` is the number of gold calls matched with correct values under ``variant``.
    """
    if variant == "reference":
        # The reference sees the collapsed dict: one entry per predicted name.
        pred_names = Counter(name.strip() for name in collapse_calls(predicted))
        gold_names = Counter({name.strip(): 1 for name in collapse_calls(expected)})
    else:
        pred_names = Counter(call.name.strip() for call in predicted)
        gold_names = Counter(call.name.strip() for call in expected)
    if not predicted:
        return "no_call"
    if not expected:
        return "unexpected_call"
    if any(call.parse_error is not None for call in predicted):
        return "unparsable"
    if not set(pred_names) & set(gold_names):
        return "wrong_tool"
    if gold_names - pred_names:
        return "missing_call"
    if correct_calls < sum(gold_names.values()):
        return "wrong_parameters"
    if pred_names - gold_names:
        return "extra_call"
    return "wrong_order"


# --- toolgauge's own multi-turn format ------------------------------------------------------


def judge_turn(outcome: TurnOutcome, variant: MtuVariant = "strict") -> MtuItemVerdict:
    """Judge one turn of a toolgauge dialogue with the multi-call rules of ``variant``.

    ``tool_number_accuracy`` / ``tool_order_accuracy`` are computed as for M-M, and the turn is
    correct when both are 1. ``tool_correct``: the predicted tool names equal the expected ones as a
    multiset (strict) or as a set after the reference's dict collapse (reference).
    ``parameters_correct``: tool-correct and every expected call matched by a predicted call with
    equal values (strict) or with each expected value a substring of the predicted one (reference).
    """
    expected, predicted = outcome.expected, outcome.predicted
    scores = multi_call_scores(expected, predicted, variant)
    if variant == "reference":
        gold_stripped = {name.strip(): arguments for name, arguments in collapse_calls(expected).items()}
        pred_stripped = {name.strip(): arguments for name, arguments in collapse_calls(predicted).items()}
        tool_ok = set(gold_stripped) == set(pred_stripped)
        params_ok = tool_ok and all(
            reference_values_match(lowered_values(arguments), lowered_values(pred_stripped[name]))
            for name, arguments in gold_stripped.items()
        )
    else:
        tool_ok = Counter(call.name.strip() for call in predicted) == Counter(call.name.strip() for call in expected)
        params_ok = tool_ok and scores[2] == len(expected)
    return multi_call_verdict(
        f"{outcome.dialogue_id}#{outcome.turn}", "dialogue", expected, predicted, variant, scores,
        tool_correct=tool_ok, parameters_correct=params_ok,
    )  # fmt: skip


def multi_call_scores(
    expected: Sequence[ToolCall], predicted: Sequence[ToolCall], variant: MtuVariant
) -> tuple[float, float, int]:
    """(TN, TO, number of gold calls matched with correct values) of a multi-call item or turn under ``variant``.

    ``reference`` compares the calls collapsed into the reference's dicts (:func:`reference_tool_number`,
    :func:`order_accuracy` on its labels); ``strict`` keeps every call (:func:`strict_tool_number_and_order`).
    """
    if variant == "reference":
        gold = collapse_calls(expected)
        number, labels = reference_tool_number(collapse_calls(predicted), gold)
        order = order_accuracy(labels, list(gold))
        gold_names = {name.strip() for name in gold}
        return number, order, sum(1 for label in labels if label in gold_names)
    return strict_tool_number_and_order(predicted, expected)


def multi_call_verdict(
    verdict_id: str,
    split: str,
    expected: Sequence[ToolCall],
    predicted: Sequence[ToolCall],
    variant: MtuVariant,
    scores: tuple[float, float, int],
    *,
    tool_correct: bool | None = None,
    parameters_correct: bool | None = None,
) -> MtuItemVerdict:
    """The verdict of a multi-call item or turn with its :func:`multi_call_scores`: right when TN and TO are 1.

    A wrong one gets the first error type that applies (see :class:`MtuItemVerdict`).
    """
    number, order, correct_calls = scores
    correct = number == 1 and order == 1
    return MtuItemVerdict(
        id=verdict_id,
        split=split,
        predicted=list(predicted),
        expected=list(expected),
        tool_correct=tool_correct,
        parameters_correct=parameters_correct,
        tool_number_accuracy=number,
        tool_order_accuracy=order,
        turn_correct=correct,
        error_type=None if correct else _multi_error(expected, predicted, correct_calls, variant),
    )


def score_dialogue_turns(turns: Sequence[TurnOutcome], variant: MtuVariant = "strict") -> dict[str, float | int]:
    """Score toolgauge's own multi-turn dialogues with the MTU metrics (strict by default).

    Returns per-turn means of ``tool_accuracy``, ``parameter_accuracy``, ``tool_number_accuracy`` and
    ``tool_order_accuracy`` (see ``judge_turn``), the dialogue metrics ``success_rate``,
    ``turn_success_rate``, ``soft_turn_success_rate``, ``task_process_rate`` (turns grouped by
    ``dialogue_id`` and ordered by ``turn``), and ``n_turns`` / ``n_dialogues``.
    """
    tally = DialogueTurnTally()
    for turn in turns:
        tally.add(turn.dialogue_id, turn.turn, judge_turn(turn, variant))
    return tally.summary()


class DialogueTurnTally:
    """Adds up judged turns one at a time into :func:`score_dialogue_turns`'s summary.

    Keeps a few numbers per turn instead of the turns and verdicts, so a run can drop each
    verdict once it is counted; the summary is the same, bit for bit.
    """

    def __init__(self) -> None:
        self._tool_correct = 0
        self._parameters_correct = 0
        self._numbers = array("d")
        self._orders = array("d")
        # dialogue id -> correctness by turn index, as in ``dialogue_results``.
        self._slots: dict[str, list[bool | None]] = {}

    def add(self, dialogue_id: str, turn: int, verdict: MtuItemVerdict) -> None:
        """Count one judged turn."""
        self._tool_correct += 1 if verdict.tool_correct else 0
        self._parameters_correct += 1 if verdict.parameters_correct else 0
        self._numbers.append(verdict.tool_number_accuracy or 0.0)
        self._orders.append(verdict.tool_order_accuracy or 0.0)
        dialogue = self._slots.setdefault(dialogue_id, [])
        while len(dialogue) <= turn:
            dialogue.append(None)
        dialogue[turn] = verdict.turn_correct

    def summary(self) -> dict[str, float | int]:
        """Return the scores of the turns counted so far."""
        n = len(self._numbers)
        if not n:
            return {"n_turns": 0, "n_dialogues": 0}
        summary: dict[str, float | int] = {
            "tool_accuracy": self._tool_correct / n,
            "parameter_accuracy": self._parameters_correct / n,
            "tool_number_accuracy": sum(self._numbers) / n,
            "tool_order_accuracy": sum(self._orders) / n,
        }
        dialogues = [[result for result in results if result is not None] for results in self._slots.values()]
        summary.update(dialogue_metrics(dialogues))
        summary["n_turns"] = n
        return summary


TURN_METRICS = ("tool_accuracy", "parameter_accuracy", "tool_number_accuracy", "tool_order_accuracy")
DIALOGUE_METRICS = ("success_rate", "turn_success_rate", "soft_turn_success_rate", "task_process_rate")
# The counts a summary may hold: items (MTU), turns (toolgauge's dialogues), dialogues, and OOD's
# single-call and multi-call items.
COUNTS = ("n", "n_turns", "n_dialogues", "n_single_tool", "n_multi_tool")
# What each metric is a mean over: the first of these counts the summary has.
_UNITS = {
    "tool_accuracy": ("n_single_tool", "n_turns", "n"),
    "parameter_accuracy": ("n_single_tool", "n_turns", "n"),
    "tool_number_accuracy": ("n_multi_tool", "n_turns", "n"),
    "tool_order_accuracy": ("n_multi_tool", "n_turns", "n"),
    **{name: ("n_dialogues",) for name in DIALOGUE_METRICS},
}


def tally_metrics(
    summary: dict[str, float | int], *, group: str | None = None, by: str | None = None, counts: bool = False
) -> list[Metric]:
    """The typed metrics of a summary: each metric with the number of units it is over as ``n``.

    Turn metrics are over turns (toolgauge's dialogues) or items (MTU; in a summary with
    ``n_single_tool`` / ``n_multi_tool``, over the single-call or multi-call items), SR/ATS/SATS/TPR
    over dialogues. With ``counts``, the summary's counts follow as metrics of kind ``count``.
    """
    out = [
        Metric(name=name, value=summary[name], group=group, by=by, n=_units_of(summary, name))
        for name in (*TURN_METRICS, *DIALOGUE_METRICS)
        if name in summary
    ]
    if counts:
        out += [
            Metric(name=name, value=summary[name], group=group, by=by, kind="count")
            for name in COUNTS
            if name in summary
        ]
    return out


def _units_of(summary: dict[str, float | int], name: str) -> int:
    found = next((summary[key] for key in _UNITS[name] if key in summary), 0)
    return int(found)
