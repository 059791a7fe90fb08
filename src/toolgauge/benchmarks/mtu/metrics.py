"""MTU-Bench's items and splits scored with its call metrics (:mod:`toolgauge.metrics.calls`).

``reference`` is the published scorer reproduced, ``strict`` the corrected variant; the rules that judge
calls, turns and dialogues are in :mod:`toolgauge.metrics.calls`, shared with toolgauge's own dialogues
(``suite``). Here: one MTU item judged by the rules of its split, and the per-split and overall summaries.
Every formula and deviation is written up in ``docs/metrics/mtu-bench.md``.

All fractions are in [0, 1]; ``round(x * 100, 2)`` gives the reference's printed percentage.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from toolgauge.benchmarks.mtu.records import MTU_SPLITS, MULTI_TURN_SPLITS, MtuItem
from toolgauge.metrics.calls import (
    COUNTS,
    DIALOGUE_METRICS,
    TURN_METRICS,
    DialogueTurnTally,
    MtuItemVerdict,
    MtuVariant,
    TurnOutcome,
    collapse_calls,
    dialogue_metrics,
    dialogue_results,
    dialogue_unit_scores,
    judge_turn,
    lowered_values,
    multi_call_scores,
    multi_call_verdict,
    normalize_value,
    one_dialogue_scores,
    order_accuracy,
    reference_tool_number,
    reference_values_match,
    score_dialogue_turns,
    soft_turn_scores,
    strict_tool_number_and_order,
    strict_values_match,
    tally_metrics,
    task_process_rate,
    unit_scores_row,
    verdict_unit_scores,
)
from toolgauge.records import ToolCall
from toolgauge.results import Metric

# The call metrics are MTU-Bench's: importers of this module (tests, benchmark scripts) find them here too.
__all__ = [
    "COUNTS",
    "DIALOGUE_METRICS",
    "TURN_METRICS",
    "DialogueTurnTally",
    "MtuItemVerdict",
    "MtuScore",
    "MtuVariant",
    "TurnOutcome",
    "collapse_calls",
    "dialogue_metrics",
    "dialogue_results",
    "dialogue_unit_scores",
    "judge_mtu_item",
    "judge_turn",
    "lowered_values",
    "normalize_value",
    "one_dialogue_scores",
    "order_accuracy",
    "reference_tool_number",
    "reference_values_match",
    "score_dialogue_turns",
    "score_mtu",
    "soft_turn_scores",
    "strict_tool_number_and_order",
    "strict_values_match",
    "tally_metrics",
    "task_process_rate",
    "unit_scores_row",
    "verdict_unit_scores",
]


class MtuScore(BaseModel):
    """Scores over every item and per split, plus one verdict per item (in item order).

    ``overall`` and each row of ``splits`` map metric names to fractions and counts (see
    :func:`score_mtu`); :meth:`metrics` gives them as typed metrics.
    """

    variant: MtuVariant
    overall: dict[str, float | int]
    splits: dict[str, dict[str, float | int]]
    verdicts: list[MtuItemVerdict]

    def metrics(self) -> list[Metric]:
        """The overall metrics (group None), then each split's (``by="split"``), counts included."""
        out = tally_metrics(self.overall, counts=True)
        for split, summary in self.splits.items():
            out += tally_metrics(summary, group=split, by="split", counts=True)
        return out


# --- per-item judgement ---------------------------------------------------------------------


def judge_mtu_item(item: MtuItem, predicted: Sequence[ToolCall], variant: MtuVariant = "reference") -> MtuItemVerdict:
    """Judge one MTU item with the rules of its split (``item.multi_call`` picks single or multi)."""
    if item.multi_call:
        return _judge_multi(item.id, item.split, item.answer, predicted, variant)
    gold_name, gold_arguments = next(iter(item.answer.items()))
    expected = item.gold_calls()
    if variant == "reference":
        first = predicted[0] if predicted else None
        # The reference reads one call; arguments it could not decode mean no call at all.
        if first is None or first.parse_error is not None:
            pred_name, pred_arguments = "", {}
        else:
            pred_name, pred_arguments = first.name, first.arguments
        tool_ok = pred_name == gold_name
        params_ok = tool_ok and reference_values_match(lowered_values(gold_arguments), lowered_values(pred_arguments))
    else:
        wants_call = bool(gold_name.strip())
        if not wants_call:
            tool_ok = not predicted
            params_ok = tool_ok
        else:
            tool_ok = len(predicted) == 1 and predicted[0].name.strip() == gold_name.strip()
            params_ok = (
                tool_ok
                and predicted[0].parse_error is None
                and strict_values_match(lowered_values(gold_arguments), lowered_values(predicted[0].arguments))
            )
    return MtuItemVerdict(
        id=item.id,
        split=item.split,
        predicted=list(predicted),
        expected=expected,
        tool_correct=tool_ok,
        parameters_correct=params_ok,
        turn_correct=params_ok,
        error_type=None if params_ok else _single_error(gold_name, predicted, tool_ok, variant),
    )


def _single_error(gold_name: str, predicted: Sequence[ToolCall], tool_ok: bool, variant: MtuVariant) -> str:
    if not gold_name.strip():
        return "unexpected_call"
    if not predicted or not predicted[0].name.strip():
        return "no_call"
    if predicted[0].parse_error is not None:
        return "unparsable"
    if tool_ok:
        return "wrong_parameters"
    if variant == "strict" and len(predicted) > 1 and predicted[0].name.strip() == gold_name.strip():
        return "extra_call"
    return "wrong_tool"


