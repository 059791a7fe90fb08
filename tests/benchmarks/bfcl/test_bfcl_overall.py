"""BFCL's summary scores (``benchmarks/bfcl/overall.py``) against bfcl-eval's own ``generate_leaderboard_csv``.

bfcl-eval's ``eval_runner_helper`` module cannot be imported without its pinned SDKs (its imports reach the
model handlers), so its aggregation functions are taken from the installed wheel's source text and run as
they are; only what they would look up elsewhere is supplied: the model registry entry (display name, link,
org, licence), cost and latency (N/A), the entry count of a category not run (BFCL's count, from
``BFCL_V4_ENTRIES``, checked against the wheel's data files below), no format-sensitivity configs, and a
``write_score_csv_file`` that keeps the rows it is given (the numbers before BFCL formats them).
"""

from __future__ import annotations

import ast
import json
import random
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from toolgauge.benchmarks.bfcl.export import NA, leaderboard_rows
from toolgauge.benchmarks.bfcl.overall import BFCL_V4_ENTRIES, NOT_RUN, bfcl_summary

helper_module = pytest.importorskip("bfcl_eval", reason="bfcl-eval is not installed (make setup)")
HELPER = Path(helper_module.__file__).parent / "eval_checker" / "eval_runner_helper.py"
NEEDED = {"calculate_weighted_accuracy", "calculate_unweighted_accuracy", "calculate_percentage_weighted_accuracy",
          "get_category_score", "generate_leaderboard_csv"}  # fmt: skip
CATEGORIES = list(BFCL_V4_ENTRIES)


def bfcl_leaderboard(table: dict[str, tuple[float, int]]) -> dict[str, list[Any]]:
    """bfcl-eval's ``generate_leaderboard_csv`` on ``table``: its rows by CSV file name, before formatting."""
    from bfcl_eval.constants import column_headers

    tree = ast.parse(HELPER.read_text(encoding="utf-8"))
    functions = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in NEEDED]
    assert {f.name for f in functions} == NEEDED
    rows: dict[str, list[Any]] = {}

    def keep_rows(data: list[Any], file_path: Path, **_: Any) -> None:
        rows[Path(file_path).name] = [list(r) for r in data]

    registry = SimpleNamespace(display_name="m", url="u", org="o", license="l")
    namespace: dict[str, Any] = {
        **{k: v for k, v in vars(column_headers).items() if k.startswith("COLUMNS")},
        "MODEL_CONFIG_MAPPING": {"m": registry},
        "get_cost_latency_info": lambda *_: ("N/A", "N/A", "N/A", "N/A"),
        "get_all_format_sensitivity_configs": list,
        "load_dataset_entry": lambda category, **_: [None] * BFCL_V4_ENTRIES[category],
        "write_score_csv_file": keep_rows,
        "os": SimpleNamespace(getenv=lambda *_: None),
        "print": lambda *_: None,
    }
    exec(compile(ast.Module(body=functions, type_ignores=[]), str(HELPER), "exec"), namespace)
    leaderboard = {"m": {c: {"accuracy": a, "total_count": n} for c, (a, n) in table.items()}}
    namespace["generate_leaderboard_csv"](leaderboard, Path("unused"))
    return rows


def random_tables(count: int) -> list[dict[str, tuple[float, int]]]:
    rng = random.Random(21)
    tables: list[dict[str, tuple[float, int]]] = [{c: (1.0, n) for c, n in BFCL_V4_ENTRIES.items()}, {}]
    for _ in range(count):
        chosen = rng.sample(CATEGORIES, rng.randint(1, len(CATEGORIES)))
        tables.append({c: (rng.randint(0, 50) / 50, rng.randint(1, BFCL_V4_ENTRIES[c])) for c in chosen})
    return tables


def test_the_wheel_has_the_entry_counts_toolgauge_assumes() -> None:
    data = HELPER.parents[1] / "data"
    for category, n in BFCL_V4_ENTRIES.items():
        if category.startswith(("memory", "web_search")):
            continue  # one file for several categories, expanded when loaded
        path = data / f"BFCL_v4_{category}.json"
        assert sum(1 for line in path.open(encoding="utf-8") if line.strip()) == n, category
    questions = data / "BFCL_v4_memory.json"
    assert sum(1 for line in questions.open(encoding="utf-8") if line.strip()) == BFCL_V4_ENTRIES["memory_kv"]


@pytest.mark.parametrize("table", random_tables(40))
def test_summary_equals_bfcl_evals_aggregation(table: dict[str, tuple[float, int]]) -> None:
    theirs = bfcl_leaderboard(table)
    summary = bfcl_summary(table)
    overall = theirs["data_overall.csv"][0]
    assert summary.overall.accuracy == overall[1]
    assert summary.groups["non_live"].accuracy == theirs["data_non_live.csv"][0][2]
    assert summary.groups["live"].accuracy == theirs["data_live.csv"][0][2]
    assert summary.groups["multi_turn"].accuracy == theirs["data_multi_turn.csv"][0][2]
    assert summary.groups["agentic"].accuracy == theirs["data_agentic.csv"][0][2]
    irrelevance = summary.groups["irrelevance"]
    assert (irrelevance.accuracy if irrelevance.complete else NA) == overall[31]
    # "not run" exactly where BFCL shows N/A.
    for category, part in summary.categories.items():
        assert (part.shown == NOT_RUN) == (category not in table)
    # The export's CSV rows are BFCL's, cell for cell (the registry's cells aside).
    ours = {name: row for name, _, row in leaderboard_rows(table, "m", [])}
    for name, rows in theirs.items():
        if name == "data_format_sensitivity.csv":
            continue
        skip = {3, 34, 35} if name == "data_overall.csv" else set()
        mine = [cell for i, cell in enumerate(ours[name]) if i not in skip]
        bfcl = [cell for i, cell in enumerate(rows[0]) if i not in skip]
        assert json.dumps(mine) == json.dumps(bfcl), name


def test_coverage_counts_the_weighed_categories_run() -> None:
    summary = bfcl_summary({"simple_python": (1.0, 400), "live_relevance": (1.0, 16)})
    assert (summary.covered, summary.of) == (1, 21)
    assert summary.groups["non_live"].shown == NOT_RUN
    assert summary.overall.accuracy == pytest.approx(0.1 * 1 / 4 / 3)
