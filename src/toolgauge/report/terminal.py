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
from toolgauge.report.console import printable
from toolgauge.results import EvalResults, Metric, MetricSummary, RunStats


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
    r"""Data as literal text in a markup string: ``[/x]`` from a suite id must print, not parse.

    Its control characters are shown as ``\xNN`` too (:func:`~toolgauge.report.console.printable`), so a
    renderer given any console prints no escape sequence from data.
    """
    return escape(printable(str(value)))


def warning_line(warning: Any) -> str:
    """A warning as a markup line: secrets masked, the text itself escaped."""
    return f"[yellow]warning:[/] {esc(redact(str(warning)))}"


def run_line(run: RunStats, unit: str) -> str:
    """The closing ``run ID · N samples · ...`` line, values escaped; a status other than finished is shown.

    Tokens are those spent by real calls; answers from the cache add their tokens apart, when there are any.
    """
    status = f" · [yellow]{esc(run.status)}[/]" if run.status != "finished" else ""
    epochs = f" × {run.epochs} epochs" if run.epochs != 1 else ""
    cached = run.cached_input_tokens + run.cached_output_tokens
    cached_tokens = f" (+{run.cached_input_tokens}+{run.cached_output_tokens} cached)" if cached else ""
    return (
        f"run [bold]{esc(run.id)}[/]{status} · {run.samples} {unit}{epochs} · "
        f"{run.sample_errors} failed · {run.model_calls} model calls "
        f"({run.cached_calls} from cache) · "
        f"{run.input_tokens}+{run.output_tokens} tokens{cached_tokens} · {run.wall_seconds} s"
    )


def _summary_value(value: float | None, rate: bool) -> str:
    if value is None:
        return "—"
    return pct(value) if rate else f"{value:.4g}"


def summary_lines(results: EvalResults) -> list[str]:
    """``NAME  mean ± stderr  [low, high]  over n clusters, K epochs`` per headline metric, then pass@k and pass^k.

    Rates are shown as percentages, as in the tables. Nothing when there is no summary; pass@k and pass^k
    only for more than one epoch.
    """
    # In the metrics' order (a stored run's JSON keeps its keys sorted).
    order = {name: i for i, name in enumerate(dict.fromkeys(m.name for m in results.metrics))}
    names = sorted(results.summary, key=lambda name: order.get(name, len(order)))
    width = max((len(name) for name in names), default=0)
    lines = [_summary_line(name.ljust(width), results.summary[name], _is_rate(results, name)) for name in names]
    epochs = max((s.epochs for s in results.summary.values()), default=1)
    if epochs > 1 and results.pass_at_k:
        lines.append("pass@k".ljust(width) + "  " + "  ".join(f"k={k} {pct(v)}" for k, v in results.pass_at_k.items()))
        lines.append("pass^k".ljust(width) + "  " + "  ".join(f"k={k} {pct(v)}" for k, v in results.pass_hat_k.items()))
    return lines


def _is_rate(results: EvalResults, name: str) -> bool:
    metric = results.metric(name)
    return metric is None or metric.kind == "rate"


def _summary_line(name: str, s: MetricSummary, rate: bool) -> str:
    spread = f" ± {_summary_value(s.stderr, rate)}" if s.stderr is not None else ""
    interval = (
        f"  [{_summary_value(s.ci_low, rate)}, {_summary_value(s.ci_high, rate)}]"
        if s.ci_low is not None and s.ci_high is not None
        else ""
    )
    clusters = "cluster" if s.n == 1 else "clusters"
    epochs = "epoch" if s.epochs == 1 else "epochs"
    return f"{esc(name)}  {_summary_value(s.mean, rate)}{spread}{interval}  over {s.n} {clusters}, {s.epochs} {epochs}"


def print_summary(results: EvalResults, console: Console) -> None:
    """Print the headline metrics with their spread (95% interval) and, over epochs, pass@k and pass^k.

    Printed when some headline metric has a spread, or for more than one epoch.
    """
    has_spread = any(s.stderr is not None for s in results.summary.values())
    several = any(s.epochs > 1 for s in results.summary.values())
    if not (has_spread or several):
        return
    console.print("[bold]headline ± stderr [95% CI][/]", highlight=False)
    for line in summary_lines(results):
        console.print(line, highlight=False)


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
    """Print a run: the benchmark's renderer (or the generic tables), the headline spread, warnings, run line."""
    (renderer or render_generic)(results, console)
    print_summary(results, console)
    print_warnings(results, console)
    print_run_line(results, console, unit)
