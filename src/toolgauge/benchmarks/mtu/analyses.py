"""MTU-Bench's paper analyses, as pure functions over judged items (at scoring time or from a stored run).

- the **hard set** (the rebuttal's A1): the S-M items with five or more gold calls, scored on their own;
- **accuracy by number of turns and by number of tools** (Figure 5): breakdowns ``by="turns"`` / ``by="tools"``;
- **error patterns** (Tables 13-16): each wrong item's error class (format, action, parameter) and its calls'
  patterns (omitted, misaligned, repeated, hallucinated, inherited), and where each dialogue's first error falls;
- the **averaged score** across settings (the paper's summary column), with the released scorer's scaling bug fixed.

Every rule is written up in docs/metrics/mtu-bench.md. Nothing here calls a model or changes a released number:
the inputs are the verdicts :mod:`toolgauge.benchmarks.mtu.metrics` already gave.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from toolgauge.benchmarks.mtu.metrics import (
    MtuItemVerdict,
    MtuVariant,
    lowered_values,
    reference_values_match,
    strict_values_match,
)
from toolgauge.benchmarks.mtu.records import MULTI_TURN_SPLITS, MtuItem
from toolgauge.records import ToolCall
from toolgauge.results import Metric, SampleScore

# S-M items with at least this many gold calls form the hard set (the rebuttal: "five or more tool calls").
HARD_MIN_CALLS = 5
HARD_GROUP = "hard"
ErrorClass = Literal["format", "action", "parameter"]
ERROR_CLASSES: tuple[ErrorClass, ...] = ("format", "action", "parameter")
CallPattern = Literal["omitted", "misaligned", "repeated", "hallucinated", "inherited"]
CALL_PATTERNS: tuple[CallPattern, ...] = ("omitted", "misaligned", "repeated", "hallucinated", "inherited")
# The paper's four settings, whose averages its summary column averages (OOD is not one of them).
SETTINGS = ("S-S", "S-M", "M-S", "M-M")
# The metrics each setting's average is over, in the paper's column order.
SETTING_METRICS: dict[str, tuple[str, ...]] = {
    "S-S": ("tool_accuracy", "parameter_accuracy"),
    "S-M": ("tool_number_accuracy", "tool_order_accuracy"),
    "M-S": ("tool_accuracy", "parameter_accuracy", "success_rate", "turn_success_rate",
            "soft_turn_success_rate", "task_process_rate"),
    "M-M": ("tool_number_accuracy", "tool_order_accuracy", "success_rate", "turn_success_rate",
            "soft_turn_success_rate", "task_process_rate"),
}  # fmt: skip


@dataclass(frozen=True)
class JudgedTurn:
    """One judged item, with what the analyses read: its split, dialogue and turn, gold and predicted calls.

    ``dialogue`` and ``turn`` are set for M-S / M-M items only. ``epoch`` keeps the tries of a repeated run apart.
    """

    split: str
    item_id: str
    expected: list[ToolCall]
    predicted: list[ToolCall]
    turn_correct: bool
    tool_correct: bool | None = None
    tool_number_accuracy: float | None = None
    tool_order_accuracy: float | None = None
    dialogue: str | None = None
    turn: int | None = None
    epoch: int = 1


def judged_turn(item: MtuItem, verdict: MtuItemVerdict) -> JudgedTurn:
    """The analyses' view of an item and its verdict, at scoring time."""
    multi_turn = item.split in MULTI_TURN_SPLITS
    return JudgedTurn(
        split=item.split,
        item_id=item.id,
        expected=list(verdict.expected),
        predicted=list(verdict.predicted),
        turn_correct=verdict.turn_correct,
        tool_correct=verdict.tool_correct,
        tool_number_accuracy=verdict.tool_number_accuracy,
        tool_order_accuracy=verdict.tool_order_accuracy,
        dialogue=item.dialogue_id if multi_turn else None,
        turn=item.turn_index if multi_turn else None,
    )


