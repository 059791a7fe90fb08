"""The statistics of repeated runs, against hand-derived values and a few properties."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolgauge.results import EvalResults, Metric, SampleScore, ScoredRun
from toolgauge.stats import (
    aggregate_epochs,
    clustered_bootstrap,
    epoch_mean,
    pass_at_k,
    pass_hat_k,
    pass_rates,
    successes_by_sample,
    weighted_mean,
)
from toolgauge.stats.bootstrap import ExactSum


# -- pass@k and pass^k ---------------------------------------------------------------------------------
def test_pass_at_k_and_pass_hat_k_by_hand() -> None:
    # n=5 tries, c=2 successes, k=2: 1 - C(3,2)/C(5,2) = 1 - 3/10; C(2,2)/C(5,2) = 1/10.
    assert pass_at_k(5, 2, 2) == pytest.approx(0.7)
    assert pass_hat_k(5, 2, 2) == pytest.approx(0.1)
    assert pass_at_k(3, 0, 1) == 0.0 and pass_hat_k(3, 3, 3) == 1.0
    with pytest.raises(ValueError):
        pass_at_k(2, 1, 3)


def test_pass_rates_average_over_samples_by_hand() -> None:
    tries = [[True, True, False], [False, False, False], [True, True, True]]
    at, hat = pass_rates(tries, 3)
    # k=1: both are the mean success rate (2/3 + 0 + 1) / 3.
    assert at["1"] == pytest.approx(5 / 9) and hat["1"] == pytest.approx(5 / 9)
    # k=2: pass@2 = (1 + 0 + 1) / 3; pass^2 = (C(2,2)/C(3,2) + 0 + 1) / 3 = (1/3 + 1) / 3.
    assert at["2"] == pytest.approx(2 / 3) and hat["2"] == pytest.approx(4 / 9)
    # k=3: pass^3 only for the sample that always succeeds.
    assert at["3"] == pytest.approx(2 / 3) and hat["3"] == pytest.approx(1 / 3)
    assert set(at) == {"1", "2", "3"}


def test_pass_hat_k_matches_tau_bench_display_metrics() -> None:
    """tau-bench's run.py: success is reward within 1e-6 of 1; pass^k = mean over tasks of C(c,k)/C(trials,k)."""
    rewards = {0: [1.0, 0.0, 1.0, 1.0], 1: [0.0, 0.0, 0.0, 1.0], 2: [1.0 - 1e-7, 1.0, 1.0, 1.0]}
    trials = 4
    expected = {
        k: sum(math.comb(sum(1 for r in rs if 1 - 1e-6 <= r <= 1 + 1e-6), k) / math.comb(trials, k)
               for rs in rewards.values()) / len(rewards)
        for k in range(1, trials + 1)
    }  # fmt: skip
    units = [(str(task), e + 1, r) for task, rs in rewards.items() for e, r in enumerate(rs)]
    _, hat = pass_rates(successes_by_sample(units).values(), trials)
    assert {int(k): v for k, v in hat.items()} == pytest.approx(expected)


def test_a_try_succeeds_only_when_every_unit_of_it_does() -> None:
    units = [("a", 1, 1.0), ("a", 1, 0.0), ("a", 2, 1.0), ("a", 2, 1.0), ("b", 1, None), ("b", 2, 1.0)]
    assert successes_by_sample(units) == {"a": [False, True], "b": [True]}


@given(st.integers(1, 12).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n))))
def test_pass_k_orderings(nc: tuple[int, int]) -> None:
    n, c = nc
    assert pass_at_k(n, c, 1) == pytest.approx(c / n) == pytest.approx(pass_hat_k(n, c, 1))
    for k in range(1, n):
        assert pass_at_k(n, c, k) <= pass_at_k(n, c, k + 1) + 1e-12
        assert pass_hat_k(n, c, k + 1) <= pass_hat_k(n, c, k) + 1e-12
        assert pass_hat_k(n, c, k) <= pass_at_k(n, c, k) + 1e-12


# -- the clustered bootstrap ------------------------------------------------------------------------------
def test_weighted_and_epoch_means_by_hand() -> None:
    assert weighted_mean([(1.0, 3.0), (0.0, 1.0)]) == 0.75
    assert weighted_mean([]) is None
    # Epoch 1: (1 + 1) / 2; epoch 2: (0 + 1) / 2; their mean 0.75.
    assert epoch_mean([[(1.0, 1.0), (0.0, 1.0)], [(1.0, 1.0), (1.0, 1.0)]]) == 0.75


def test_bootstrap_of_two_clusters_by_hand() -> None:
    # Resampling 2 clusters (1 and 0): 1 w.p. 1/4, 0 w.p. 1/4, 0.5 w.p. 1/2 -> sd sqrt(1/8), interval [0, 1].
    spread = clustered_bootstrap([[(1.0, 1.0)], [(0.0, 1.0)]], resamples=4000, seed=1)
    assert spread.mean == 0.5 and spread.n == 2
    assert spread.stderr == pytest.approx(math.sqrt(1 / 8), abs=0.01)
    assert (spread.ci_low, spread.ci_high) == (0.0, 1.0)


