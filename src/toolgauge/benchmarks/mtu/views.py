"""MTU-Bench's viewer panels: turn success and SATS's soft turn score by turn position, per multi-turn split.

The dialogue metrics (SR, ATS, SATS, TPR) are means over dialogues of per-dialogue figures; these panels
show what they are made of, turn by turn. A dialogue's turns are its M-S / M-M items grouped as the metrics
group them (:func:`~toolgauge.benchmarks.mtu.metrics.dialogue_results`: by the turn index of the item id, a
later item with the same id overwriting the earlier one, gaps left out), each try (``--epochs``) on its own.
At position ``j`` (0 for the first turn) over the dialogues that have a turn there:

- ``turn success`` = mean of ``r_j``, the turn's 0/1 verdict (``turn_correct``; what ATS averages per dialogue);
- ``soft turn score`` = mean of ``s_j`` (:func:`~toolgauge.benchmarks.mtu.metrics.soft_turn_scores`: 0 for a
  wrong turn, 1 before any error, else ``1 - exp(-(j - i))`` with ``i`` the last wrong turn; what SATS averages);
- ``error-free so far`` = share of dialogues whose turns 0..j are all right (what TPR counts).

A dialogue is carried by its items, so these are pure functions of the units' ``scores["turn_correct"]``,
``cluster`` and ``metadata["item_id"]`` / ``metadata["split"]``; a sample page reads the item's
``metadata["dialogue_so_far"]``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from toolgauge.benchmarks.mtu.metrics import dialogue_results, soft_turn_scores
from toolgauge.benchmarks.mtu.records import MTU_SPLITS, MULTI_TURN_SPLITS
from toolgauge.panels import ChartPanel, Panel, TablePanel
from toolgauge.results import EvalResults, SampleScore

# The per-position measures, in the order drawn, with their column titles.
MEASURES = {"turn_success": "turn success", "soft_turn_score": "soft turn score", "error_free": "error-free so far"}


@dataclass(frozen=True)
class TurnPoint:
    """One split's figures at one turn position, over the dialogues (tries) that have a turn there."""

    split: str
    turn: int
    dialogues: int
    turn_success: float
    soft_turn_score: float
    error_free: float


def repeat_of(key: str) -> int:
    """The repeat index of a sample key (``M-M_19_0~1`` -> 1; 0 without ``~k``)."""
    head, sep, tail = key.rpartition("~")
    return int(tail) if sep and head and tail.isdigit() else 0


def turn_index(item_id: str) -> int | None:
    """The turn of a multi-turn item id (the integer after the last ``_``), or None when it has none."""
    _, sep, tail = item_id.rpartition("_")
    return int(tail) if sep and tail.isdigit() else None


def dialogues_by_split(units: Sequence[SampleScore]) -> dict[str, list[list[bool]]]:
    """Each multi-turn split's dialogues (one per dialogue and try), their 0/1 turn results in turn order.

    Items are taken in file order (the repeat index of the key, then the unit order), so a repeated id's
    later item wins its turn slot as in the metrics. Units without ``turn_correct`` are left out.
    """
    turns: dict[tuple[str, int, str], list[tuple[int, int, int, bool]]] = {}
    for position, unit in enumerate(units):
        split = unit.metadata.get("split")
        correct = unit.scores.get("turn_correct")
        item_id = unit.metadata.get("item_id")
        if split not in MULTI_TURN_SPLITS or not isinstance(correct, bool) or not isinstance(item_id, str):
            continue
        turn = turn_index(item_id)
        if turn is None:
            continue
        dialogue = unit.cluster or item_id.rsplit("_", 1)[0]
        turns.setdefault((str(split), unit.epoch, dialogue), []).append((repeat_of(unit.id), position, turn, correct))
    out: dict[str, list[list[bool]]] = {}
    for (split, _, dialogue), found in turns.items():
        ordered = [(dialogue, turn, correct) for _, _, turn, correct in sorted(found)]
        out.setdefault(split, []).extend(dialogue_results(ordered))
    return {split: out[split] for split in MTU_SPLITS if split in out}