def stored_turns(units: Iterable[SampleScore]) -> list[JudgedTurn]:
    """The judged items of a stored MTU-Bench run, read back from its per-item scores (other units skipped)."""
    out: list[JudgedTurn] = []
    for unit in units:
        split, item_id = unit.metadata.get("split"), unit.metadata.get("item_id")
        correct = unit.scores.get("turn_correct")
        if not isinstance(split, str) or not isinstance(item_id, str) or not isinstance(correct, bool):
            continue
        multi_turn = split in MULTI_TURN_SPLITS
        tool_correct = unit.scores.get("tool_correct")
        number, order = unit.scores.get("tool_number_accuracy"), unit.scores.get("tool_order_accuracy")
        out.append(
            JudgedTurn(
                split=split,
                item_id=item_id,
                expected=_calls(unit.metadata.get("expected")),
                predicted=_calls(unit.metadata.get("predicted")),
                turn_correct=correct,
                tool_correct=tool_correct if isinstance(tool_correct, bool) else None,
                tool_number_accuracy=float(number) if isinstance(number, int | float) else None,
                tool_order_accuracy=float(order) if isinstance(order, int | float) else None,
                dialogue=(unit.cluster or item_id.rsplit("_", 1)[0]) if multi_turn else None,
                turn=int(item_id.rsplit("_", 1)[1]) if multi_turn and item_id.rsplit("_", 1)[-1].isdigit() else None,
                epoch=unit.epoch,
            )
        )
    return out


def _calls(value: Any) -> list[ToolCall]:
    return [ToolCall.model_validate(call) for call in value] if isinstance(value, list) else []


# --- hard set and breakdowns ------------------------------------------------------------------


def is_hard(turn: JudgedTurn) -> bool:
    """Whether an item is in the hard set: an S-M item with at least :data:`HARD_MIN_CALLS` gold calls."""
    return turn.split == "S-M" and len(turn.expected) >= HARD_MIN_CALLS


def group_metrics(turns: Sequence[JudgedTurn], *, group: str, by: str) -> list[Metric]:
    """One group's metrics: item accuracy, tool accuracy (single-call items), TN and TO (multi-call items), n.

    ``item_accuracy`` is the share of items judged right (every call and value; ``turn_correct``), the measure
    that exists for every split. Each other metric is over the items that have it, as the released scorer's.
    """
    out = [Metric(name="item_accuracy", value=_mean([t.turn_correct for t in turns]), group=group, by=by,
                  n=len(turns))]  # fmt: skip
    single = [t.tool_correct for t in turns if t.tool_correct is not None]
    if single:
        out.append(Metric(name="tool_accuracy", value=_mean(single), group=group, by=by, n=len(single)))
    numbers = [t.tool_number_accuracy for t in turns if t.tool_number_accuracy is not None]
    orders = [t.tool_order_accuracy for t in turns if t.tool_order_accuracy is not None]
    if numbers:
        out.append(Metric(name="tool_number_accuracy", value=_mean(numbers), group=group, by=by, n=len(numbers)))
    if orders:
        out.append(Metric(name="tool_order_accuracy", value=_mean(orders), group=group, by=by, n=len(orders)))
    out.append(Metric(name="n", value=len(turns), group=group, by=by, kind="count"))
    return out


def _mean(values: Sequence[float | bool]) -> float:
    return sum(float(v) for v in values) / len(values)


def hard_set_metrics(turns: Sequence[JudgedTurn]) -> list[Metric]:
    """The S-M hard set scored on its own (``by="set"``, group ``hard``); nothing when the run has no hard item."""
    hard = [t for t in turns if is_hard(t)]
    return group_metrics(hard, group=HARD_GROUP, by="set") if hard else []


