"""Paired comparison of two runs on the same units: the difference, its interval and a paired test.

A metric over units is the weighted mean ``sum(score * w) / sum(w)`` (see
:class:`toolgauge.results.SampleScore`). Two runs are compared on the units both have, each unit
with its score under A and under B:

- the difference is ``mean_B - mean_A``;
- its 95% interval is a percentile bootstrap that resamples clusters (a dialogue, a session, a
  server) with replacement and keeps each cluster's A and B units together (the pairing);
- the test is McNemar's when the metric is pass/fail on independent units (every score 0 or 1,
  every weight equal, one unit per cluster): the exact two-sided binomial test on the discordant
  pairs when there are fewer than 25 of them, else the chi-square test with continuity correction.
  Otherwise it is the paired bootstrap test: the share of resampled differences at least as far
  from the observed one as the observed one is from 0 (the bootstrap distribution shifted to the
  null), ``(1 + count) / (1 + resamples)``.

Everything here is pure: numbers in, numbers out, seeded.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

import numpy as np
from pydantic import BaseModel

PairedTest = Literal["mcnemar_exact", "mcnemar_chi2", "paired_bootstrap"]
# McNemar: below this many discordant pairs the exact binomial test, from it on the chi-square.
EXACT_BELOW = 25
RESAMPLES = 2000
ALPHA = 0.05


class PairedUnit(BaseModel):
    """One unit scored in both runs: its id, the cluster it is resampled with, both scores, its weight."""

    id: str
    cluster: str
    a: float
    b: float
    weight: float = 1.0


class MetricComparison(BaseModel):
    """One metric of two runs on their paired units (``toolgauge compare --json``'s ``metrics[NAME]``).

    ``a`` / ``b``: the weighted means over the ``n`` paired units; ``diff = b - a``; ``ci_low`` /
    ``ci_high`` its 95% interval; ``test``: ``mcnemar_exact``, ``mcnemar_chi2`` or
    ``paired_bootstrap``; ``significant``: ``p_value < 0.05``. With no paired unit every number is None.
    """

    a: float | None
    b: float | None
    diff: float | None
    ci_low: float | None
    ci_high: float | None
    test: PairedTest | None
    p_value: float | None
    significant: bool
    n: int


class PairedResult(MetricComparison):
    """A :class:`MetricComparison` with the number of ``clusters`` and the flips behind it.

    ``to_pass`` / ``to_fail`` count the units that went from 0 to 1 / from 1 to 0 (pass/fail metrics).
    """

    clusters: int
    to_pass: int = 0
    to_fail: int = 0


def weighted_mean(scores: Sequence[float], weights: Sequence[float]) -> float | None:
    """``sum(score * w) / sum(w)``; None when the weights add up to 0 (no unit)."""
    total = math.fsum(weights)
    if total == 0:
        return None
    return math.fsum(s * w for s, w in zip(scores, weights, strict=True)) / total


def mcnemar(to_fail: int, to_pass: int) -> tuple[PairedTest, float]:
    """McNemar's test on the discordant pairs: (which form, two-sided p-value).

    ``to_fail`` units passed under A and failed under B, ``to_pass`` the reverse. With ``n`` =
    ``to_fail + to_pass`` < :data:`EXACT_BELOW`: the exact binomial test of ``min`` out of ``n`` at
    1/2, ``p = min(1, 2 * P(X <= min))`` (no discordant pair: p = 1). Otherwise the chi-square
    statistic with continuity correction ``(|to_fail - to_pass| - 1)^2 / n`` on 1 degree of freedom,
    ``p = erfc(sqrt(chi2 / 2))``.

    Raises:
        ValueError: a count is negative.
    """
    if to_fail < 0 or to_pass < 0:
        raise ValueError(f"discordant counts must be >= 0, got {to_fail} and {to_pass}")
    n = to_fail + to_pass
    if n < EXACT_BELOW:
        if n == 0:
            return "mcnemar_exact", 1.0
        low = min(to_fail, to_pass)
        tail = sum(math.comb(n, k) for k in range(low + 1)) / 2**n
        return "mcnemar_exact", min(1.0, 2 * tail)
    chi2 = (abs(to_fail - to_pass) - 1) ** 2 / n
    return "mcnemar_chi2", math.erfc(math.sqrt(chi2 / 2))


def cluster_sums(units: Sequence[PairedUnit]) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
    """Per cluster, in sorted cluster order: the ids, ``sum(w * a)``, ``sum(w * b)`` and ``sum(w)``.

    Sorting (the clusters, and the units by id within them) makes the resamples depend on the units only,
    not on the order they came in or on which run is A.
    """
    index: dict[str, int] = {name: i for i, name in enumerate(sorted({u.cluster for u in units}))}
    sum_a = np.zeros(len(index))
    sum_b = np.zeros(len(index))
    sum_w = np.zeros(len(index))
    for unit in sorted(units, key=lambda u: (u.cluster, u.id)):
        i = index[unit.cluster]
        sum_a[i] += unit.weight * unit.a
        sum_b[i] += unit.weight * unit.b
        sum_w[i] += unit.weight
    return list(index), sum_a, sum_b, sum_w


def bootstrap_differences(units: Sequence[PairedUnit], *, resamples: int = RESAMPLES, seed: int = 0) -> np.ndarray:
    """``mean_B - mean_A`` of each of ``resamples`` cluster resamples (the pairs stay together).

    Each resample draws as many clusters as there are, with replacement (multinomial counts); a
    resample whose weights add up to 0 is dropped.
    """
    _, sum_a, sum_b, sum_w = cluster_sums(units)
    rng = np.random.default_rng(seed)
    counts = rng.multinomial(len(sum_w), np.full(len(sum_w), 1 / len(sum_w)), size=resamples).astype(float)
    weight = counts @ sum_w
    keep = weight > 0
    diff: np.ndarray = (counts[keep] @ sum_b - counts[keep] @ sum_a) / weight[keep]
    return diff


def is_pass_fail(units: Sequence[PairedUnit]) -> bool:
    """Whether McNemar applies: every score 0 or 1, every weight equal, one unit per cluster."""
    return (
        all(u.a in (0.0, 1.0) and u.b in (0.0, 1.0) for u in units)
        and len({u.weight for u in units}) <= 1
        and len({u.cluster for u in units}) == len(units)
    )


def compare_paired(
    units: Sequence[PairedUnit], *, resamples: int = RESAMPLES, seed: int = 0, alpha: float = ALPHA
) -> PairedResult:
    """Compare runs A and B on ``units``: both means, B - A, its ``1 - alpha`` interval and the paired test.

    The interval is the percentile interval of :func:`bootstrap_differences`; the test is McNemar's
    when :func:`is_pass_fail`, else the paired bootstrap test (see the module docstring).
    ``significant`` is ``p < alpha``.
    """
    weights = [u.weight for u in units]
    mean_a = weighted_mean([u.a for u in units], weights) if units else None
    mean_b = weighted_mean([u.b for u in units], weights) if units else None
    to_pass = sum(1 for u in units if u.a == 0.0 and u.b == 1.0)
    to_fail = sum(1 for u in units if u.a == 1.0 and u.b == 0.0)
    clusters = len({u.cluster for u in units})
    if mean_a is None or mean_b is None:
        return PairedResult(a=None, b=None, diff=None, ci_low=None, ci_high=None, test=None, p_value=None,
                            significant=False, n=len(units), clusters=clusters)  # fmt: skip
    diff = mean_b - mean_a
    resampled = bootstrap_differences(units, resamples=resamples, seed=seed)
    if len(resampled):
        low, high = (float(x) for x in np.quantile(resampled, [alpha / 2, 1 - alpha / 2]))
    else:
        low = high = diff
    test: PairedTest
    if is_pass_fail(units):
        test, p = mcnemar(to_fail, to_pass)
    else:
        test = "paired_bootstrap"
        p = bootstrap_p_value(diff, resampled)
    return PairedResult(a=mean_a, b=mean_b, diff=diff, ci_low=min(low, high), ci_high=max(low, high), test=test,
                        p_value=p, significant=p < alpha, n=len(units), clusters=clusters,
                        to_pass=to_pass, to_fail=to_fail)  # fmt: skip


def bootstrap_p_value(observed: float, resampled: np.ndarray) -> float:
    """Two-sided paired bootstrap p-value: ``(1 + #{|d* - d| >= |d|}) / (1 + resamples)``; 1 when d is 0."""
    if observed == 0:
        return 1.0
    extreme = int(np.count_nonzero(np.abs(resampled - observed) >= abs(observed)))
    return (1 + extreme) / (1 + len(resampled))
