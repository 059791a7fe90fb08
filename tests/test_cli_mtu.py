"""End-to-end CLI runs on MTU-Bench's real eval split."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from toolgauge.cli import app

runner = CliRunner()

# GPT-4's published responses, scored by the published scorer (crash bugs fixed), in percent.
GPT4_REFERENCE = {
    "S-S": {"tool_accuracy": 88.46, "parameter_accuracy": 57.69},
    "S-M": {"tool_number_accuracy": 61.73, "tool_order_accuracy": 64.07},
    "M-S": {
        "tool_accuracy": 88.58,
        "parameter_accuracy": 71.25,
        "success_rate": 18.82,
        "turn_success_rate": 68.11,
        "soft_turn_success_rate": 60.90,
        "task_process_rate": 36.81,
    },
    "M-M": {
        "tool_number_accuracy": 70.33,
        "tool_order_accuracy": 71.46,
        "success_rate": 22.78,
        "turn_success_rate": 65.34,
        "soft_turn_success_rate": 62.73,
        "task_process_rate": 57.68,
    },
}


def invoke(*args: str):
    return runner.invoke(app, list(args), catch_exceptions=False)


@pytest.fixture()
def store(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'store.db'}"


def test_score_gpt4_responses_matches_the_reference_scorer(mtu_dir, store, tmp_path):
    samples = tmp_path / "samples.jsonl"
    res = invoke(
        "score",
        "mtu-bench",
        "--data",
        str(mtu_dir),
        "--predictions",
        str(mtu_dir / "responses"),
        "--json",
        "--store",
        store,
        "--samples",
        str(samples),
    )
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)
    assert summary["benchmark"] == "mtu-bench" and summary["variant"] == "reference"
    assert set(summary["splits"]) == set(GPT4_REFERENCE)
    for split, metrics in GPT4_REFERENCE.items():
        for key, pct in metrics.items():
            assert round(summary["splits"][split][key] * 100, 2) == pct, (split, key)
    assert any("duplicate prediction id 'S-M_23'" in w for w in summary["warnings"])
    rows = [json.loads(line) for line in samples.read_text().splitlines()]
    assert len(rows) == 104 + 94 + 473 + 266
    assert {"id", "split", "predicted", "expected", "error_type", "turn_correct"} <= set(rows[0])


def test_score_a_single_prediction_file_and_the_strict_variant(mtu_dir, store):
    res = invoke(
        "score",
        "mtu-bench",
        "--data",
        str(mtu_dir),
        "--predictions",
        str(mtu_dir / "responses" / "S-S_gpt4_response.jsonl"),
        "--variant",
        "strict",
        "--json",
        "--store",
        store,
    )
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)
    assert list(summary["splits"]) == ["S-S"]
    assert round(summary["splits"]["S-S"]["parameter_accuracy"] * 100, 2) == 53.85


@pytest.mark.parametrize("mode", ["prompt", "native"])
def test_gold_is_the_ceiling_in_both_modes(mtu_dir, store, mode):
    res = invoke(
        "eval",
        "mtu-bench",
        "--data",
        str(mtu_dir),
        "--model",
        "gold",
        "--mode",
        mode,
        "--json",
        "-q",
        "--store",
        store,
        "--splits",
        "S-S,S-M,M-M,OOD",
    )
    assert res.exit_code == 0, res.output
    for split, row in json.loads(res.stdout)["splits"].items():
        for key, value in row.items():
            if key != "n" and not key.startswith("n_"):
                assert value == 1.0, (mode, split, key)


def test_unknown_split_and_missing_folder_are_one_line_exit_2(mtu_dir, store, tmp_path):
    res = invoke("eval", "mtu-bench", "--data", str(mtu_dir), "--model", "gold", "--splits", "X-Y", "--store", store)
    assert res.exit_code == 2
    assert "X-Y" in res.stderr and len(res.stderr.strip().splitlines()) == 1
    res = invoke(
        "score",
        "mtu-bench",
        "--data",
        str(tmp_path / "nope"),
        "--predictions",
        str(mtu_dir / "responses"),
        "--store",
        store,
    )
    assert res.exit_code == 2 and "nope" in res.stderr


def test_malformed_prediction_line_names_file_and_line(mtu_dir, store, tmp_path):
    preds = tmp_path / "S-S_mine.jsonl"
    preds.write_text('{"id": "S-S_0", "response": "Thought: x"}\n{"id": "S-S_1", "response": 5}\n')
    db = tmp_path / "untouched.db"
    res = invoke(
        "score", "mtu-bench", "--data", str(mtu_dir), "--predictions", str(preds), "--store", f"sqlite:///{db}"
    )
    assert res.exit_code == 2
    line = res.stderr.strip()
    assert line.count("\n") == 0 and f"{preds}:2:" in line and "response" in line
    assert not db.exists()