def breakdown_metrics(turns: Sequence[JudgedTurn]) -> list[Metric]:
    """Figure 5's breakdowns: ``by="turns"`` (M-S / M-M items by turn number, 1 = the first) and ``by="tools"``.

    ``by="tools"`` groups every item by its number of gold calls (0 for "no call"). Groups come in numeric order.
    """
    by_turn: dict[int, list[JudgedTurn]] = {}
    by_tools: dict[int, list[JudgedTurn]] = {}
    for t in turns:
        if t.turn is not None:
            by_turn.setdefault(t.turn + 1, []).append(t)
        by_tools.setdefault(len(t.expected), []).append(t)
    out: list[Metric] = []
    for key in sorted(by_turn):
        out += group_metrics(by_turn[key], group=str(key), by="turns")
    for key in sorted(by_tools):
        out += group_metrics(by_tools[key], group=str(key), by="tools")
    return out


def paper_metrics(items: Sequence[MtuItem], verdicts: Sequence[MtuItemVerdict]) -> list[Metric]:
    """What a run's metrics add to the released scorer's: the hard set and Figure 5's breakdowns."""
    turns = [judged_turn(item, verdict) for item, verdict in zip(items, verdicts, strict=True)]
    return hard_set_metrics(turns) + breakdown_metrics(turns)


# --- error patterns ---------------------------------------------------------------------------


@dataclass
class ErrorPatterns:
    """Error patterns of a run (Tables 13-16): counts of wrong items by class and of calls by pattern.

    ``first_error_turn`` counts dialogues by the turn (1 = the first) of their first wrong turn; ``error_free``
    counts dialogues without one.
    """

    items: int = 0
    wrong: int = 0
    classes: Counter[str] = field(default_factory=Counter)
    patterns: Counter[str] = field(default_factory=Counter)
    first_error_turn: Counter[int] = field(default_factory=Counter)
    error_free: int = 0

    @property
    def dialogues(self) -> int:
        """The number of dialogues (each try its own) the first-error positions are over."""
        return self.error_free + sum(self.first_error_turn.values())

    def mean_first_error_turn(self) -> float | None:
        """The mean turn number of the first error, over the dialogues that have one."""
        total = sum(self.first_error_turn.values())
        return sum(turn * count for turn, count in self.first_error_turn.items()) / total if total else None


def error_class(turn: JudgedTurn, variant: MtuVariant = "reference") -> ErrorClass | None:
    """The class of a wrong item's error (None for a right one), the first that applies.

    ``format``: a predicted call whose arguments could not be decoded, or one without a name. ``action``: the
    predicted tools are not the gold tools (as a set under ``reference``, which collapses repeats; as a multiset
    under ``strict``): no call, an unwanted call, a wrong, missing or extra tool. ``parameter``: the right tools
    with wrong values, or (multi-call) the right calls in the wrong order.
    """
    if turn.turn_correct:
        return None
    if any(call.parse_error is not None or not call.name.strip() for call in turn.predicted):
        return "format"
    predicted = Counter(call.name.strip() for call in turn.predicted)
    gold = Counter(call.name.strip() for call in turn.expected)
    same = set(predicted) == set(gold) if variant == "reference" else predicted == gold
    return "parameter" if same else "action"


def call_patterns(
    turn: JudgedTurn, earlier_gold: Sequence[ToolCall], variant: MtuVariant = "reference"
) -> Counter[str]:
    """The patterns of a wrong item's calls; each gold or predicted call gets at most one.

    Gold and predicted calls are paired by tool name (stripped), in order, each call used once. Then:
    an unpaired gold call is ``omitted``; a paired call whose values do not match is ``inherited`` when its
    arguments equal those of an earlier turn's gold call to that tool (``earlier_gold``: the dialogue's gold calls
    before this turn), else ``misaligned``; an unpaired predicted call is ``inherited`` when it equals an earlier
    turn's gold call, else ``repeated`` when an earlier call of this reply has its name, else ``hallucinated``.
    Values match as the variant's scorer matches them (gold value within the predicted one, or equal).
    """
    if turn.turn_correct:
        return Counter()
    found: Counter[str] = Counter()
    used = [False] * len(turn.predicted)
    for gold in turn.expected:
        index = next(
            (k for k, call in enumerate(turn.predicted) if not used[k] and call.name.strip() == gold.name.strip()), None
        )
        if index is None:
            found["omitted"] += 1
            continue
        used[index] = True
        call = turn.predicted[index]
        if call.parse_error is None and _values_match(gold, call, variant):
            continue
        found["inherited" if _carried_over(call, earlier_gold) else "misaligned"] += 1
    for index, call in enumerate(turn.predicted):
        if used[index]:
            continue
        if _carried_over(call, earlier_gold):
            found["inherited"] += 1
        elif any(other.name.strip() == call.name.strip() for other in turn.predicted[:index]):
            found["repeated"] += 1
        else:
            found["hallucinated"] += 1
    return found


