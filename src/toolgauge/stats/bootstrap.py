"""A clustered bootstrap of weighted means over repeated tries (docs/statistics.md).

The data is one ``(sum of score * weight, sum of weight)`` pair per cluster and epoch: the units of a
cluster (a WildToolBench session, a Tool-Genesis server, an MTU-Bench dialogue; by default the sample)
added up within each try. The statistic is the mean over epochs of each epoch's weighted mean
``sum(score * w) / sum(w)``. A bootstrap resample draws clusters with replacement, each drawn cluster
carrying all of its units of every epoch; the standard error is the standard deviation of the resampled
statistics and the 95% interval their 2.5th and 97.5th percentiles (Efron & Tibshirani 1993, ch. 6 and
13; clusters as in Field & Welsh 2007).

Clusters are resampled in the order of their ids (:func:`in_id_order`), never in the order the units came in
(the order samples finished, or a rescore's load order): a run's interval is a function of its verdicts and
its seed only. Within a cluster the sums are exact (:class:`ExactSum`), so they do not depend on that order
either.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

# Resamples drawn per chunk are bounded so that chunk x clusters stays near this many counts in memory (a few MB:
# the draws are the same whatever the chunk, row by row from one generator).
_CHUNK_CELLS = 200_000


@dataclass(frozen=True)
class Spread:
    """A statistic with its bootstrap standard error and interval over ``n`` clusters (None: not defined)."""

    mean: float | None
    stderr: float | None
    ci_low: float | None
    ci_high: float | None
    n: int


ClusterTotals = Sequence[Sequence[tuple[float, float]]]


def in_id_order(totals: Mapping[str, Sequence[tuple[float, float]]]) -> list[Sequence[tuple[float, float]]]:
    """Each cluster's per-epoch totals, clusters sorted by id: the one order every resample is drawn in."""
    return [totals[cluster] for cluster in sorted(totals)]


@dataclass
class ExactSum:
    """A float sum that does not depend on the order its terms are added in (it is exact until read).

    Keeps the non-overlapping partial sums of Shewchuk's algorithm, so ``value`` is the correctly rounded
    sum (``math.fsum``) of everything added, whatever the order; a plain ``+=`` differs in the last bits.
    """

    partials: list[float] = field(default_factory=list)

    def add(self, x: float) -> None:
        """Add ``x``; the partials stay exact and few (one or two for ordinary scores)."""
        kept = 0
        for y in self.partials:
            if abs(x) < abs(y):
                x, y = y, x
            high = x + y
            low = y - (high - x)
            if low:
                self.partials[kept] = low
                kept += 1
            x = high
        del self.partials[kept:]
        self.partials.append(x)

    @property
    def value(self) -> float:
        """The correctly rounded sum."""
        return math.fsum(self.partials)


def weighted_mean(units: Iterable[tuple[float, float]]) -> float | None:
    """``sum(score * w) / sum(w)`` over (score, weight) pairs; None when the weights add up to 0."""
    total = weight = 0.0
    for score, w in units:
        total += score * w
        weight += w
    return total / weight if weight > 0 else None


def epoch_mean(totals: Sequence[Sequence[tuple[float, float]]]) -> float | None:
    """The statistic: the mean over epochs of each epoch's pooled ratio over every cluster.

    ``totals[c][e]`` is cluster c's (sum of score * weight, sum of weight) in epoch e. Epochs whose
    weights add up to 0 are left out; None when every epoch is.
    """
    epochs = max((len(row) for row in totals), default=0)
    ratios: list[float] = []
    for e in range(epochs):
        ratio = _ratio(
            sum(row[e][0] for row in totals if e < len(row)), sum(row[e][1] for row in totals if e < len(row))
        )
        if ratio is not None:
            ratios.append(ratio)
    return sum(ratios) / len(ratios) if ratios else None


def _ratio(total: float, weight: float) -> float | None:
    return total / weight if weight > 0 else None


def clustered_bootstrap(
    totals: ClusterTotals | Mapping[str, Sequence[tuple[float, float]]],
    *,
    resamples: int = 2000,
    seed: int = 0,
    level: float = 0.95,
) -> Spread:
    """:func:`epoch_mean` with its clustered-bootstrap standard error and percentile interval.

    ``totals[c][e]`` is cluster c's (sum of score * weight, sum of weight) in epoch e (see the module); a
    mapping is keyed by cluster id and resampled in id order (:func:`in_id_order`), a sequence in its own
    order. Clusters whose weights are 0 in every epoch do not count. The spread needs at least 2 clusters
    (else None); the same clusters and ``seed`` give the same numbers.
    """
    import numpy as np

    rows = in_id_order(totals) if isinstance(totals, Mapping) else totals
    kept = [row for row in rows if any(w > 0 for _, w in row)]
    mean = epoch_mean(kept)
    n = len(kept)
    if mean is None or n < 2 or resamples < 2:
        return Spread(mean, None, None, None, n)
    epochs = max(len(row) for row in kept)
    sw = np.zeros((n, epochs))
    w = np.zeros((n, epochs))
    for c, row in enumerate(kept):
        for e, (s, weight) in enumerate(row):
            sw[c, e], w[c, e] = s, weight
    return _resampled(mean, sw, w, resamples=resamples, seed=seed, level=level)


def clustered_bootstrap_arrays(
    sums: np.ndarray, weights: np.ndarray, *, resamples: int = 2000, seed: int = 0, level: float = 0.95
) -> Spread:
    """:func:`clustered_bootstrap` of ``(clusters x epochs)`` arrays of the sums of score * weight and of weight.

    The same numbers as :func:`clustered_bootstrap` of the same totals as tuples (the mean is added up in
    cluster order, as :func:`epoch_mean` does), without a Python object per cluster and epoch.
    """
    kept = (weights > 0).any(axis=1)
    sums, weights = sums[kept], weights[kept]
    n, epochs = weights.shape
    ratios = [
        ratio
        for e in range(epochs)
        if (ratio := _ratio(sum(sums[:, e].tolist()), sum(weights[:, e].tolist()))) is not None
    ]
    mean = sum(ratios) / len(ratios) if ratios else None
    if mean is None or n < 2 or resamples < 2:
        return Spread(mean, None, None, None, n)
    return _resampled(mean, sums, weights, resamples=resamples, seed=seed, level=level)


def _resampled(mean: float, sw: np.ndarray, w: np.ndarray, *, resamples: int, seed: int, level: float) -> Spread:
    """The spread of ``mean`` from ``resamples`` clustered resamples of the ``(clusters x epochs)`` arrays."""
    import numpy as np

    n = sw.shape[0]
    rng = np.random.default_rng(seed)
    chunk = max(1, min(resamples, _CHUNK_CELLS // n))
    stats: list[np.ndarray] = []
    drawn = 0
    while drawn < resamples:
        size = min(chunk, resamples - drawn)
        counts = rng.multinomial(n, np.full(n, 1.0 / n), size=size).astype(float)  # clusters drawn, per resample
        num, den = counts @ sw, counts @ w
        with np.errstate(invalid="ignore", divide="ignore"):
            ratio = np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)
        present = ~np.isnan(ratio)
        # The mean over the epochs with weight in this resample (an epoch drawn with no weight is left out).
        stats.append(np.where(present, ratio, 0.0).sum(axis=1) / np.maximum(present.sum(axis=1), 1))
        drawn += size
    values = np.concatenate(stats)
    tail = (1.0 - level) / 2 * 100
    low, high = np.percentile(values, [tail, 100 - tail])
    return Spread(mean, float(np.std(values, ddof=1)), float(low), float(high), n)
