"""End-to-end CLI runs on BFCL's real data: the gold ceiling, result-file rescoring, bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from helpers.cli_helpers import SAMPLE_FIELDS, invoke, results_of, sample_rows
from toolgauge.benchmark import build_from, rebuild, stored_config
from toolgauge.benchmarks.bfcl import SPEC
from toolgauge.benchmarks.bfcl.io import assistant_turn_to_bfcl_output, bfcl_gold_turn
from toolgauge.benchmarks.bfcl.loader import load_bfcl
from toolgauge.errors import UsageError

CEILING = {  # what BFCL's own checker gives its own ground truth
    "simple_python": 400, "multiple": 200, "parallel": 200, "parallel_multiple": 198,
    "live_simple": 256, "live_multiple": 1050, "irrelevance": 240,
}  # fmt: skip
TOTALS = {"simple_python": 400, "multiple": 200, "parallel": 200, "parallel_multiple": 200,
          "live_simple": 258, "live_multiple": 1053, "irrelevance": 240}  # fmt: skip


def build(**options: Any) -> Any:
    """The run ``build`` makes of keyword options (as the Python API and a sweep entry give them)."""
    return build_from(SPEC, options)


def rescore(config: dict[str, Any], variant: str | None) -> Any:
    """A stored config's run, as ``toolgauge rescore`` rebuilds it."""
    return rebuild(SPEC, config, variant)


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
    results = results_of(res)
    for category, correct in CEILING.items():
        assert results.value("correct", category, by="category") == correct, category
        metric = results.metric("accuracy", category, by="category")
        assert metric is not None and metric.n == TOTALS[category]
        assert metric.value == correct / TOTALS[category]
    assert results.value("unsatisfiable") == 7
    rows = sample_rows(samples)
    assert len(rows) == sum(TOTALS.values())
    assert set(rows[0]) == SAMPLE_FIELDS
    assert sum(r["value"] for r in rows) == sum(CEILING.values())
    assert all((r["value"] == 1.0) == r["scores"]["valid"] and r["metadata"]["category"] for r in rows)
    failed = [r for r in rows if r["value"] == 0.0]
    assert all(r["explanation"].startswith(r["scores"]["error_type"] + ": ") for r in failed)
    flagged = {r["id"] for r in rows if r["scores"]["unsatisfiable"]}
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
    results = results_of(res)
    assert results.value("correct", "simple_python", by="category") == 399
    simple = results.metric("accuracy", "simple_python", by="category")
    assert simple is not None and simple.n == 400
    assert results.value("correct", "parallel", by="category") == 200  # FC lists are checked with underscore_to_dot
    assert results.settings["underscore_to_dot"] == "by output style"
    assert res.stderr == ""  # every entry has a result: no missing-predictions warning
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
    forced_correct = results_of(forced).value("correct", "parallel", by="category")
    assert forced_correct is not None and forced_correct < 200  # spotify_play != spotify.play


def test_missing_result_for_an_entry_is_an_empty_reply(bfcl_dir, store, tmp_path):
    write_results(tmp_path, "multiple", [{"id": "multiple_0", "result": "nonsense"}])
    res = invoke(
        "score", "bfcl", "--data", str(bfcl_dir), "--predictions", str(tmp_path / "result"), "--json", "--store", store
    )
    assert res.exit_code == 0, res.output
    results = results_of(res)
    multiple = results.metric("correct", "multiple", by="category")
    assert multiple is not None and (multiple.value, multiple.n) == (0, 200)
    expected = "predictions missing for 199 of 200 samples (scored as wrong); first missing: multiple_1"
    assert res.stderr.strip() == f"warning: {expected}"
    assert results.warnings == [expected]


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
    assert results_of(res).value("correct", "simple_python", by="category") == 2


