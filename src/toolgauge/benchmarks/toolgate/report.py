"""ToolGate's terminal view: outcome counts, the funnel with each step's rejection reasons, screen letter bias.

It reads the audit a pool run (or a ``gate run``) keeps in ``details["audit"]``; results without one get the
generic tables. Warnings and the run line are printed after it by ``render_results``.
"""

from __future__ import annotations

from rich import box
from rich.console import Console
from rich.table import Table

from toolgauge.benchmarks.toolgate.audit import AuditReport
from toolgauge.report.terminal import esc, pct, render_generic
from toolgauge.results import EvalResults


def _reasons(rejected: dict[str, int]) -> str:
    return ", ".join(f"{reason} {count}" for reason, count in sorted(rejected.items(), key=lambda kv: -kv[1]) if count)


def funnel_table(report: AuditReport, title: str = "") -> Table:
    """The funnel (attempts, verified, each screen, solved, unique): entered, passed, rejected by reason, not run."""
    table = Table(title=title or None, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    for header, justify in (("step", "left"), ("entered", "right"), ("passed", "right"), ("not run", "right")):
        table.add_column(header, justify=justify, no_wrap=True)  # type: ignore[arg-type]
    table.add_column("rejected (reason count)")
    funnel = report.funnel
    table.add_row("attempts", "", str(funnel.attempts), "", "")
    for step in funnel.steps:
        not_run = str(step.not_run) if step.not_run else ""
        table.add_row(esc(step.name), str(step.entered), str(step.passed), not_run, esc(_reasons(step.rejected)))
    return table


def bias_table(report: AuditReport) -> Table | None:
    """Each screen's per-call accuracy by the correct option's displayed letter, and the letters it chose."""
    if not report.position_bias:
        return None
    table = Table(title="screens: letter bias", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("screen", no_wrap=True)
    table.add_column("calls", justify="right")
    table.add_column("acc", justify="right")
    for letter in "ABCD":
        table.add_column(f"acc@{letter}", justify="right")
    for letter in "ABCD":
        table.add_column(f"chose {letter}", justify="right")
    table.add_column("unparsable", justify="right")
    for bias in report.position_bias:
        table.add_row(
            esc(bias.screen),
            str(bias.calls),
            pct(bias.accuracy),
            *[pct(bias.by_correct_letter[letter].accuracy) for letter in "ABCD"],
            *[pct(bias.chosen_share.get(letter)) for letter in "ABCD"],
            pct(bias.chosen_share.get("none")),
        )
    return table


def render_toolgate(results: EvalResults, console: Console) -> None:
    """Print a ToolGate run: counts, funnel, screen bias and the pool audit line."""
    from toolgauge.benchmarks.toolgate.protocol import audit_of

    report = audit_of(results)
    if report is None:
        render_generic(results, console)
        return
    settings = results.settings
    gates = ", ".join(str(g) for g in settings.get("gates", ()))
    title = f"toolgate · {esc(settings.get('command', ''))}" + (f" · gates {esc(gates)}" if gates else "")
    if settings.get("fixed_order"):
        title += " · fixed order"
    counts = results.details.get("counts", {})
    if counts:
        parts = [f"{name} {counts.get(name, 0)}" for name in ("accepted", "rejected", "flagged", "passed")]
        if counts.get("errors"):
            parts.append(f"[yellow]no verdict {counts['errors']}[/]")
        console.print(f"{title}\n{counts.get('total', 0)} candidates: " + " · ".join(parts), highlight=False)
    console.print(funnel_table(report))
    bias = bias_table(report)
    if bias is not None:
        console.print(bias)
    mv, dup, topics = report.middle_value, report.duplicates, report.topics
    console.print(
        f"pool {report.pool}: middle value {pct(mv.middle_value_share)} of {mv.numeric} numeric "
        f"(middle-value pick {pct(mv.middle_value_accuracy)}) · exact duplicates {dup.exact_duplicates} · "
        f"near-duplicate pairs {dup.near_pairs} · top topic {esc(topics.top_topic or '—')} {pct(topics.top_share)}",
        highlight=False,
    )
    for agreement in report.agreement:
        console.print(
            f"agreement {esc(agreement.first)} / {esc(agreement.second)}: {pct(agreement.agreement)} of "
            f"{agreement.n} (both too easy {agreement.both_solved}, only first {agreement.only_first}, "
            f"only second {agreement.only_second}, neither {agreement.neither})",
            highlight=False,
        )
