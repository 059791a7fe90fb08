"""Time the pure scorers on the real data: MTU-Bench's eval set and BFCL's full AST set.

    .venv/bin/python benchmarks/scoring_speed.py [--data ../shared/data] [--repeat 5]

Loading is timed separately from scoring. Scoring includes parsing the model outputs
(ReAct text for MTU-Bench, Python-call text for BFCL), which is what a rescore costs.
Peak memory is the process's max RSS after everything ran.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from toolgauge.benchmarks.bfcl.io import assistant_turn_to_bfcl_output, bfcl_gold_turn
from toolgauge.benchmarks.bfcl.loader import BFCL_AST_CATEGORIES, load_bfcl
from toolgauge.benchmarks.bfcl.metrics import score_bfcl
from toolgauge.benchmarks.mtu.loader import load_mtu, load_mtu_predictions, pair_predictions
from toolgauge.benchmarks.mtu.metrics import score_mtu
from toolgauge.benchmarks.mtu.react import parse_mtu_response


def best_of(repeat: int, fn: Callable[[], Any]) -> tuple[float, float]:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times), statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=Path(os.environ.get("TOOLGAUGE_SHARED_DATA", "../shared/data")))
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()

    t0 = time.perf_counter()
    items = load_mtu(a.data / "mtu-bench")
    preds = load_mtu_predictions(a.data / "mtu-bench" / "responses")
    responses, _ = pair_predictions(items, preds)
    mtu_load = time.perf_counter() - t0

    def score_mtu_once() -> None:
        predicted = [
            parse_mtu_response(r or "", i.split, multi=i.multi_call) for i, r in zip(items, responses, strict=True)
        ]
        score_mtu(items, predicted, "reference")

    mtu_best, mtu_median = best_of(a.repeat, score_mtu_once)

    t0 = time.perf_counter()
    present = [c for c in BFCL_AST_CATEGORIES if (a.data / "bfcl" / f"BFCL_v4_{c}.json").exists()]
    entries = load_bfcl(a.data / "bfcl", present)
    bfcl_load = time.perf_counter() - t0
    outputs = {
        e.id: assistant_turn_to_bfcl_output(bfcl_gold_turn(e, style="prompt", underscore_to_dot=False), "prompt")
        for e in entries
    }
    bfcl_best, bfcl_median = best_of(a.repeat, lambda: score_bfcl(entries, outputs, underscore_to_dot=False))

    rows = [
        {"scorer": "mtu-bench reference (GPT-4 responses)", "items": len(items), "load_s": round(mtu_load, 3),
         "score_best_s": round(mtu_best, 4), "score_median_s": round(mtu_median, 4)},
        {"scorer": "bfcl ast (gold prompting text)", "entries": len(entries), "categories": len(present),
         "load_s": round(bfcl_load, 3), "score_best_s": round(bfcl_best, 4), "score_median_s": round(bfcl_median, 4)},
        {"peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)},
    ]  # fmt: skip
    for row in rows:
        print(json.dumps(row))


if __name__ == "__main__":
    main()
