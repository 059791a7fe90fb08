"""WildToolBench's terminal tables: headline rates, accuracy by group, and the error taxonomy.

Warnings and the run line are printed by :func:`toolgauge.report.terminal.render_results` after these.
"""

from __future__ import annotations

from rich import box
from rich.console import Console
from rich.table import Table

from toolgauge.benchmarks.wildtoolbench.metrics import (
    BY_ERROR_CLASS,
    BY_TASK_ORDER,
    BY_TASK_TYPE,
    BY_TRANSITIONS,
    BY_TURN_SUBTYPE,
)
from toolgauge.report.terminal import esc, gold_marked, gold_note, pct, shown
from toolgauge.results import EvalResults

#: The accuracy breakdowns, in table order, with the name the table gives them.
BREAKDOWNS = (
    (BY_TASK_TYPE, "task type"),
    (BY_TASK_ORDER, "task order"),
    (BY_TURN_SUBTYPE, "turn subtype"),
    (BY_TRANSITIONS, "transitions"),
)
# The reference AP scores a perfect Mixed task below 1 (a parallel step is one step of several gold nodes).
GOLD_DOC = "docs/metrics/wildtoolbench.md#gold-below-100"


def render_wild(results: EvalResults, console: Console) -> None:
    """Print the headline rates, the accuracy of every non-empty group, and the error taxonomy of failed tasks."""
    settings = results.settings

    def count(name: str, group: str | None = None, by: str | None = None) -> str:
        return shown(results.metric(name, group, by))

    def over(name: str) -> str:
        metric = results.metric(name)
        return esc(metric.n) if metric is not None and metric.n is not None else "—"

    head = Table(
        title=f"WildToolBench · variant {esc(settings.get('variant', ''))} · {esc(settings.get('language', ''))} · "
        f"{esc(settings.get('data', ''))}",
        title_justify="left",
        box=box.SIMPLE_HEAD,
    )
    for column in ("metric", "%", "of"):
        head.add_column(column, justify="left" if column == "metric" else "right")
    head.add_row("task accuracy", pct(results.value("task_accuracy")),
                 f"{count('correct_tasks')}/{count('tasks')} tasks")  # fmt: skip
    head.add_row("session accuracy", pct(results.value("session_accuracy")),
                 f"{count('correct_sessions')}/{count('sessions')} sessions")  # fmt: skip
    head.add_row("optimal path rate (OP)", pct(results.value("optimal_path_rate")),
                 f"{count('optimal_tasks')}/{over('optimal_path_rate')} parallel+mixed tasks")  # fmt: skip
    capped = settings.get("variant") == "reference"
    head.add_row(gold_marked("accomplish progress (AP)", capped), pct(results.value("accomplish_progress_rate")),
                 f"{count('complete_steps')}/{count('total_steps')} steps")  # fmt: skip
    console.print(head)
    if capped:
        console.print(gold_note(GOLD_DOC), highlight=False)

    breakdown = Table(title="accuracy by group", title_justify="left", box=box.SIMPLE_HEAD)
    for column in ("group", "key", "correct", "total", "%"):
        breakdown.add_column(column, justify="left" if column in ("group", "key") else "right")
    for by, title in BREAKDOWNS:
        for group in results.groups(by):
            accuracy = results.metric("task_accuracy", group, by)
            if accuracy is None or not accuracy.n:
                continue
            breakdown.add_row(title, esc(group), count("correct_tasks", group, by), esc(accuracy.n),
                              pct(accuracy.value))  # fmt: skip
    console.print(breakdown)

    failed = results.value("failed_tasks")
    if failed:
        taxonomy = Table(title=f"error taxonomy · {count('failed_tasks')} failed tasks", title_justify="left",
                         box=box.SIMPLE_HEAD)  # fmt: skip
        for column in ("class", "tasks", "% of failed"):
            taxonomy.add_column(column, justify="left" if column == "class" else "right")
        for name in results.groups(BY_ERROR_CLASS):
            if results.value("failed_tasks", name, BY_ERROR_CLASS):
                taxonomy.add_row(esc(name), count("failed_tasks", name, BY_ERROR_CLASS),
                                 pct(results.value("failure_share", name, BY_ERROR_CLASS)))  # fmt: skip
        console.print(taxonomy)
