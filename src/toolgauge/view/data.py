"""What the viewer shows, read from the store: runs, a run's metrics, its verdicts page by page, a sample.

Per-unit verdicts are not stored; they are recomputed from the stored outputs by the benchmark's own
scoring (as ``toolgauge rescore`` does, no model call) and kept in memory per run. A finished run's
verdicts are computed once; a running run's again when it has stored more samples.
"""

from __future__ import annotations

import functools
import threading
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel

from toolgauge.errors import DataError, UsageError
from toolgauge.panels import Panel, RunPanels, SamplePanels
from toolgauge.redact import redact, redact_tree
from toolgauge.results import EvalResults, SampleScore
from toolgauge.store.store import RunInfo, Store
from toolgauge.worker_threads import start_worker_thread

Verdict = Literal["pass", "fail", "partial", "error", "unscored"]
VERDICTS: tuple[Verdict, ...] = ("pass", "fail", "partial", "error", "unscored")
# Longest error class label: an explanation's head, not the whole message.
CLASS_CHARS = 80
# Per-run verdict caches kept at once (a viewer session looks at a handful of runs).
CACHED_RUNS = 8
MAX_PAGE = 500


@dataclass(frozen=True)
class Benchmarks:
    """How the viewer reaches the benchmarks (given by the CLI, from the registry).

    ``verdicts`` recomputes a stored run's per-unit scores without a model call (raises ``UsageError``
    or ``DataError`` when it cannot, e.g. the data files moved); ``headline`` names a benchmark's
    headline metrics.
    """

    verdicts: Callable[[Store, RunInfo], Iterable[SampleScore]]
    headline: Callable[[str], tuple[str, ...]] = lambda _name: ()
    # A sweep's leaderboard as JSON (``toolgauge.sweep.report``, given by the CLI), or None where there is none.
    leaderboard: Callable[[Store, str], dict[str, Any]] | None = None
    # A benchmark's extra panels for run pages and sample pages (``BenchmarkSpec.run_panels``/``sample_panels``).
    panels: Callable[[str], tuple[RunPanels | None, SamplePanels | None]] = lambda _name: (None, None)


class RunRow(BaseModel):
    """One run in the runs list."""

    id: str
    benchmark: str
    model: str
    status: str
    samples: int
    created_at: float
    finished_at: float | None
    headline: dict[str, float | int | None] = {}


class UnitRow(BaseModel):
    """One scored unit (a sample, or a turn or task of one) in the sample list."""

    id: str
    sample: str
    verdict: Verdict
    value: float | None
    error_class: str | None
    explanation: str | None
    error: str | None


class UnitPage(BaseModel):
    """One page of a run's units, and what the filters can choose from."""

    total: int
    page: int
    per_page: int
    rows: list[UnitRow]
    verdicts: dict[str, int]
    error_classes: dict[str, int]
    note: str | None = None
    # True while the run's verdicts are being computed (the page is empty until then).
    pending: bool = False


@dataclass
class _Verdicts:
    key: tuple[Any, ...]
    units: list[SampleScore]
    rows: list[UnitRow]
    note: str | None
    by_sample: dict[str, list[int]] = field(default_factory=dict)
    # The run's extra panels, shown as the front end shows them (charts as SVG); made when first asked for.
    panels: list[dict[str, Any]] | None = None
    panels_note: str | None = None


def verdict_of(score: SampleScore) -> Verdict:
    """Pass (value 1), fail (0), partial (between), error (the sample's episode failed) or unscored."""
    if score.error:
        return "error"
    if score.value is None:
        return "unscored"
    if score.value >= 1:
        return "pass"
    return "fail" if score.value <= 0 else "partial"


def error_class_of(score: SampleScore, verdict: Verdict) -> str | None:
    """A short label of why a unit failed: its benchmark's error type or failure class, else its explanation's head."""
    if verdict == "error":
        return "run error"
    if verdict == "pass":
        return None
    for key in ("error_type", "failure_class"):
        label = score.scores.get(key)
        if isinstance(label, str) and label:
            return label[:CLASS_CHARS]
    if score.explanation:
        return score.explanation.split(":", 1)[0].strip()[:CLASS_CHARS] or None
    return None


