"""BFCL score files from ``toolgauge export --format bfcl`` against the ones ``bfcl evaluate`` writes.

Builds one BFCL result file per category of the real data (prompt-style call text: the gold answer
for some entries, a perturbation of it or a noise text for the others, so most categories have
failed entries of many error types), then

* toolgauge: ``toolgauge score bfcl --predictions`` into a throwaway store, and
  ``toolgauge export latest --format bfcl --model-name gpt-4o-2024-11-20``;
* BFCL: ``bfcl evaluate --model gpt-4o-2024-11-20`` on the same result files, in a throwaway
  ``BFCL_PROJECT_ROOT`` (bfcl-eval 2026.3.23 in its own venv: see docs/benchmarks/bfcl-agreement.md).

and compares the two score folders: each score file's summary line, the ids of the failed entries
and their order, every field of every failed entry (name, order and value), and the cells of
data_overall.csv, data_non_live.csv and data_live.csv (except those BFCL takes from its model
registry or from latencies the result files do not carry). It prints a JSON report.

    .venv/bin/python benchmarks/bfcl_score_files.py --bfcl-python /tmp/bfcl-venv/bin/python \
        --data-dir ../shared/data/bfcl --out /tmp/bfcl_score_files.json
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bfcl_agreement import TEXT_NOISE, call_variants, first_options

from toolgauge.benchmarks.bfcl.export import group_of
from toolgauge.benchmarks.bfcl.io import bfcl_calls_output
from toolgauge.benchmarks.bfcl.loader import load_bfcl

MODEL = "gpt-4o-2024-11-20"  # a BFCL registry entry for prompting models (underscore_to_dot off)
CATEGORIES = [
    "simple_python",
    "simple_java",
    "simple_javascript",
    "multiple",
    "parallel",
    "parallel_multiple",
    "live_simple",
    "live_multiple",
    "irrelevance",
]
CSV_FILES = ("data_overall.csv", "data_non_live.csv", "data_live.csv", "data_multi_turn.csv", "data_agentic.csv")
# data_overall.csv columns BFCL fills from its registry (display name, link, prices, org, licence) or from
# the result files' latency fields, which these hand-made result files do not have.
REGISTRY_COLUMNS = {
    "Model",
    "Model Link",
    "Total Cost ($)",
    "Latency Mean (s)",
    "Latency Standard Deviation (s)",
    "Latency 95th Percentile (s)",
    "Organization",
    "License",
}


def outputs(data_dir: Path, categories: list[str], seed: int) -> dict[str, list[dict[str, Any]]]:
    """One result line per entry: gold (2 in 5), a perturbation of the gold calls, or noise text."""
    rng = random.Random(seed)
    by_category: dict[str, list[dict[str, Any]]] = {}
    for entry in load_bfcl(data_dir, categories):
        if entry.category == "irrelevance":
            first = entry.functions[0]["name"]
            text = rng.choice([*TEXT_NOISE, f"[{first}()]", f"[{first}(x=1)]"])
        else:
            calls = first_options(entry)
            roll = rng.random()
            if roll < 0.4:
                chosen = calls
            elif roll < 0.9:
                _, chosen = rng.choice(call_variants(entry, calls, rng)[1:])
            else:
                chosen = None
            try:
                text = (
                    str(bfcl_calls_output(entry, chosen, style="prompt", underscore_to_dot=False))
                    if chosen is not None
                    else rng.choice(TEXT_NOISE)
                )
            except (TypeError, ValueError):
                text = rng.choice(TEXT_NOISE)
        by_category.setdefault(entry.category, []).append({"id": entry.id, "result": text})
    return by_category


def write_results(root: Path, results: dict[str, list[dict[str, Any]]]) -> Path:
    folder = root / "result" / MODEL
    for category, lines in results.items():
        group = "live" if "live" in category else "non_live"
        path = folder / group / f"BFCL_v4_{category}_result.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return root / "result"


def toolgauge_scores(data_dir: Path, result_dir: Path, work: Path) -> Path:
    """``score bfcl`` then ``export --format bfcl``; returns the exported score folder."""
    store = f"sqlite:///{work / 'store.db'}"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
    cli = [sys.executable, "-m", "toolgauge.cli"]
    subprocess.run([*cli, "score", "bfcl", "--data", str(data_dir), "--predictions", str(result_dir),
                    "--store", store], check=True, env=env, capture_output=True)  # fmt: skip
    out = work / "toolgauge_score"
    subprocess.run([*cli, "export", "latest", "--format", "bfcl", "--out", str(out), "--store", store,
                    "--model-name", MODEL], check=True, env=env, capture_output=True)  # fmt: skip
    return out


def bfcl_scores(bfcl_python: str, root: Path, categories: list[str]) -> Path:
    """``bfcl evaluate`` on the result files under ``root``; returns BFCL's score folder."""
    bfcl = str(Path(bfcl_python).parent / "bfcl")
    env = {**os.environ, "BFCL_PROJECT_ROOT": str(root), "OPENAI_API_KEY": "dummy"}
    done = subprocess.run([bfcl, "evaluate", "--model", MODEL, "--test-category", ",".join(categories)],
                          env=env, capture_output=True, text=True, check=False)  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"bfcl evaluate failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return root / "score"


