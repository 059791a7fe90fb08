"""End-to-end CLI runs on the built-in sample suite with the gold and scripted clients."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.cli_helpers import SAMPLE_FIELDS, invoke, results_of, sample_rows
from toolgauge.benchmarks.suite.loader import builtin_suite_path, load_suite


@pytest.fixture()
def store(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'store.db'}"


def suite_turn_counts() -> tuple[int, int]:
    dialogues = load_suite(builtin_suite_path())
    turns = [t for d in dialogues for t in d.turns]
    return len(turns), sum(1 for t in turns if not t.expected_calls)


def test_gold_scores_100_percent_on_every_metric(store):
    res = invoke("eval", "suite", "--model", "gold", "--store", store, "--json", "-q")
    assert res.exit_code == 0, res.output
    results = results_of(res)
    for key in (
        "tool_accuracy",
        "parameter_accuracy",
        "success_rate",
        "turn_success_rate",
        "soft_turn_success_rate",
        "task_process_rate",
    ):
        assert results.value(key) == 1.0, key
    n_turns, _ = suite_turn_counts()
    dialogues = len(load_suite(builtin_suite_path()))
    metric = results.metric("tool_accuracy")
    assert metric is not None and metric.n == n_turns
    success = results.metric("success_rate")
    assert success is not None and success.n == dialogues
    assert results.run is not None
    assert results.run.samples == dialogues
    assert results.run.sample_errors == 0


def test_a_model_that_never_calls_is_right_only_on_no_call_turns(store, tmp_path):
    script = tmp_path / "silent.json"
    script.write_text(json.dumps(["I cannot help with that."] * 200))
    res = invoke(
        "eval", "suite", "--model", f"scripted:{script}", "--store", store, "--json", "-q", "--concurrency", "1"
    )
    assert res.exit_code == 0, res.output
    results = results_of(res)
    n_turns, no_call = suite_turn_counts()
    assert results.value("tool_accuracy") == pytest.approx(no_call / n_turns)
    success = results.value("success_rate")
    assert success is not None and success < 1.0


def test_samples_file_has_one_line_per_turn_and_report_exports(store, tmp_path):
    samples = tmp_path / "out" / "samples.jsonl"
    samples.parent.mkdir()  # toolgauge makes no folder it was not asked for (test_cli_inputs.py)
    res = invoke("eval", "suite", "--model", "gold", "--store", store, "--samples", str(samples), "-q", "--json")
    assert res.exit_code == 0, res.output
    run = results_of(res).run
    assert run is not None
    run_id = run.id
    rows = sample_rows(samples)
    n_turns, _ = suite_turn_counts()
    assert len(rows) == n_turns
    assert all(r["value"] == 1.0 and r["scores"]["turn_correct"] for r in rows)
    assert set(rows[0]) == SAMPLE_FIELDS
    assert {"dialogue", "turn", "predicted", "expected"} <= set(rows[0]["metadata"])

    listed = invoke("runs", "--store", store, "--json")
    assert [r["id"] for r in json.loads(listed.stdout)] == [run_id]
    as_json = invoke("report", run_id, "--store", store, "--json")
    assert results_of(as_json).value("tool_accuracy") == 1.0
    as_csv = invoke("report", run_id, "--store", store, "--csv")
    assert as_csv.stdout.splitlines()[0] == "metric,by,group,value,n"
    assert f"tool_accuracy,,,1.0,{n_turns}" in as_csv.stdout.splitlines()
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
    first = results_of(invoke("eval", "suite", "--model", "gold", "--store", store, "--json", "-q"))
    assert first.run is not None
    run_id = first.run.id
    again = invoke("eval", "suite", "--model", "gold", "--store", store, "--json", "-q", "--resume", run_id)
    assert again.exit_code == 0, again.output
    resumed = results_of(again)
    assert resumed.run is not None
    assert resumed.run.resumed_samples == first.run.samples
    assert resumed.run.model_calls == 0
    assert resumed.metrics == first.metrics
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
    assert json.loads(proc.stdout)["metrics"][0] == {
        "name": "tool_accuracy", "value": 1.0, "group": None, "by": None, "n": 4, "kind": "rate",
        "stderr": None, "ci_low": None, "ci_high": None,
    }  # fmt: skip


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


def test_rescore_scores_the_stored_outputs_again_without_a_model_call(store, tmp_path):
    script = tmp_path / "silent.json"
    script.write_text(json.dumps(["I cannot help with that."] * 200))
    first = results_of(invoke("eval", "suite", "-m", f"scripted:{script}", "--store", store, "--json", "-q", "-c", "1"))
    assert first.run is not None
    # The script is gone: a model call would fail; rescore must read the store alone.
    script.unlink()
    again = invoke("rescore", first.run.id, "--store", store, "--json")
    assert again.exit_code == 0, again.output
    rescored = results_of(again)
    assert rescored.metrics == first.metrics
    assert rescored.settings["variant"] == "strict"
    other = results_of(invoke("rescore", first.run.id, "--store", store, "--json", "--variant", "reference"))
    assert other.settings["variant"] == "reference"
    bad = invoke("rescore", first.run.id, "--store", store, "--variant", "loose")
    assert bad.exit_code == 2 and "suite has the variants reference, strict" in bad.stderr