def test_bootstrap_stderr_matches_the_binomial_standard_error() -> None:
    # 100 clusters, 30 successes: the bootstrap sd approaches sqrt(p (1 - p) / n) = sqrt(0.21 / 100).
    rows = [[(1.0 if i < 30 else 0.0, 1.0)] for i in range(100)]
    spread = clustered_bootstrap(rows, resamples=4000, seed=3)
    assert spread.mean == pytest.approx(0.3)
    assert spread.stderr == pytest.approx(math.sqrt(0.21 / 100), rel=0.08)
    assert spread.ci_low is not None and spread.ci_high is not None
    assert spread.ci_low < 0.3 < spread.ci_high


def test_bootstrap_needs_two_clusters_and_is_deterministic() -> None:
    one = clustered_bootstrap([[(2.0, 4.0), (1.0, 4.0)]])
    assert (one.mean, one.stderr, one.ci_low, one.ci_high, one.n) == (0.375, None, None, None, 1)
    rows = [[(random.Random(i).random(), 1.0), (random.Random(-i).random(), 1.0)] for i in range(20)]
    assert clustered_bootstrap(rows, seed=7) == clustered_bootstrap(rows, seed=7)
    assert clustered_bootstrap(rows, seed=7) != clustered_bootstrap(rows, seed=8)


def test_bootstrap_interval_covers_a_known_rate() -> None:
    """95% intervals over 40 clusters of 3 epochs each cover the true rate in about 95% of 300 simulated runs."""
    rng = random.Random(11)
    rate, covered, runs = 0.4, 0, 300
    for run in range(runs):
        rows = [[(float(rng.random() < rate), 1.0) for _ in range(3)] for _ in range(40)]
        spread = clustered_bootstrap(rows, resamples=1000, seed=run)
        assert spread.ci_low is not None and spread.ci_high is not None
        covered += spread.ci_low <= rate <= spread.ci_high
    assert 0.90 <= covered / runs <= 0.99


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 1), st.floats(0.1, 5)), min_size=2, max_size=15), st.integers(0, 2**16))
def test_bootstrap_interval_lies_within_the_cluster_means(clusters: list[tuple[float, float]], seed: int) -> None:
    spread = clustered_bootstrap([[(s * w, w)] for s, w in clusters], resamples=300, seed=seed)
    assert spread.ci_low is not None and spread.ci_high is not None and spread.stderr is not None
    low, high = min(s for s, _ in clusters), max(s for s, _ in clusters)
    assert low - 1e-9 <= spread.ci_low <= spread.ci_high <= high + 1e-9
    assert spread.mean is not None and low - 1e-9 <= spread.mean <= high + 1e-9
    assert spread.stderr >= 0


# -- combining epochs ---------------------------------------------------------------------------------------
def _epoch(values: dict[str, list[float]], *, cluster: dict[str, str] | None = None) -> ScoredRun:
    """A scored epoch: sample -> its units' values; ``acc`` is the unit mean, ``n`` a count."""
    units = [
        SampleScore(id=f"{s}#{i}", sample=s, value=v, scores={"acc": v}, cluster=(cluster or {}).get(s))
        for s, vs in values.items()
        for i, v in enumerate(vs)
    ]
    acc = sum(u.value or 0.0 for u in units) / len(units)
    results = EvalResults(
        benchmark="t",
        metrics=[Metric(name="acc", value=acc, n=len(units)), Metric(name="n", value=len(units), kind="count")],
        warnings=["same"],
    )
    return ScoredRun(results, units)


def test_aggregate_epochs_by_hand() -> None:
    e1 = _epoch({"a": [1.0, 1.0], "b": [0.0], "c": [1.0]})
    e2 = _epoch({"a": [1.0, 0.0], "b": [0.0], "c": [1.0]})
    scored = aggregate_epochs([e1, e2], ["acc", "missing"], resamples=500)
    r = scored.results
    # acc: epoch 1 3/4, epoch 2 2/4; the mean 0.625. The count is the same in both epochs: kept as is.
    assert r.value("acc") == pytest.approx(0.625) and r.value("n") == 4 and isinstance(r.value("n"), int)
    s = r.summary["acc"]
    assert s.mean == pytest.approx(0.625) and (s.n, s.epochs) == (3, 2)
    assert s.stderr is not None and s.ci_low is not None and s.ci_high is not None
    assert "missing" not in r.summary
    acc = r.metric("acc")
    assert acc is not None and (acc.stderr, acc.ci_low, acc.ci_high) == (s.stderr, s.ci_low, s.ci_high)
    # a: tries [T, F]; b: [F, F]; c: [T, T]. pass@2 = (1 + 0 + 1) / 3; pass^2 = (0 + 0 + 1) / 3.
    assert r.pass_at_k == pytest.approx({"1": 0.5, "2": 2 / 3})
    assert r.pass_hat_k == pytest.approx({"1": 0.5, "2": 1 / 3})
    assert r.warnings == ["same"]
    units = scored.samples
    assert [u.epoch for u in units] == [1] * 4 + [2] * 4


