"""Rich tables for typed results, and the one rule for the numbers in every table.

The rule (:func:`number`): rates are percentages with two decimals, differences of rates are signed
percentage points, counts are whole numbers (a count averaged over epochs has two decimals), other means have
two decimals. JSON keeps fractions. :func:`render_results` prints a run with the benchmark's own renderer when
it has one (through the registry) and the generic tables otherwise; the helpers below are what the renderers
build on.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from toolgauge.redact import redact
from toolgauge.report.console import printable
from toolgauge.results import EvalResults, Metric, MetricKind, MetricSummary, RunStats

# What a number in a table is: a rate (a fraction shown in percent), a difference of two rates (percentage
# points), a count, or another mean.
Shown = Literal["rate", "points", "count", "mean"]
MISSING = "—"


def number(value: Any, unit: Shown = "rate") -> str:
    """A number as every table shows it ("—" when absent).

    ``rate``: a fraction as a percentage with two decimals (0.625 -> ``62.50``); ``points``: a difference of
    rates in signed percentage points (-0.0125 -> ``-1.25``); ``count``: a whole number (``12``), or with two
    decimals when it is a mean count over epochs (``1.33``); ``mean``: two decimals, whole numbers as they are.
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        return MISSING
    if unit == "rate":
        return f"{value * 100:.2f}"
    if unit == "points":
        return f"{value * 100:+.2f}"
    if isinstance(value, int) or value.is_integer():
        return str(int(value))
    return f"{value:.2f}"


def pct(value: Any) -> str:
    """A fraction as a percentage with two decimals ("—" when absent): :func:`number` of a rate."""
    return number(value, "rate")


def interval(low: Any, high: Any, unit: Shown = "rate") -> str:
    """A 95% interval as ``[low, high]`` in the table's unit ("" when either end is absent)."""
    if low is None or high is None:
        return ""
    return f"[{number(low, unit)}, {number(high, unit)}]"


def shown(metric: Metric | None) -> str:
    """A metric's value as the tables show it (:func:`number` of its kind)."""
    if metric is None:
        return MISSING
    return number(metric.value, metric.kind)


# Marks a metric whose reference definition scores even the gold answers below 100%; see gold_note.
GOLD_MARK = "*"


def gold_marked(label: str, marked: bool) -> str:
    """A metric's row label, with :data:`GOLD_MARK` when the gold answers score below 100% on it."""
    return f"{label} {GOLD_MARK}" if marked else label


def gold_note(doc: str) -> str:
    """The footnote under a table with :data:`GOLD_MARK` rows: why gold is below 100%, and where that is explained.

    ``doc`` is the metric page's anchor (``docs/metrics/wildtoolbench.md#gold-below-100``).
    """
    return f"{GOLD_MARK} the reference definition can score even the gold answers below 100% here: see {doc}"


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
    epochs = f" × {plural(run.epochs, 'epoch')}" if run.epochs != 1 else ""
    cached = run.cached_input_tokens + run.cached_output_tokens
    cached_tokens = f" (+{run.cached_input_tokens}+{run.cached_output_tokens} cached)" if cached else ""
    labels = " ".join(([run.name] if run.name else []) + [f"{k}={v}" for k, v in sorted(run.tags.items())])
    named = f" ({esc(labels)})" if labels else ""
    return (
        f"run [bold]{esc(run.id)}[/]{named}{status} · {run.samples} {unit}{epochs} · "
        f"{run.sample_errors} failed · {run.model_calls} model calls "
        f"({run.cached_calls} from cache) · "
        f"{run.input_tokens}+{run.output_tokens} tokens{cached_tokens}{run_cost(run)} · {run.wall_seconds} s"
    )


def mostly_cached(run: RunStats) -> bool:
    """Whether more than half of the run's answers came from the response cache (not what the model says now)."""
    return run.cached_calls > run.model_calls


def run_cost(run: RunStats) -> str:
    """`` · $0.0123`` (or `` · price unknown``) for the run line, and a flag when most answers were cached."""
    from toolgauge.cost import format_usd

    text = ""
    if run.price is not None or run.cost_usd is not None:
        text = f" · {format_usd(run.cost_usd)}"
    if mostly_cached(run):
        text += f" · [yellow]mostly cached ({run.cached_calls} of {run.cached_calls + run.model_calls} answers)[/]"
    return text


def summary_lines(results: EvalResults) -> list[str]:
    """``NAME  mean ± stderr  [low, high]  over n clusters, K epochs`` per headline metric, then pass@k and pass^k.

    Rates are shown as percentages, as in the tables. Nothing when there is no summary; pass@k and pass^k
    only for more than one epoch.
    """
    # In the metrics' order (a stored run's JSON keeps its keys sorted).
    order = {name: i for i, name in enumerate(dict.fromkeys(m.name for m in results.metrics))}
    names = sorted(results.summary, key=lambda name: order.get(name, len(order)))
    width = max((len(name) for name in names), default=0)
    lines = [_summary_line(name.ljust(width), results.summary[name], _unit(results, name)) for name in names]
    epochs = max((s.epochs for s in results.summary.values()), default=1)
    if epochs > 1 and results.pass_at_k:
        lines.append("pass@k".ljust(width) + "  " + "  ".join(f"k={k} {pct(v)}" for k, v in results.pass_at_k.items()))
        lines.append("pass^k".ljust(width) + "  " + "  ".join(f"k={k} {pct(v)}" for k, v in results.pass_hat_k.items()))
    return lines


def summary_unit(kind: MetricKind | None) -> Shown:
    """How a metric's mean over clusters and its interval are shown: a rate in percent, anything else as a mean.

    A count summarised over clusters is a mean per cluster, no longer a count (``None``: unknown, a rate).
    """
    return "rate" if kind is None or kind == "rate" else "mean"


def _unit(results: EvalResults, name: str) -> Shown:
    metric = results.metric(name)
    return summary_unit(metric.kind if metric is not None else None)


def plural(count: int, word: str) -> str:
    """``1 epoch``, ``2 epochs``: a count with its noun (English ``s`` plural)."""
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def _summary_line(name: str, s: MetricSummary, unit: Shown) -> str:
    spread = f" ± {number(s.stderr, unit)}" if s.stderr is not None else ""
    ci = interval(s.ci_low, s.ci_high, unit)
    ci = f"  {ci}" if ci else ""
    over = f"over {plural(s.n, 'cluster')}, {plural(s.epochs, 'epoch')}"
    return f"{esc(name)}  {number(s.mean, unit)}{spread}{ci}  {over}"


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
