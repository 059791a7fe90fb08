"""Coverage of toolgauge's 95% intervals on data with a known true rate (docs/statistics.md).

Simulates ``--runs`` evaluations of ``--clusters`` samples, each tried ``--epochs`` times. Every sample
has its own success probability, drawn from Beta(a, b) with mean ``--rate`` (so the tries of a sample are
correlated, as repeats of one model on one task are); the true rate of the population is ``--rate``. Each
run's interval comes from ``toolgauge.stats.clustered_bootstrap`` exactly as a run computes it (2000
resamples, seeded); the script reports how often the interval covers the true rate, the mean bootstrap
standard error next to the standard deviation of the estimates across runs, and the interval's mean width.

    .venv/bin/python benchmarks/stats_coverage.py --runs 1000 --clusters 50 --epochs 3
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time

from toolgauge.stats import clustered_bootstrap


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--clusters", type=int, default=50)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--rate", type=float, default=0.6)
    parser.add_argument("--concentration", type=float, default=2.0, help="a + b of the Beta of per-sample rates")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    a, b = args.rate * args.concentration, (1 - args.rate) * args.concentration
    covered = 0
    estimates: list[float] = []
    stderrs: list[float] = []
    widths: list[float] = []
    started = time.perf_counter()
    for run in range(args.runs):
        rows = []
        for _ in range(args.clusters):
            p = rng.betavariate(a, b)
            rows.append([(float(rng.random() < p), 1.0) for _ in range(args.epochs)])
        spread = clustered_bootstrap(rows, seed=run)
        assert spread.mean is not None and spread.stderr is not None
        assert spread.ci_low is not None and spread.ci_high is not None
        covered += spread.ci_low <= args.rate <= spread.ci_high
        estimates.append(spread.mean)
        stderrs.append(spread.stderr)
        widths.append(spread.ci_high - spread.ci_low)
    report = {
        **vars(args),
        "coverage": covered / args.runs,
        "sd_of_estimates": statistics.stdev(estimates),
        "mean_bootstrap_stderr": statistics.fmean(stderrs),
        "mean_interval_width": statistics.fmean(widths),
        "seconds": round(time.perf_counter() - started, 1),
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
