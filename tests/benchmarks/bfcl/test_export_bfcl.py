"""``toolgauge export --format bfcl``: BFCL's score files and leaderboard CSVs for a BFCL run on the real data.

Checked field by field against what BFCL's runner writes (bfcl-eval 2026.3.23, ``eval_checker/eval_runner.py``
and ``eval_runner_helper.py``; docs/exports.md). The comparison with ``bfcl evaluate``'s own files on the same
result files is ``benchmarks/bfcl_score_files.py`` (docs/benchmarks.md).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from helpers.cli_helpers import invoke
from helpers.export_runs import BFCL_CATEGORIES, BFCL_LIMIT, bfcl_replay_run, rescored_rows
from toolgauge.benchmarks.bfcl.export import COLUMNS_LIVE, COLUMNS_NON_LIVE, COLUMNS_OVERALL, leaderboard_rows

# The fields of a failed entry, in BFCL's order, by how it failed.
AST_FIELDS = ["id", "model_name", "test_category", "valid", "error", "error_type", "prompt", "model_result_raw",
              "model_result_decoded", "possible_answer"]  # fmt: skip
DECODER_FAILED_FIELDS = ["id", "model_name", "test_category", "valid", "error", "error_type", "prompt",
                         "model_result_raw", "possible_answer"]  # fmt: skip
RELEVANCE_FIELDS = ["id", "model_name", "test_category", "valid", "prompt", "model_result", "decoded_result", "error",
                    "error_type"]  # fmt: skip
MODEL = "gpt-4o-2024-11-20"


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory, bfcl_dir: Path) -> dict[str, Any]:
    work = tmp_path_factory.mktemp("export_bfcl")
    store = f"sqlite:///{work / 'store.db'}"
    run_id = bfcl_replay_run(store, bfcl_dir, work)
    out = work / "score"
    res = invoke("export", run_id, "--format", "bfcl", "--out", out, "--store", store, "--model-name", MODEL)
    assert res.exit_code == 0, res.output
    rows = rescored_rows(store, run_id, work / "samples.jsonl")
    report = invoke("report", run_id, "--store", store, "--json")
    return {"out": out, "rows": rows, "results": json.loads(report.stdout), "store": store, "run": run_id}


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def data_lines(path: Path) -> dict[str, dict[str, Any]]:
    return {line["id"]: line for line in read_jsonl(path)}


def failed_lines(path: Path) -> dict[str, dict[str, Any]]:
    """A score file's failed entries by id (its first line is the summary)."""
    return {line["id"]: line for line in read_jsonl(path)[1:]}


def test_one_score_file_per_category_in_bfcls_layout(exported):
    out: Path = exported["out"]
    files = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    expected = sorted(
        [f"{MODEL}/{'live' if 'live' in c else 'non_live'}/BFCL_v4_{c}_score.json" for c in BFCL_CATEGORIES]
        + ["data_overall.csv", "data_non_live.csv", "data_live.csv", "data_multi_turn.csv", "data_agentic.csv"]
    )
    assert files == expected


def test_summary_line_is_the_runs_per_category_accuracy(exported):
    metrics = exported["results"]["metrics"]
    for category in BFCL_CATEGORIES:
        group = "live" if "live" in category else "non_live"
        summary = read_jsonl(exported["out"] / MODEL / group / f"BFCL_v4_{category}_score.json")[0]
        accuracy = next(m for m in metrics if m["name"] == "accuracy" and m["group"] == category)
        correct = next(m for m in metrics if m["name"] == "correct" and m["group"] == category)
        assert summary == {"accuracy": accuracy["value"], "correct_count": correct["value"], "total_count": BFCL_LIMIT}
        assert list(summary) == ["accuracy", "correct_count", "total_count"]


