"""Terminal tables of a WildToolBench summary: headline rates, breakdowns and the error taxonomy."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table

from toolgauge.report.terminal import esc, pct, run_line, warning_line


def render_wild(summary: Mapping[str, Any], console: Console) -> None:
    """Print a WildToolBench summary: headline rates, breakdowns, and the error taxonomy."""
    scores: Mapping[str, Any] = summary.get("scores") or {}
    counts: Mapping[str, Any] = scores.get("counts") or {}
    head = Table(
        title=f"WildToolBench · variant {esc(summary.get('variant', ''))} · {esc(summary.get('language', ''))} · "
        f"{esc(summary.get('data', ''))}",
        title_justify="left",
        box=box.SIMPLE_HEAD,
    )
    for column in ("metric", "%", "of"):
        head.add_column(column, justify="left" if column == "metric" else "right")
    optimal = (scores.get("optimal_path") or {}).get("Total") or {}
    progress = (scores.get("accomplish_progress") or {}).get("Total") or {}
    head.add_row("task accuracy", pct(scores.get("task_accuracy")),
                 f"{counts.get('correct_tasks', '')}/{counts.get('tasks', '')} tasks")  # fmt: skip
    head.add_row("session accuracy", pct(scores.get("session_accuracy")),
                 f"{counts.get('correct_sessions', '')}/{counts.get('sessions', '')} sessions")  # fmt: skip
    head.add_row("optimal path rate (OP)", pct(scores.get("optimal_path_rate")),
                 f"{optimal.get('correct', '')}/{optimal.get('total', '')} parallel+mixed tasks")  # fmt: skip
    head.add_row("accomplish progress (AP)", pct(scores.get("accomplish_progress_rate")),
                 f"{progress.get('complete_step', '')}/{progress.get('total_step', '')} steps")  # fmt: skip
    console.print(head)

    breakdown = Table(title="accuracy by group", title_justify="left", box=box.SIMPLE_HEAD)
    for column in ("group", "key", "correct", "total", "%"):
        breakdown.add_column(column, justify="left" if column in ("group", "key") else "right")
    groups = (("by_task_type", "task type"), ("by_task_order", "task order"),
              ("by_turn_subtype", "turn subtype"), ("by_transitions", "transitions"))  # fmt: skip
    for key, title in groups:
        for name, row in (scores.get(key) or {}).items():
            if row.get("total"):
                breakdown.add_row(title, esc(name), esc(row.get("correct")), esc(row.get("total")),
                                  pct(row.get("accuracy")))  # fmt: skip
    console.print(breakdown)

    errors: Mapping[str, Any] = scores.get("errors") or {}
    if errors.get("failed_tasks"):
        taxonomy = Table(title=f"error taxonomy · {esc(errors['failed_tasks'])} failed tasks", title_justify="left",
                         box=box.SIMPLE_HEAD)  # fmt: skip
        for column in ("class", "tasks", "% of failed"):
            taxonomy.add_column(column, justify="left" if column == "class" else "right")
        shares = errors.get("shares") or {}
        for name, count in (errors.get("counts") or {}).items():
            if count:
                taxonomy.add_row(esc(name), esc(count), pct(shares.get(name)))
        console.print(taxonomy)
    for warning in summary.get("warnings") or []:
        console.print(warning_line(warning), highlight=False)
    run = summary.get("run")
    if isinstance(run, Mapping):
        console.print(run_line(run, "sessions"), highlight=False)
