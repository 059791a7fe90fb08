"""Rich tables for run summaries; scores shown as percentages with two decimals."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from toolgauge.redact import redact

MTU_COLUMNS = [
    ("tool_accuracy", "Tool"),
    ("parameter_accuracy", "Param"),
    ("tool_number_accuracy", "TN"),
    ("tool_order_accuracy", "TO"),
    ("success_rate", "SR"),
    ("turn_success_rate", "ATS"),
    ("soft_turn_success_rate", "SATS"),
    ("task_process_rate", "TPR"),
]


def pct(value: Any) -> str:
    """Format a fraction as a percentage with two decimals ("—" when absent)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "—"
    return f"{value * 100:.2f}"


def esc(value: Any) -> str:
    """Data as literal text in a markup string: ``[/x]`` from a suite id must print, not parse."""
    return escape(str(value))


def warning_line(warning: Any) -> str:
    """A summary warning as a markup line: secrets masked, the text itself escaped."""
    return f"[yellow]warning:[/] {esc(redact(str(warning)))}"


def run_line(run: Mapping[str, Any], unit: str) -> str:
    """The closing ``run ID · N samples · ...`` line, values escaped; a status other than finished is shown."""
    status = run.get("status")
    shown = f" · [yellow]{esc(status)}[/]" if status not in (None, "finished") else ""
    return (
        f"run [bold]{esc(run.get('id'))}[/]{shown} · {esc(run.get('samples'))} {unit} · "
        f"{esc(run.get('sample_errors'))} failed · {esc(run.get('model_calls'))} model calls "
        f"({esc(run.get('cached_calls'))} from cache) · "
        f"{esc(run.get('input_tokens'))}+{esc(run.get('output_tokens'))} tokens · {esc(run.get('wall_seconds'))} s"
    )


def render_summary(summary: Mapping[str, Any], console: Console) -> None:
    """Print a summary as tables, by benchmark."""
    bench = summary.get("benchmark")
    if bench == "wildtoolbench":
        # Imported here: the WildToolBench tables use this module's helpers.
        from toolgauge.benchmarks.wildtoolbench.report import render_wild

        render_wild(summary, console)  # prints its own warnings and run line
        return
    if bench == "tool-genesis":
        from toolgauge.benchmarks.tool_genesis.report import render_genesis

        render_genesis(summary, console)  # prints its own warnings and run line
        return
    if bench == "bfcl":
        _render_bfcl(summary, console)
    elif bench in ("mtu-bench", "suite"):
        _render_metric_rows(summary, console)
    else:
        _render_generic(summary, console)
    run = summary.get("run")
    if isinstance(run, Mapping):
        console.print(run_line(run, "samples"), highlight=False)


def _render_metric_rows(summary: Mapping[str, Any], console: Console) -> None:
    rows: Mapping[str, Mapping[str, Any]] = summary.get("splits") or {"all": summary.get("scores", {})}
    present = [(k, label) for k, label in MTU_COLUMNS if any(k in r for r in rows.values())]
    title = (
        f"{esc(summary.get('benchmark'))} · variant {esc(summary.get('variant', ''))} · "
        f"mode {esc(summary.get('mode', ''))}"
    )
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("split", no_wrap=True, min_width=5)
    table.add_column("n", justify="right", no_wrap=True)
    for _, label in present:
        table.add_column(label, justify="right", no_wrap=True, min_width=6)
    for name, row in rows.items():
        n = row.get("n", row.get("n_turns", ""))
        table.add_row(esc(name), esc(n), *[pct(row.get(k)) for k, _ in present])
    console.print(table)
    _print_warnings(summary, console)


def _render_bfcl(summary: Mapping[str, Any], console: Console) -> None:
    table = Table(title=f"BFCL AST · {esc(summary.get('mode', ''))}", title_justify="left", box=box.SIMPLE_HEAD)
    table.add_column("category")
    table.add_column("correct", justify="right")
    table.add_column("n", justify="right")
    table.add_column("accuracy %", justify="right")
    for name, row in (summary.get("categories") or {}).items():
        table.add_row(esc(name), esc(row.get("correct", "")), esc(row.get("n", "")), pct(row.get("accuracy")))
    aggregates = summary.get("aggregates") or {}
    for name, value in aggregates.items():
        if isinstance(value, int | float):
            table.add_row(f"[italic]{esc(name)} (aggregate)[/]", "", "", pct(value))
    console.print(table)
    notes = []
    if summary.get("unsatisfiable"):
        notes.append(f"{summary['unsatisfiable']} entries cannot be passed by any answer (data defects)")
    loophole = (summary.get("loophole") or {}).get("irrelevance_correct_but_unparsable")
    if loophole:
        notes.append(f"{loophole} 'correct abstentions' on irrelevance were really unparsable call attempts")
    for note in notes:
        console.print(f"[yellow]note:[/] {esc(note)}")
    _print_warnings(summary, console)


def _render_generic(summary: Mapping[str, Any], console: Console) -> None:
    from toolgauge.report.export import flatten

    table = Table(title=esc(summary.get("benchmark", "run")), title_justify="left")
    table.add_column("scope")
    table.add_column("metric")
    table.add_column("value", justify="right")
    for scope, metric, value in flatten({k: v for k, v in summary.items() if k not in ("run", "warnings")}):
        table.add_row(esc(scope), esc(metric), esc(redact(str(value))))
    console.print(table)
    _print_warnings(summary, console)


def _print_warnings(summary: Mapping[str, Any], console: Console) -> None:
    warnings: Sequence[str] = summary.get("warnings") or []
    for w in warnings[:10]:
        console.print(warning_line(w), highlight=False)
    if len(warnings) > 10:
        console.print(f"[yellow]warning:[/] ... and {len(warnings) - 10} more")
