"""MTU-Bench's paper tables from stored runs (``toolgauge paper mtu-bench``; docs/paper.md).

Pure functions over stored verdicts: each run's stored split metrics (what the released scorer gives) and its
per-item scores read back as :class:`~toolgauge.benchmarks.mtu.analyses.JudgedTurn` values, so that runs made
before the hard set, the breakdowns and the error patterns existed get them too. No model is called.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from toolgauge.benchmarks.mtu.analyses import (
    CALL_PATTERNS,
    ERROR_CLASSES,
    SETTING_METRICS,
    SETTINGS,
    JudgedTurn,
    averaged_score,
    breakdown_metrics,
    error_patterns,
    hard_set_metrics,
    setting_average,
    stored_turns,
)
from toolgauge.benchmarks.mtu.feedback import FEEDBACK_KINDS
from toolgauge.benchmarks.mtu.metrics import MtuVariant
from toolgauge.report.paper_tables import PaperBlock, PaperCell, PaperRow, PaperRun

PAPER = "mtu-bench"
HEADERS = {
    "tool_accuracy": "TS",
    "parameter_accuracy": "PS",
    "tool_number_accuracy": "TN",
    "tool_order_accuracy": "TO",
    "success_rate": "SR",
    "turn_success_rate": "ATS",
    "soft_turn_success_rate": "SATS",
    "task_process_rate": "TPR",
}
OOD_METRICS = ("tool_accuracy", "parameter_accuracy", "tool_number_accuracy", "tool_order_accuracy")
FEEDBACK_HINT = "eval mtu-bench ... --feedback all (or parse, tool, param)"


def paper_blocks(runs: Sequence[PaperRun]) -> list[PaperBlock]:
    """Every MTU-Bench block for ``runs`` (one row per run), in the paper's order."""
    turns = {run.id: stored_turns(run.scores()) for run in runs}
    return [
        *(setting_block(runs, split, turns) for split in (*SETTINGS, "OOD")),
        average_block(runs),
        figure5(runs, turns, "turns"),
        figure5(runs, turns, "tools"),
        error_pattern_block(runs, turns),
        first_error_block(runs, turns),
        feedback_block(runs, turns),
    ]


def _split_values(run: PaperRun, split: str) -> dict[str, float | int | None]:
    if run.results is None:
        return {}
    return {m.name: m.value for m in run.results.metrics if m.by == "split" and m.group == split}


def _split_n(run: PaperRun, split: str, name: str) -> int | None:
    metric = run.results.metric(name, split, "split") if run.results is not None else None
    return metric.n if metric is not None else None


def _run_row(run: PaperRun, cells: list[PaperCell]) -> PaperRow:
    """The row of ``run`` in a block of one row per run."""
    return PaperRow(label=run.label, cells=cells, run_ids=[run.id])


def _variant(run: PaperRun) -> MtuVariant:
    stored = run.results.settings.get("variant") if run.results is not None else None
    return "strict" if (stored or run.option("variant", "reference")) == "strict" else "reference"


# -- the settings' tables and the averaged score ----------------------------------------------------------
def setting_block(runs: Sequence[PaperRun], split: str, turns: dict[str, list[JudgedTurn]]) -> PaperBlock:
    """One setting's table: its metrics (the released scorer's), their average, and for S-M the hard set too."""
    names = SETTING_METRICS.get(split, OOD_METRICS)
    columns = ["Model", *(HEADERS[n] for n in names)]
    hard = split == "S-M"
    if split in SETTING_METRICS:
        columns.append("Avg")
    if hard:
        columns += ["TN (hard)", "TO (hard)", "Avg (hard)"]
    rows = []
    for run in runs:
        values = _split_values(run, split)
        if not values:
            continue
        cells = [PaperCell(value=values.get(n), n=_split_n(run, split, n)) for n in names]
        if split in SETTING_METRICS:
            cells.append(PaperCell(value=setting_average(values, split)))
        if hard:
            found = {m.name: m for m in hard_set_metrics(turns[run.id])}
            pair = [found.get("tool_number_accuracy"), found.get("tool_order_accuracy")]
            cells += [PaperCell(value=m.value if m else None, n=m.n if m else None) for m in pair]
            both = [m.value for m in pair if m is not None and isinstance(m.value, float)]
            cells.append(PaperCell(value=sum(both) / 2 if len(both) == 2 else None))
        rows.append(_run_row(run, cells))
    notes = ["Percent, as the released scorer (MTU-Eval/cal_score.py) computes each metric; n: items or dialogues."]
    if split in SETTING_METRICS:
        notes.append("Avg: the mean of the setting's metrics, of fractions (the released scorer's scaling bug fixed).")
    if hard:
        notes.append(
            "hard: the S-M items with five or more gold calls (the rebuttal's hard set; 21 of the 94 S-M items)."
        )
    return PaperBlock(
        paper=PAPER,
        ref="Table 5" if split == "OOD" else "Tables 2-4",
        title=f"{split}: " + ", ".join(HEADERS[n] for n in names),
        columns=columns,
        rows=rows,
        missing=None if rows else f"no run scored {split}: eval mtu-bench ... --splits {split}",
        notes=notes,
        chart="bar",
    )