def unit_row(score: SampleScore) -> UnitRow:
    """The sample-list row of one unit (text masked for secrets)."""
    verdict = verdict_of(score)
    return UnitRow(
        id=score.id,
        sample=score.sample,
        verdict=verdict,
        value=score.value,
        error_class=error_class_of(score, verdict),
        explanation=redact(score.explanation) if score.explanation else None,
        error=redact(score.error) if score.error else None,
    )


def run_row(run: RunInfo, headline: tuple[str, ...] = ()) -> RunRow:
    """The runs-list row of one run, with its headline values when it has results."""
    values: dict[str, float | int | None] = {}
    if run.results is not None:
        for name in headline:
            value = run.results.value(name)
            if value is not None:  # a run of some categories only may lack an overall value
                values[name] = value
    return RunRow(
        id=run.id, benchmark=run.benchmark, model=redact(run.model), status=run.status, samples=run.n_samples,
        created_at=run.created_at, finished_at=run.finished_at, headline=values,
    )  # fmt: skip


def unit_verdicts(units: Iterable[SampleScore]) -> dict[str, tuple[str, Verdict]]:
    """Each unit's sample key and verdict, by unit id (first-seen order); a unit of several epochs gets one.

    Over epochs: ``error`` when every epoch failed to run, else the verdict of the mean value of the epochs
    that have one (pass only when every one passed, fail only when every one failed, else partial).
    """
    found: dict[str, list[SampleScore]] = {}
    for unit in units:
        found.setdefault(unit.id, []).append(unit)
    out: dict[str, tuple[str, Verdict]] = {}
    for key, epochs in found.items():
        if len(epochs) == 1:
            out[key] = (epochs[0].sample, verdict_of(epochs[0]))
            continue
        if all(e.error for e in epochs):
            out[key] = (epochs[0].sample, "error")
            continue
        values = [e.value for e in epochs if not e.error and e.value is not None]
        mean = sum(values) / len(values) if values else None
        out[key] = (epochs[0].sample, verdict_of(SampleScore(id=key, sample=epochs[0].sample, value=mean)))
    return out