def test_aggregate_clusters_resample_whole_clusters() -> None:
    # Two clusters: samples a, b in x (always right), c in y (always wrong): n is 2 clusters, not 3 samples.
    clusters = {"a": "x", "b": "x", "c": "y"}
    scored = aggregate_epochs([_epoch({"a": [1.0], "b": [1.0], "c": [0.0]}, cluster=clusters)], ["acc"])
    s = scored.results.summary["acc"]
    assert (s.n, s.epochs) == (2, 1) and s.mean == pytest.approx(2 / 3)
    assert (s.ci_low, s.ci_high) == (0.0, 1.0)


def test_a_headline_metric_without_unit_scores_gets_its_mean_only() -> None:
    e1, e2 = _epoch({"a": [1.0], "b": [0.0]}), _epoch({"a": [1.0], "b": [1.0]})
    for run in (e1, e2):
        run.results.metrics.append(Metric(name="other", value=0.5 if run is e1 else 1.0))
    s = aggregate_epochs([e1, e2], ["other"]).results.summary["other"]
    assert (s.mean, s.stderr, s.ci_low, s.ci_high, s.n, s.epochs) == (0.75, None, None, None, 2, 2)


def test_one_epoch_keeps_every_metric_and_summarises_the_overall_ones_without_a_headline() -> None:
    e1 = _epoch({"a": [1.0], "b": [0.0], "c": [1.0]})
    before = [m.model_copy() for m in e1.results.metrics]
    r = aggregate_epochs([e1], []).results
    assert r.metrics == before  # one epoch: the metrics carry no spread (it is in the summary)
    assert set(r.summary) == {"acc"} and r.summary["acc"].mean == pytest.approx(2 / 3)
    assert r.pass_at_k == pytest.approx({"1": 2 / 3}) and r.pass_hat_k == pytest.approx({"1": 2 / 3})


def test_the_combined_run_keeps_the_benchmarks_own_scored_run_class() -> None:
    class Logged(ScoredRun):
        logs = ("kept",)

    e1 = _epoch({"a": [1.0], "b": [0.0]})
    first = Logged(e1.results, e1.samples)
    combined = aggregate_epochs([first, _epoch({"a": [0.0], "b": [0.0]})], ["acc"], resamples=50)
    assert isinstance(combined, Logged) and combined.logs == ("kept",)
    assert combined.results.value("acc") == pytest.approx(0.25) and len(combined.samples) == 4
    assert first.results.summary == {} and len(first.samples) == 2  # epoch 1's own run is unchanged


# -- the order units come in changes nothing ----------------------------------------------------------------
def _shuffled_epochs(order_seed: int) -> list[ScoredRun]:
    """Two epochs of 30 samples in clusters of 1-3, with fractional weighted scores, units in a shuffled order."""
    rng = random.Random(7)  # the data: the same for every order
    units = [
        SampleScore(id=f"s{i}", sample=f"s{i}", value=None, epoch=epoch, cluster=f"c{i // 3}",
                    scores={"acc": rng.random()}, weights={"acc": rng.choice([0.1, 0.7, 3.0])})
        for epoch in (1, 2)
        for i in range(30)
    ]  # fmt: skip
    random.Random(order_seed).shuffle(units)
    runs = []
    for epoch in (1, 2):
        mine = [u for u in units if u.epoch == epoch]
        results = EvalResults(benchmark="t", metrics=[Metric(name="acc", value=0.5, n=len(mine))])
        runs.append(ScoredRun(results, mine))
    return runs


def test_the_interval_depends_on_the_units_not_on_their_order() -> None:
    # Samples finish in any order and a rescore may load them in another: the resamples follow cluster ids.
    first = aggregate_epochs(_shuffled_epochs(0), ["acc"], resamples=400, seed=3).results.summary["acc"]
    assert first.ci_low is not None and first.ci_high is not None and first.ci_low < first.ci_high
    for order in (1, 2, 3):
        again = aggregate_epochs(_shuffled_epochs(order), ["acc"], resamples=400, seed=3).results.summary["acc"]
        assert again == first  # exactly: the mean, stderr and both ends to the last bit


def test_clustered_bootstrap_of_a_mapping_resamples_in_id_order() -> None:
    rows = {"b": [(1.0, 1.0)], "a": [(0.0, 1.0)], "c": [(0.0, 1.0)], "d": [(1.0, 2.0)]}
    by_id = clustered_bootstrap([rows[k] for k in sorted(rows)], resamples=300, seed=5)
    assert clustered_bootstrap(rows, resamples=300, seed=5) == by_id
    assert clustered_bootstrap(dict(reversed(list(rows.items()))), resamples=300, seed=5) == by_id


def test_exact_sum_does_not_depend_on_the_order_of_its_terms() -> None:
    terms = [0.1, 1e16, 0.2, -1e16, 0.3, 1e-8, 2.5] * 5
    plain = {sum(random.Random(seed).sample(terms, len(terms))) for seed in range(20)}
    assert len(plain) > 1  # the plain float sum does depend on the order
    exact = set()
    for seed in range(20):
        total = ExactSum()
        for term in random.Random(seed).sample(terms, len(terms)):
            total.add(term)
        exact.add(total.value)
    assert exact == {math.fsum(terms)}
