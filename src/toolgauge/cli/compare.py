"""``toolgauge compare RUN_A RUN_B [RUN]...``: run B (and each further run) against run A on the units both scored.

No model is asked. With two runs the output is the comparison itself; with more, one comparison per run after A.
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich import box
from rich.table import Table

from toolgauge.cli.common import JsonOpt, StoreOpt, guarded, out, warn
from toolgauge.redact import redact_tree
from toolgauge.report.terminal import MISSING, esc, interval, number

if TYPE_CHECKING:  # toolgauge.compare loads numpy: only when the command runs
    from toolgauge.compare import RunComparison
    from toolgauge.stats.paired import MetricComparison

RunA = Annotated[str, typer.Argument(help="Run A (the baseline): an id, a unique start of one, or 'latest'.")]
RunB = Annotated[str, typer.Argument(help="Run B, compared with A: an id, a unique start of one, or 'latest'.")]
MoreRuns = Annotated[
    list[str] | None, typer.Argument(help="More runs, each compared with A (optional).", show_default=False)
]
# Flipped units listed in the terminal (``--json`` lists them all).
SHOWN_FLIPS = 10


def compare_cmd(
    run_a: RunA,
    run_b: RunB,
    more: MoreRuns = None,
    metric: Annotated[
        list[str] | None,
        typer.Option("--metric", help="A per-unit metric to compare (repeatable; default: the benchmark's headline)."),
    ] = None,
    store: StoreOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Compare runs of one benchmark: B - A per metric, its 95% interval and a paired test (each run after A).

    Units are paired by id (averaged over their epochs first); units only one run has are counted.
    The runs are scored again from their stored outputs; their data files must still be where they were.
    """

    def body() -> None:
        from toolgauge.api import stored_units
        from toolgauge.compare import compare_many
        from toolgauge.store import open_store

        st = open_store(store, create=False)
        try:
            comparisons = compare_many(st, [run_a, run_b, *(more or [])], metric or None, units=stored_units)
        finally:
            st.close()
        for comparison in comparisons:  # on stderr, so --json stays one document (which carries them too)
            for line in comparison.warnings:
                warn(f"runs {comparison.a} and {comparison.b} differ: {line}")
        if as_json:
            docs = [c.model_dump(mode="json") for c in comparisons]
            doc: Any = docs[0]
            if len(docs) > 1:  # two runs: the comparison itself, as always
                doc = {"baseline": comparisons[0].a, "benchmark": comparisons[0].benchmark, "comparisons": docs}
            sys.stdout.write(json.dumps(redact_tree(doc), indent=2) + "\n")
        else:
            for i, comparison in enumerate(comparisons):
                if i:
                    out.print()
                render_comparison(comparison)

    guarded(body)


def _p_value(value: float | None) -> str:
    if value is None:
        return MISSING
    return "<0.0001" if value < 1e-4 else f"{value:.4f}"


def _verdict(row: MetricComparison) -> str:
    if row.p_value is None:
        return "no paired unit"
    return "[bold]significant[/]" if row.significant else "not significant"


def render_comparison(comparison: RunComparison) -> None:
    """Print the metric table, the flipped units and the units only one run has."""
    table = Table(
        title=f"{esc(comparison.benchmark)}: B {esc(comparison.b)} vs A {esc(comparison.a)} "
        "(A, B in percent; diff = B - A in percentage points)",
        title_justify="left",
        box=box.SIMPLE_HEAD,
    )
    for column in ("metric", "n", "A", "B", "diff", "95% CI", "test", "p", ""):
        table.add_column(column, justify="left" if column in ("metric", "test", "") else "right")
    for name, row in comparison.metrics.items():
        ci = interval(row.ci_low, row.ci_high, "points") or MISSING
        table.add_row(esc(name), str(row.n), number(row.a), number(row.b), number(row.diff, "points"), ci,
                      esc(row.test or MISSING), _p_value(row.p_value), _verdict(row))  # fmt: skip
    out.print(table)
    for label, ids in (("fail -> pass", comparison.flipped.to_pass), ("pass -> fail", comparison.flipped.to_fail)):
        shown = ", ".join(ids[:SHOWN_FLIPS]) + (", ..." if len(ids) > SHOWN_FLIPS else "")
        out.print(f"{label}: {len(ids)}" + (f" ({esc(shown)})" if ids else ""), highlight=False)
    out.print(f"units only in A: {comparison.only_in_a} · only in B: {comparison.only_in_b}", highlight=False)
