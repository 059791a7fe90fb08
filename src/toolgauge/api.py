"""The Python API: evaluate a benchmark, score recorded outputs, read and rescore stored runs.

Every function has a synchronous form and an ``_async`` twin. The synchronous forms work inside a
running event loop too (a Jupyter notebook): the run then goes on in a worker thread with its own
loop. Paths may be ``str`` or :class:`~pathlib.Path` everywhere. Bad input raises
:class:`toolgauge.errors.DataError` or :class:`toolgauge.errors.UsageError` before anything is stored.
The package exports its public names (``toolgauge.__all__``, imported on first use).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from toolgauge.benchmark import (
    Benchmark,
    BenchmarkSpec,
    build_from,
    rebuild,
    rescorable,
    variants_text,
)
from toolgauge.bounds import OptionOutOfBounds
from toolgauge.driver import RunResult, run_benchmark
from toolgauge.engine import stored_outcomes
from toolgauge.errors import MissingDataPath, UsageError
from toolgauge.models.base import ModelClient
from toolgauge.models.spec import display_spec, resolve_model
from toolgauge.options import EngineOptions, check_options, validated
from toolgauge.results import EvalResults, SampleScore, ScoredRun
from toolgauge.run_setup import PreparedRun, prepare_run, run_options
from toolgauge.stats.epochs import aggregate_epochs
from toolgauge.store import open_store

if TYPE_CHECKING:
    from toolgauge.compare import RunComparison
    from toolgauge.store.store import RunInfo, Store

T = TypeVar("T")
P = ParamSpec("P")


@dataclass(frozen=True)
class Evaluation:
    """A finished run: its id, its typed results and (when asked for) every per-unit score."""

    run_id: str
    results: EvalResults
    samples: list[SampleScore] = field(default_factory=list)


@dataclass(frozen=True)
class StoredRun:
    """A run as the store keeps it."""

    id: str
    benchmark: str
    model: str
    status: str
    config: dict[str, Any]
    results: EvalResults | None


def benchmark_names() -> list[str]:
    """The names of the registered benchmarks (what ``evaluate`` takes)."""
    from toolgauge.benchmarks.registry import specs

    return [s.name for s in specs()]


def _spec(name: str) -> BenchmarkSpec:
    from toolgauge.benchmarks.registry import spec_named

    spec = spec_named(name)
    if spec is None:
        raise UsageError(f"unknown benchmark {name!r} (known: {', '.join(benchmark_names())})")
    return spec


def _synchronous(fn: Callable[P, Coroutine[Any, Any, T]]) -> Callable[P, T]:
    """The synchronous form of an API coroutine; it also works inside a running event loop (a notebook)."""

    @functools.wraps(fn)
    def run(*args: P.args, **kwargs: P.kwargs) -> T:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(fn(*args, **kwargs))
        # A loop is running in this thread: run ours in a thread of its own.
        with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
            return pool.submit(asyncio.run, fn(*args, **kwargs)).result()

    run.__name__ = run.__qualname__ = fn.__name__.removesuffix("_async")
    return run


async def evaluate_async(
    benchmark: str | Benchmark[Any, Any],
    model: str | ModelClient,
    *,
    store: str | Path | None = None,
    concurrency: int = 4,
    timeout: float = 120.0,
    max_retries: int = 4,
    use_cache: bool = True,
    resume: str | None = None,
    keep_samples: bool = False,
    roles: Mapping[str, ModelClient] | None = None,
    epochs: int = 1,
    **options: Any,
) -> Evaluation:
    """Run ``model`` on a benchmark, score it and store the run.

    Args:
        benchmark: A registered name (``"suite"``, ``"mtu-bench"``, ``"bfcl"``, ``"wildtoolbench"``,
            ``"tool-genesis"``) or a benchmark object you built.
        model: A model spec as on the command line (``"gold"``, ``"local"``, ``"replay:PATH"``,
            ``"http://127.0.0.1:8000/v1#qwen"``, ``"openai:gpt-4o"``) or a client object.
        store: SQLAlchemy URL or SQLite file of the store (default: as the CLI).
        concurrency: Samples run at once.
        timeout: Seconds per model request.
        max_retries: Retries on 429/5xx/timeouts.
        use_cache: Serve repeated requests from the response cache.
        resume: Continue an interrupted run by id.
        keep_samples: Also return every per-unit score (one per turn, task or server).
        roles: Extra clients by role (Tool-Genesis's ``agent`` and ``judge``).
        epochs: Tries of every sample (1 to ``toolgauge.bounds.MAX_EPOCHS``). The results' metrics are means
            over epochs and ``summary`` / ``pass_at_k`` / ``pass_hat_k`` hold the spread (docs/statistics.md).
        **options: The benchmark's own options, named as its ``eval`` command's options with ``-``
            as ``_`` (``data``, ``limit``, ``variant``, ``splits``, ``categories``, ``temperature``, ``top_p``,
            ...): the fields of its options model (``BenchmarkSpec.options``; docs/api.md lists them), which
            checks them. A misspelt name, a wrong type or a value out of bounds is a ``UsageError``.

    Raises:
        UsageError: a bad option (one line naming it), or a benchmark that cannot repeat samples given ``epochs``.
        DataError: a data file is missing or malformed.

    Returns:
        The run id, its results and (with ``keep_samples``) the per-unit scores.
    """
    engine = validated(EngineOptions, {"concurrency": concurrency, "timeout": timeout, "max_retries": max_retries,
                                       "no_cache": not use_cache, "resume": resume, "epochs": epochs})  # fmt: skip
    spec = _spec(benchmark) if isinstance(benchmark, str) else None
    if spec is not None and epochs > 1 and not spec.repeatable:
        raise UsageError(f"{benchmark} runs cannot repeat samples yet (epochs={epochs}); use epochs=1")
    if spec is not None:  # the options model checks every option
        prepared = prepare_run(spec, validated(spec.options, options), model, engine=engine, store=store_url(store),
                               roles=roles)  # fmt: skip
    else:
        assert not isinstance(benchmark, str)
        prepared = _prepare_built(benchmark, model, engine, store, roles, options)
    kept: list[SampleScore] = []

    def collect(result: RunResult[Any]) -> None:
        # The per-unit scores read the stored outputs: collect them while the store is open.
        if keep_samples:
            kept.extend(result.scored.iter_samples())

    result = await run_benchmark(prepared.bench, prepared.model, prepared.options, client=prepared.client,
                                 roles=prepared.roles, on_scored=collect)  # fmt: skip
    return Evaluation(result.run_id, result.scored.results, kept)


def _prepare_built(
    bench: Benchmark[Any, Any],
    model: str | ModelClient,
    engine: EngineOptions,
    store: str | Path | None,
    roles: Mapping[str, ModelClient] | None,
    options: dict[str, Any],
) -> PreparedRun:
    """A run of a benchmark object built by the caller (``options``: its sampling options, for the provenance)."""
    from toolgauge.benchmarks.registry import spec_for_run

    try:  # the bounds eval's options and a sweep file's keys have (toolgauge.options.check_options)
        check_options(options)
    except OptionOutOfBounds as exc:
        raise UsageError(f"{exc.name}: {exc.problem}") from None
    if isinstance(model, str):
        shown = display_spec(model)
        client = resolve_model(model, replay_loader=bench.replay_table, timeout=engine.timeout)
    else:
        shown, client = model.name, model
    run = run_options(spec_for_run(bench.name), options, engine, store=store_url(store))
    return PreparedRun(bench, shown, client, dict(roles or {}), run)


async def score_async(
    benchmark: str | Benchmark[Any, Any],
    predictions: str | Path,
    *,
    store: str | Path | None = None,
    keep_samples: bool = False,
    **options: Any,
) -> Evaluation:
    """Score recorded model outputs (the files ``toolgauge score <benchmark> --predictions`` reads).

    No model is asked: the recorded outputs are replayed through the benchmark's own protocol and
    scored with its metrics. ``options`` are the benchmark's options, as for :func:`evaluate`.
    """
    if isinstance(benchmark, str):
        spec = _spec(benchmark)
        if spec.score is not None:  # the score options model checks every option
            scoring = validated(spec.score.options, {**options, "predictions": predictions})
            recorded = spec.score.run(scoring)
            return await evaluate_async(
                recorded.bench, recorded.client, store=store, concurrency=64, timeout=60.0, max_retries=0,
                use_cache=False, keep_samples=keep_samples,
            )  # fmt: skip
        benchmark = build_from(spec, options)
    return await evaluate_async(
        benchmark, f"replay:{Path(predictions)}", store=store, concurrency=64, timeout=60.0, max_retries=0,
        use_cache=False, keep_samples=keep_samples,
    )  # fmt: skip


evaluate = _synchronous(evaluate_async)
score = _synchronous(score_async)


def read_run(run_id: str, *, store: str | Path | None = None) -> StoredRun:
    """Read one stored run (``run_id`` may be a unique prefix or ``"latest"``)."""
    st = open_store(store_url(store), create=False)
    try:
        run = st.get_run(st.resolve_run_id(run_id))
    finally:
        st.close()
    if run is None:
        raise UsageError(f"no run {run_id!r} in the store")
    return StoredRun(run.id, run.benchmark, run.model, run.status, run.config, run.results)


def list_runs(*, store: str | Path | None = None, limit: int = 50) -> list[StoredRun]:
    """The most recent runs, newest first."""
    st = open_store(store_url(store), create=False)
    try:
        return [StoredRun(r.id, r.benchmark, r.model, r.status, r.config, r.results) for r in st.list_runs(limit)]
    finally:
        st.close()


def rescore(
    run_id: str, *, variant: str | None = None, store: str | Path | None = None, keep_samples: bool = False
) -> Evaluation:
    """Score a stored run again from its stored outputs (no model call), e.g. with another metric variant."""
    st = open_store(store_url(store), create=False)
    try:
        run = st.get_run(st.resolve_run_id(run_id))
        if run is None:
            raise UsageError(f"no run {run_id!r} in the store")
        scored = stored_scores(st, run, variant)
        return Evaluation(run.id, scored.results, list(scored.iter_samples()) if keep_samples else [])
    finally:
        st.close()


def stored_scores(st: Store, run: RunInfo, variant: str | None = None) -> ScoredRun:
    """A stored run scored again by its benchmark from the stored outputs, every epoch combined (no model call).

    The one way ``rescore``, ``compare``, ``export`` and the viewer read a run's per-unit verdicts; the data
    files the run was made from must still be there.

    Raises:
        UsageError: the run's benchmark cannot be rescored from the store, or has no such variant.
    """
    from toolgauge.benchmarks.registry import spec_for_run

    spec = spec_for_run(run.benchmark)
    if spec is None or not rescorable(spec):
        raise UsageError(f"run {run.id} ({run.benchmark}) cannot be rescored from the store")
    if variant is not None and variant not in spec.variants:
        raise UsageError(f"variant {variant!r}: {variants_text(spec)}")
    try:
        bench = rebuild(spec, run.config, variant)
    except MissingDataPath as exc:  # no --data was given here: say whose data it is
        raise UsageError(f"run {run.id} was made from {exc.path}, which is gone: no such file or folder") from None
    pairs = bench.samples()
    epochs = int(run.config.get("epochs", 1))
    outcomes = stored_outcomes(st, run.id, [k for k, _ in pairs], bench.result_type, epochs=epochs)
    per_epoch = [bench.score(pairs, outcomes.of_epoch(e)) for e in range(1, epochs + 1)]
    stored = run.results.provenance if run.results is not None else None
    scored = aggregate_epochs(per_epoch, spec.headline, seed=stored.seed if stored is not None else 0)
    scored.results.run = run.results.run if run.results is not None else None
    scored.results.provenance = stored
    return scored


def headline_of(run_name: str) -> tuple[str, ...]:
    """The headline metric names of the benchmark whose runs are stored as ``run_name`` (none if unknown)."""
    from toolgauge.benchmarks.registry import spec_for_run

    spec = spec_for_run(run_name)
    return tuple(spec.headline) if spec is not None else ()


def stored_units(st: Store, run: RunInfo) -> tuple[tuple[str, ...], list[SampleScore]]:
    """A stored run's benchmark headline metric names and its per-unit scores (every epoch's), scored again."""
    return headline_of(run.benchmark), list(stored_scores(st, run).iter_samples())


def compare(
    run_a: str, run_b: str, *, store: str | Path | None = None, metrics: Sequence[str] | None = None, seed: int = 0
) -> RunComparison:
    """Compare stored run B with run A on the units both scored (``toolgauge compare``; docs/compare.md).

    ``metrics`` defaults to the benchmark's headline metrics. Returns, per metric, both means, B - A, its
    95% interval and a paired test, with the units that flipped and those only one run has.
    """
    from toolgauge.compare import compare_runs

    st = open_store(store_url(store), create=False)
    try:
        return compare_runs(st, run_a, run_b, metrics, units=stored_units, seed=seed)
    finally:
        st.close()


def store_url(store: str | Path | None) -> str | None:
    """A store argument as a URL: a path (or a string without ``://``) is a SQLite file."""
    if store is None:
        return None
    text = str(store)
    return text if "://" in text else f"sqlite:///{Path(text).resolve()}"
