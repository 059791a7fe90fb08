"""Combining epochs from flat per-cluster arrays gives the numbers of exact per-cluster sums by id, bit for bit."""

from __future__ import annotations

import random

import numpy as np
import pytest

from toolgauge.results import EvalResults, Metric, MetricSummary, SampleScore, ScoredRun
from toolgauge.stats import aggregate_epochs, clustered_bootstrap, pass_rates, successes_by_sample
from toolgauge.stats.bootstrap import ExactSum, clustered_bootstrap_arrays
from toolgauge.stats.unit_totals import UnitTotals, number

NAMES = ("acc", "param", "missing")


def _units(rng: random.Random, epoch: int) -> list[SampleScore]:
    """Units of many clusters in a shuffled order: some without a score, a value or a weight, some weighted 0."""
    units = []
    for sample in rng.sample(range(40), 30):
        for turn in range(rng.randint(1, 3)):
            scores: dict[str, float | int | bool | str | None] = {}
            if rng.random() < 0.8:
                scores["acc"] = rng.choice([0.0, 1.0, True, False, 0.5])
            if rng.random() < 0.6:
                scores["param"] = rng.random()
            if rng.random() < 0.1:
                scores["param"] = "n/a"
            weights = {"param": rng.choice([0.0, 1.0, 3.0])} if rng.random() < 0.5 else {}
            value = rng.choice([None, 0.0, 1.0, 1.0 - 1e-7])
            cluster = f"c{sample // 3}" if rng.random() < 0.7 else None
            units.append(SampleScore(id=f"s{sample}#{turn}", sample=f"s{sample}", value=value, scores=scores,
                                     weights=weights, cluster=cluster, epoch=epoch))  # fmt: skip
    return units


def _reference(per_epoch: list[list[SampleScore]], names: tuple[str, ...]) -> dict[str, object]:
    """The nested aggregation the flat arrays replace: exact sums per cluster, clusters and samples by id."""
    epochs = len(per_epoch)
    totals: dict[str, dict[str, list[tuple[ExactSum, ExactSum]]]] = {name: {} for name in names}
    clusters: set[str] = set()
    verdicts: list[tuple[str, int, float | None]] = []
    for e, units in enumerate(per_epoch, start=1):
        for unit in units:
            cluster = unit.cluster if unit.cluster is not None else unit.sample
            clusters.add(cluster)
            verdicts.append((unit.sample, e, unit.value))
            for name in names:
                score = number(unit.scores.get(name))
                if score is None:
                    continue
                weight = float(unit.weights.get(name, 1.0))
                row = totals[name].setdefault(cluster, [(ExactSum(), ExactSum()) for _ in range(epochs)])
                row[e - 1][0].add(score * weight)
                row[e - 1][1].add(weight)
    spreads = {
        name: clustered_bootstrap(
            {cluster: [(s.value, w.value) for s, w in row] for cluster, row in totals[name].items()},
            resamples=300,
            seed=3,
        )
        for name in names
        if totals[name]
    }
    by_sample = successes_by_sample(verdicts)
    at, hat = pass_rates([by_sample[sample] for sample in sorted(by_sample)], epochs)
    return {"spreads": spreads, "clusters": len(clusters), "at": at, "hat": hat}


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("epochs", [1, 3])
def test_flat_totals_give_the_nested_lists_numbers(seed: int, epochs: int) -> None:
    rng = random.Random(seed)
    per_epoch = [_units(rng, e) for e in range(1, epochs + 1)]
    totals = UnitTotals(NAMES, epochs)
    for e, units in enumerate(per_epoch, start=1):
        for unit in units:
            totals.add(unit, e)
    expected = _reference(per_epoch, NAMES)
    spreads = {
        name: clustered_bootstrap_arrays(*totals.cluster_totals(name), resamples=300, seed=3)
        for name in NAMES
        if totals.scored(name)
    }
    assert spreads == expected["spreads"]  # the same floats: == on the dataclasses, no tolerance
    assert not totals.scored("missing") and "missing" not in spreads
    assert totals.clusters == expected["clusters"]
    assert pass_rates(totals.tries(), epochs) == (expected["at"], expected["hat"])


def test_aggregate_epochs_summary_matches_the_nested_lists() -> None:
    rng = random.Random(11)
    per_epoch = [_units(rng, e) for e in (1, 2)]
    results = EvalResults(benchmark="t", metrics=[Metric(name="acc", value=0.5)])
    runs = [ScoredRun(results, units) for units in per_epoch]
    combined = aggregate_epochs(runs, ("acc", "param"), resamples=300, seed=3)
    expected = _reference(per_epoch, ("acc", "param"))
    for name in ("acc", "param"):
        spread = expected["spreads"][name]  # type: ignore[index]
        assert combined.results.summary[name] == MetricSummary(
            mean=spread.mean, stderr=spread.stderr, ci_low=spread.ci_low, ci_high=spread.ci_high, n=spread.n, epochs=2
        )
    assert (combined.results.pass_at_k, combined.results.pass_hat_k) == (expected["at"], expected["hat"])


def test_bootstrap_of_arrays_equals_the_bootstrap_of_tuples() -> None:
    rng = random.Random(5)
    rows = [[(rng.random() * 3, rng.choice([0.0, 1.0, 3.0])) for _ in range(2)] for _ in range(50)]
    sums = np.array([[s for s, _ in row] for row in rows])
    weights = np.array([[w for _, w in row] for row in rows])
    assert clustered_bootstrap_arrays(sums, weights, resamples=500, seed=9) == clustered_bootstrap(
        rows, resamples=500, seed=9
    )
    one = clustered_bootstrap_arrays(sums[:1], weights[:1])
    assert one == clustered_bootstrap(rows[:1]) and one.stderr is None
