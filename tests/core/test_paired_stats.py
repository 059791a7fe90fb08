"""Paired comparison (toolgauge.stats.paired): McNemar against scipy and hand counts, the paired bootstrap."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binomtest, chi2

from toolgauge.stats.paired import (
    PairedUnit,
    bootstrap_differences,
    bootstrap_p_value,
    compare_paired,
    is_pass_fail,
    mcnemar,
    weighted_mean,
)


def units_from_table(both: int, a_only: int, b_only: int, neither: int) -> list[PairedUnit]:
    """Independent pass/fail units from a 2x2 table: passed by both, by A only, by B only, by neither."""
    cells = [(1.0, 1.0)] * both + [(1.0, 0.0)] * a_only + [(0.0, 1.0)] * b_only + [(0.0, 0.0)] * neither
    return [PairedUnit(id=f"u{i}", cluster=f"u{i}", a=a, b=b) for i, (a, b) in enumerate(cells)]


def test_mcnemar_exact_by_hand_and_scipy() -> None:
    # 1 unit lost, 6 gained: P(X <= 1 | n=7, 1/2) = (1 + 7) / 128, two-sided 16/128.
    test, p = mcnemar(1, 6)
    assert test == "mcnemar_exact"
    assert p == 16 / 128
    assert p == pytest.approx(binomtest(1, 7, 0.5).pvalue, abs=1e-15)


@pytest.mark.parametrize(("to_fail", "to_pass"), [(0, 0), (0, 1), (3, 3), (2, 9), (12, 12), (0, 24), (5, 19)])
def test_mcnemar_exact_matches_scipy_below_25(to_fail: int, to_pass: int) -> None:
    test, p = mcnemar(to_fail, to_pass)
    assert test == "mcnemar_exact"
    expected = 1.0 if to_fail + to_pass == 0 else binomtest(to_fail, to_fail + to_pass, 0.5).pvalue
    assert p == pytest.approx(expected, abs=1e-14)


def test_mcnemar_chi_square_textbook_table() -> None:
    # Agresti's presidential-approval table (Categorical Data Analysis, §10.1): 150 approve -> disapprove,
    # 86 disapprove -> approve. Corrected statistic (|150 - 86| - 1)^2 / 236 = 3969 / 236 = 16.82.
    test, p = mcnemar(150, 86)
    assert test == "mcnemar_chi2"
    assert p == pytest.approx(chi2.sf(3969 / 236, 1), rel=1e-12)
    assert p == pytest.approx(4.11e-5, rel=1e-2)


def test_mcnemar_switches_to_chi_square_at_25_discordant_pairs() -> None:
    assert mcnemar(4, 20)[0] == "mcnemar_exact"
    test, p = mcnemar(5, 20)
    assert test == "mcnemar_chi2"
    assert p == pytest.approx(chi2.sf((15 - 1) ** 2 / 25, 1), rel=1e-12)


def test_mcnemar_refuses_negative_counts() -> None:
    with pytest.raises(ValueError, match=">= 0"):
        mcnemar(-1, 2)


def test_compare_pass_fail_units_uses_mcnemar() -> None:
    result = compare_paired(units_from_table(both=10, a_only=1, b_only=6, neither=3))
    assert (result.a, result.b) == (11 / 20, 16 / 20)
    assert result.diff == pytest.approx(0.25, abs=1e-15)
    assert (result.test, result.to_fail, result.to_pass) == ("mcnemar_exact", 1, 6)
    assert result.p_value == 16 / 128
    assert not result.significant
    assert result.ci_low is not None and result.ci_high is not None
    assert result.ci_low <= result.diff <= result.ci_high
    assert (result.n, result.clusters) == (20, 20)


def test_compare_significant_gain() -> None:
    result = compare_paired(units_from_table(both=5, a_only=0, b_only=12, neither=3))
    assert result.test == "mcnemar_exact"
    assert result.p_value == 2 / 2**12
    assert result.significant


def test_every_unit_gains_one_point_by_hand() -> None:
    # Every resample has B - A = 1 exactly: the interval is [1, 1]; no resample is as far from 1 as 1 is from 0.
    units = [PairedUnit(id=f"u{i}", cluster=f"c{i // 2}", a=0.25, b=1.25) for i in range(10)]
    result = compare_paired(units, resamples=500)
    assert result.test == "paired_bootstrap"  # scores are not 0/1
    assert (result.diff, result.ci_low, result.ci_high) == (1.0, 1.0, 1.0)
    assert result.p_value == 1 / 501
    assert result.significant


def test_identical_runs_are_not_significant() -> None:
    units = [PairedUnit(id=f"u{i}", cluster=f"c{i}", a=i / 7, b=i / 7) for i in range(7)]
    result = compare_paired(units)
    assert (result.diff, result.ci_low, result.ci_high, result.p_value) == (0.0, 0.0, 0.0, 1.0)
    assert not result.significant


def test_weighted_means_by_hand() -> None:
    # Parameter accuracy 3/4 and 1/2 under A, 4/4 and 1/2 under B, weights 4 and 2: A = 4/6, B = 5/6.
    units = [
        PairedUnit(id="x", cluster="x", a=0.75, b=1.0, weight=4),
        PairedUnit(id="y", cluster="y", a=0.5, b=0.5, weight=2),
    ]
    result = compare_paired(units)
    assert result.a == pytest.approx(4 / 6, abs=1e-15)
    assert result.b == pytest.approx(5 / 6, abs=1e-15)
    assert result.test == "paired_bootstrap"
    assert weighted_mean([0.75, 0.5], [4, 2]) == pytest.approx(4 / 6, abs=1e-15)
    assert weighted_mean([], []) is None


def test_one_cluster_has_no_spread() -> None:
    # A cluster resampled alone is always itself: the interval is the observed difference.
    units = [PairedUnit(id=f"t{i}", cluster="dialogue", a=float(i % 2), b=1.0) for i in range(4)]
    assert not is_pass_fail(units)  # four units in one cluster are not independent pairs
    result = compare_paired(units)
    assert (result.ci_low, result.ci_high) == (0.5, 0.5)
    assert result.test == "paired_bootstrap"
    assert result.p_value == 1 / (1 + 2000)


def test_no_units() -> None:
    result = compare_paired([])
    assert (result.a, result.diff, result.test, result.p_value, result.n) == (None, None, None, None, 0)
    assert not result.significant


def test_bootstrap_is_seeded_and_keeps_clusters_together() -> None:
    units = [PairedUnit(id=f"u{i}", cluster=f"c{i % 3}", a=float(i % 2), b=float(i % 3 == 0)) for i in range(9)]
    first = bootstrap_differences(units, resamples=300, seed=7)
    assert (first == bootstrap_differences(list(reversed(units)), resamples=300, seed=7)).all()
    assert not (first == bootstrap_differences(units, resamples=300, seed=8)).all()
    # Clusters are c0 (a: 0,1,0 b: 1,1,1), c1 (a: 1,0,1 b: 0,0,0), c2 (a: 0,1,0 b: 0,0,0): every resample's
    # difference is a mix of the per-cluster sums, so it lies between the most extreme cluster means.
    assert first.min() >= -2 / 3 - 1e-12 and first.max() <= 2 / 3 + 1e-12


def test_p_value_counts_resamples_as_far_as_the_observation() -> None:
    import numpy as np

    # d = 0.2; |d* - 0.2| >= 0.2 for d* in {0.0, 0.4, -0.1}: 3 of 5 -> (1 + 3) / 6.
    assert bootstrap_p_value(0.2, np.array([0.0, 0.4, 0.1, 0.3, -0.1])) == 4 / 6


unit_lists = st.lists(
    st.tuples(
        st.sampled_from(["c1", "c2", "c3", "c4", "c5"]),
        st.floats(0, 1, allow_nan=False),
        st.floats(0, 1, allow_nan=False),
        st.sampled_from([0.5, 1.0, 3.0]),
        st.booleans(),
    ),
    min_size=1,
    max_size=30,
)


@settings(max_examples=60, deadline=None)
@given(unit_lists)
def test_swapping_runs_negates_the_difference_and_keeps_the_test(
    rows: list[tuple[str, float, float, float, bool]],
) -> None:
    # The bool rounds the scores to 0/1, so that McNemar's branch is exercised too.
    units = []
    for i, (cluster, a, b, weight, binary) in enumerate(rows):
        a, b = (float(round(a)), float(round(b))) if binary else (a, b)
        units.append(PairedUnit(id=f"u{i}", cluster=cluster if i % 2 else f"solo{i}", a=a, b=b, weight=weight))
    swapped = [u.model_copy(update={"a": u.b, "b": u.a}) for u in units]
    ab, ba = compare_paired(units, resamples=200), compare_paired(swapped, resamples=200)
    assert ab.diff is not None and ba.diff is not None
    assert ba.diff == -ab.diff
    assert (ab.a, ab.b) == (ba.b, ba.a)
    assert ab.test == ba.test
    assert ab.p_value == ba.p_value
    assert ab.significant == ba.significant
    assert (ab.to_pass, ab.to_fail) == (ba.to_fail, ba.to_pass)
    assert ab.ci_low is not None and ab.ci_high is not None and ba.ci_low is not None and ba.ci_high is not None
    assert math.isclose(ba.ci_low, -ab.ci_high, abs_tol=1e-12)
    assert math.isclose(ba.ci_high, -ab.ci_low, abs_tol=1e-12)
