"""Statistics over scored units: repeats, spreads, and the paired comparison of two runs.

pass@k and pass^k, a clustered bootstrap and combining epochs are re-exported here; the paired comparison
of two runs is ``toolgauge.stats.paired``. Pure functions on plain numbers and typed results; the formulas
and their references are in docs/statistics.md and docs/compare.md.
"""

from toolgauge.stats.bootstrap import Spread, clustered_bootstrap, epoch_mean, weighted_mean
from toolgauge.stats.epochs import aggregate_epochs, headline_names, mean_metrics
from toolgauge.stats.passk import is_success, pass_at_k, pass_hat_k, pass_rates, successes_by_sample

__all__ = [
    "Spread",
    "aggregate_epochs",
    "clustered_bootstrap",
    "epoch_mean",
    "headline_names",
    "is_success",
    "mean_metrics",
    "pass_at_k",
    "pass_hat_k",
    "pass_rates",
    "successes_by_sample",
    "weighted_mean",
]
