"""BFCL multi-turn score files from ``toolgauge export --format bfcl`` against the ones ``bfcl evaluate`` writes.

Writes a BFCL result file for each of the four multi-turn categories (every entry, prompting-style text, as
``gpt-4o-2024-11-20`` writes them): per entry the ground truth, or one perturbation of it (a call dropped,
changed, repeated, the calls reordered or split over steps, an empty turn, an unknown function, the turn's
calls moved to the next turn, every later turn empty, a shorter conversation, a result that is not a list),
each turn closed by a text step. Then scores them with toolgauge (``score bfcl --predictions``, ``export
--format bfcl``) and with ``bfcl evaluate`` in a throwaway ``BFCL_PROJECT_ROOT`` (bfcl-eval 2026.3.23 in its
own venv), and compares the score files field by field and the five leaderboard CSVs (``bfcl_score_files``'s
comparison). Prints a JSON report.

    PYTHONPATH=src .venv/bin/python benchmarks/bfcl_multi_turn_score_files.py \
        --bfcl-python /tmp/bfcl-venv/bin/python --data-dir ../shared/data/bfcl --seed 0
"""

from __future__ import annotations

import json
import random
import sys
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bfcl_score_files import score_files_arguments, score_files_report

from toolgauge.benchmarks.bfcl.decoders.python_calls import render_python_calls
from toolgauge.benchmarks.bfcl.multi_turn_check import (
    BFCL_MULTI_TURN_CATEGORIES,
    Call,
    MultiTurnEntry,
    load_multi_turn,
)

MODEL = "gpt-4o-2024-11-20"  # a prompting entry of BFCL's registry: its results are call text
KINDS = ["gold", "drop", "change", "repeat", "reorder", "split", "empty_turn", "unknown", "move_next",
         "later_empty", "shorter", "not_a_list"]  # fmt: skip

Turns = list[list[Call]]


def _changed(call: Call) -> Call:
    name, arguments = call
    out = dict(arguments)
    for key, value in out.items():
        if isinstance(value, bool):
            out[key] = not value
            break
        if isinstance(value, str):
            out[key] = value + "_x"
            break
        if isinstance(value, int | float):
            out[key] = value + 1
            break
    return name, out


def perturbed(entry: MultiTurnEntry, kind: str, rng: random.Random) -> Any:
    """The entry's BFCL ``result`` (turn -> step texts) for one kind of perturbation of its ground truth."""
    gold: Turns = entry.ground_truth_calls(entry.backends())
    steps: list[list[list[Call]]] = [[calls] if calls else [] for calls in gold]
    with_calls = [i for i, calls in enumerate(gold) if calls]
    t = rng.choice(with_calls)
    calls = gold[t]
    if kind == "not_a_list":
        return "Error: the model crashed"
    if kind == "drop":
        steps[t] = [calls[:-1]] if len(calls) > 1 else []
    elif kind == "change":
        i = rng.randrange(len(calls))
        steps[t] = [[*calls[:i], _changed(calls[i]), *calls[i + 1 :]]]
    elif kind == "repeat":
        steps[t] = [[*calls, calls[-1]]]
    elif kind == "reorder":
        steps[t] = [list(reversed(calls))]
    elif kind == "split":
        steps[t] = [[c] for c in calls]
    elif kind == "empty_turn":
        steps[t] = []
    elif kind == "unknown":
        steps[t] = [[("no_such_function", {}), *calls]]
    elif kind == "move_next" and t + 1 < len(steps):
        steps[t], steps[t + 1] = [], [calls, *steps[t + 1]]
    elif kind == "later_empty":
        steps = [s if i <= t else [] for i, s in enumerate(steps)]
    elif kind == "shorter":
        steps = steps[:t]
    # Each turn ends with a text reply, which neither decoder turns into calls.
    return [[*(render_python_calls(s) for s in turn), "I have done what you asked."] for turn in steps]


def write_results(root: Path, data_dir: Path, seed: int) -> tuple[Path, Counter[str]]:
    rng = random.Random(seed)
    kinds: Counter[str] = Counter()
    for category in BFCL_MULTI_TURN_CATEGORIES:
        lines = []
        for entry in load_multi_turn(data_dir, category):
            kind = rng.choice(KINDS)
            kinds[kind] += 1
            lines.append({"id": entry.id, "result": perturbed(entry, kind, rng)})
        path = root / "result" / MODEL / "multi_turn" / f"BFCL_v4_{category}_result.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return root / "result", kinds


def main() -> int:
    parser = score_files_arguments(__doc__.splitlines()[0])
    args = parser.parse_args()
    categories = list(BFCL_MULTI_TURN_CATEGORIES)

    def write(root: Path) -> dict[str, Any]:
        _, kinds = write_results(root, args.data_dir, args.seed)
        return {"trajectories": dict(kinds)}

    return score_files_report(args, categories, write, "bfcl_mt_score_files_")


if __name__ == "__main__":
    raise SystemExit(main())