def read_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def compare(
    ours: Path, theirs: Path, categories: list[str], every: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    fields: Counter[str] = Counter()
    differ: Counter[str] = Counter()
    by_type: Counter[str] = Counter()
    examples: dict[str, Any] = {}
    per_category: dict[str, Any] = {}
    key_order_same = 0
    entries = 0
    for category in categories:
        group = group_of(category)
        if category.startswith("memory"):  # BFCL's sub-folder: agentic/memory/<backend>/
            group = f"{group}/memory/{category.removeprefix('memory_')}"
        name = f"BFCL_v4_{category}_score.json"
        a, b = read_lines(ours / MODEL / group / name), read_lines(theirs / MODEL / group / name)
        ids_a, ids_b = [x["id"] for x in a[1:]], [x["id"] for x in b[1:]]
        per_category[category] = {
            "summary_same": a[0] == b[0],
            "summary": b[0],
            "failed_ids_same_and_in_order": ids_a == ids_b,
            "failed": len(ids_b),
        }
        for x, y in zip(a[1:], b[1:], strict=False):
            if x["id"] != y["id"]:
                continue
            entries += 1
            key_order_same += list(x) == list(y)
            for key in sorted(set(x) | set(y)):
                fields[key] += 1
                if x.get(key, "<missing>") != y.get(key, "<missing>"):
                    differ[key] += 1
                    by_type[f"{key} ({y.get('error_type')})"] += 1
                    example = {"id": y["id"], "toolgauge": x.get(key, "<missing>"), "bfcl": y.get(key, "<missing>")}
                    examples.setdefault(f"{key} ({y.get('error_type')})", example)
                    if every is not None:
                        every.append({"field": key, "error_type": y.get("error_type"), **example})
    csvs = {}
    for file_name in CSV_FILES:
        head_a, row_a = [line.split(",") for line in (ours / file_name).read_text().splitlines()]
        head_b, row_b = [line.split(",") for line in (theirs / file_name).read_text().splitlines()]
        compared = [(h, x, y) for h, x, y in zip(head_b, row_a, row_b, strict=True) if h not in REGISTRY_COLUMNS]
        csvs[file_name] = {
            "header_same": head_a == head_b,
            "cells_compared": len(compared),
            "cells_same": sum(x == y for _, x, y in compared),
            "different": {h: {"toolgauge": x, "bfcl": y} for h, x, y in compared if x != y},
        }
    return {
        "categories": per_category,
        "failed_entries_compared": entries,
        "failed_entries_with_same_field_names_in_same_order": key_order_same,
        "fields": {k: {"entries": fields[k], "same": fields[k] - differ[k]} for k in sorted(fields)},
        "differences_by_field_and_error_type": dict(by_type.most_common()),
        "first_difference_per_field": examples,
        "csv": csvs,
    }


def score_files_arguments(description: str) -> argparse.ArgumentParser:
    """The options every score-file comparison takes: bfcl-eval's python, the data, the seed, the report file."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--bfcl-python", required=True, help="python of a venv with bfcl-eval 2026.3.23")
    parser.add_argument("--data-dir", type=Path, default=Path("../shared/data/bfcl"))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, help="write the JSON report here too")
    return parser


def score_files_report(
    args: argparse.Namespace, categories: list[str], write: Callable[[Path], dict[str, Any]], prefix: str
) -> int:
    """Write result files with ``write(bfcl root)`` (its return goes into the report), score them both ways,
    compare, and print the JSON report (also to ``args.out``): the main of the per-group scripts."""
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        work = Path(tmp)
        root = work / "bfcl_root"
        extra = write(root)
        ours = toolgauge_scores(args.data_dir, root / "result", work)
        theirs = bfcl_scores(args.bfcl_python, root, categories)
        report = {"seed": args.seed, "model": MODEL, **extra, **compare(ours, theirs, categories)}
    text = json.dumps(report, indent=2, ensure_ascii=False, default=str)
    if args.out:
        args.out.write_text(text + "\n")
    print(text)
    return 0


def main() -> int:
    parser = score_files_arguments(__doc__.splitlines()[0])
    parser.add_argument("--differences", type=Path, help="write every differing field here, one JSON line each")
    args = parser.parse_args()
    categories = [c for c in CATEGORIES if (args.data_dir / f"BFCL_v4_{c}.json").exists()]
    with tempfile.TemporaryDirectory(prefix="bfcl_score_files_") as tmp:
        work = Path(tmp)
        root = work / "bfcl_root"
        result_dir = write_results(root, outputs(args.data_dir, categories, args.seed))
        ours = toolgauge_scores(args.data_dir, result_dir, work)
        theirs = bfcl_scores(args.bfcl_python, root, categories)
        every: list[dict[str, Any]] = []
        report = {"seed": args.seed, "model": MODEL, **compare(ours, theirs, categories, every)}
    if args.differences:
        args.differences.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in every))
    text = json.dumps(report, indent=2, ensure_ascii=False)
    if args.out:
        args.out.write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