def turn_points(units: Sequence[SampleScore]) -> list[TurnPoint]:
    """The per-position figures of each multi-turn split (see the module docstring), split by split."""
    points = []
    for split, dialogues in dialogues_by_split(units).items():
        soft = [soft_turn_scores(d) for d in dialogues]
        longest = max((len(d) for d in dialogues), default=0)
        for turn in range(longest):
            at = [k for k, d in enumerate(dialogues) if len(d) > turn]
            points.append(
                TurnPoint(
                    split=split,
                    turn=turn,
                    dialogues=len(at),
                    turn_success=sum(dialogues[k][turn] for k in at) / len(at),
                    soft_turn_score=sum(soft[k][turn] for k in at) / len(at),
                    error_free=sum(all(dialogues[k][: turn + 1]) for k in at) / len(at),
                )
            )
    return points


def run_panels(results: EvalResults, units: Sequence[SampleScore]) -> list[Panel]:
    """The turn-level curves (a chart per measure, one line per split) and the same numbers as a table."""
    del results  # the panels are made from the units alone
    points = turn_points(units)
    if not points:
        return []
    return [turn_chart(points), turn_table(points)]


def turn_chart(points: Sequence[TurnPoint]) -> ChartPanel:
    """Line charts of the three measures by turn position, one line per split, n in each point's tooltip."""
    import altair as alt

    rows: list[dict[str, Any]] = [
        {"split": p.split, "turn": p.turn, "measure": title, "value": getattr(p, key), "dialogues": p.dialogues}
        for p in points
        for key, title in MEASURES.items()
    ]
    splits = list(dict.fromkeys(p.split for p in points))
    chart = (
        alt.Chart(alt.Data(values=rows))  # type: ignore[no-untyped-call]
        .mark_line(point=True)
        .encode(
            alt.X("turn:Q", title="turn (0 = first)", axis=alt.Axis(tickMinStep=1, format="d")),
            alt.Y("value:Q", title=None, scale=alt.Scale(domain=[0, 1])),
            alt.Color("split:N", sort=splits, title="split"),
            tooltip=[
                "split:N",
                "turn:Q",
                "measure:N",
                alt.Tooltip("value:Q", format=".3f"),
                alt.Tooltip("dialogues:Q", title="n (dialogues)"),
            ],
        )
        .properties(width=220, height=180)
        .facet(column=alt.Column("measure:N", sort=list(MEASURES.values()), title=None))
    )
    return ChartPanel(
        name="turn-curves",
        title="by turn position (M-S, M-M)",
        spec=chart.to_dict(),
        note=(
            "At turn j, over the dialogues that have a turn j (n in the tooltip and the table): turn success = mean "
            "0/1 verdict r_j; soft turn score = mean s_j of SATS (0 if wrong, 1 before any error, else "
            "1 - exp(-(j - i)), i the last wrong turn); error-free so far = share with turns 0..j all right."
        ),
    )


def turn_table(points: Sequence[TurnPoint]) -> TablePanel:
    """The chart's numbers: one row per split and turn position."""
    return TablePanel(
        name="turn-table",
        title="by turn position: the numbers",
        columns=["split", "turn", "dialogues", *MEASURES.values()],
        rows=[
            [
                p.split,
                p.turn,
                p.dialogues,
                round(p.turn_success, 4),
                round(p.soft_turn_score, 4),
                round(p.error_free, 4),
            ]
            for p in points
        ],
    )


def sample_panels(units: Sequence[SampleScore]) -> list[Panel]:
    """For an item of an M-S / M-M dialogue: the dialogue's turns before this one, and this one, with verdicts.

    The turns are the dialogue's slots as the dialogue metrics hold them (a repeated id's later item), in turn
    order, whatever the order of the items in the file; the soft turn score ``s_j`` depends on turns 0..j only.
    """
    panels: list[Panel] = []
    tries = len({unit.epoch for unit in units}) > 1
    for unit in units:
        so_far = unit.metadata.get("dialogue_so_far")
        if not isinstance(so_far, list) or not so_far:
            continue
        soft = soft_turn_scores([bool(turn["turn_correct"]) for turn in so_far])
        rows: list[list[str | int | float | bool | None]] = [
            [turn["turn"], turn["sample"], "pass" if turn["turn_correct"] else "fail", turn["error_type"],
             round(float(s), 4)]
            for turn, s in zip(so_far, soft, strict=True)
        ]  # fmt: skip
        panels.append(
            TablePanel(
                name="dialogue-so-far",
                title=f"dialogue {unit.cluster}: its turns up to this item" + (f" (try {unit.epoch})" if tries else ""),
                columns=["turn", "item", "verdict", "error type", "soft turn score"],
                rows=rows,
                note="soft turn score: s_j of SATS (0 if wrong, 1 before any error, else 1 - exp(-(j - i)), "
                "i the last wrong turn before j).",
            )
        )
    return panels