def average_block(runs: Sequence[PaperRun]) -> PaperBlock:
    """The summary column: each setting's average and their mean (A7's "average scores ... of four settings")."""
    rows = []
    for run in runs:
        averages = {split: setting_average(_split_values(run, split), split) for split in SETTINGS}
        cells = [PaperCell(value=averages[s]) for s in SETTINGS] + [PaperCell(value=averaged_score(averages))]
        rows.append(_run_row(run, cells))
    incomplete = [row.label for row in rows if row.cells[-1].value is None]
    return PaperBlock(
        paper=PAPER,
        ref="Average (A7)",
        title="Average scores across the four settings (normal set)",
        columns=["Model", *SETTINGS, "Average"],
        rows=rows,
        exact=False,
        notes=[
            *(
                [
                    "Average needs S-S, S-M, M-S and M-M (eval mtu-bench ... with every split); not all in: "
                    + ", ".join(incomplete)
                ]
                if incomplete
                else []
            ),
            "Each setting's average is the mean of its metrics (S-S: TS, PS; S-M: TN, TO; M-S: TS, PS, SR, ATS, "
            "SATS, TPR; M-M: TN, TO, SR, ATS, SATS, TPR); Average is the mean of the four.",
            "Fixed: the released scorer's average_score is (a + b) / 2 * 100 of a and b already in percent, so "
            "its averages are 100 times too large (88.46 and 57.69 give 7307.5, not 73.08); here the fractions "
            "are averaged and shown in percent once.",
        ],
        chart="bar",
    )


# -- Figure 5: by number of turns and of tools -----------------------------------------------------------
def figure5(runs: Sequence[PaperRun], turns: dict[str, list[JudgedTurn]], by: str) -> PaperBlock:
    """Item accuracy by turn number (M-S, M-M) or by number of gold calls (every split): Figure 5's curves."""
    per_run = {run.id: [m for m in breakdown_metrics(turns[run.id]) if m.by == by] for run in runs}
    groups = sorted({m.group for ms in per_run.values() for m in ms if m.group is not None}, key=int)
    rows = []
    for run in runs:
        found = {m.group: m for m in per_run[run.id] if m.name == "item_accuracy"}
        if found:
            cells = [PaperCell(value=found[g].value, n=found[g].n) if g in found else PaperCell(value=None)
                     for g in groups]  # fmt: skip
            rows.append(_run_row(run, cells))
    what = "turn" if by == "turns" else "tools"
    return PaperBlock(
        paper=PAPER,
        ref="Figure 5",
        title=f"Accuracy by number of {'dialogue turns (turn k of M-S / M-M)' if by == 'turns' else 'gold calls'}",
        columns=["Model", *(f"{what} {g}" for g in groups)],
        rows=rows,
        missing=None if rows else f"no item to group by {by}: eval mtu-bench ... --splits M-S,M-M",
        notes=[
            "Item accuracy: the share of items judged right (every call and value), n items per cell; the run's "
            f"metrics hold the same breakdown (by={by}) with tool accuracy, TN and TO."
        ],
        chart="line",
    )


# -- error patterns, first error, recovery ----------------------------------------------------------------
def error_pattern_block(runs: Sequence[PaperRun], turns: dict[str, list[JudgedTurn]]) -> PaperBlock:
    """Tables 13-16: per run and setting, wrong items by error class and calls by error pattern (counts)."""
    rows = []
    for run in runs:
        variant = _variant(run)
        for split in (*SETTINGS, "OOD"):
            mine = [t for t in turns[run.id] if t.split == split]
            if not mine:
                continue
            found = error_patterns(mine, variant)
            cells = [PaperCell(value=found.items, unit="count"), PaperCell(value=found.wrong, unit="count")]
            cells += [PaperCell(value=found.classes[k], unit="count") for k in ERROR_CLASSES]
            cells += [PaperCell(value=found.patterns[k], unit="count") for k in CALL_PATTERNS]
            rows.append(PaperRow(label=f"{run.label} · {split}", cells=cells, run_ids=[run.id]))
    return PaperBlock(
        paper=PAPER,
        ref="Tables 13-16",
        title="Error patterns: wrong items by class, their calls by pattern",
        columns=["Model · setting", "items", "wrong", *ERROR_CLASSES, *CALL_PATTERNS],
        rows=rows,
        missing=None if rows else "no scored item: eval mtu-bench ...",
        exact=False,
        notes=[
            "Reconstructed: the rebuttal names the patterns but not the rules; ours are in docs/metrics/mtu-bench.md "
            "(each wrong item has one class; each of its calls at most one pattern)."
        ],
    )


