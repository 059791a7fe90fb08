"""The check that a benchmark's overall headline metrics are weighted means of its per-unit scores.

For each headline metric ``m``: ``sum(scores[m] * w) / sum(w)``, ``w = weights.get(m, 1.0)``, over the
units that have ``m`` in ``scores`` (what the epochs aggregator and ``toolgauge compare`` compute), must equal
the run's overall value of ``m`` to 1e-12, and the units that have ``m`` must be as many as the
metric's ``n``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from toolgauge.results import EvalResults, SampleScore

TOLERANCE = 1e-12


def unit_mean(samples: Iterable[SampleScore], metric: str) -> float | None:
    """The weighted mean of ``metric`` over the units that have it (None when their weights add up to 0)."""
    products: list[float] = []
    weights: list[float] = []
    for sample in samples:
        if metric not in sample.scores:
            continue
        value = sample.scores[metric]
        assert isinstance(value, int | float) and not isinstance(value, bool), (sample.id, metric, value)
        weight = sample.weights.get(metric, 1.0)
        products.append(value * weight)
        weights.append(weight)
    total = math.fsum(weights)
    return math.fsum(products) / total if total else None


def assert_headline_reproduced(results: EvalResults, samples: Sequence[SampleScore], headline: Sequence[str]) -> None:
    """Every headline metric of ``results`` (overall) equals its weighted mean over ``samples`` to 1e-12."""
    assert headline, "the benchmark names no headline metric"
    for metric in headline:
        reported = results.metric(metric)
        assert reported is not None, f"{metric}: no overall metric of that name"
        recomputed = unit_mean(samples, metric)
        if reported.value is None:
            assert recomputed is None, (metric, recomputed)
            continue
        assert recomputed is not None, f"{metric}: no unit carries it, but the run reports {reported.value}"
        assert abs(recomputed - reported.value) <= TOLERANCE, (metric, recomputed, reported.value)
        if reported.n is not None:  # the units that carry the metric are the ones it is over
            assert sum(1 for s in samples if metric in s.scores) == reported.n, metric