class ViewData:
    """The viewer's reads of one store (thread-safe: the web server answers from worker threads)."""

    def __init__(self, store: Store, benchmarks: Benchmarks):
        self.store = store
        self.benchmarks = benchmarks
        self._lock = threading.Lock()
        self._cache: OrderedDict[str, _Verdicts] = OrderedDict()
        self._jobs: dict[str, tuple[tuple[Any, ...], threading.Thread]] = {}

    # --- runs ------------------------------------------------------------------------------------------------

    def runs(
        self,
        *,
        benchmark: str | None = None,
        model: str | None = None,
        status: str | None = None,
        since: float | None = None,
        until: float | None = None,
        limit: int = 1000,
    ) -> list[RunRow]:
        """Runs newest first, filtered: exact benchmark and status, model substring, created in [since, until)."""
        rows = []
        for run in self.store.list_runs(limit):
            if benchmark and run.benchmark != benchmark:
                continue
            if status and run.status != status:
                continue
            if model and model.lower() not in run.model.lower():
                continue
            if since is not None and run.created_at < since:
                continue
            if until is not None and run.created_at >= until:
                continue
            rows.append(run_row(run, self.benchmarks.headline(run.benchmark)))
        return rows

    def run_info(self, run_id: str) -> RunInfo:
        """One stored run (``run_id`` exact); ``UsageError`` when there is none."""
        run = self.store.get_run(run_id)
        if run is None:
            raise UsageError(f"no run {run_id!r} in the store")
        return run

    def run(self, run_id: str) -> dict[str, Any]:
        """A run's page: its row, config, typed results (None before it is scored) and breakdown tables."""
        run = self.run_info(run_id)
        headline = self.benchmarks.headline(run.benchmark)
        results = run.results
        return {
            "run": run_row(run, headline).model_dump(mode="json"),
            "config": _masked(run.config),
            "headline": list(headline),
            "results": results.model_dump(mode="json") if results is not None else None,
            "overall": overall_rows(results, headline) if results is not None else [],
            "breakdowns": breakdown_tables(results) if results is not None else [],
        }

    # --- verdicts --------------------------------------------------------------------------------------------

    def _verdicts(self, run: RunInfo, *, wait: bool = True) -> _Verdicts | None:
        """The run's verdicts; computed in a worker thread, so a page need not wait for a long run's.

        Without ``wait``: None while the first computation runs, and a running run's previous verdicts
        while its newer ones are computed.
        """
        # A finished run's verdicts never change; a running one's change with every stored sample.
        key: tuple[Any, ...] = (run.status, run.finished_at)
        if run.status == "running":
            key += (len(self.store.sample_states(run.id)),)
        with self._lock:
            cached = self._cache.get(run.id)
            if cached is not None and cached.key == key:
                return cached
            job = self._jobs.get(run.id)
            if job is None or job[0] != key:
                compute = functools.partial(self._compute, run, key)
                job = (key, start_worker_thread(compute, name="toolgauge-verdicts"))
                self._jobs[run.id] = job
        if not wait:
            return cached
        job[1].join()
        with self._lock:
            return self._cache.get(run.id)

    def prepare(self, run_id: str) -> None:
        """Start computing a run's verdicts (the run page does, so its sample list is ready sooner)."""
        self._verdicts(self.run_info(run_id), wait=False)

    def _compute(self, run: RunInfo, key: tuple[Any, ...]) -> None:
        try:
            units, note = self._score(run)
        except Exception as exc:  # shown on the page instead of a list that never comes
            units, note = [], f"verdicts failed: {redact(f'{type(exc).__name__}: {exc}')}"
        made = _Verdicts(key, units, [unit_row(u) for u in units], note)
        for i, unit in enumerate(units):
            made.by_sample.setdefault(unit.sample, []).append(i)
        with self._lock:
            if self._jobs.get(run.id, (None,))[0] == key:
                del self._jobs[run.id]
            self._cache[run.id] = made
            self._cache.move_to_end(run.id)
            while len(self._cache) > CACHED_RUNS:
                self._cache.popitem(last=False)

    def _score(self, run: RunInfo) -> tuple[list[SampleScore], str | None]:
        try:
            return list(self.benchmarks.verdicts(self.store, run)), None
        except (UsageError, DataError, OSError) as exc:
            # Without verdicts the samples are still listed, from what the store keeps of each.
            note = f"verdicts not available: {redact(str(exc))}"
        states = self.store.sample_states(run.id)
        units = [
            SampleScore(id=key, sample=key, error=None if s.status == "done" else (s.error or s.status))
            for key, s in sorted(states.items())
        ]
        return units, note

    def units(
        self,
        run_id: str,
        *,
        verdict: str | None = None,
        error_class: str | None = None,
        query: str | None = None,
        page: int = 1,
        per_page: int = 50,
        wait: bool = True,
    ) -> UnitPage:
        """One page of a run's units, filtered by verdict, error class and a substring of the id.

        Without ``wait`` the page is ``pending`` (and empty) while the run's verdicts are first computed.
        """
        run = self.run_info(run_id)
        found = self._verdicts(run, wait=wait)
        per_page = max(1, min(per_page, MAX_PAGE))
        if found is None:
            note = f"computing the verdicts of {run.n_samples} samples (this page updates when they are ready)"
            return UnitPage(total=0, page=1, per_page=per_page, rows=[], verdicts={}, error_classes={}, note=note,
                            pending=True)  # fmt: skip
        needle = query.lower() if query else None
        chosen = [
            r
            for r in found.rows
            if (not verdict or r.verdict == verdict)
            and (not error_class or r.error_class == error_class)
            and (needle is None or needle in r.id.lower())
        ]
        page = max(1, page)
        start = (page - 1) * per_page
        return UnitPage(
            total=len(chosen),
            page=page,
            per_page=per_page,
            rows=chosen[start : start + per_page],
            verdicts=dict(Counter(r.verdict for r in found.rows)),
            error_classes=dict(Counter(r.error_class for r in found.rows if r.error_class).most_common()),
            note=found.note,
        )

    def sample(self, run_id: str, sample_key: str, *, wait: bool = True) -> dict[str, Any]:
        """One sample: its stored state, every verdict on it (with metadata) and its full transcript.

        Without ``wait``, ``pending`` is true (and there are no verdicts yet) while the run's are computed.
        """
        run = self.run_info(run_id)
        found = self._verdicts(run, wait=wait)
        units = [found.units[i] for i in found.by_sample.get(sample_key, [])] if found is not None else []
        states = self.store.sample_states(run.id)
        state = states.get(sample_key)
        if state is None and not units:
            raise UsageError(f"run {run.id} has no sample {sample_key!r}")
        transcript_note = None
        try:
            calls = [c.model_dump(mode="json") for c in self.store.transcript(run.id, sample_key)]
        except UsageError as exc:
            calls, transcript_note = [], str(exc)
        panels, panels_note = self._sample_panels(run, units, found.note if found is not None else None)
        return {
            "run": run_row(run).model_dump(mode="json"),
            "sample": sample_key,
            "panels": panels,
            "panels_note": panels_note,
            "state": None
            if state is None
            else {"status": state.status, "error": redact(state.error) if state.error else None,
                  "latency_s": state.latency_s},
            "units": [
                {**unit_row(u).model_dump(mode="json"), "scores": _masked(u.scores), "metadata": _masked(u.metadata)}
                for u in units
            ],
            "calls": calls,
            "note": (found.note if found is not None else "computing the run's verdicts…") or transcript_note,
            "pending": found is None,
        }  # fmt: skip

    # --- a benchmark's own panels ---------------------------------------------------------------------------

    def run_panels(self, run_id: str) -> dict[str, Any]:
        """The run's benchmark-specific panels (``{"panels": [...], "note"}``), once its verdicts are known.

        A panel that fails to build is left out and named in ``note``: a page never breaks on one view.
        """
        run = self.run_info(run_id)
        build, _ = self.benchmarks.panels(run.benchmark)
        if build is None or run.results is None:
            return {"panels": [], "note": None}
        found = self._verdicts(run)
        assert found is not None  # waited for
        if found.note is not None:  # no verdicts: nothing to build the views from
            return {"panels": [], "note": found.note}
        if found.panels is None:
            try:
                found.panels = [shown_panel(p) for p in build(run.results, found.units)]
            except Exception as exc:  # one broken view must not take the run page with it
                found.panels, found.panels_note = [], f"panels failed: {redact(f'{type(exc).__name__}: {exc}')}"
        return {"panels": found.panels, "note": found.panels_note}

    def _sample_panels(
        self, run: RunInfo, units: list[SampleScore], found_note: str | None
    ) -> tuple[list[dict[str, Any]], str | None]:
        _, build = self.benchmarks.panels(run.benchmark)
        if build is None or not units or found_note:
            return [], None
        try:
            return [shown_panel(p) for p in build(units)], None
        except Exception as exc:
            return [], f"panels failed: {redact(f'{type(exc).__name__}: {exc}')}"

    # --- compare and sweeps -----------------------------------------------------------------------------------

    def _compared_runs(
        self, run_ids: Sequence[str], *, distinct: bool = True
    ) -> tuple[list[RunInfo], list[list[SampleScore]]]:
        """The runs (given order) and each one's verdicts, checked: known, distinct, one benchmark, scored."""
        if len(run_ids) < 2:
            raise UsageError("compare needs two or more runs: ?run=A&run=B (the first is the baseline)")
        infos = [self.run_info(run_id) for run_id in run_ids]
        seen: set[str] = set()
        for run in infos:
            if distinct and run.id in seen:
                raise UsageError(f"run {run.id} is given twice: compare distinct runs")
            seen.add(run.id)
        from toolgauge.compare import require_one_benchmark  # numpy and scipy: only when a comparison is asked for

        require_one_benchmark(infos)
        found = []
        for run in infos:
            verdicts = self._verdicts(run)
            assert verdicts is not None  # waited for
            if verdicts.note is not None:
                raise UsageError(f"run {run.id}: {verdicts.note}")
            found.append(verdicts.units)
        return infos, found

    def compare(self, run_a: str, run_b: str) -> dict[str, Any]:
        """Run B against run A on their shared units (:func:`toolgauge.compare.compare_scores`, headline metrics).

        The verdicts are the viewer's own (kept per run), so comparing does not score a run again. ``samples``
        maps each flipped unit to its sample key (a turn's sample page is its dialogue's).

        Raises:
            UsageError: a run is unknown, the runs are of different benchmarks, or a run has no verdicts.
        """
        from toolgauge.compare import compare_scores  # numpy and scipy: only when a comparison is asked for

        (a, b), found = self._compared_runs([run_a, run_b], distinct=False)  # A with itself, as it always could
        headline = self.benchmarks.headline(a.benchmark)
        result = compare_scores(a.id, b.id, a.benchmark, found[0], found[1], list(headline), required=False)
        flipped = {*result.flipped.to_pass, *result.flipped.to_fail}
        samples = {u.id: u.sample for units in found for u in units if u.id in flipped}
        rows = {side: run_row(run, headline).model_dump(mode="json") for side, run in (("a", a), ("b", b))}
        return {**result.model_dump(mode="json"), "runs": rows, "samples": samples}

    def compare_runs(self, run_ids: Sequence[str], *, page: int = 1, per_page: int = 100) -> dict[str, Any]:
        """Two or more runs of one benchmark side by side; the first is the baseline A.

        ``comparisons``: each other run B against A (:func:`toolgauge.compare.compare_scores` on the headline
        metrics, the document of ``toolgauge compare A B --json``). ``differing``: one page of the units whose
        verdict is not the same in every run that has them (unit id, sample key per run, verdict per run, None
        where a run lacks the unit), in first-seen order; ``only_in_some`` counts the units some run lacks.

        Raises:
            UsageError: fewer than two runs, a run unknown or given twice, runs of different benchmarks, or a
                run without verdicts.
        """
        from toolgauge.compare import compare_scores  # numpy and scipy: only when a comparison is asked for

        infos, found = self._compared_runs(run_ids)
        base = infos[0]
        headline = self.benchmarks.headline(base.benchmark)
        comparisons = [
            compare_scores(base.id, run.id, base.benchmark, found[0], units, list(headline), required=False)
            for run, units in zip(infos[1:], found[1:], strict=True)
        ]
        verdicts = [unit_verdicts(units) for units in found]
        order = list(dict.fromkeys(key for per_run in verdicts for key in per_run))
        missing = sum(1 for key in order if any(key not in per_run for per_run in verdicts))
        differing = [key for key in order if len({per_run[key][1] for per_run in verdicts if key in per_run}) > 1]
        per_page = max(1, min(per_page, MAX_PAGE))
        page = max(1, page)
        start = (page - 1) * per_page
        rows = [
            {"id": key,
             "samples": [per_run[key][0] if key in per_run else None for per_run in verdicts],
             "verdicts": [per_run[key][1] if key in per_run else None for per_run in verdicts]}
            for key in differing[start : start + per_page]
        ]  # fmt: skip
        return {
            "benchmark": base.benchmark,
            "baseline": base.id,
            "headline": list(headline),
            "runs": [run_row(run, headline).model_dump(mode="json") for run in infos],
            "comparisons": [c.model_dump(mode="json") for c in comparisons],
            "units": len(order),
            "only_in_some": missing,
            "differing": {"total": len(differing), "page": page, "per_page": per_page, "rows": rows},
        }

    def sweeps(self) -> list[dict[str, Any]]:
        """The sweeps, newest first: id, status, when, and their cells' models, benchmarks and statuses."""
        from toolgauge.store.sweeps import list_sweeps

        return [
            {"id": s.id, "status": s.status, "created_at": s.created_at, "cells": len(s.cells),
             "finished_cells": sum(1 for c in s.cells if c.status == "finished"),
             "models": list(dict.fromkeys(c.model for c in s.cells)),
             "benchmarks": list(dict.fromkeys(c.benchmark for c in s.cells))}
            for s in list_sweeps(self.store)
        ]  # fmt: skip

    def sweep(self, sweep_id: str) -> dict[str, Any]:
        """A sweep's leaderboard (per benchmark, models ranked; see :attr:`Benchmarks.leaderboard`)."""
        from toolgauge.store.sweeps import get_sweep

        if self.benchmarks.leaderboard is None:
            raise UsageError("this viewer cannot build leaderboards")
        if get_sweep(self.store, sweep_id) is None:
            raise UsageError(f"no sweep {sweep_id!r} in the store")
        return self.benchmarks.leaderboard(self.store, sweep_id)

    def scored_units(self, run_id: str) -> tuple[list[SampleScore], str | None]:
        """Every unit's score of a run (for the HTML report) and why there are none, when so."""
        found = self._verdicts(self.run_info(run_id))
        assert found is not None  # waited for
        return found.units, found.note