def first_error_block(runs: Sequence[PaperRun], turns: dict[str, list[JudgedTurn]]) -> PaperBlock:
    """Where each dialogue's first error falls (M-S, M-M): dialogues by the turn of their first wrong turn."""
    per_run = {run.id: error_patterns([t for t in turns[run.id] if t.dialogue is not None], _variant(run))
               for run in runs}  # fmt: skip
    longest = max((max(p.first_error_turn, default=0) for p in per_run.values()), default=0)
    turn_columns = [f"turn {k}" for k in range(1, longest + 1)]
    columns = ["Model", "dialogues", "error-free", "mean first-error turn", *turn_columns]
    rows = []
    for run in runs:
        found = per_run[run.id]
        if not found.dialogues:
            continue
        mean = found.mean_first_error_turn()
        cells = [
            PaperCell(value=found.dialogues, unit="count"),
            PaperCell(value=found.error_free / found.dialogues, n=found.dialogues),
            PaperCell(value=mean, unit="number"),
            *(PaperCell(value=found.first_error_turn[k], unit="count") for k in range(1, longest + 1)),
        ]
        rows.append(_run_row(run, cells))
    return PaperBlock(
        paper=PAPER,
        ref="Error turn positions (line 398)",
        title="First error position (M-S, M-M): dialogues by the turn of their first wrong turn",
        columns=columns,
        rows=rows,
        missing=None if rows else "no dialogue: eval mtu-bench ... --splits M-S,M-M",
        exact=False,
        notes=["Turn 1 is a dialogue's first turn; each try of a repeated run counts as its own dialogue."],
    )


def feedback_block(runs: Sequence[PaperRun], turns: dict[str, list[JudgedTurn]]) -> PaperBlock:
    """A2: the recovery rate per feedback kind beside the first-attempt accuracy, for runs made with feedback."""
    del turns  # the recovery is on the units' own scores
    rows = []
    for run in runs:
        given = [(u.scores.get("feedback"), u.scores.get("recovered")) for u in run.scores()]
        kinds = [(k, ok) for k, ok in given if isinstance(k, str) and isinstance(ok, bool)]
        enabled = run.option("feedback", "none")
        if enabled == "none" and not kinds:
            continue
        units = [u for u in run.scores() if isinstance(u.scores.get("turn_correct"), bool)]
        first = sum(1 for u in units if u.scores.get("turn_correct") is True)
        recovered = sum(1 for _, ok in kinds if ok)
        by_kind = Counter(k for k, _ in kinds)
        back = Counter(k for k, ok in kinds if ok)
        cells = [
            PaperCell(value=str(enabled), unit="text"),
            PaperCell(value=first / len(units) if units else None, n=len(units)),
            PaperCell(value=(first + recovered) / len(units) if units else None, n=len(units)),
            PaperCell(value=recovered / len(kinds) if kinds else None, n=len(kinds)),
            *(PaperCell(value=back[k] / by_kind[k] if by_kind[k] else None, n=by_kind[k]) for k in FEEDBACK_KINDS),
        ]
        rows.append(_run_row(run, cells))
    return PaperBlock(
        paper=PAPER,
        ref="A2",
        title="Recovery from feedback: accuracy without and with one more attempt, recovery rate per feedback kind",
        columns=[
            "Model",
            "feedback",
            "without feedback",
            "with feedback",
            "recovered",
            *(f"recovered ({k})" for k in FEEDBACK_KINDS),
        ],
        rows=rows,
        missing=None if rows else f"no run was made with feedback: {FEEDBACK_HINT}",
        exact=False,
        notes=[
            "Item accuracy (every call and value right); recovered: the share of the replies given feedback that "
            "were right at the second attempt, n replies. The feedback names the kind of error only (A2's a-c)."
        ],
        chart="bar",
    )
