"""One scored run out of its epochs' scored runs: metric means, headline spreads, pass@k and pass^k.

``aggregate_epochs`` is pure: it reads the per-unit scores of every epoch once (they may be made
lazily from the store) and keeps only per-cluster totals, in flat arrays (:mod:`toolgauge.stats.unit_totals`).
The formulas are in docs/statistics.md.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Sequence

from toolgauge.results import EvalResults, Metric, MetricSummary, SampleScore, ScoredRun
from toolgauge.stats.bootstrap import clustered_bootstrap_arrays
from toolgauge.stats.passk import pass_rates
from toolgauge.stats.unit_totals import UnitTotals, number

RESAMPLES = 2000


def mean_metrics(per_epoch: Sequence[EvalResults]) -> list[Metric]:
    """Epoch 1's metrics, each value the mean over epochs of that metric (same name, group and breakdown).

    A value every epoch agrees on is kept as it is (an integer count stays an integer, one epoch is
    unchanged); epochs without the metric, or with no number for it, are left out of its mean.
    """
    if not per_epoch:
        return []
    index = [{(m.name, m.group, m.by): m for m in r.metrics} for r in per_epoch]
    out: list[Metric] = []
    for metric in per_epoch[0].metrics:
        key = (metric.name, metric.group, metric.by)
        values = [
            found.value
            for found in (epoch.get(key) for epoch in index)
            if found is not None and found.value is not None and not isinstance(found.value, bool)
        ]
        if not values or all(v == values[0] for v in values):
            out.append(metric)
        else:
            out.append(metric.model_copy(update={"value": sum(values) / len(values)}))
    return out


def headline_names(results: EvalResults, headline: Sequence[str]) -> list[str]:
    """The metrics to summarise: ``headline``, or when it is empty every overall metric that is not a count."""
    if headline:
        return list(headline)
    return list(dict.fromkeys(m.name for m in results.overall() if m.kind != "count"))


def aggregate_epochs(
    per_epoch: Sequence[ScoredRun],
    headline: Sequence[str],
    *,
    resamples: int = RESAMPLES,
    seed: int = 0,
) -> ScoredRun:
    """Combine the scored runs of epochs 1..K (in order) into one scored run.

    - ``metrics``: epoch 1's metrics with each value the mean over epochs (:func:`mean_metrics`);
      settings and details are epoch 1's, warnings every epoch's (each once). With more than one
      epoch the overall headline metrics also get the summary's ``stderr``, ``ci_low`` and ``ci_high``.
    - ``summary[name]`` for each headline metric (empty ``headline``: every overall non-count metric):
      from the units' ``scores[name]`` (a metric over units is ``sum(scores[m] * w) / sum(w)``,
      ``w = weights.get(m, 1)``), the mean over epochs with a clustered-bootstrap standard error and
      95% interval over ``n`` clusters (``cluster``, else ``sample``), each resampled cluster carrying
      all its epochs; clusters are resampled in id order, so the order of the units changes nothing.
      A headline metric that no unit scores gets its mean over epochs only.
    - ``pass_at_k`` / ``pass_hat_k`` for k = 1..K from each sample's tries: a try succeeds when every
      unit of the sample in that epoch has value 1.
    - the per-unit scores of every epoch, each with its ``epoch``.

    The result is a copy of epoch 1's scored run (same class, so a benchmark's extras stay) with the
    combined results and units.
    """
    if not per_epoch:
        raise ValueError("aggregate_epochs needs at least one epoch")
    epochs = len(per_epoch)
    first = per_epoch[0].results
    names = headline_names(first, headline)
    # Compact per-cluster and per-sample state only: the units themselves are made lazily and let go at once.
    # The sums do not depend on the order units come in (samples finish in any order), and the bootstrap
    # resamples the clusters in id order: a run's interval is a function of its verdicts and seed only.
    totals = UnitTotals(names, epochs)
    for e, run in enumerate(per_epoch, start=1):
        for unit in run.iter_samples():
            totals.add(unit, e)
    metrics = mean_metrics([r.results for r in per_epoch])
    overall = {m.name: m for m in metrics if m.group is None}
    summary: dict[str, MetricSummary] = {}
    for name in names:
        if totals.scored(name):
            sums, weights = totals.cluster_totals(name)
            spread = clustered_bootstrap_arrays(sums, weights, resamples=resamples, seed=seed)
            summary[name] = MetricSummary(mean=spread.mean, stderr=spread.stderr, ci_low=spread.ci_low,
                                          ci_high=spread.ci_high, n=spread.n, epochs=epochs)  # fmt: skip
        elif name in overall:
            value = number(overall[name].value)
            summary[name] = MetricSummary(mean=value, n=totals.clusters, epochs=epochs)
    if epochs > 1:
        # Over repeats, the overall headline metrics carry their spread too (a single run leaves them empty).
        metrics = [
            m.model_copy(update={"stderr": summary[m.name].stderr, "ci_low": summary[m.name].ci_low,
                                 "ci_high": summary[m.name].ci_high})
            if m.group is None and m.name in summary
            else m
            for m in metrics
        ]  # fmt: skip
    at, hat = pass_rates(totals.tries(), epochs)
    warnings = list(dict.fromkeys(w for r in per_epoch for w in r.results.warnings))
    results = first.model_copy(
        update={"metrics": metrics, "warnings": warnings, "summary": summary, "pass_at_k": at, "pass_hat_k": hat}
    )
    # A copy of epoch 1's scored run keeps its type and extras (WildToolBench's session logs, which the
    # --predictions-out writer reads: epoch 1's), with the combined results and every epoch's units.
    combined = copy.copy(per_epoch[0])
    ScoredRun.__init__(combined, results, lambda: _all_units(per_epoch))
    return combined


def _all_units(per_epoch: Sequence[ScoredRun]) -> Iterator[SampleScore]:
    for e, run in enumerate(per_epoch, start=1):
        for unit in run.iter_samples():
            yield unit if unit.epoch == e else unit.model_copy(update={"epoch": e})
