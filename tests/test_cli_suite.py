"""End-to-end CLI runs on the built-in sample suite with the gold and scripted clients."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from toolgauge.benchmarks.suite.loader import builtin_suite_path, load_suite
from toolgauge.cli import app

runner = CliRunner()


@pytest.fixture()
def store(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'store.db'}"


def invoke(*args: str):
    return runner.invoke(app, list(args), catch_exceptions=False)


def suite_turn_counts() -> tuple[int, int]:
    dialogues = load_suite(builtin_suite_path())
    turns = [t for d in dialogues for t in d.turns]
    return len(turns), sum(1 for t in turns if not t.expected_calls)


def test_gold_scores_100_percent_on_every_metric(store):
    res = invoke("eval", "suite", "--model", "gold", "--store", store, "--json", "-q")
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)
    scores = summary["scores"]
    for key in (
        "tool_accuracy",
        "parameter_accuracy",
        "success_rate",
        "turn_success_rate",
        "soft_turn_success_rate",
        "task_process_rate",
    ):
        assert scores[key] == 1.0, key
    n_turns, _ = suite_turn_counts()
    assert scores["n_turns"] == n_turns
    assert summary["run"]["samples"] == len(load_suite(builtin_suite_path()))
    assert summary["run"]["sample_errors"] == 0


def test_a_model_that_never_calls_is_right_only_on_no_call_turns(store, tmp_path):
    script = tmp_path / "silent.json"
    script.write_text(json.dumps(["I cannot help with that."] * 200))
    res = invoke(
        "eval", "suite", "--model", f"scripted:{script}", "--store", store, "--json", "-q", "--concurrency", "1"
    )
    assert res.exit_code == 0, res.output
    scores = json.loads(res.stdout)["scores"]
    n_turns, no_call = suite_turn_counts()
    assert scores["tool_accuracy"] == pytest.approx(no_call / n_turns)
    assert scores["success_rate"] < 1.0


def test_samples_file_has_one_line_per_turn_and_report_exports(store, tmp_path):
    samples = tmp_path / "out" / "samples.jsonl"
    res = invoke("eval", "suite", "--model", "gold", "--store", store, "--samples", str(samples), "-q", "--json")
    assert res.exit_code == 0, res.output
    run_id = json.loads(res.stdout)["run"]["id"]
    rows = [json.loads(line) for line in samples.read_text().splitlines()]
    n_turns, _ = suite_turn_counts()
    assert len(rows) == n_turns
    assert all(r["turn_correct"] for r in rows)
    assert {"id", "dialogue", "turn", "predicted", "expected", "error_type"} <= set(rows[0])

    listed = invoke("runs", "--store", store, "--json")
    assert [r["id"] for r in json.loads(listed.stdout)] == [run_id]
    as_json = invoke("report", run_id, "--store", store, "--json")
    assert json.loads(as_json.stdout)["scores"]["tool_accuracy"] == 1.0
    as_csv = invoke("report", run_id, "--store", store, "--csv")
    assert as_csv.stdout.splitlines()[0] == "scope,metric,value"
    assert "scores,tool_accuracy,1.0" in as_csv.stdout
    table = invoke("report", run_id, "--store", store)
    assert "100.00" in table.stdout


def test_bad_suite_line_is_one_error_line_exit_2_and_nothing_stored(tmp_path):
    bad = tmp_path / "bad.jsonl"
    good_line = builtin_suite_path().read_text().splitlines()[0]
    bad.write_text(good_line + "\n{not json\n")
    db = tmp_path / "never.db"
    res = invoke("eval", "suite", "--data", str(bad), "--model", "gold", "--store", f"sqlite:///{db}")
    assert res.exit_code == 2
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert len(lines) == 1
    assert f"{bad}:2:" in lines[0]
    assert not db.exists()


def test_unknown_model_spec_and_unknown_run_are_clear_errors(store):
    res = invoke("eval", "suite", "--model", "gpt-9", "--store", store)
    assert res.exit_code == 2 and "unknown model spec 'gpt-9'" in res.stderr
    res = invoke("eval", "suite", "--model", "gold", "--store", store, "--resume", "nope")
    assert res.exit_code == 2 and "no such run" in res.stderr
    res = invoke("report", "nope", "--store", store)  # the store exists now (report never creates one)
    assert res.exit_code == 2 and "no run 'nope'" in res.stderr


def test_resume_of_a_finished_run_makes_no_model_calls(store):
    first = json.loads(invoke("eval", "suite", "--model", "gold", "--store", store, "--json", "-q").stdout)
    run_id = first["run"]["id"]
    again = invoke("eval", "suite", "--model", "gold", "--store", store, "--json", "-q", "--resume", run_id)
    assert again.exit_code == 0, again.output
    summary = json.loads(again.stdout)
    assert summary["run"]["resumed_samples"] == first["run"]["samples"]
    assert summary["run"]["model_calls"] == 0
    assert summary["scores"] == first["scores"]
    wrong = invoke("eval", "suite", "--model", "gold", "--store", store, "--resume", run_id, "--limit", "3")
    assert wrong.exit_code == 2
    assert "the run was started with other settings" in wrong.stderr


def test_console_script_runs_as_a_real_process(tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "toolgauge.cli",
            "eval",
            "suite",
            "--model",
            "gold",
            "--json",
            "-q",
            "--store",
            f"sqlite:///{tmp_path / 's.db'}",
            "--limit",
            "2",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["scores"]["tool_accuracy"] == 1.0


def test_unreachable_endpoint_fails_the_probe_in_one_line_exit_2_and_the_run_is_stored_failed(store):
    res = invoke(
        "eval",
        "suite",
        "--model",
        "http://127.0.0.1:9/v1#m",
        "--max-retries",
        "0",
        "--limit",
        "2",
        "--store",
        store,
        "--json",
        "-q",
    )
    assert res.exit_code == 2
    assert res.stdout == ""
    assert "does not answer: APIConnectionError" in res.stderr and res.stderr.count("\n") == 1
    listed = json.loads(invoke("runs", "--store", store, "--json").stdout)
    assert listed[0]["status"] == "failed"
