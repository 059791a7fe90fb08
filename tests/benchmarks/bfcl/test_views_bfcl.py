"""BFCL's views: the possible answer as metadata ``gold`` beside the decoded calls, and error types by category.

The units come from the real v4 data (``shared_data_dir()``) checked by BFCL's checker on outputs made here
(gold, an empty reply, a call to a tool that does not exist); the end-to-end tests store real runs and read
them back through the viewer's ``ViewData``.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from helpers.cli_helpers import invoke
from helpers.view_runs import skip_or_fail_without, view_missing
from toolgauge.benchmarks.bfcl.io import assistant_turn_to_bfcl_output, bfcl_gold_turn
from toolgauge.benchmarks.bfcl.loader import BfclEntry, BfclOutput, load_bfcl
from toolgauge.benchmarks.bfcl.metrics import check_bfcl_entry
from toolgauge.benchmarks.bfcl.protocol import JudgedEntry, gold_calls
from toolgauge.benchmarks.bfcl.views import error_type_counts, run_panels
from toolgauge.panels import ChartPanel, TablePanel
from toolgauge.results import EvalResults, SampleScore

CATEGORIES = ["simple_python", "parallel", "irrelevance"]
WRONG_CALL: BfclOutput = [{"no_such_tool": "{}"}]


@pytest.fixture(scope="module")
def entries(bfcl_dir: Path) -> list[BfclEntry]:
    found = load_bfcl(bfcl_dir, CATEGORIES)
    by_category: dict[str, list[BfclEntry]] = {}
    for entry in found:
        by_category.setdefault(entry.category, []).append(entry)
    return [e for c in CATEGORIES for e in by_category[c][:12]]


def gold_output(entry: BfclEntry) -> BfclOutput:
    return assistant_turn_to_bfcl_output(bfcl_gold_turn(entry, style="native", underscore_to_dot=True), "native")


def unit(entry: BfclEntry, output: BfclOutput) -> SampleScore:
    verdict = check_bfcl_entry(entry, output, underscore_to_dot=True)
    return JudgedEntry(verdict, output, False, None, 12, gold_calls(entry)).sample_score()


def test_gold_is_the_possible_answer_as_calls_with_the_accepted_values(entries: list[BfclEntry]):
    simple = next(e for e in entries if e.category == "simple_python")
    assert simple.ground_truth is not None
    row = unit(simple, gold_output(simple))
    [(name, accepted)] = simple.ground_truth[0].items()
    assert row.metadata["gold"] == [{"name": name, "arguments": accepted}]
    assert all(isinstance(values, list) for values in row.metadata["gold"][0]["arguments"].values())
    parallel = next(e for e in entries if e.category == "parallel" and e.ground_truth and len(e.ground_truth) > 1)
    gold = unit(parallel, "").metadata["gold"]
    assert [c["name"] for c in gold] == [next(iter(item)) for item in parallel.ground_truth or []]
    # Irrelevance: the right reply is no call.
    irrelevant = next(e for e in entries if e.category == "irrelevance")
    assert unit(irrelevant, "").metadata["gold"] == []


def test_live_relevance_accepts_any_call_so_it_has_no_gold():
    entry = BfclEntry(id="live_relevance_0", category="live_relevance", question=[], functions=[], ground_truth=None,
                      path="x", line=1)  # fmt: skip
    assert gold_calls(entry) is None
    assert "gold" not in unit(entry, WRONG_CALL).metadata


def test_gold_changes_no_verdict(entries: list[BfclEntry]):
    for entry in entries:
        for output in (gold_output(entry), "", WRONG_CALL):
            with_gold = unit(entry, output)
            without = JudgedEntry(check_bfcl_entry(entry, output, underscore_to_dot=True), output, False, None, 12)
            plain = without.sample_score()
            assert (with_gold.value, with_gold.scores, with_gold.weights, with_gold.explanation) == (
                plain.value, plain.scores, plain.weights, plain.explanation)  # fmt: skip
            assert {k: v for k, v in with_gold.metadata.items() if k != "gold"} == plain.metadata


def mixed_units(entries: list[BfclEntry]) -> list[SampleScore]:
    outputs: list[BfclOutput] = []
    for i, entry in enumerate(entries):
        outputs.append(gold_output(entry) if i % 3 == 0 else "" if i % 3 == 1 else WRONG_CALL)
    return [unit(e, o) for e, o in zip(entries, outputs, strict=True)]


def test_error_types_by_category_count_every_failing_entry(entries: list[BfclEntry]):
    units = mixed_units(entries)
    counts = error_type_counts(units)
    assert sum(counts.values()) == sum(1 for u in units if u.value == 0.0) > 0
    expected = Counter((str(u.metadata["category"]), str(u.scores["error_type"])) for u in units if u.value == 0.0)
    assert counts == expected
    # A call to a made-up tool is an irrelevance error there and a wrong function name elsewhere.
    assert counts[("irrelevance", "irrelevance_error:decoder_success")] > 0
    assert counts[("simple_python", "simple_function_checker:wrong_func_name")] > 0


def test_run_panels_draw_the_heatmap_and_list_the_counts(entries: list[BfclEntry]):
    skip_or_fail_without(view_missing(browser=False))
    from toolgauge.view.charts import render_svg

    units = mixed_units(entries)
    chart, table = run_panels(EvalResults(benchmark="bfcl"), units)
    assert isinstance(chart, ChartPanel) and isinstance(table, TablePanel)
    svg = render_svg(chart.spec)
    assert svg.startswith("<svg") and "simple_python" in svg and "irrelevance_error:decoder_success" in svg
    assert table.columns == ["error type", *CATEGORIES, "all"]
    counts = error_type_counts(units)
    for row in table.rows:
        assert row[1:-1] == [counts.get((c, str(row[0])), 0) for c in CATEGORIES]
        assert row[-1] == sum(row[1:-1])  # type: ignore[arg-type]
    assert sum(row[-1] for row in table.rows) == sum(1 for u in units if u.value == 0.0)  # type: ignore[misc]


def test_a_run_without_failures_has_no_panel(entries: list[BfclEntry]):
    assert run_panels(EvalResults(benchmark="bfcl"), [unit(e, gold_output(e)) for e in entries]) == []


# --- end to end: stored runs read back by the viewer --------------------------------------------------------


def view_data(url: str):  # type: ignore[no-untyped-def]
    from toolgauge.cli.view import registry_benchmarks
    from toolgauge.store import open_store
    from toolgauge.view.data import ViewData

    return ViewData(open_store(url), registry_benchmarks())


def test_a_stored_bfcl_run_shows_gold_on_its_sample_pages_and_error_types_on_its_run_page(
    bfcl_dir: Path, tmp_path: Path
):
    skip_or_fail_without(view_missing(browser=False))
    url = f"sqlite:///{tmp_path / 's.db'}"
    # A scored result file: one wrong answer in "multiple", every other entry of the category missing.
    results = tmp_path / "result" / "m" / "non_live" / "BFCL_v4_multiple_result.json"
    results.parent.mkdir(parents=True)
    results.write_text(json.dumps({"id": "multiple_0", "result": "nonsense"}) + "\n")
    res = invoke("score", "bfcl", "--data", str(bfcl_dir), "--predictions", str(tmp_path / "result"), "--store",
                 url, "-q", "--json")  # fmt: skip
    assert res.exit_code == 0, res.output
    run = json.loads(res.stdout)["run"]["id"]
    data = view_data(url)
    page = data.sample(run, "multiple_0")
    [shown] = page["units"]
    entry = next(e for e in load_bfcl(bfcl_dir, ["multiple"]) if e.id == "multiple_0")
    assert shown["metadata"]["gold"] == gold_calls(entry) and shown["metadata"]["gold"]
    found = data.run_panels(run)
    assert found["note"] is None
    chart, table = found["panels"]
    assert chart["kind"] == "chart" and chart["svg"].startswith("<svg") and "<path" in chart["svg"]
    assert table["columns"] == ["error type", "multiple", "all"]
    assert sum(row[-1] for row in table["rows"]) == 200  # every entry of the category failed


def test_a_gold_bfcl_run_has_gold_beside_the_decoded_calls(bfcl_dir: Path, tmp_path: Path):
    skip_or_fail_without(view_missing(browser=False))
    url = f"sqlite:///{tmp_path / 's.db'}"
    res = invoke("eval", "bfcl", "--data", str(bfcl_dir), "--categories", "simple_python,irrelevance", "--model",
                 "gold", "--limit", "2", "--store", url, "-q", "--json")  # fmt: skip
    assert res.exit_code == 0, res.output
    run = json.loads(res.stdout)["run"]["id"]
    data = view_data(url)
    simple = data.sample(run, "simple_python_0")["units"][0]["metadata"]
    assert simple["gold"][0]["arguments"] and simple["decoded"]
    assert data.sample(run, "irrelevance_0")["units"][0]["metadata"]["gold"] == []
    assert data.run_panels(run) == {"panels": [], "note": None}  # nothing failed
