"""What the viewer shows, read from the store: runs, a run's metrics, its verdicts page by page, a sample.

Per-unit verdicts are recomputed from the stored outputs by the benchmark's own scoring (as ``toolgauge
rescore`` does, no model call) the first time a run is viewed, and written to the store as they are made
(:mod:`toolgauge.store.verdicts`) with their counts; every page then reads only its own rows, so the viewer's
memory and its page times do not grow with a run's size. A finished run's verdicts are computed once, for
every later viewer too; a running run's again when it has stored more samples.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel
from sqlalchemy import create_engine
from sqlalchemy.exc import SQLAlchemyError

from toolgauge import __version__
from toolgauge.engine.epochs import epoch_key  # (the engine package: imported at start, not on a request)
from toolgauge.errors import DataError, UsageError
from toolgauge.panels import Panel, RunPanels, SamplePanels
from toolgauge.redact import redact, redact_tree
from toolgauge.results import EvalResults, SampleScore
from toolgauge.run_labels import RunLabels
from toolgauge.store.run_meta import labels_of, run_settings
from toolgauge.store.store import RunInfo, Store
from toolgauge.store.transcripts import ModelCallRecord
from toolgauge.store.verdicts import UnitFilter, UnitSet, VerdictTable, ensure_tables, stored_sample_count
from toolgauge.view.charts import ChartSpec
from toolgauge.worker_threads import start_worker_thread

Verdict = Literal["pass", "fail", "partial", "error", "unscored"]
VERDICTS: tuple[Verdict, ...] = ("pass", "fail", "partial", "error", "unscored")
# Longest error class label: an explanation's head, not the whole message.
CLASS_CHARS = 80
# Bumped when what is kept per unit changes: verdicts kept by an older viewer are then computed again.
VERDICTS_FORMAT = 1
# How the viewer tells its scoring process which store to read and where to write the verdicts.
STORE_ENV = "TOOLGAUGE_VIEW_STORE"
VERDICTS_ENV = "TOOLGAUGE_VIEW_VERDICTS"
# Runs whose panels are kept drawn (a viewer session looks at a handful of runs).
CACHED_PANELS = 8
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
    # A seed paper's blocks for stored runs or sweeps (``toolgauge paper``), as JSON; None where there are none.
    paper: Callable[[Store, str, list[str]], dict[str, Any]] | None = None


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
    # --name and --tag; mode, variant, temperature, epochs and limit (store/run_meta.py); USD (None: unknown).
    name: str | None = None
    tags: dict[str, str] = {}
    settings: dict[str, Any] = {}
    cost_usd: float | None = None


class UnitRow(BaseModel):
    """One scored unit (a sample, or a turn or task of one) in the sample list; ``epoch``: which try (``--epochs``)."""

    id: str
    sample: str
    epoch: int = 1
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
        epoch=score.epoch,
        verdict=verdict,
        value=score.value,
        error_class=error_class_of(score, verdict),
        explanation=redact(score.explanation) if score.explanation else None,
        error=redact(score.error) if score.error else None,
    )


def run_row(run: RunInfo, headline: tuple[str, ...] = (), labels: RunLabels | None = None) -> RunRow:
    """The runs-list row of one run, with its headline values when it has results, its labels and settings."""
    values: dict[str, float | int | None] = {}
    if run.results is not None:
        for name in headline:
            value = run.results.value(name)
            if value is not None:  # a run of some categories only may lack an overall value
                values[name] = value
    stats = run.results.run if run.results is not None else None
    return RunRow(
        id=run.id, benchmark=run.benchmark, model=redact(run.model), status=run.status, samples=run.n_samples,
        created_at=run.created_at, finished_at=run.finished_at, headline=values,
        name=labels.name if labels else None, tags=labels.tags if labels else {}, settings=run_settings(run),
        cost_usd=stats.cost_usd if stats is not None else None,
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

    def __init__(self, store: Store, benchmarks: Benchmarks, *, score_in_child: bool = False):
        """Read ``store``; score runs by ``benchmarks``, in a thread or (``score_in_child``) a child process.

        The child (``python -m toolgauge.view.score_child``) scores by the registry's benchmarks: the CLI's viewer.
        """
        self.store = store
        self.benchmarks = benchmarks
        self._in_child = score_in_child
        self._children: set[subprocess.Popen[str]] = set()
        self._lock = threading.Lock()
        self._jobs: dict[str, tuple[str, threading.Thread]] = {}
        self._table: VerdictTable | None = None
        self._scratch: tempfile.TemporaryDirectory[str] | None = None
        # Sets with a note (no verdicts: say a data file was missing) are trusted only by the process that wrote
        # them: a later viewer tries again. And why a run's verdicts could not be written at all, by run.
        self._fresh: set[tuple[str, int]] = set()
        self._failed: dict[str, UnitSet] = {}
        # Each run's extra panels as shown (charts drawn), by (run, generation of its verdicts).
        self._panels: OrderedDict[tuple[str, int], dict[str, Any]] = OrderedDict()

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
        listed = self.store.list_runs(limit)
        labels = labels_of(self.store, [run.id for run in listed])
        for run in listed:
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
            rows.append(run_row(run, self.benchmarks.headline(run.benchmark), labels.get(run.id)))
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
            "run": run_row(run, headline, labels_of(self.store, [run.id]).get(run.id)).model_dump(mode="json"),
            "config": _masked(run.config),
            "headline": list(headline),
            "results": results.model_dump(mode="json") if results is not None else None,
            "overall": overall_rows(results, headline) if results is not None else [],
            "breakdowns": breakdown_tables(results) if results is not None else [],
        }

    # --- verdicts --------------------------------------------------------------------------------------------

    def verdict_table(self) -> VerdictTable:
        """Where the verdicts are kept: the store, or a private SQLite file when the store refuses the tables."""
        with self._lock:
            if self._table is None:
                self._table = self._open_table()
            return self._table

    def _open_table(self) -> VerdictTable:
        engine = self.store.engine
        if engine.dialect.name != "sqlite" or engine.url.database not in (None, "", ":memory:"):
            try:
                ensure_tables(engine)
                return VerdictTable(engine)
            except SQLAlchemyError:  # a read-only store: the verdicts of this viewer's life only
                pass
        self._scratch = tempfile.TemporaryDirectory(prefix="toolgauge-view-")
        scratch = create_engine(f"sqlite:///{Path(self._scratch.name) / 'verdicts.db'}")
        ensure_tables(scratch)
        return VerdictTable(scratch)

    def _key(self, run: RunInfo) -> str:
        # A finished run's verdicts never change; a running one's change with every stored sample.
        key: list[Any] = [VERDICTS_FORMAT, __version__, run.status, run.finished_at, run.n_samples]
        if run.status == "running":
            key.append(stored_sample_count(self.store.engine, run.id))
        return json.dumps(key)

    def _verdicts(self, run: RunInfo, *, wait: bool = True) -> UnitSet | None:
        """The run's verdicts; computed in a worker thread, so a page need not wait for a long run's.

        Without ``wait``: None while the first computation runs, and a running run's previous verdicts
        while its newer ones are computed.
        """
        key = self._key(run)
        table = self.verdict_table()
        current = table.current(run.id)
        if (
            current is not None
            and current.key == key
            and (current.note is None or (run.id, current.gen) in self._fresh)
        ):
            return current
        with self._lock:
            failed = self._failed.get(run.id)
            if failed is not None and failed.key == key:
                return failed
            job = self._jobs.get(run.id)
            # One computation per run at a time: a running run's newer samples wait for the one under way.
            if job is None:
                compute = functools.partial(self._compute, run, key)
                job = (key, start_worker_thread(compute, name="toolgauge-verdicts"))
                self._jobs[run.id] = job
        if not wait:
            return current
        job[1].join()
        with self._lock:
            failed = self._failed.get(run.id)
        if failed is not None and failed.key == key:
            return failed
        return table.current(run.id)

    def prepare(self, run_id: str) -> None:
        """Start computing a run's verdicts (the run page does, so its sample list is ready sooner)."""
        self._verdicts(self.run_info(run_id), wait=False)

    def _compute(self, run: RunInfo, key: str) -> None:
        table = self.verdict_table()
        try:
            if self._in_child:
                made = self._score_in_child(run, key)
            else:
                made = write_verdicts(table, self.store, self.benchmarks, run, key)
            if made.note is not None:
                self._fresh.add((run.id, made.gen))
        except Exception as exc:  # the verdicts cannot be written: said on every page of the run
            note = f"verdicts could not be kept: {redact(f'{type(exc).__name__}: {exc}')}"
            with self._lock:
                self._failed[run.id] = UnitSet(run.id, 0, key, 0, {}, {}, note)
        finally:
            with self._lock:
                if self._jobs.get(run.id, (None,))[0] == key:
                    del self._jobs[run.id]

    def _score_in_child(self, run: RunInfo, key: str) -> UnitSet:
        """Score the run in a child process that writes its verdicts (its memory is given back when it exits)."""
        table = self.verdict_table()
        env = {**os.environ, STORE_ENV: self.store.engine.url.render_as_string(hide_password=False),
               VERDICTS_ENV: table.engine.url.render_as_string(hide_password=False)}  # fmt: skip
        command = [sys.executable, "-m", "toolgauge.view.score_child", run.id, key]
        child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        with self._lock:
            self._children.add(child)
        try:
            out, errors = child.communicate()  # no deadline: a large run takes minutes; close() ends it
        finally:
            with self._lock:
                self._children.discard(child)
        lines = [line for line in errors.splitlines() if line.strip()]
        if child.returncode != 0:
            raise RuntimeError(f"scoring process exited with {child.returncode}: {lines[-1] if lines else ''}")
        made = table.current(run.id)  # its own generation, or a newer one another viewer wrote meanwhile
        if made is None:
            raise RuntimeError(f"the scoring process wrote no verdicts ({out.strip()})")
        return made

    def close(self) -> None:
        """End the scoring processes still running (the viewer is stopping) and remove the private file, if any."""
        with self._lock:
            children = list(self._children)
        for child in children:
            child.kill()
        if self._scratch is not None:
            self._scratch.cleanup()

    def error_chart(self, run_id: str) -> str | None:
        """The run's failing units per error class as SVG (None: no unit failed), drawn once and kept."""
        made = self.unit_set(run_id)
        if made.error_chart is not None:
            return made.error_chart
        return keep_error_chart(self.verdict_table(), made)

    def unit_set(self, run_id: str) -> UnitSet:
        """The run's verdicts (counts by verdict and error class, note), waiting for them to be computed."""
        made = self._verdicts(self.run_info(run_id))
        assert made is not None  # waited for
        return made

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
        made = self._verdicts(run, wait=wait)
        per_page = max(1, min(per_page, MAX_PAGE))
        if made is None:
            note = f"computing the verdicts of {run.n_samples} samples (this page updates when they are ready)"
            return UnitPage(total=0, page=1, per_page=per_page, rows=[], verdicts={}, error_classes={}, note=note,
                            pending=True)  # fmt: skip
        page = max(1, page)
        chosen = UnitFilter(verdict=verdict, error_class=error_class, query=query)
        total, found = self.verdict_table().page(made, chosen, (page - 1) * per_page, per_page)
        return UnitPage(
            total=total,
            page=page,
            per_page=per_page,
            rows=[unit_row(u.score) for u in found],
            verdicts=made.verdicts,
            error_classes=made.error_classes,
            note=made.note,
        )

    def sample(
        self,
        run_id: str,
        sample_key: str,
        *,
        wait: bool = True,
        epoch: int | None = None,
        chosen: UnitFilter | None = None,
    ) -> dict[str, Any]:
        """One sample: its stored state, every verdict on it (with metadata, every epoch's) and one epoch's transcript.

        ``epoch`` (default 1) picks the try whose state and transcript are shown; ``prev`` and ``next`` are the
        samples beside it in the sample list under ``chosen`` (its filters). Without ``wait``, ``pending`` is
        true (and there are no verdicts yet) while the run's are computed.
        """
        run = self.run_info(run_id)
        epochs = max(1, int(run.config.get("epochs", 1) or 1))
        shown = 1 if epoch is None else epoch
        if not 1 <= shown <= epochs:
            raise UsageError(f"epoch {shown}: run {run.id} has {_epochs_text(epochs)}")
        made = self._verdicts(run, wait=wait)
        table = self.verdict_table()
        units = [u.score for u in table.of_sample(made, sample_key)] if made is not None else []
        try_key = epoch_key(sample_key, shown)
        state = self.store.sample_state(run.id, try_key)
        if state is None and not units and self.store.sample_state(run.id, sample_key) is None:
            raise UsageError(f"run {run.id} has no sample {sample_key!r}")
        prev, after = table.neighbours(made, sample_key, chosen or UnitFilter()) if made is not None else (None, None)
        transcript_note = None
        try:
            records = self.store.transcript(run.id, try_key)
        except UsageError as exc:
            records, transcript_note = [], str(exc)
        calls = [c.model_dump(mode="json") for c in records]
        panels, panels_note = self._sample_panels(run, units, made.note if made is not None else None)
        return {
            "run": run_row(run).model_dump(mode="json"),
            "sample": sample_key,
            "epoch": shown,
            "epochs": epochs,
            "prev": prev,
            "next": after,
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
            "cost_usd": _try_cost(run, records),
            "note": (made.note if made is not None else "computing the run's verdicts…") or transcript_note,
            "pending": made is None,
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
        made = self._verdicts(run)
        assert made is not None  # waited for
        if made.note is not None:  # no verdicts: nothing to build the views from
            return {"panels": [], "note": made.note}
        with self._lock:
            kept = self._panels.get((run.id, made.gen))
        if kept is not None:  # built once per verdicts and viewer process
            return kept
        try:
            panels = [shown_panel(p) for p in build(run.results, list(self.verdict_table().scores(made)))]
            shown: dict[str, Any] = {"panels": panels, "note": None}
        except Exception as exc:  # one broken view must not take the run page with it
            shown = {"panels": [], "note": f"panels failed: {redact(f'{type(exc).__name__}: {exc}')}"}
        with self._lock:
            self._panels[(run.id, made.gen)] = shown
            while len(self._panels) > CACHED_PANELS:
                self._panels.popitem(last=False)
        return shown

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
            made = self._verdicts(run)
            assert made is not None  # waited for
            if made.note is not None:
                raise UsageError(f"run {run.id}: {made.note}")
            found.append(list(self.verdict_table().scores(made)))
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

    def sweep_chart(self, sweep_id: str, benchmark: str) -> ChartSpec | None:
        """One board of a sweep's leaderboard as a chart: each model's headline metrics with their 95% intervals."""
        board = next((b for b in self.sweep(sweep_id)["boards"] if b["benchmark"] == benchmark), None)
        if board is None:
            raise UsageError(f"sweep {sweep_id} has no benchmark {benchmark!r}")
        return board_chart(board)

    def compare_chart(self, run_ids: Sequence[str]) -> ChartSpec | None:
        """The compared runs' headline metrics, each run's value with its own 95% interval (A first)."""
        from toolgauge.view.charts import IntervalPoint, interval_chart

        infos = [self.run_info(run_id) for run_id in run_ids]
        if len(infos) < 2:
            raise UsageError("compare needs two or more runs: ?run=A&run=B (the first is the baseline)")
        headline = self.benchmarks.headline(infos[0].benchmark)
        points = []
        for i, run in enumerate(infos):
            if run.results is None:
                continue
            label = f"{run_letter(i)}: {redact(run.model)} ({run.id})"
            for row in overall_rows(run.results, headline):
                if row["headline"] and isinstance(row["value"], int | float):
                    points.append(IntervalPoint(label, row["name"], row["value"], row["ci_low"], row["ci_high"]))
        return interval_chart(points, f"{infos[0].benchmark}: headline metrics, 95% intervals")

    def paper(self, name: str, refs: list[str]) -> dict[str, Any]:
        """The paper tab: benchmark ``name``'s paper blocks for the runs or sweeps ``refs`` (``toolgauge paper``)."""
        if self.benchmarks.paper is None:
            raise UsageError("this viewer cannot lay out papers")
        if not refs:
            raise UsageError("the paper tab needs runs: ?run=RUN (repeatable) or ?run=SWEEP")
        return self.benchmarks.paper(self.store, name, refs)

    def sweep(self, sweep_id: str) -> dict[str, Any]:
        """A sweep's leaderboard (per benchmark, models ranked; see :attr:`Benchmarks.leaderboard`)."""
        from toolgauge.store.sweeps import get_sweep

        if self.benchmarks.leaderboard is None:
            raise UsageError("this viewer cannot build leaderboards")
        if get_sweep(self.store, sweep_id) is None:
            raise UsageError(f"no sweep {sweep_id!r} in the store")
        return self.benchmarks.leaderboard(self.store, sweep_id)


def write_verdicts(table: VerdictTable, store: Store, benchmarks: Benchmarks, run: RunInfo, key: str) -> UnitSet:
    """Score ``run`` by its benchmark and write every unit's verdict into ``table`` as the run's set for ``key``.

    When the benchmark cannot score it (a data file moved) the samples are written from what the store keeps
    of each, with a note saying why; when scoring fails, no unit and a note. A database error is raised.
    """
    try:
        return table.write(run.id, key, benchmarks.verdicts(store, run), None, _classified)
    except SQLAlchemyError:
        raise
    except (UsageError, DataError, OSError) as exc:
        note = f"verdicts not available: {redact(str(exc))}"
        states = store.sample_states(run.id)
        units = [
            SampleScore(id=k, sample=k, error=None if s.status == "done" else (s.error or s.status))
            for k, s in sorted(states.items())
        ]
        return table.write(run.id, key, units, note, _classified)
    except Exception as exc:  # shown on the page instead of a list that never comes
        note = f"verdicts failed: {redact(f'{type(exc).__name__}: {exc}')}"
        return table.write(run.id, key, [], note, _classified)


def keep_error_chart(table: VerdictTable, made: UnitSet) -> str | None:
    """Draw the set's error classes (None when no unit failed) and keep the SVG with it."""
    from toolgauge.view.charts import error_class_chart, render_svg  # vl-convert: only when there is one to draw

    spec = error_class_chart(made.error_classes)
    if spec is None:
        return None
    svg = render_svg(spec.spec)
    if made.gen:  # a set that could not be written has no row to keep it in
        table.save_error_chart(made, svg)
    return svg


def _try_cost(run: RunInfo, records: Sequence[ModelCallRecord]) -> float | None:
    """USD of one sample try's evaluated-model calls (cached ones 0); None while the run's price is unknown."""
    price = run.results.run.unit_price if run.results is not None and run.results.run is not None else None
    if price is None:
        return None
    costs = [r.cost(price) for r in records]
    return round(sum(c for c in costs if c is not None), 8)


def run_letter(i: int) -> str:
    """A run's letter on the compare page: A (the baseline), B, C, … (then R27, R28, …), as the front end names them."""
    return chr(65 + i) if i < 26 else f"R{i + 1}"


def board_chart(board: dict[str, Any]) -> ChartSpec | None:
    """A leaderboard board (``Benchmarks.leaderboard``'s) as an interval chart, its models in their ranked order."""
    from toolgauge.view.charts import IntervalPoint, interval_chart

    points = [
        IntervalPoint(f"{i + 1}. {cell['model']}", name, stat["mean"], stat.get("ci_low"), stat.get("ci_high"))
        for i, cell in enumerate(board["cells"])
        for name in board["metrics"]
        if (stat := cell["metrics"].get(name)) is not None and isinstance(stat.get("mean"), int | float)
    ]
    return interval_chart(points, f"{board['benchmark']}: mean and 95% interval per model")


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


def _classified(score: SampleScore) -> tuple[str, str | None]:
    verdict = verdict_of(score)
    return verdict, error_class_of(score, verdict)


def _epochs_text(epochs: int) -> str:
    return "1 epoch" if epochs == 1 else f"epochs 1 to {epochs}"
