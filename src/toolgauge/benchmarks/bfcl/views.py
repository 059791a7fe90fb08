"""BFCL's views in the viewer: which error types each category fails with.

The run page already draws accuracy by category and by aggregate (the breakdowns) and the failing entries
by error type over the whole run (the error classes chart); this adds the two together: failing entries by
error type *and* category, as a heatmap with the count in each cell and the same counts as a table. The
sample page needs no panel of its own: each entry's metadata ``gold`` (its possible answer as calls) is
shown beside the model's decoded calls.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from toolgauge.benchmarks.bfcl.loader import BFCL_AST_CATEGORIES
from toolgauge.panels import Cell, ChartPanel, Panel, TablePanel
from toolgauge.results import EvalResults, SampleScore

# Heatmap cell size (pixels) and the longest error type label drawn in full.
CELL = 34
LABEL_LIMIT = 320


def error_type_counts(units: Sequence[SampleScore]) -> Counter[tuple[str, str]]:
    """Failing entries (all epochs) counted by (category, BFCL error type); a failure without a type is ``(none)``."""
    counts: Counter[tuple[str, str]] = Counter()
    for unit in units:
        if unit.value == 1.0 or unit.value is None:
            continue
        error_type = unit.scores.get("error_type")
        counts[(str(unit.metadata.get("category")), str(error_type) if error_type else "(none)")] += 1
    return counts


def _category_order(categories: set[str]) -> list[str]:
    """BFCL's own category order, then any other category by name."""
    known = [c for c in BFCL_AST_CATEGORIES if c in categories]
    return known + sorted(categories - set(known))


def run_panels(results: EvalResults, units: Sequence[SampleScore]) -> list[Panel]:
    """The run page's views: failing entries by error type and category (heatmap and table); none if all pass."""
    import altair as alt

    counts = error_type_counts(units)
    if not counts:
        return []
    categories = _category_order({c for c, _ in counts})
    by_type = Counter[str]()
    for (_, error_type), n in counts.items():
        by_type[error_type] += n
    types = [t for t, _ in sorted(by_type.items(), key=lambda kv: (-kv[1], kv[0]))]
    rows = [{"category": c, "error_type": t, "entries": n} for (c, t), n in counts.items()]
    base = alt.Chart(alt.Data(values=rows), title="failing entries by error type and category")  # type: ignore[no-untyped-call]
    cells = base.mark_rect().encode(
        alt.X("category:N", sort=categories, title="category", axis=alt.Axis(labelAngle=-40)),
        alt.Y("error_type:N", sort=types, title=None, axis=alt.Axis(labelLimit=LABEL_LIMIT)),
        alt.Color("entries:Q", title="entries", scale=alt.Scale(scheme="oranges")),
        tooltip=["category:N", "error_type:N", "entries:Q"],
    )
    text = base.mark_text(fontSize=11).encode(
        alt.X("category:N", sort=categories),
        alt.Y("error_type:N", sort=types),
        alt.Text("entries:Q"),
        # Light text on the dark (upper half) cells.
        color=alt.condition(f"datum.entries > {max(counts.values()) / 2}", alt.value("white"), alt.value("black")),
    )
    chart = (cells + text).properties(width=alt.Step(CELL), height=alt.Step(CELL - 8))
    table_rows: list[list[Cell]] = [[t, *(counts.get((c, t), 0) for c in categories), by_type[t]] for t in types]
    return [
        ChartPanel(
            name="error-types-by-category",
            title="error types by category",
            spec=chart.to_dict(),
            note="failing entries (every epoch) per BFCL error type and category; empty cells: none",
        ),
        TablePanel(
            name="error-types-by-category-table",
            title="error types by category (counts)",
            columns=["error type", *categories, "all"],
            rows=table_rows,
        ),
    ]
