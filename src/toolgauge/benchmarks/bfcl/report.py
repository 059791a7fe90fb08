"""BFCL's terminal table: one row per category (correct, n, accuracy), then BFCL's aggregates, then notes."""

from __future__ import annotations

from rich import box
from rich.console import Console
from rich.table import Table

from toolgauge.benchmarks.bfcl.overall import GROUP_CATEGORIES, NOT_RUN, OVERALL_WEIGHTS
from toolgauge.report.terminal import esc, number, pct
from toolgauge.results import EvalResults


def render_bfcl(results: EvalResults, console: Console) -> None:
    """Print the category table with the aggregates, and notes on data defects and the irrelevance loophole."""
    # Multi-turn runs add toolgauge's per-turn credit beside BFCL's all-or-nothing accuracy.
    multi_turn = results.metric("turn_credit") is not None
    memory = bool(results.groups("category")) and all(c.startswith("memory") for c in results.groups("category"))
    title = "BFCL multi-turn" if multi_turn else "BFCL memory" if memory else "BFCL AST"
    table = Table(title=f"{title} · {esc(results.settings.get('mode', ''))}", title_justify="left", box=box.SIMPLE_HEAD)
    table.add_column("category")
    table.add_column("correct", justify="right")
    table.add_column("n", justify="right")
    table.add_column("accuracy %", justify="right")
    if multi_turn:
        table.add_column("turn credit %", justify="right")
    for category in results.groups("category"):
        correct = results.value("correct", category, by="category")
        accuracy = results.metric("accuracy", category, by="category")
        n = accuracy.n if accuracy is not None else None
        # Over epochs "correct" is a mean count (1.33 of 2); number() shows it with two decimals.
        credit = [pct(results.value("turn_credit", category, by="category"))] if multi_turn else []
        table.add_row(esc(category), "" if correct is None else number(correct, "count"), esc("" if n is None else n),
                      pct(accuracy.value if accuracy is not None else None), *credit)  # fmt: skip
    overall = results.metric("accuracy")
    if overall is not None:
        credit = [pct(results.value("turn_credit"))] if multi_turn else []
        table.add_row(
            "[bold]all categories (mean)[/]", "", esc("" if overall.n is None else overall.n), pct(overall.value),
            *credit,
        )  # fmt: skip
    for aggregate in results.groups("aggregate"):
        table.add_row(f"[italic]{esc(aggregate)} (aggregate)[/]", "", "",
                      pct(results.value("accuracy", aggregate, by="aggregate")))  # fmt: skip
    console.print(table)
    _render_summary(results, console)
    notes = []
    unsatisfiable = results.value("unsatisfiable")
    if unsatisfiable:
        notes.append(f"{number(unsatisfiable, 'count')} entries cannot be passed by any answer (data defects)")
    loophole = results.value("irrelevance_correct_but_unparsable")
    if loophole:
        notes.append(
            f"{number(loophole, 'count')} 'correct abstentions' on irrelevance were really unparsable call attempts"
        )
    for note in notes:
        console.print(f"[yellow]note:[/] {esc(note)}")


_GROUP_TITLES = {"non_live": "non-live", "live": "live", "irrelevance": "irrelevance", "multi_turn": "multi-turn",
                 "agentic": "agentic"}  # fmt: skip


def _render_summary(results: EvalResults, console: Console) -> None:
    """BFCL's summary: the official-style overall (what it covers) and each weighed group, or "not run"."""
    overall = results.metric("bfcl_overall")
    covered = results.details.get("bfcl_summary")
    if overall is None or not isinstance(covered, dict):
        return
    table = Table(title="BFCL v4 summary", title_justify="left", box=box.SIMPLE_HEAD)
    table.add_column("score")
    table.add_column("weight", justify="right")
    table.add_column("categories run", justify="right")
    table.add_column("accuracy %", justify="right")
    groups: dict[str, list[str]] = covered.get("groups", {})
    for name, weight in OVERALL_WEIGHTS.items():
        run, of = len(groups.get(name, [])), len(GROUP_CATEGORIES[name])
        value = results.value("accuracy", name, by="bfcl_group")
        table.add_row(_GROUP_TITLES[name], f"{weight}%", f"{run} of {of}", NOT_RUN if value is None else pct(value))
    table.add_row(
        "[bold]overall (official-style: not run = 0)[/]", "", f"{covered.get('covered')} of {covered.get('of')}",
        pct(overall.value),
    )  # fmt: skip
    console.print(table)
    not_run = covered.get("not_run") or []
    if not_run:
        console.print(f"[dim]not run: {esc(', '.join(not_run))}[/]")
