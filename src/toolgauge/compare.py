"""Compare two stored runs of one benchmark on the units they share (``toolgauge compare``, the sweep).

Each run's per-unit scores (:class:`~toolgauge.results.SampleScore`) are read by scoring its stored
outputs again (no model call, as ``toolgauge rescore``). Units are paired by ``id``; a unit scored in
several epochs is first averaged over them. For each metric ``m`` the units that have ``m`` in both
runs are compared with :func:`toolgauge.stats.paired.compare_paired`: both weighted means, B - A, its
95% interval (bootstrap over clusters) and a paired test. Units that only one run has are counted,
not dropped silently; units whose ``value`` went from 0 to 1 or from 1 to 0 are listed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from toolgauge.errors import UsageError
from toolgauge.provenance_diff import provenance_differences
from toolgauge.results import Provenance, SampleScore
from toolgauge.stats.paired import MetricComparison, PairedUnit, compare_paired

if TYPE_CHECKING:
    from toolgauge.store.store import RunInfo, Store

# A stored run's headline metric names and its per-unit scores, scored again (``toolgauge.api.stored_units``).
# Passed in: scoring a run needs its benchmark, which the core reaches only through the callers (the CLI, the API).
UnitSource = Callable[["Store", "RunInfo"], tuple[tuple[str, ...], list[SampleScore]]]


class Flipped(BaseModel):
    """Units whose ``value`` went from fail (0) to pass (1), and from pass to fail, in A's order."""

    to_pass: list[str] = Field(default_factory=list)
    to_fail: list[str] = Field(default_factory=list)


class RunComparison(BaseModel):
    """Run B against run A (``toolgauge compare A B --json``)."""

    a: str
    b: str
    benchmark: str
    metrics: dict[str, MetricComparison]
    flipped: Flipped
    only_in_a: int
    only_in_b: int
    # One line per way the runs were made differently (toolgauge/provenance_diff.py): said before the numbers.
    warnings: list[str] = Field(default_factory=list)


@dataclass
class Unit:
    """One unit of one run, averaged over its epochs: its cluster, value, and per-metric scores and weights."""

    cluster: str
    value: float | None
    scores: dict[str, float] = field(default_factory=dict)
    weights: dict[str, float] = field(default_factory=dict)


def units_by_id(samples: Iterable[SampleScore]) -> dict[str, Unit]:
    """The units of a run by id, in first-seen order; each numeric score is averaged over the unit's epochs.

    A metric counts for a unit when ``scores[m]`` is a number (bools as 0/1; None and text are not
    scores); its weight is the first epoch's (the weights of a unit do not change between epochs).
    """
    sums: dict[str, dict[str, list[float]]] = {}
    values: dict[str, list[float]] = {}
    units: dict[str, Unit] = {}
    for sample in samples:
        unit = units.get(sample.id)
        if unit is None:
            unit = units[sample.id] = Unit(cluster=sample.cluster or sample.sample, value=None)
            sums[sample.id] = {}
            values[sample.id] = []
        if sample.value is not None:
            values[sample.id].append(float(sample.value))
        for name, score in sample.scores.items():
            if isinstance(score, int | float):  # bool is an int: a pass/fail score
                sums[sample.id].setdefault(name, []).append(float(score))
                unit.weights.setdefault(name, sample.weights.get(name, 1.0))
    for key, unit in units.items():
        unit.scores = {name: sum(got) / len(got) for name, got in sums[key].items()}
        unit.value = sum(values[key]) / len(values[key]) if values[key] else None
    return units


def compare_units(
    a: dict[str, Unit], b: dict[str, Unit], metric: str, *, seed: int = 0, resamples: int = 2000
) -> MetricComparison:
    """``metric`` compared on the units that have it in both runs (A's cluster and weight)."""
    paired = [
        PairedUnit(id=key, cluster=unit.cluster, a=unit.scores[metric], b=b[key].scores[metric],
                   weight=unit.weights.get(metric, 1.0))
        for key, unit in a.items()
        if metric in unit.scores and key in b and metric in b[key].scores
    ]  # fmt: skip
    result = compare_paired(paired, seed=seed, resamples=resamples)
    return MetricComparison(**result.model_dump(include=set(MetricComparison.model_fields)))