def test_failed_entries_are_the_wrong_samples_with_bfcls_fields(exported, bfcl_dir: Path):
    rows = {r["id"]: r for r in exported["rows"]}
    seen_types: set[str] = set()
    for category in BFCL_CATEGORIES:
        group = "live" if "live" in category else "non_live"
        lines = read_jsonl(exported["out"] / MODEL / group / f"BFCL_v4_{category}_score.json")[1:]
        wrong = [r["id"] for r in exported["rows"] if r["metadata"]["category"] == category and r["value"] == 0.0]
        assert [line["id"] for line in lines] == wrong and wrong
        prompts = data_lines(bfcl_dir / f"BFCL_v4_{category}.json")
        answers = (
            data_lines(bfcl_dir / "possible_answer" / f"BFCL_v4_{category}.json") if category != "irrelevance" else {}
        )
        for line in lines:
            row = rows[line["id"]]
            seen_types.add(line["error_type"])
            assert line["model_name"] == MODEL and line["test_category"] == category and line["valid"] is False
            assert line["error_type"] == row["scores"]["error_type"]
            assert line["prompt"] == prompts[line["id"]]  # the data line itself, as BFCL loads it
            if category == "irrelevance":
                assert list(line) == RELEVANCE_FIELDS
                assert line["model_result"] == row["metadata"]["output"]
                assert line["decoded_result"] == row["metadata"]["decoded"]
                assert line["error"] == ["Valid syntax. Successfully decode AST when it should not."]
                continue
            assert line["possible_answer"] == answers[line["id"]]["ground_truth"]
            assert line["model_result_raw"] == row["metadata"]["output"]
            if line["error_type"] == "ast_decoder:decoder_failed":
                assert list(line) == DECODER_FAILED_FIELDS
                assert line["error"] == row["metadata"]["errors"]
                assert line["error"][0].startswith("Invalid syntax. Failed to decode AST. ")
            elif line["error_type"] == "ast_decoder:decoder_wrong_output_format":
                assert list(line) == AST_FIELDS
                # str() of what BFCL's tree-sitter decoders return for text without a call
                assert line["model_result_decoded"] == {"java": "{}", "javascript": "None"}[category.split("_")[-1]]
            else:
                assert list(line) == AST_FIELDS
                assert line["model_result_decoded"] == row["metadata"]["decoded"]
                if line["error_type"].endswith("cannot_find_match"):
                    assert_nested_no_match(line, row)
                else:
                    assert line["error"] == row["metadata"]["errors"]
    # The planted outputs: no call text, a wrong function name, no call at all, a call where none is wanted.
    assert {"ast_decoder:decoder_failed", "simple_function_checker:wrong_func_name",
            "irrelevance_error:decoder_success"} <= seen_types  # fmt: skip
    assert any(t.endswith("wrong_count") for t in seen_types)


def assert_nested_no_match(line: dict[str, Any], row: dict[str, Any]) -> None:
    """BFCL's cannot_find_match error list: the head sentence, then what each model call tried failed with."""
    head, *tried = line["error"]
    parts = []
    for item in tried:
        ((key, detail),) = item.items()
        index = int(key.removeprefix("Model Result Index "))
        assert list(detail) == ["sub_error", "sub_error_type", "model_output_item", "possible_answer_item"]
        assert detail["model_output_item"] == row["metadata"]["decoded"][index]
        assert detail["possible_answer_item"] in line["possible_answer"]
        parts.append(f"model call {index}: {detail['sub_error_type']}: {detail['sub_error'][0]}")
    assert tried and f"{head} {' | '.join(parts)}" == row["metadata"]["errors"][0]


def test_leaderboard_csvs_have_bfcls_columns_and_aggregates(exported):
    out: Path = exported["out"]
    header, row = (out / "data_overall.csv").read_text().split("\n")
    assert header.split(",") == COLUMNS_OVERALL
    cells = dict(zip(COLUMNS_OVERALL, row.split(","), strict=True))
    accuracy = {m["group"]: m["value"] for m in exported["results"]["metrics"] if m["name"] == "accuracy"}
    assert cells["Rank"] == "1" and cells["Model"] == MODEL
    assert cells["Non-Live Multiple AST"] == f"{accuracy['multiple'] * 100:.2f}%"
    assert cells["Live Simple AST"] == f"{accuracy['live_simple'] * 100:.2f}%"
    # A category the run lacks: N/A, and it counts 0 (live: weighted by BFCL's entry counts).
    assert cells["Live Multiple AST"] == "N/A" and cells["Multi Turn Base"] == "N/A"
    live = accuracy["live_simple"] * 5 / (5 + 1053 + 16 + 24)
    assert cells["Live Acc"] == f"{live * 100:.2f}%"
    non_live = (accuracy["simple_python"] / 3 + accuracy["multiple"] + accuracy["parallel"]) / 4
    irrelevance = accuracy["irrelevance"] / 2
    overall = 0.1 * non_live + 0.1 * live + 0.1 * irrelevance
    assert cells["Overall Acc"] == f"{overall * 100:.2f}%"
    assert cells["Irrelevance Detection"] == "N/A"  # live_irrelevance is missing
    assert cells["Organization"] == "N/A"
    for name, columns in (("data_non_live.csv", COLUMNS_NON_LIVE), ("data_live.csv", COLUMNS_LIVE)):
        assert (out / name).read_text().split("\n")[0].split(",") == columns


