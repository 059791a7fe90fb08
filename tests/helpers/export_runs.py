"""Stored runs for the export tests: the built-in suite with the gold client, and BFCL on the real data.

The BFCL run replays hand-made prompting outputs (``--model replay:FILE --mode prompt``) for the first
entries of a few categories: right answers, and wrong ones of several of BFCL's error types, so the
exports have failed entries to show.
"""

from __future__ import annotations

import json
from pathlib import Path

from helpers.cli_helpers import invoke
from toolgauge.benchmarks.bfcl.io import bfcl_gold_turn
from toolgauge.benchmarks.bfcl.loader import load_bfcl

BFCL_CATEGORIES = ("simple_python", "multiple", "parallel", "irrelevance", "live_simple")
BFCL_LIMIT = 5


def run_id_of(stdout: str) -> str:
    """The run id a ``--json`` command printed."""
    return str(json.loads(stdout)["run"]["id"])


def suite_gold_run(store: str) -> str:
    """A gold run of the built-in suite; returns its id."""
    res = invoke("eval", "suite", "--model", "gold", "--store", store, "--json", "-q")
    assert res.exit_code == 0, res.output
    return run_id_of(res.stdout)


def bfcl_outputs(bfcl_dir: Path) -> dict[str, str]:
    """Prompting text per entry id: gold for some entries, a wrong answer of a known kind for the others."""
    outputs: dict[str, str] = {}
    for category in BFCL_CATEGORIES:
        entries = load_bfcl(bfcl_dir, [category])[:BFCL_LIMIT]
        for index, entry in enumerate(entries):
            gold = bfcl_gold_turn(entry, style="prompt", underscore_to_dot=False).content or ""
            if category == "irrelevance":
                name = entry.functions[0]["name"]
                outputs[entry.id] = gold if index % 2 == 0 else f"[{name}(x=1)]"  # a call: irrelevance_error
                continue
            wrong = {
                1: "I cannot help with that.",  # ast_decoder:decoder_failed
                2: gold.replace("(", "_nope(", 1),  # a wrong function name
                3: "[]",  # no call: wrong count
            }
            outputs[entry.id] = wrong.get(index, gold)
    return outputs


def bfcl_replay_run(store: str, bfcl_dir: Path, work: Path) -> str:
    """A BFCL run (prompt mode) replaying :func:`bfcl_outputs`; returns its id."""
    results = work / "bfcl_results"
    results.mkdir(parents=True, exist_ok=True)
    by_category: dict[str, list[str]] = {}
    for entry_id, text in bfcl_outputs(bfcl_dir).items():
        category = entry_id.rsplit("_", 1)[0]
        by_category.setdefault(category, []).append(json.dumps({"id": entry_id, "result": text}))
    for category, lines in by_category.items():
        (results / f"BFCL_v4_{category}_result.json").write_text("\n".join(lines) + "\n")
    res = invoke(
        "eval", "bfcl", "--data", bfcl_dir, "--categories", ",".join(BFCL_CATEGORIES), "--mode", "prompt",
        "--limit", str(BFCL_LIMIT), "--model", f"replay:{results}", "--store", store, "--json", "-q",
    )  # fmt: skip
    assert res.exit_code in (0, 1), res.output
    return run_id_of(res.stdout)


def rescored_rows(store: str, run_id: str, path: Path) -> list[dict[str, object]]:
    """The ``rescore --samples`` rows of a run: what every table export must hold."""
    res = invoke("rescore", run_id, "--store", store, "--samples", path, "--json")
    assert res.exit_code == 0, res.output
    return [json.loads(line) for line in path.read_text().splitlines()]