def flipped_units(a: dict[str, Unit], b: dict[str, Unit]) -> Flipped:
    """The shared units whose ``value`` is 0 or 1 in both runs and differs, in A's order."""
    flipped = Flipped()
    for key, unit in a.items():
        other = b.get(key)
        if other is None or unit.value not in (0.0, 1.0) or other.value not in (0.0, 1.0):
            continue
        if unit.value == 0.0 and other.value == 1.0:
            flipped.to_pass.append(key)
        elif unit.value == 1.0 and other.value == 0.0:
            flipped.to_fail.append(key)
    return flipped


def compare_scores(
    run_a: str,
    run_b: str,
    benchmark: str,
    samples_a: Iterable[SampleScore],
    samples_b: Iterable[SampleScore],
    metrics: Sequence[str],
    *,
    seed: int = 0,
    resamples: int = 2000,
    required: bool = True,
) -> RunComparison:
    """Compare two runs' per-unit scores on ``metrics`` (pure).

    With ``required`` False (the benchmark's own headline), a metric no unit carries (MTU-Bench's
    dialogue metrics on single-turn splits) is compared on no unit: ``n`` 0 and every number None.

    Raises:
        UsageError: with ``required``, a metric is a per-unit score of neither run.
    """
    a, b = units_by_id(samples_a), units_by_id(samples_b)
    known = sorted({name for unit in (*a.values(), *b.values()) for name in unit.scores})
    for metric in metrics:
        if required and metric not in known:
            raise UsageError(f"metric {metric!r} is not a per-unit score of these runs (they have: {', '.join(known)})")
    return RunComparison(
        a=run_a,
        b=run_b,
        benchmark=benchmark,
        metrics={m: compare_units(a, b, m, seed=seed, resamples=resamples) for m in metrics},
        flipped=flipped_units(a, b),
        only_in_a=sum(1 for key in a if key not in b),
        only_in_b=sum(1 for key in b if key not in a),
    )


def compare_runs(
    store: Store,
    run_a: str,
    run_b: str,
    metrics: Sequence[str] | None = None,
    *,
    units: UnitSource,
    seed: int = 0,
) -> RunComparison:
    """Compare stored run B with run A (ids, unique prefixes or ``latest``) on ``metrics``.

    ``metrics`` defaults to the benchmark's headline metrics (``BenchmarkSpec.headline``). Both runs are
    scored again from their stored outputs (their data files must still be where they were); nothing is
    written.

    Raises:
        UsageError: a run is unknown, cannot be rescored, the runs are of different benchmarks, or a
            metric is a per-unit score of neither run.
    """
    return compare_many(store, [run_a, run_b], metrics, units=units, seed=seed)[0]


def compare_many(
    store: Store, runs: Sequence[str], metrics: Sequence[str] | None = None, *, units: UnitSource, seed: int = 0
) -> list[RunComparison]:
    """Compare each stored run after the first with the first (``toolgauge compare A B C``), as :func:`compare_runs`.

    Every run is scored again once. Raises ``UsageError`` as :func:`compare_runs` does (the first run of
    another benchmark than A's is named).
    """
    ids = [store.resolve_run_id(ref) for ref in runs]
    infos = [store.get_run(run_id) for run_id in ids]
    found: list[RunInfo] = []
    for ref, info in zip(runs, infos, strict=True):
        if info is None:
            raise UsageError(f"no run {ref!r} in the store (see: toolgauge runs)")
        found.append(info)
    first = found[0]
    require_one_benchmark(found)
    headline, samples_a = units(store, first)
    named = bool(metrics)
    chosen = list(metrics) if metrics else list(headline)
    comparisons = []
    for info in found[1:]:
        _, samples_b = units(store, info)
        comparison = compare_scores(
            first.id, info.id, first.benchmark, samples_a, samples_b, chosen, seed=seed, required=named
        )
        comparison.warnings = provenance_differences(_provenance(first), _provenance(info))
        comparisons.append(comparison)
    return comparisons


def _provenance(run: RunInfo) -> Provenance | None:
    return run.results.provenance if run.results is not None else None


def require_one_benchmark(runs: Sequence[RunInfo]) -> None:
    """Raise ``UsageError`` naming the first run of another benchmark than the first run's."""
    first = runs[0]
    for info in runs[1:]:
        if info.benchmark != first.benchmark:
            raise UsageError(
                f"run {first.id} is {first.benchmark} and run {info.id} is {info.benchmark}: "
                "compare runs of the same benchmark"
            )