def test_leaderboard_with_every_category_matches_bfcls_formulas():
    table = {c: (0.5, n) for c, n in [("simple_python", 400), ("simple_java", 100), ("simple_javascript", 50),
             ("multiple", 200), ("parallel", 200), ("parallel_multiple", 200), ("irrelevance", 240),
             ("live_simple", 258), ("live_multiple", 1053), ("live_parallel", 16), ("live_parallel_multiple", 24),
             ("live_irrelevance", 884), ("live_relevance", 16)]}  # fmt: skip
    table["live_simple"] = (1.0, 258)
    (_, _, overall), (_, _, non_live), (_, _, live), *_ = leaderboard_rows(table, "m", [0.1, 0.2, 0.3, 0.4])
    assert non_live[2:5] == [0.5, 0.5, 0.5]
    live_acc = (258 * 1.0 + (1053 + 16 + 24) * 0.5) / (258 + 1053 + 16 + 24)
    assert live[2] == pytest.approx(live_acc) and live[3] == pytest.approx(live_acc)
    # No multi-turn or agentic run: they count 0 with weights 30 and 40.
    assert overall[1] == pytest.approx(0.1 * 0.5 + 0.1 * live_acc + 0.1 * 0.5)
    # Latency mean, standard deviation and numpy's linear 95th percentile, rounded.
    assert overall[5:8] == [0.25, 0.13, 0.39]


def test_a_model_spec_becomes_a_folder_name(tmp_path: Path, exported):
    out = tmp_path / "score"
    res = invoke("export", exported["run"], "--format", "bfcl", "--out", out, "--store", exported["store"])
    assert res.exit_code == 0, res.output
    (folder,) = [p.name for p in out.iterdir() if p.is_dir()]
    assert folder.startswith("replay-") and "/" not in folder and ":" not in folder


def test_text_without_a_call_and_the_users_data_are_written_as_bfcl_writes_them(tmp_path: Path, bfcl_dir: Path):
    results = tmp_path / "results"
    results.mkdir()
    outputs = {
        "simple_java": ("simple_java_0", "[]"),  # no method invocation: BFCL's Java decoder returns {}
        "simple_javascript": ("simple_javascript_0", "[f(a=1), g(b=2)]"),  # a sequence: its JS decoder, None
        "live_multiple": ("live_multiple_217-93-0", "I cannot help."),  # a description holds user:password@
    }
    for category, (entry_id, text) in outputs.items():
        (results / f"BFCL_v4_{category}_result.json").write_text(json.dumps({"id": entry_id, "result": text}) + "\n")
    store = f"sqlite:///{tmp_path / 'store.db'}"
    scored = invoke("score", "bfcl", "--data", bfcl_dir, "--predictions", results, "--store", store, "--json")
    assert scored.exit_code == 0, scored.output
    out = tmp_path / "score"
    res = invoke("export", "latest", "--format", "bfcl", "--out", out, "--store", store, "--model-name", MODEL)
    assert res.exit_code == 0, res.output
    java = failed_lines(out / MODEL / "non_live" / "BFCL_v4_simple_java_score.json")["simple_java_0"]
    javascript = failed_lines(out / MODEL / "non_live" / "BFCL_v4_simple_javascript_score.json")["simple_javascript_0"]
    for line, shown in ((java, "{}"), (javascript, "None")):
        assert line["error_type"] == "ast_decoder:decoder_wrong_output_format"
        assert list(line) == AST_FIELDS and line["model_result_decoded"] == shown
    live = failed_lines(out / MODEL / "live" / "BFCL_v4_live_multiple_score.json")["live_multiple_217-93-0"]
    assert live["error_type"] == "ast_decoder:decoder_failed"
    assert live["error"] == [
        "Invalid syntax. Failed to decode AST. invalid syntax. Perhaps you forgot a comma? (<unknown>, line 1)"
    ]
    assert live["prompt"] == data_lines(bfcl_dir / "BFCL_v4_live_multiple.json")["live_multiple_217-93-0"]
    assert "http://user:password@host:port" in json.dumps(live["prompt"])  # the user's data, not redacted
