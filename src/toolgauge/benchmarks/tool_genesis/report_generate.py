"""Terminal tables of a ``genesis generate`` run: the counts, then why each failed server failed."""

from __future__ import annotations

from rich import box
from rich.console import Console
from rich.table import Table

from toolgauge.redact import redact
from toolgauge.report.terminal import esc, render_generic
from toolgauge.results import EvalResults

SHOWN_FAILURES = 30


def render_generate(results: EvalResults, console: Console) -> None:
    """Print servers / generated / failed and the first failures with their reasons."""
    render_generic(results, console)
    failures = results.details.get("failures") or {}
    if not isinstance(failures, dict) or not failures:
        return
    table = Table(title="failed servers", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("server", no_wrap=True)
    table.add_column("reason")
    for slug, reason in list(failures.items())[:SHOWN_FAILURES]:
        table.add_row(esc(slug), esc(redact(str(reason))[:200]))
    console.print(table)
    if len(failures) > SHOWN_FAILURES:
        console.print(f"... and {len(failures) - SHOWN_FAILURES} more (every reason is in --json and --samples)")
