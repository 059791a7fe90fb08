"""BFCL memory score files from ``toolgauge export --format bfcl`` against the ones ``bfcl evaluate`` writes.

Writes a BFCL result file per memory category (all 155 questions, prompting-style text as
``gpt-4o-2024-11-20`` writes it): per question one of the accepted answer in BFCL's answer format, a wrong
answer, an answer after a memory call, an answer followed by a call, only calls, an empty reply, two turns,
or a result that is not a list. Then scores them with toolgauge (``score bfcl --predictions``, ``export
--format bfcl``) and with ``bfcl evaluate`` (bfcl-eval 2026.3.23 in its own venv) and compares the score
files field by field (``bfcl_score_files``'s comparison). Prints a JSON report.

    PYTHONPATH=src .venv/bin/python benchmarks/bfcl_memory_score_files.py \
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

from toolgauge.benchmarks.bfcl.memory import BFCL_MEMORY_CATEGORIES, MemoryEntry, load_memory

MODEL = "gpt-4o-2024-11-20"  # a prompting entry of BFCL's registry: its results are text
CALL = "[core_memory_retrieve(key='user_name')]"


def answer_result(entry: MemoryEntry, kind: str, rng: random.Random) -> Any:
    """The question's BFCL ``result`` (turn -> step texts) for one kind of answer."""
    right = "{'answer': " + repr(rng.choice(entry.ground_truth)) + ", 'context': 'from memory'}"
    wrong = "{'answer': 'I do not know', 'context': 'I do not know'}"
    return {
        "right": [[right]],
        "wrong": [[wrong]],
        "call_then_right": [[CALL, right]],
        "right_then_call": [[right, CALL]],
        "calls_only": [[CALL, CALL]],
        "empty": [[""]],
        "two_turns": [[right], [right]],
        "not_a_list": right,
    }[kind]


KINDS = ["right", "wrong", "call_then_right", "right_then_call", "calls_only", "empty", "two_turns", "not_a_list"]


def write_results(root: Path, data_dir: Path, seed: int) -> tuple[Path, Counter[str]]:
    rng = random.Random(seed)
    kinds: Counter[str] = Counter()
    for category in BFCL_MEMORY_CATEGORIES:
        lines = []
        for entry in load_memory(data_dir, category).entries:
            kind = rng.choice(KINDS)
            kinds[kind] += 1
            lines.append({"id": entry.id, "result": answer_result(entry, kind, rng)})
        backend = category.removeprefix("memory_")
        path = root / "result" / MODEL / "agentic" / "memory" / backend / f"BFCL_v4_{category}_result.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return root / "result", kinds


def main() -> int:
    parser = score_files_arguments(__doc__.splitlines()[0])
    args = parser.parse_args()
    categories = list(BFCL_MEMORY_CATEGORIES)

    def write(root: Path) -> dict[str, Any]:
        _, kinds = write_results(root, args.data_dir, args.seed)
        return {"answers": dict(kinds)}

    return score_files_report(args, categories, write, "bfcl_memory_score_files_")


if __name__ == "__main__":
    raise SystemExit(main())