def test_rescore_scores_the_stored_outputs_again_without_a_model(bfcl_dir, store, tmp_path):
    categories = ["simple_python", "parallel_multiple"]
    entries = [e for c in categories for e in load_bfcl(bfcl_dir, [c])[:30]]
    script = [
        assistant_turn_to_bfcl_output(bfcl_gold_turn(e, style="prompt", underscore_to_dot=False), "prompt")
        for e in entries
    ]
    script[1] = "I would rather not."  # simple_python_1: wrong
    path = tmp_path / "script.json"
    path.write_text(json.dumps(script))
    first_res = invoke(
        "eval", "bfcl", "--data", bfcl_dir, "--categories", ",".join(categories), "--limit", "30", "--mode", "prompt",
        "-m", f"scripted:{path}", "-c", "1", "--store", store, "--json", "-q",
    )  # fmt: skip
    assert first_res.exit_code == 0, first_res.output
    first = results_of(first_res)
    assert first.run is not None
    assert first.value("correct", "simple_python", by="category") == 29
    assert first.value("correct", "parallel_multiple", by="category") == 28  # parallel_multiple_12 and _26
    assert first.value("unsatisfiable") == 2
    # The script is gone: a model call would fail; rescore reads the store alone.
    path.unlink()
    again = invoke("rescore", first.run.id, "--store", store, "--json", "--samples", tmp_path / "rows.jsonl")
    assert again.exit_code == 0, again.output
    rescored = results_of(again)
    assert rescored.metrics == first.metrics
    assert rescored.settings == first.settings == {"mode": "prompt", "underscore_to_dot": False, "data": str(bfcl_dir)}
    assert rescored.details == first.details
    rows = {r["id"]: r for r in sample_rows(tmp_path / "rows.jsonl")}
    assert len(rows) == 60
    assert rows["simple_python_1"]["value"] == 0.0 and rows["simple_python_1"]["metadata"]["output"] == script[1]
    table = invoke("report", first.run.id, "--store", store)
    assert "BFCL AST · prompt" in table.stdout and "simple_python" in table.stdout and "96.67" in table.stdout
    assert "note: 2 entries cannot be passed by any answer (data defects)" in table.stdout
    bad = invoke("rescore", first.run.id, "--store", store, "--variant", "strict")
    assert bad.exit_code == 2 and "bfcl has no metric variants" in bad.stderr


def test_rescore_of_a_scored_result_file_needs_the_file_no_more(bfcl_dir, store, tmp_path):
    lines = [{"id": "simple_python_0", "result": [{"calculate_triangle_area": json.dumps({"base": 10, "height": 5})}]}]
    write_results(tmp_path, "simple_python", lines)
    res = invoke("score", "bfcl", "--data", bfcl_dir, "--predictions", tmp_path / "result", "--json", "--store", store)
    assert res.exit_code == 0, res.output
    first = results_of(res)
    assert first.run is not None and first.run.model == f"replay:{tmp_path / 'result'}"
    assert first.run.model_calls == 400  # one replayed call per entry
    assert first.value("correct", "simple_python", by="category") == 1
    assert first.warnings == [
        "predictions missing for 399 of 400 samples (scored as wrong); first missing: simple_python_1"
    ]
    (tmp_path / "result" / "my-model" / "non_live" / "BFCL_v4_simple_python_result.json").unlink()
    again = invoke("rescore", first.run.id, "--store", store, "--json")
    assert again.exit_code == 0, again.output
    rescored = results_of(again)
    assert rescored.metrics == first.metrics
    assert rescored.warnings == first.warnings  # told by the stored outcomes, not by the files
    assert rescored.settings["underscore_to_dot"] == "by output style"


def test_build_takes_str_or_path_and_replay_table_is_pure(bfcl_dir, tmp_path):
    native = build(data=str(bfcl_dir), categories="simple_python,multiple", limit=2)
    assert [k for k, _ in native.samples()] == ["simple_python_0", "simple_python_1", "multiple_0", "multiple_1"]
    assert stored_config(native)["categories"] == ["multiple", "simple_python"] and stored_config(native)["limit"] == 2
    path = write_results(tmp_path, "simple_python", [{"id": "simple_python_0", "result": [{"f": '{"x": 1}'}]}])
    before = dict(vars(native))
    table = native.replay_table(path)
    assert [(t.name, t.raw) for t in table["simple_python_0"][0].tool_calls] == [("f", '{"x": 1}')]
    assert vars(native) == before and native.missing_predictions() == []  # reading recordings changes nothing
    replay = build(data=bfcl_dir, categories=["simple_python"], mode="replay", predictions=str(path), limit=3)
    assert replay.recorded == {"simple_python_0": [{"f": '{"x": 1}'}]}
    assert replay.missing_predictions() == ["simple_python_1", "simple_python_2"]
    with pytest.raises(UsageError, match="give predictions"):
        build(data=bfcl_dir, categories="simple_python", mode="replay")
    with pytest.raises(UsageError, match="give predictions"):
        build(data=bfcl_dir, categories="simple_python", predictions=path)
    with pytest.raises(UsageError, match="categories"):
        build(data=bfcl_dir)
    with pytest.raises(UsageError, match="no metric variants"):
        rescore(stored_config(native), "strict")
