"""Terminal tables of Tool-Genesis results: the levels, the cascade, and where servers stopped."""

from __future__ import annotations

from collections.abc import Mapping

from rich import box
from rich.console import Console
from rich.table import Table

from toolgauge.redact import redact
from toolgauge.report.terminal import esc, gold_marked, gold_note, number, pct
from toolgauge.results import EvalResults

METRIC_LABELS = {
    "compliance": "Compliance (official strict check)",
    "compliance_mcp_valid": "Compliance (valid MCP tool list)",
    "server_execution": "Server execution",
    "schema_f1": "Schema-F1 (schema file)",
    "schema_f1_live": "Schema-F1 (live tools/list)",
    "ut_soft": "UT_soft",
    "ut_hard": "UT_hard",
    "sr_soft": "SR_soft",
    "sr_hard": "SR_hard",
    "sr_oracle_normalized": "SR (oracle-normalised)",
}
STOPS_SHOWN = 30
# Metrics the reference variant scores below 100% even for the gold servers (docs/metrics/tool-genesis.md).
GOLD_BELOW_100 = ("schema_f1", "ut_soft")
GOLD_DOC = "docs/metrics/tool-genesis.md#gold-below-100"


def render_genesis(results: EvalResults, console: Console) -> None:
    """Print the metrics over all servers and over those that reached each level, the cascade and the stops.

    Results of ``genesis generate`` runs (``tool-genesis-generate``) get their own table of failures.
    """
    if results.benchmark != "tool-genesis":
        from toolgauge.benchmarks.tool_genesis.report_generate import render_generate

        render_generate(results, console)
        return
    from toolgauge.benchmarks.tool_genesis.metrics import METRIC_LEVELS  # numpy and scipy: not at CLI start

    settings = results.settings
    title = (
        f"tool-genesis · variant {esc(settings.get('variant'))} · {esc(results.value('servers_attempted'))} servers"
        f" · {esc(settings.get('source', ''))}"
    )
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    for col, justify in (("level", "left"), ("metric", "left"), ("all servers", "right"), ("reached", "right")):
        table.add_column(col, justify=justify, no_wrap=True)  # type: ignore[arg-type]
    capped = settings.get("variant") == "reference"
    for key, level in METRIC_LEVELS.items():
        reached = results.metric(key, level, by="reached")
        n = reached.n if reached is not None and reached.n is not None else 0
        shown = pct(reached.value if reached is not None else None)
        label = gold_marked(METRIC_LABELS[key], capped and key in GOLD_BELOW_100)
        table.add_row(level, label, pct(results.value(key)), f"{shown} (n={n})")
    console.print(table)
    if capped:
        console.print(gold_note(GOLD_DOC), highlight=False)
    steps = [
        f"{esc(step)} {number(results.value('servers', step, by='cascade'), 'count')} "
        f"({pct(results.value('fraction', step, by='cascade'))}%)"
        for step in results.groups("cascade")
    ]
    console.print("cascade: " + " → ".join(steps))
    stopped: Mapping[str, Mapping[str, str]] = results.details.get("stopped") or {}
    if stopped:
        stops = Table(title="where servers stopped", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
        stops.add_column("server", no_wrap=True)
        stops.add_column("level", no_wrap=True)
        stops.add_column("reason")
        for slug, stop in list(stopped.items())[:STOPS_SHOWN]:
            stops.add_row(esc(slug), esc(stop.get("level")), esc(redact(str(stop.get("reason")))[:160]))
        console.print(stops)
        if len(stopped) > STOPS_SHOWN:
            console.print(f"... and {len(stopped) - STOPS_SHOWN} more (see --json or --samples)")
    console.print(f"L4: {esc(results.details.get('l4'))}", highlight=False)
