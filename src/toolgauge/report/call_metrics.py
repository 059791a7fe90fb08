"""The terminal table of the call metrics (:mod:`toolgauge.metrics.calls`): one row per split or one for the run.

MTU-Bench's runs show a row per split, toolgauge's own dialogues (``suite``) one overall row; the columns
carry MTU-Bench's metric names. A run with MTU-Bench's hard set (``by=set``) shows it in a second table.
"""

from __future__ import annotations

from rich.console import Console

from toolgauge.report.terminal import esc, metric_table
from toolgauge.results import EvalResults

COLUMNS = [
    ("tool_accuracy", "Tool"),
    ("parameter_accuracy", "Param"),
    ("tool_number_accuracy", "TN"),
    ("tool_order_accuracy", "TO"),
    ("success_rate", "SR"),
    ("turn_success_rate", "ATS"),
    ("soft_turn_success_rate", "SATS"),
    ("task_process_rate", "TPR"),
]


def render_call_metrics(results: EvalResults, console: Console) -> None:
    """Print the split table (or the overall row, for toolgauge's own dialogues) with MTU-Bench's column names."""
    settings = results.settings
    title = (
        f"{esc(results.benchmark)} · variant {esc(settings.get('variant', ''))} · mode {esc(settings.get('mode', ''))}"
    )
    by = "split" if "split" in results.breakdowns() else None
    # n: the split's items (OOD's tool accuracy is over its single-call items only; the row counts them all).
    console.print(metric_table(results, by=by, columns=COLUMNS, title=title, count="n"))
    if "set" in results.breakdowns():
        # The hard set (S-M items with five or more gold calls), scored on its own beside the S-M row.
        console.print(metric_table(results, by="set", columns=COLUMNS, count="n"))
