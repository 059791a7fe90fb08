"""Rich tables for typed results; rates shown as percentages with two decimals.

:func:`render_results` prints a run with the benchmark's own renderer when it has one (through the
registry) and the generic tables otherwise; the helpers below are what the renderers build on.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from toolgauge.redact import redact
from toolgauge.results import EvalResults, Metric, RunStats


def pct(value: Any) -> str:
    """Format a fraction as a percentage with two decimals ("—" when absent)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "—"
    return f"{value * 100:.2f}"


def shown(metric: Metric | None) -> str:
    """A metric's value as the tables show it: rates as percentages, counts and means as numbers."""
    if metric is None or metric.value is None:
        return "—"
    if metric.kind == "rate":
        return pct(metric.value)
    if isinstance(metric.value, float) and not metric.value.is_integer():
        return f"{metric.value:.4g}"
    return str(int(metric.value))


def esc(value: Any) -> str:
    """Data as literal text in a markup string: ``[/x]`` from a suite id must print, not parse."""
    return escape(str(value))


def warning_line(warning: Any) -> str:
    """A warning as a markup line: secrets masked, the text itself escaped."""
    return f"[yellow]warning:[/] {esc(redact(str(warning)))}"


def run_line(run: RunStats, unit: str) -> str:
    """The closing ``run ID · N samples · ...`` line, values escaped; a status other than finished is shown."""
    status = f" · [yellow]{esc(run.status)}[/]" if run.status != "finished" else ""
    return (
        f"run [bold]{esc(run.id)}[/]{status} · {run.samples} {unit} · "
        f"{run.sample_errors} failed · {run.model_calls} model calls "
        f"({run.cached_calls} from cache) · "
        f"{run.input_tokens}+{run.output_tokens} tokens · {run.wall_seconds} s"
    )


def print_warnings(results: EvalResults, console: Console, limit: int = 10) -> None:
    """Print up to ``limit`` warnings, then how many more there are."""
    for w in results.warnings[:limit]:
        console.print(warning_line(w), highlight=False)
    if len(results.warnings) > limit:
        console.print(f"[yellow]warning:[/] ... and {len(results.warnings) - limit} more")


def print_run_line(results: EvalResults, console: Console, unit: str = "samples") -> None:
    """Print the run line when the results carry a run."""
    if results.run is not None:
        console.print(run_line(results.run, unit), highlight=False)


def metric_table(
    results: EvalResults,
    *,
    by: str | None,
    columns: Sequence[tuple[str, str]] | None = None,
    title: str = "",
    overall_label: str = "all",
    count: str | None = None,
) -> Table:
    """One row per group of breakdown ``by`` (plus the overall row when ``by`` is None), one column per metric.

    ``columns`` are (metric name, header) pairs; by default every metric name present, in order. The
    ``n`` column is the row's ``count`` metric when given and present, else the first metric's count.
    """
    metrics = [m for m in results.metrics if (m.by == by if by is not None else m.group is None)]
    names = [name for name, _ in columns] if columns is not None else list(dict.fromkeys(m.name for m in metrics))
    headers = dict(columns) if columns is not None else {n: n for n in names}
    present = [n for n in names if any(m.name == n for m in metrics)]
    groups = results.groups(by) if by is not None else [None]
    table = Table(title=title or None, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column(esc(by or ""), no_wrap=True, min_width=5)
    table.add_column("n", justify="right", no_wrap=True)
    for name in present:
        table.add_column(esc(headers[name]), justify="right", no_wrap=True, min_width=6)
    for group in groups:
        row = {m.name: m for m in metrics if m.group == group}
        n = next((row[name].n for name in present if name in row and row[name].n is not None), None)
        counted = row.get(count) if count is not None else None
        if counted is not None and counted.value is not None:
            n = int(counted.value)
        table.add_row(esc(group if group is not None else overall_label), esc(n if n is not None else ""),
                      *[shown(row.get(name)) for name in present])  # fmt: skip
    return table


def render_generic(results: EvalResults, console: Console) -> None:
    """The overall metrics, then one table per breakdown."""
    settings = " · ".join(f"{k} {v}" for k, v in results.settings.items() if k != "data" and v is not None)
    title = esc(results.benchmark) + (f" · {esc(settings)}" if settings else "")
    if results.overall():
        console.print(metric_table(results, by=None, title=title))
        title = ""
    for by in results.breakdowns():
        console.print(metric_table(results, by=by, title=title or f"by {esc(by)}"))
        title = ""


def render_results(
    results: EvalResults,
    console: Console,
    renderer: Callable[[EvalResults, Console], None] | None = None,
    unit: str = "samples",
) -> None:
    """Print a run: the benchmark's renderer (or the generic tables), its warnings and its run line."""
    (renderer or render_generic)(results, console)
    print_warnings(results, console)
    print_run_line(results, console, unit)
