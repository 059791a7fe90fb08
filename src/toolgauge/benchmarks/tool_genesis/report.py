"""Terminal tables of a Tool-Genesis summary: the levels, the cascade, and where servers stopped."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table

from toolgauge.redact import redact
from toolgauge.report.terminal import esc, pct, warning_line

METRIC_ROWS = [
    ("compliance", "L1", "Compliance (official strict check)"),
    ("compliance_mcp_valid", "L1", "Compliance (valid MCP tool list)"),
    ("server_execution", "L1", "Server execution"),
    ("schema_f1", "L2", "Schema-F1 (schema file)"),
    ("schema_f1_live", "L2", "Schema-F1 (live tools/list)"),
    ("ut_soft", "L3", "UT_soft"),
    ("ut_hard", "L3", "UT_hard"),
    ("sr_soft", "L4", "SR_soft"),
    ("sr_hard", "L4", "SR_hard"),
    ("sr_oracle_normalized", "L4", "SR (oracle-normalised)"),
]


def render_genesis(summary: Mapping[str, Any], console: Console) -> None:
    """Print the aggregates (over all servers and over those that reached each level) and the cascade."""
    n = summary.get("servers_attempted", 0)
    title = (
        f"tool-genesis · variant {esc(summary.get('variant'))} · {esc(n)} servers · {esc(summary.get('source', ''))}"
    )
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    for col, justify in (("level", "left"), ("metric", "left"), ("all servers", "right"), ("reached", "right")):
        table.add_column(col, justify=justify, no_wrap=True)  # type: ignore[arg-type]
    reached: Mapping[str, Any] = summary.get("over_reached") or {}
    counts: Mapping[str, Any] = summary.get("reached_counts") or {}
    for key, level, label in METRIC_ROWS:
        table.add_row(level, label, pct(summary.get(key)), f"{pct(reached.get(key))} (n={counts.get(key, 0)})")
    console.print(table)
    cascade: Mapping[str, Mapping[str, Any]] = summary.get("cascade") or {}
    steps = [f"{esc(name)} {esc(c.get('servers'))} ({pct(c.get('fraction'))}%)" for name, c in cascade.items()]
    console.print("cascade: " + " → ".join(steps))
    failed = {
        slug: row.get("failures", {}) for slug, row in (summary.get("servers") or {}).items() if row.get("failures")
    }
    if failed:
        stops = Table(title="where servers stopped", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
        stops.add_column("server", no_wrap=True)
        stops.add_column("level", no_wrap=True)
        stops.add_column("reason")
        for slug, failures in list(failed.items())[:30]:
            level = next(iter(failures))
            stops.add_row(esc(slug), esc(level), esc(redact(str(failures[level]))[:160]))
        console.print(stops)
        if len(failed) > 30:
            console.print(f"... and {len(failed) - 30} more (see --json or --samples)")
    console.print(f"L4: {esc(summary.get('l4'))}", highlight=False)
    for warning in summary.get("warnings") or []:
        console.print(warning_line(warning), highlight=False)
    run = summary.get("run")
    if isinstance(run, Mapping):
        console.print(
            f"run [bold]{esc(run.get('id'))}[/] · {esc(run.get('samples'))} servers · {esc(run.get('sample_errors'))} "
            f"failed · {esc(run.get('model_calls'))} model calls ({esc(run.get('cached_calls'))} from cache) · "
            f"{esc(run.get('wall_seconds'))} s",
            highlight=False,
        )