def _values_match(gold: ToolCall, predicted: ToolCall, variant: MtuVariant) -> bool:
    wanted, given = lowered_values(gold.arguments), lowered_values(predicted.arguments)
    return reference_values_match(wanted, given) if variant == "reference" else strict_values_match(wanted, given)


def _carried_over(call: ToolCall, earlier_gold: Sequence[ToolCall]) -> bool:
    """Whether ``call`` repeats an earlier turn's gold call: same tool, equal normalised values, some argument."""
    return bool(call.arguments) and call.parse_error is None and any(
        gold.name.strip() == call.name.strip() and strict_values_match(lowered_values(gold.arguments),
                                                                       lowered_values(call.arguments))
        for gold in earlier_gold
    )  # fmt: skip


def error_patterns(turns: Sequence[JudgedTurn], variant: MtuVariant = "reference") -> ErrorPatterns:
    """Count the error classes, call patterns and first-error positions of a run's judged items.

    A dialogue's turns are its M-S / M-M items of one try, ordered by turn index (a repeated turn index keeps the
    later item, as the dialogue metrics do); ``earlier_gold`` of a turn is the gold of the dialogue's turns before it.
    Call patterns are counted for action and parameter errors (a format error's calls could not be read).
    """
    out = ErrorPatterns()
    dialogues: dict[tuple[int, str], dict[int, JudgedTurn]] = {}
    for t in turns:
        if t.dialogue is not None and t.turn is not None:
            dialogues.setdefault((t.epoch, t.dialogue), {})[t.turn] = t
    earlier: dict[int, list[ToolCall]] = {}
    for slots in dialogues.values():
        gold_so_far: list[ToolCall] = []
        first_wrong: int | None = None
        for index in sorted(slots):
            earlier[id(slots[index])] = list(gold_so_far)
            gold_so_far += slots[index].expected
            if first_wrong is None and not slots[index].turn_correct:
                first_wrong = index + 1
        if first_wrong is None:
            out.error_free += 1
        else:
            out.first_error_turn[first_wrong] += 1
    for t in turns:
        out.items += 1
        kind = error_class(t, variant)
        if kind is None:
            continue
        out.wrong += 1
        out.classes[kind] += 1
        if kind != "format":  # calls that could not be read have no pattern to tell
            out.patterns.update(call_patterns(t, earlier.get(id(t), []), variant))
    return out


# --- averaged score ---------------------------------------------------------------------------


def setting_average(values: dict[str, float | int | None], split: str) -> float | None:
    """A setting's average: the mean of its metrics (:data:`SETTING_METRICS`), fractions in [0, 1].

    The released scorer computes ``(a + b) / 2 * 100`` on ``a`` and ``b`` that are already percentages, so its
    ``average_score`` is 100 times too large (an S-S of 88.46 and 57.69 gives 7307.5); here the mean is of the
    fractions, and a percentage is made once, when shown. None when the setting lacks one of its metrics.
    """
    wanted = [values.get(name) for name in SETTING_METRICS[split]]
    numbers = [float(v) for v in wanted if isinstance(v, int | float)]
    return sum(numbers) / len(numbers) if numbers and len(numbers) == len(wanted) else None


def averaged_score(setting_averages: dict[str, float | None]) -> float | None:
    """The summary column: the mean of the four settings' averages; None unless the run has all four."""
    found = [setting_averages.get(split) for split in SETTINGS]
    numbers = [v for v in found if v is not None]
    return sum(numbers) / len(numbers) if len(numbers) == len(SETTINGS) else None
