"""End-to-end CLI runs on MTU-Bench's real eval split."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers.cli_helpers import SAMPLE_FIELDS, invoke, results_of, sample_rows
from toolgauge.results import EvalResults

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


@pytest.fixture()
def store(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'store.db'}"


def assert_gpt4_figures(results: EvalResults) -> None:
    assert results.groups("split") == list(GPT4_REFERENCE)
    for split, metrics in GPT4_REFERENCE.items():
        for key, pct in metrics.items():
            value = results.value(key, split, "split")
            assert isinstance(value, float) and round(value * 100, 2) == pct, (split, key)


def gpt4_score(mtu_dir: Path, store: str, *extra: str | Path) -> EvalResults:
    res = invoke("score", "mtu-bench", "--data", mtu_dir, "--predictions", mtu_dir / "responses", "--json",
                 "--store", store, *extra)  # fmt: skip
    assert res.exit_code == 0, res.output
    return results_of(res)


def test_score_gpt4_responses_matches_the_reference_scorer(mtu_dir, store, tmp_path):
    samples = tmp_path / "samples.jsonl"
    results = gpt4_score(mtu_dir, store, "--samples", samples)
    assert results.benchmark == "mtu-bench" and results.settings["variant"] == "reference"
    assert results.settings == {"variant": "reference", "mode": "prompt", "data": str(mtu_dir)}
    assert_gpt4_figures(results)
    # Every count of the splits is there too, and each rate says what it is over.
    assert {s: results.value("n", s, "split") for s in GPT4_REFERENCE} == {
        "S-S": 104,
        "S-M": 94,
        "M-S": 473,
        "M-M": 266,
    }
    assert results.value("n_dialogues", "M-S", "split") == 85 and results.value("n_dialogues", "M-M", "split") == 79
    count = results.metric("n", "M-S", "split")
    assert count is not None and count.kind == "count"
    success = results.metric("success_rate", "M-M", "split")
    assert success is not None and success.n == 79 and success.kind == "rate"
    # Overall: every item pooled (single-call items for tool accuracy, multi-call for TN/TO, all dialogues for SR).
    assert results.value("n") == 104 + 94 + 473 + 266
    assert results.value("n_single_tool") == 104 + 473 and results.value("n_multi_tool") == 94 + 266
    assert results.value("n_dialogues") == 85 + 79
    tool = results.metric("tool_accuracy")
    assert tool is not None and tool.n == 104 + 473
    ss, ms = results.value("tool_accuracy", "S-S", "split"), results.value("tool_accuracy", "M-S", "split")
    assert ss is not None and ms is not None
    assert results.value("tool_accuracy") == pytest.approx((ss * 104 + ms * 473) / 577)
    assert any("2 duplicate prediction(s) ignored" in w and "S-M_23 (line 27)" in w for w in results.warnings)
    assert results.run is not None and results.run.model == f"replay:{mtu_dir / 'responses'}"
    rows = sample_rows(samples)
    assert len(rows) == 104 + 94 + 473 + 266
    assert set(rows[0]) == SAMPLE_FIELDS
    assert {"item_id", "split", "predicted", "expected", "content"} <= set(rows[0]["metadata"])
    assert {"turn_correct", "error_type", "tool_correct", "parameters_correct"} <= set(rows[0]["scores"])
    assert all(r["value"] == (1.0 if r["scores"]["turn_correct"] else 0.0) for r in rows)
    assert all(r["explanation"] == r["scores"]["error_type"] for r in rows)
    assert all((r["explanation"] is None) == (r["value"] == 1.0) for r in rows)
    # S-M_24 has no prediction: an empty reply, so no call where one was expected.
    missing = next(r for r in rows if r["id"] == "S-M_24")
    assert missing["value"] == 0.0 and missing["explanation"] == "no_call" and missing["metadata"]["content"] is None
    assert missing["metadata"]["split"] == "S-M" and missing["metadata"]["expected"]
    # The per-split scores are the means of the rows.
    ss_rows = [r for r in rows if r["metadata"]["split"] == "S-S"]
    assert sum(r["scores"]["tool_correct"] for r in ss_rows) / len(ss_rows) == ss


def test_score_a_single_prediction_file_and_the_strict_variant(mtu_dir, store):
    res = invoke(
        "score",
        "mtu-bench",
        "--data",
        mtu_dir,
        "--predictions",
        mtu_dir / "responses" / "S-S_gpt4_response.jsonl",
        "--variant",
        "strict",
        "--json",
        "--store",
        store,
    )
    assert res.exit_code == 0, res.output
    results = results_of(res)
    assert results.groups("split") == ["S-S"]
    assert results.settings["variant"] == "strict"
    value = results.value("parameter_accuracy", "S-S", "split")
    assert isinstance(value, float) and round(value * 100, 2) == 53.85
    # One split: the overall metrics are that split's.
    assert results.value("parameter_accuracy") == value
    assert results.value("tool_accuracy") == results.value("tool_accuracy", "S-S", "split")


def test_rescore_of_a_stored_score_run_gives_the_same_metrics_and_takes_another_variant(mtu_dir, store, tmp_path):
    first = gpt4_score(mtu_dir, store, "--splits", "S-M")
    assert first.run is not None
    again = invoke("rescore", first.run.id, "--store", store, "--json")
    assert again.exit_code == 0, again.output
    rescored = results_of(again)
    assert rescored.metrics == first.metrics
    assert rescored.settings == first.settings
    assert rescored.value("tool_number_accuracy", "S-M", "split") == pytest.approx(0.6173, abs=5e-5)
    samples = tmp_path / "strict.jsonl"
    other = invoke("rescore", first.run.id, "--store", store, "--json", "--variant", "strict", "--samples", samples)
    assert other.exit_code == 0, other.output
    strict = results_of(other)
    assert strict.settings["variant"] == "strict"
    assert strict.value("tool_number_accuracy", "S-M", "split") == pytest.approx(0.5958, abs=5e-5)
    assert strict.value("tool_number_accuracy", "S-M", "split") != first.value("tool_number_accuracy", "S-M", "split")
    assert len(sample_rows(samples)) == 94
    # The stored run itself is unchanged.
    stored = results_of(invoke("report", first.run.id, "--store", store, "--json"))
    assert stored.settings["variant"] == "reference" and stored.metrics == first.metrics
    bad = invoke("rescore", first.run.id, "--store", store, "--variant", "loose")
    assert bad.exit_code == 2 and "has the variants reference, strict" in bad.stderr


def test_rescore_of_a_limited_eval_run_finds_the_same_items(mtu_dir, store):
    res = invoke("eval", "mtu-bench", "--data", mtu_dir, "--model", "gold", "--json", "-q", "--store", store,
                 "--splits", "OOD,S-S", "--limit", "7", "--mode", "native")  # fmt: skip
    assert res.exit_code == 0, res.output
    first = results_of(res)
    assert first.run is not None and first.run.samples == 14
    rescored = results_of(invoke("rescore", first.run.id, "--store", store, "--json"))
    assert rescored.metrics == first.metrics
    assert rescored.settings == first.settings == {"variant": "reference", "mode": "native", "data": str(mtu_dir)}


@pytest.mark.parametrize("mode", ["prompt", "native"])
def test_gold_is_the_ceiling_in_both_modes(mtu_dir, store, mode):
    res = invoke(
        "eval",
        "mtu-bench",
        "--data",
        mtu_dir,
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
    results = results_of(res)
    assert results.groups("split") == ["S-S", "S-M", "M-M", "OOD"]
    rates = [m for m in results.metrics if m.kind == "rate"]
    assert {m.group for m in rates if m.by in (None, "split")} == {None, "S-S", "S-M", "M-M", "OOD"}
    # The hard set and Figure 5's breakdowns are scored too, and a gold run gets every one of them right.
    assert {m.by for m in rates} == {None, "split", "set", "turns", "tools"}
    for metric in rates:
        assert metric.value == 1.0, (mode, metric)
    assert results.value("n") == 104 + 94 + 266 + 72


def test_unknown_split_and_missing_folder_are_one_line_exit_2(mtu_dir, store, tmp_path):
    res = invoke("eval", "mtu-bench", "--data", mtu_dir, "--model", "gold", "--splits", "X-Y", "--store", store)
    assert res.exit_code == 2
    assert "X-Y" in res.stderr and len(res.stderr.strip().splitlines()) == 1
    res = invoke(
        "score",
        "mtu-bench",
        "--data",
        tmp_path / "nope",
        "--predictions",
        mtu_dir / "responses",
        "--store",
        store,
    )
    assert res.exit_code == 2 and "nope" in res.stderr


def test_malformed_prediction_line_names_file_and_line(mtu_dir, store, tmp_path):
    preds = tmp_path / "S-S_mine.jsonl"
    preds.write_text('{"id": "S-S_0", "response": "Thought: x"}\n{"id": "S-S_1", "response": 5}\n')
    db = tmp_path / "untouched.db"
    res = invoke("score", "mtu-bench", "--data", mtu_dir, "--predictions", preds, "--store", f"sqlite:///{db}")
    assert res.exit_code == 2
    line = res.stderr.strip()
    assert line.count("\n") == 0 and f"{preds}:2:" in line and "response" in line
    assert not db.exists()


def test_eval_with_a_replay_model_scores_and_warns_as_score_does(mtu_dir, store):
    replies = mtu_dir / "responses" / "S-M_gpt4_response.jsonl"
    res = invoke("eval", "mtu-bench", "--data", mtu_dir, "--splits", "S-M", "--model", f"replay:{replies}",
                 "--json", "-q", "--store", store)  # fmt: skip
    assert res.exit_code == 0, res.output
    evaluated = results_of(res)
    scored = results_of(invoke("score", "mtu-bench", "--data", mtu_dir, "--predictions", replies, "--json",
                               "--store", store))  # fmt: skip
    assert evaluated.metrics == scored.metrics
    assert evaluated.warnings == scored.warnings
    assert evaluated.warnings == [
        f"{replies}: 2 duplicate prediction(s) ignored (more predictions than items with that id): "
        "S-M_23 (line 27), S-M_30 (line 31)",
        "2 item(s) have no prediction and are scored as empty replies: S-M_24, S-M_31",
    ]


def test_the_table_counts_every_item_of_a_split(mtu_dir, store):
    res = invoke("eval", "mtu-bench", "--data", mtu_dir, "--splits", "S-M,OOD", "--model", "gold", "-q",
                 "--store", store)  # fmt: skip
    assert res.exit_code == 0, res.output
    rows = {
        line.split()[0]: line.split()[1:] for line in res.stdout.splitlines() if line.split()[:1] in (["S-M"], ["OOD"])
    }
    # OOD's tool accuracy is over its 38 single-call items; the row's n is all 72 items, as MTU-Bench counts them.
    assert rows["OOD"] == ["72", *["100.00"] * 4]
    assert rows["S-M"] == ["94", "—", "—", "100.00", "100.00"]
