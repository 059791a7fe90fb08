"""End-to-end CLI runs on BFCL's real data: the gold ceiling, result-file rescoring, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from toolgauge.benchmarks.bfcl.io import assistant_turn_to_bfcl_output, bfcl_gold_turn
from toolgauge.benchmarks.bfcl.loader import load_bfcl
from toolgauge.cli import app

runner = CliRunner()

CEILING = {  # what BFCL's own checker gives its own ground truth
    "simple_python": 400, "multiple": 200, "parallel": 200, "parallel_multiple": 198,
    "live_simple": 256, "live_multiple": 1050, "irrelevance": 240,
}  # fmt: skip
TOTALS = {"simple_python": 400, "multiple": 200, "parallel": 200, "parallel_multiple": 200,
          "live_simple": 258, "live_multiple": 1053, "irrelevance": 240}  # fmt: skip


def invoke(*args: str):
    return runner.invoke(app, list(args), catch_exceptions=False)


@pytest.fixture()
def store(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'store.db'}"


@pytest.mark.parametrize("mode", ["native", "prompt"])
def test_gold_reaches_bfcls_own_ceiling(bfcl_dir, store, mode, tmp_path):
    samples = tmp_path / "rows.jsonl"
    res = invoke(
        "eval",
        "bfcl",
        "--data",
        str(bfcl_dir),
        "--categories",
        ",".join(CEILING),
        "--model",
        "gold",
        "--mode",
        mode,
        "--json",
        "-q",
        "--store",
        store,
        "--samples",
        str(samples),
    )
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)
    for category, correct in CEILING.items():
        assert summary["categories"][category]["correct"] == correct, category
        assert summary["categories"][category]["n"] == TOTALS[category]
    assert summary["unsatisfiable"] == 7
    flagged = {r["id"] for r in map(json.loads, samples.read_text().splitlines()) if r["unsatisfiable"]}
    assert flagged == {
        "live_simple_106-63-0",
        "live_simple_112-68-0",
        "live_multiple_507-149-4",
        "live_multiple_964-207-0",
        "live_multiple_862-181-3",
        "parallel_multiple_12",
        "parallel_multiple_26",
    }


def write_results(root: Path, category: str, lines: list[dict]) -> Path:
    group = "live" if category.startswith("live") else "non_live"
    path = root / "result" / "my-model" / group / f"BFCL_v4_{category}_result.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_score_result_files_in_both_styles(bfcl_dir, store, tmp_path):
    entries = load_bfcl(bfcl_dir, ["simple_python", "parallel"])
    text_lines, fc_lines = [], []
    for e in entries:
        prompt = assistant_turn_to_bfcl_output(bfcl_gold_turn(e, style="prompt", underscore_to_dot=False), "prompt")
        native = assistant_turn_to_bfcl_output(bfcl_gold_turn(e, style="native", underscore_to_dot=True), "native")
        (text_lines if e.category == "simple_python" else fc_lines).append(
            {"id": e.id, "result": prompt if e.category == "simple_python" else native}
        )
    text_lines[0]["result"] = "I would rather not."  # one wrong answer
    write_results(tmp_path, "simple_python", text_lines)
    write_results(tmp_path, "parallel", fc_lines)
    res = invoke(
        "score", "bfcl", "--data", str(bfcl_dir), "--predictions", str(tmp_path / "result"), "--json", "--store", store
    )
    assert res.exit_code == 0, res.output
    cats = json.loads(res.stdout)["categories"]
    assert cats["simple_python"]["correct"] == 399 and cats["simple_python"]["n"] == 400
    assert cats["parallel"]["correct"] == 200  # FC lists are checked with underscore_to_dot
    forced = invoke(
        "score",
        "bfcl",
        "--data",
        str(bfcl_dir),
        "--predictions",
        str(tmp_path / "result"),
        "--json",
        "--store",
        store,
        "--keep-dots",
        "--categories",
        "parallel",
    )
    assert json.loads(forced.stdout)["categories"]["parallel"]["correct"] < 200  # spotify_play != spotify.play


def test_missing_result_for_an_entry_is_an_empty_reply(bfcl_dir, store, tmp_path):
    write_results(tmp_path, "multiple", [{"id": "multiple_0", "result": "nonsense"}])
    res = invoke(
        "score", "bfcl", "--data", str(bfcl_dir), "--predictions", str(tmp_path / "result"), "--json", "--store", store
    )
    multiple = json.loads(res.stdout)["categories"]["multiple"]
    assert (multiple["correct"], multiple["n"]) == (0, 200)


def test_bad_input_is_one_line_exit_2(bfcl_dir, store, tmp_path):
    res = invoke(
        "eval", "bfcl", "--data", str(bfcl_dir), "--categories", "simple_cobol", "--model", "gold", "--store", store
    )
    assert res.exit_code == 2 and "simple_cobol" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1
    path = write_results(tmp_path, "simple_python", [{"id": "simple_python_0", "result": "[f()]"}, {"id": 3}])
    res = invoke("score", "bfcl", "--data", str(bfcl_dir), "--predictions", str(path), "--store", store)
    assert res.exit_code == 2 and f"{path}:2:" in res.stderr
    res = invoke("score", "bfcl", "--data", str(bfcl_dir), "--predictions", str(tmp_path / "empty"), "--store", store)
    assert res.exit_code == 2 and "no such file" in res.stderr


def test_eval_with_replayed_fc_results_matches_score(bfcl_dir, store, tmp_path):
    lines = [
        {"id": "simple_python_0", "result": [{"calculate_triangle_area": json.dumps({"base": 10, "height": 5})}]},
        {"id": "simple_python_1", "result": [{"math_factorial": {"number": 5}}]},  # dict arguments
        {"id": "simple_python_2", "result": [{"calculate_hypotenuse": "{not json"}]},
    ]
    write_results(tmp_path, "simple_python", lines)
    res = invoke(
        "eval",
        "bfcl",
        "--data",
        str(bfcl_dir),
        "--categories",
        "simple_python",
        "--limit",
        "3",
        "--model",
        f"replay:{tmp_path / 'result'}",
        "--mode",
        "native",
        "--json",
        "-q",
        "--store",
        store,
    )
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["categories"]["simple_python"]["correct"] == 2
