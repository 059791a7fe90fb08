"""Time scoring BFCL's 800 multi-turn entries: toolgauge's verdict (with per-turn credit) beside bfcl-eval's checker.

Scores a trajectory of every entry (``--trajectory gold``: the ground truth; ``changed``: every turn differs, so
the per-turn credit replays every turn) of the four multi-turn categories, first with
``check_multi_turn`` (BFCL's verdict plus the per-turn credit, which replays each turn from the ground-truth
state), then with bfcl-eval's own ``multi_turn_checker`` on the same calls as text (it ``eval``s them against
its module globals), and prints the wall time of each, per category and in all, as JSON.

    PYTHONPATH=src .venv/bin/python benchmarks/bfcl_multi_turn_scoring.py --data ../shared/data/bfcl
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from toolgauge.benchmarks.bfcl.multi_turn_check import (
    BFCL_MULTI_TURN_CATEGORIES,
    Call,
    MultiTurnEntry,
    check_multi_turn,
    load_multi_turn,
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True, help="the BFCL data folder")
    parser.add_argument(
        "--trajectory",
        choices=["gold", "changed"],
        default="gold",
        help="gold: the ground truth; changed: every turn's first call with one argument changed (no turn matches)",
    )
    args = parser.parse_args()
    from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_checker, multi_turn_utils

    report: dict[str, Any] = {}
    total_ours = total_theirs = 0.0
    for category in BFCL_MULTI_TURN_CATEGORIES:
        entries = load_multi_turn(args.data, category)
        trajectories = [_trajectory(e, args.trajectory) for e in entries]
        started = time.perf_counter()
        ours = [check_multi_turn(e, t) for e, t in zip(entries, trajectories, strict=True)]
        ours_s = time.perf_counter() - started
        started = time.perf_counter()
        theirs = []
        for entry, trajectory in zip(entries, trajectories, strict=True):
            decoded = [
                [[f"{n}({', '.join(f'{k}={v!r}' for k, v in a.items())})" for n, a in s] for s in t] for t in trajectory
            ]
            test_entry = {
                "id": entry.id,
                "initial_config": entry.initial_config,
                "involved_classes": entry.involved_classes,
            }
            verdict = multi_turn_checker.multi_turn_checker(decoded, entry.ground_truth, test_entry, category, "timing")
            theirs.append(verdict["valid"])
        theirs_s = time.perf_counter() - started
        for key in [k for k in vars(multi_turn_utils) if k.startswith("timing")]:
            delattr(multi_turn_utils, key)
        report[category] = {
            "entries": len(entries),
            "valid_toolgauge": sum(v.valid for v in ours),
            "valid_bfcl_eval": sum(theirs),
            "toolgauge_s": round(ours_s, 2),
            "bfcl_eval_checker_s": round(theirs_s, 2),
        }
        total_ours += ours_s
        total_theirs += theirs_s
    report["all"] = {"toolgauge_s": round(total_ours, 2), "bfcl_eval_checker_s": round(total_theirs, 2)}
    print(json.dumps(report, indent=2))


def _trajectory(entry: MultiTurnEntry, kind: str) -> list[list[list[Call]]]:
    turns = entry.ground_truth_calls(entry.backends())
    if kind == "changed":
        turns = [[(c[0][0], _changed(c[0][1])), *c[1:]] if c else [] for c in turns]
    return [[calls] if calls else [] for calls in turns]


def _changed(arguments: dict[str, Any]) -> dict[str, Any]:
    out = dict(arguments)
    for key, value in out.items():
        if isinstance(value, str):
            out[key] = value + "_x"
            break
    else:
        out["unexpected"] = 1
    return out


if __name__ == "__main__":
    main()
