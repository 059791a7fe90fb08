"""A sweep's leaderboard, read back from the store: per benchmark, the models ranked by its first headline metric.

Each cell shows its benchmark's headline metrics as mean, standard error and 95% interval (the run's
``EvalResults.summary``; a run without one shows its plain value). A model whose difference with the best model
of its benchmark is not significant is marked: by the paired comparison of the two runs where toolgauge has
one (``compare_runs``), else by overlapping 95% intervals (a coarser test: it says "not significant" more often).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from toolgauge.cost import format_usd
from toolgauge.errors import UsageError
from toolgauge.report.terminal import MISSING, interval, number, summary_unit
from toolgauge.results import Estimate, EvalResults, MetricKind
from toolgauge.store import Store
from toolgauge.store.sweeps import SweepRecord, get_sweep


class MetricStat(Estimate):
    """One headline metric of one cell."""

    # How the leaderboard shows it (a rate in percent); not part of the JSON document.
    kind: MetricKind = Field(default="rate", exclude=True)


class CellReport(BaseModel):
    """One cell of the leaderboard (``--json``'s ``cells`` entries)."""

    model: str
    benchmark: str
    run: str
    status: str
    metrics: dict[str, MetricStat] = Field(default_factory=dict)
    # Whether the difference with the best model of the benchmark is significant (None: this is the best, or
    # it cannot be told), and how that was decided.
    significant: bool | None = None
    test: Literal["paired", "intervals"] | None = None
    # The run's name (the [[model]]'s display name), its cost in USD (None: unknown) and cost per point of the
    # first headline metric (as tau-bench's leaderboard shows it).
    name: str | None = None
    cost_usd: float | None = None
    cost_per_point: float | None = None


class SweepReport(BaseModel):
    """A sweep's cells with their headline metrics."""

    sweep: str
    status: str
    cells: list[CellReport]

    def document(self) -> dict[str, Any]:
        """The ``--json`` document: ``{"sweep", "status", "cells": [{"model", "benchmark", "run", "status", ...}]}``.

        Each cell has ``metrics``: per headline metric ``{"mean", "stderr", "ci_low", "ci_high", "n"}``.
        """
        return {
            "sweep": self.sweep,
            "status": self.status,
            "cells": [c.model_dump(mode="json", include={"model", "name", "benchmark", "run", "status", "metrics",
                                                         "cost_usd", "cost_per_point"})
                      for c in self.cells],
        }  # fmt: skip


def headline_of(benchmark: str, results: EvalResults | None) -> tuple[str, ...]:
    """The benchmark's headline metric names (the results' first overall metric where it declares none)."""
    from toolgauge.benchmarks.registry import spec_named

    spec = spec_named(benchmark)
    if spec is not None and spec.headline:
        return spec.headline
    if results is not None and results.overall():
        return (results.overall()[0].name,)
    return ()


def cell_metrics(results: EvalResults, names: Sequence[str]) -> dict[str, MetricStat]:
    """The headline metrics of a run's results, from its summary where it has one."""
    out: dict[str, MetricStat] = {}
    for name in names:
        summary = results.summary.get(name)
        metric = results.metric(name)
        kind: MetricKind = metric.kind if metric is not None else "rate"
        if summary is not None:
            out[name] = MetricStat(mean=summary.mean, stderr=summary.stderr, ci_low=summary.ci_low,
                                   ci_high=summary.ci_high, n=summary.n, kind=kind)  # fmt: skip
            continue
        if metric is not None and metric.value is not None:
            out[name] = MetricStat(mean=float(metric.value), stderr=metric.stderr, ci_low=metric.ci_low,
                                   ci_high=metric.ci_high, n=metric.n or 0, kind=kind)  # fmt: skip
    return out


def sweep_report(store: Store, sweep_id: str) -> SweepReport:
    """Read a sweep's leaderboard from the store (its cells' stored results)."""
    record = get_sweep(store, sweep_id)
    if record is None:
        raise UsageError(f"no sweep {sweep_id!r} in the store (see: toolgauge sweeps)")
    return _report(store, record)


def _report(store: Store, record: SweepRecord) -> SweepReport:
    from toolgauge.cost import cost_per_point
    from toolgauge.store.run_meta import labels_of

    cells: list[CellReport] = []
    labels = labels_of(store, [cell.run_id for cell in record.cells])
    for cell in record.cells:
        run = store.get_run(cell.run_id)
        results = run.results if run is not None else None
        status = cell.status if run is None or cell.status in ("pending", "running") else run.status
        names = headline_of(cell.benchmark, results)
        metrics = cell_metrics(results, names) if results is not None else {}
        cost = results.run.cost_usd if results is not None and results.run is not None else None
        first = metrics.get(names[0]) if names else None
        per_point = cost_per_point(cost, first.mean) if first is not None and first.kind == "rate" else None
        name = labels[cell.run_id].name if cell.run_id in labels else None
        cells.append(CellReport(model=cell.model, benchmark=cell.benchmark, run=cell.run_id, status=status,
                                metrics=metrics, name=name, cost_usd=cost, cost_per_point=per_point))  # fmt: skip
    _mark_significance(store, cells)
    return SweepReport(sweep=record.id, status=record.status, cells=cells)


def ranked(cells: Sequence[CellReport], benchmark: str) -> list[CellReport]:
    """A benchmark's cells, best first by its first headline metric (cells without a value last)."""
    mine = [c for c in cells if c.benchmark == benchmark]
    names = headline_of(benchmark, None)
    first = names[0] if names else next((n for c in mine for n in c.metrics), None)

    def key(c: CellReport) -> tuple[int, float]:
        stat = c.metrics.get(first) if first else None
        return (0, -stat.mean) if stat is not None and stat.mean is not None else (1, 0.0)

    return sorted(mine, key=key)


def _mark_significance(store: Store, cells: list[CellReport]) -> None:
    """Mark each cell's difference with its benchmark's best cell: significant or not, and by which test."""
    paired = paired_comparison()
    for benchmark in dict.fromkeys(c.benchmark for c in cells):
        order = ranked(cells, benchmark)
        names = headline_of(benchmark, None)
        if not order or not names or order[0].metrics.get(names[0]) is None:
            continue
        best, metric = order[0], names[0]
        for cell in order[1:]:
            stat = cell.metrics.get(metric)
            if stat is None or stat.mean is None:
                continue
            verdict = paired(store, best.run, cell.run, metric) if paired is not None else None
            if verdict is not None:
                cell.significant, cell.test = verdict, "paired"
                continue
            low, high = best.metrics[metric], stat
            if None in (low.ci_low, low.ci_high, high.ci_low, high.ci_high):
                continue
            assert low.ci_low is not None and high.ci_high is not None
            cell.significant, cell.test = high.ci_high < low.ci_low, "intervals"


def paired_comparison() -> Callable[[Store, str, str, str], bool | None] | None:
    """The paired test of two runs on one metric, where toolgauge has one (``toolgauge.compare``), else None.

    Returns a function giving whether run B's difference with run A is significant (McNemar for pass/fail
    metrics, a paired bootstrap otherwise), None where the test cannot tell (no paired unit, a run that
    cannot be rescored).
    """
    try:
        # By name: the comparison is an optional part of the tree this module does not depend on.
        module = importlib.import_module("toolgauge.compare")
    except ImportError:
        return None
    compare_runs: Callable[..., Any] | None = getattr(module, "compare_runs", None)
    if compare_runs is None:
        return None
    from toolgauge.api import stored_units  # how a stored run is scored again (the comparison is handed it)

    def significant(store: Store, run_a: str, run_b: str, metric: str) -> bool | None:
        try:
            found = compare_runs(store, run_a, run_b, [metric], units=stored_units)
        except Exception:  # a run that cannot be rescored (data moved, a broken install): fall back, never fail
            return None
        item = getattr(found, "metrics", {}).get(metric)
        if item is None or getattr(item, "p_value", None) is None:
            return None
        return bool(item.significant)

    return significant


def _interval(stat: MetricStat) -> str:
    """``mean [low, high]`` (else ``mean ± stderr``) as every table shows numbers: a rate in percent."""
    unit = summary_unit(stat.kind)
    text = number(stat.mean, unit)
    if stat.mean is None:
        return text
    if stat.ci_low is not None and stat.ci_high is not None:
        text += " " + interval(stat.ci_low, stat.ci_high, unit)
    elif stat.stderr is not None:
        text += f" ± {number(stat.stderr, unit)}"
    return text


def render_leaderboard(report: SweepReport, console: Console) -> None:
    """Print one table per benchmark: rank, model, headline metrics (mean [95% interval]), vs the best, run."""
    any_intervals = False
    for benchmark in dict.fromkeys(c.benchmark for c in report.cells):
        order = ranked(report.cells, benchmark)
        names = headline_of(benchmark, None) or tuple(dict.fromkeys(n for c in order for n in c.metrics))
        table = Table(title=f"{benchmark}: ranked by {names[0] if names else '-'}", title_justify="left")
        for col in ("#", "model", *names, "vs best", "cost", "$/point", "run", "status"):
            # Model specs and run ids are what a reader copies: folded, never cut.
            right = col in names or col in ("#", "cost", "$/point")
            table.add_column(col, justify="right" if right else "left", overflow="fold")
        for rank, cell in enumerate(order, 1):
            if rank == 1:
                mark = "best"
            elif cell.significant is None:
                mark = "?"
            else:
                mark = "significant" if cell.significant else "not significant"
                any_intervals = any_intervals or cell.test == "intervals"
            values = [_interval(cell.metrics[n]) if n in cell.metrics else MISSING for n in names]
            shown = f"{cell.name} ({cell.model})" if cell.name else cell.model
            cost = format_usd(cell.cost_usd) if cell.status != "pending" else MISSING
            per_point = format_usd(cell.cost_per_point) if cell.cost_per_point is not None else MISSING
            table.add_row(str(rank), escape(shown), *values, mark, cost, per_point, cell.run, cell.status)
        console.print(table)
    console.print(
        f"sweep {report.sweep}: {report.status}; rates in percent, each as mean [95% interval]"
        + ("; 'not significant' by overlapping intervals (no paired comparison in this toolgauge)"
           if any_intervals else "")
    , highlight=False)  # fmt: skip