def _judge_multi(
    item_id: str, split: str, gold: dict[str, dict[str, Any]], predicted: Sequence[ToolCall], variant: MtuVariant
) -> MtuItemVerdict:
    expected = [ToolCall(name=name, arguments=dict(arguments)) for name, arguments in gold.items()]
    return multi_call_verdict(
        item_id, split, expected, predicted, variant, multi_call_scores(expected, predicted, variant)
    )


# --- MTU-Bench scoring ----------------------------------------------------------------------


def score_mtu(
    items: Sequence[MtuItem], predicted: Sequence[list[ToolCall]], variant: MtuVariant = "reference"
) -> MtuScore:
    """Score MTU-Bench items against the calls parsed from (or natively made in) each reply.

    Args:
        items: The items, any mix of splits.
        predicted: ``predicted[i]`` are the calls for ``items[i]`` (``[]`` for no call or no reply).
        variant: ``reference`` (the published scorer, crash bugs fixed) or ``strict``.

    Returns:
        Per split, the metrics that apply (fractions in [0, 1]) and ``n``: S-S ``tool_accuracy``,
        ``parameter_accuracy``; S-M ``tool_number_accuracy``, ``tool_order_accuracy``; M-S the S-S
        pair plus ``success_rate``, ``turn_success_rate``, ``soft_turn_success_rate``,
        ``task_process_rate``, ``n_dialogues``; M-M the S-M pair plus the same dialogue metrics;
        OOD the S-S pair over its single-tool items and the S-M pair over the others, with
        ``n_single_tool`` / ``n_multi_tool``. ``overall`` pools every item the same way: the S-S pair
        over the single-call items, the S-M pair over the multi-call items, the dialogue metrics over
        the M-S and M-M dialogues, with ``n``, ``n_single_tool``, ``n_multi_tool`` (and
        ``n_dialogues``); with one split it equals that split's row. Plus one verdict per item, in
        item order.

    Raises:
        ValueError: ``items`` and ``predicted`` differ in length.
    """
    if len(items) != len(predicted):
        raise ValueError(f"{len(items)} items but {len(predicted)} predictions")
    verdicts = [judge_mtu_item(item, calls, variant) for item, calls in zip(items, predicted, strict=True)]
    by_split: dict[str, list[tuple[MtuItem, MtuItemVerdict]]] = {split: [] for split in MTU_SPLITS}
    for item, verdict in zip(items, verdicts, strict=True):
        by_split[item.split].append((item, verdict))
    splits = {split: _split_summary(split, members) for split, members in by_split.items() if members}
    # Split by split in MTU_SPLITS order: the overall sums do not depend on the order the splits were asked in.
    overall = _overall_summary([member for members in by_split.values() for member in members])
    return MtuScore(variant=variant, overall=overall, splits=splits, verdicts=verdicts)


def _split_summary(split: str, members: Sequence[tuple[MtuItem, MtuItemVerdict]]) -> dict[str, float | int]:
    summary: dict[str, float | int] = {"n": len(members)}
    single = [verdict for item, verdict in members if not item.multi_call]
    multi = [verdict for item, verdict in members if item.multi_call]
    summary.update(_single_summary(single))
    summary.update(_multi_summary(multi))
    if split == "OOD":
        summary["n_single_tool"] = len(single)
        summary["n_multi_tool"] = len(multi)
    if split in ("M-S", "M-M"):
        dialogues = dialogue_results(
            (item.dialogue_id, item.turn_index, verdict.turn_correct) for item, verdict in members
        )
        summary.update(dialogue_metrics(dialogues))
    return summary


def _overall_summary(members: Sequence[tuple[MtuItem, MtuItemVerdict]]) -> dict[str, float | int]:
    """Every item pooled: single-call and multi-call metrics over their items, dialogue metrics over dialogues."""
    summary: dict[str, float | int] = {"n": len(members)}
    single = [verdict for item, verdict in members if not item.multi_call]
    multi = [verdict for item, verdict in members if item.multi_call]
    summary.update(_single_summary(single))
    summary.update(_multi_summary(multi))
    summary["n_single_tool"] = len(single)
    summary["n_multi_tool"] = len(multi)
    turns = [(item, verdict) for item, verdict in members if item.split in MULTI_TURN_SPLITS]
    if turns:
        # Dialogue ids carry their split (M-S_3, M-M_3), so the two splits' dialogues never merge.
        summary.update(
            dialogue_metrics(dialogue_results((i.dialogue_id, i.turn_index, v.turn_correct) for i, v in turns))
        )
    return summary


def _single_summary(verdicts: Sequence[MtuItemVerdict]) -> dict[str, float]:
    if not verdicts:
        return {}
    return {
        "tool_accuracy": sum(1 for verdict in verdicts if verdict.tool_correct) / len(verdicts),
        "parameter_accuracy": sum(1 for verdict in verdicts if verdict.parameters_correct) / len(verdicts),
    }


def _multi_summary(verdicts: Sequence[MtuItemVerdict]) -> dict[str, float]:
    if not verdicts:
        return {}
    numbers = [verdict.tool_number_accuracy or 0.0 for verdict in verdicts]
    orders = [verdict.tool_order_accuracy or 0.0 for verdict in verdicts]
    return {
        "tool_number_accuracy": sum(numbers) / len(numbers),
        "tool_order_accuracy": sum(orders) / len(orders),
    }