def overall_rows(results: EvalResults, headline: tuple[str, ...]) -> list[dict[str, Any]]:
    """The overall metrics, headline first, each with its interval (from ``summary`` over repeats, else its own)."""
    order = {name: i for i, name in enumerate(headline)}
    rows = []
    for m in sorted(results.overall(), key=lambda m: order.get(m.name, len(order))):
        summary = results.summary.get(m.name)
        low = summary.ci_low if summary is not None and summary.ci_low is not None else m.ci_low
        high = summary.ci_high if summary is not None and summary.ci_high is not None else m.ci_high
        stderr = summary.stderr if summary is not None and summary.stderr is not None else m.stderr
        rows.append(
            {"name": m.name, "value": m.value, "kind": m.kind, "n": m.n, "headline": m.name in order,
             "stderr": stderr, "ci_low": low, "ci_high": high,
             "epochs": summary.epochs if summary is not None else 1}
        )  # fmt: skip
    return rows


def breakdown_tables(results: EvalResults) -> list[dict[str, Any]]:
    """Each breakdown as a table: its groups as rows, its metric names as columns (with n per group)."""
    tables = []
    for by in results.breakdowns():
        names: dict[str, str] = {}
        rows: dict[str, dict[str, Any]] = {}
        for m in results.metrics:
            if m.by != by or m.group is None:
                continue
            names.setdefault(m.name, m.kind)
            row = rows.setdefault(m.group, {"group": m.group, "n": m.n, "values": {}})
            row["values"][m.name] = m.value
            if row["n"] is None:
                row["n"] = m.n
        tables.append(
            {"by": by, "metrics": [{"name": n, "kind": k} for n, k in names.items()], "rows": list(rows.values())}
        )
    return tables


def shown_panel(panel: Panel) -> dict[str, Any]:
    """A panel as the front end shows it: a chart's spec rendered to SVG (``svg``), text masked for secrets."""
    if panel.kind == "chart":
        from toolgauge.view.charts import render_svg  # vl-convert: only when there is a chart to draw

        return {"kind": "chart", "name": panel.name, "title": panel.title, "note": panel.note,
                "svg": render_svg(panel.spec)}  # fmt: skip
    return _masked(panel.model_dump(mode="json"))  # type: ignore[no-any-return]


def _masked(value: Any) -> Any:
    return redact_tree(value)
