"""Tool-Genesis's viewer panels: levels reached per server, unit tests per tool, a server's cascade and schema match.

Hand-built servers (``server_sample_score`` on hand-made episode results) cover the edge cases: stopped at L1,
no tool matched, no unit test, L4 not run, every level passed. The sandboxed run of the seven fixture servers
of test_genesis_eval.py checks the panels against what the real scoring put in each server's scores.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from helpers.view_runs import skip_or_fail_without, view_missing
from toolgauge.benchmarks.tool_genesis import SPEC as GENESIS
from toolgauge.benchmarks.tool_genesis.metrics import genesis_metrics
from toolgauge.benchmarks.tool_genesis.metrics.compliance import Verdict
from toolgauge.benchmarks.tool_genesis.metrics.schema import SchemaMatch
from toolgauge.benchmarks.tool_genesis.metrics.unit_tests import UnitTestScore, summarise_unit_tests
from toolgauge.benchmarks.tool_genesis.protocol import (
    GenesisEvalResult,
    LaunchRecord,
    TaskRecord,
    UnitTestRecord,
    server_sample_score,
    server_score,
)
from toolgauge.benchmarks.tool_genesis.views import (
    highest_passed,
    level_status,
    outcome_counts,
    run_panels,
    sample_panels,
    stop_of,
)
from toolgauge.panels import ChartPanel, TablePanel
from toolgauge.results import EvalResults, SampleScore
from toolgauge.sandbox import detect_sandbox

skip_or_fail_without(view_missing(browser=False))
# Generated code runs only under bubblewrap (as in test_genesis_eval.py).
needs_bwrap = pytest.mark.skipif(detect_sandbox() != "bwrap", reason="bubblewrap sandbox not available here")

MATCH = SchemaMatch(tool_f1=1.0, args_f1=0.5, schema_f1=0.75, tool_map={"plus": "add", "hello": "greet"},
                    arg_maps={"add": {"x": "a", "y": "b"}, "greet": {"name": "name"}})  # fmt: skip


def unit_test(tool: str, index: int, status: str, hard: bool | None = None, soft: float = 0.0) -> UnitTestRecord:
    score = None if hard is None else UnitTestScore(hard_pass=hard, soft=soft, struct_f1=0.0, embed_sim=0.0,
                                                     reason=None if hard else "error word in the answer")  # fmt: skip
    return UnitTestRecord(
        gold_tool=tool,
        index=index,
        status=status,
        score=score,  # type: ignore[arg-type]
        pred_tool={"add": "plus", "greet": "hello"}.get(tool) if status == "called" else None,
    )


TESTS = [
    unit_test("add", 0, "called", True, 0.9),
    unit_test("add", 1, "called", True, 0.5),
    unit_test("add", 2, "called", False),
    unit_test("greet", 0, "not_built"),
    unit_test("greet", 1, "not_built"),
    unit_test("mul", 0, "not_run"),
]


def server(slug: str, *, compliant: bool = True, launched: bool = True, match: SchemaMatch | None = MATCH,
           tests: Sequence[UnitTestRecord] = (), ratings: Sequence[int] | None = None,
           l4_skipped: str | None = None) -> GenesisEvalResult:  # fmt: skip
    """A server's episode results: L1 as given, the schema match, the unit tests (scored) and the L4 ratings."""
    scored = [t.score for t in tests if t.score is not None]
    summary = summarise_unit_tests(scored, not_built=sum(t.status == "not_built" for t in tests),
                                   not_run=sum(t.status == "not_run" for t in tests)) if tests else None  # fmt: skip
    return GenesisEvalResult(
        slug=slug,
        variant="reference",
        compliance=Verdict(ok=compliant, reason=None if compliant else "missing inputSchema"),
        mcp_valid=Verdict(ok=True),
        launches=[
            LaunchRecord(attempt=1, ok=launched, tools=2 if launched else 0, reason=None if launched else "exit 1")
        ],
        schema_match=match,
        unit_tests=list(tests),
        ut_summary=summary,
        tasks=None if ratings is None else [TaskRecord(index=i, task="t", rating=r) for i, r in enumerate(ratings)],
        l4_skipped=l4_skipped,
    )


def units_of(results: Sequence[GenesisEvalResult], *, l4_run: bool = True) -> tuple[EvalResults, list[SampleScore]]:
    scores = [server_score(r, "reference") for r in results]
    metrics = genesis_metrics(scores, l4_run=l4_run)
    units = [server_sample_score(r.slug, r, s, None, l4_run=l4_run) for r, s in zip(results, scores, strict=True)]
    return EvalResults(benchmark="tool-genesis", metrics=metrics), units


@pytest.fixture(scope="module")
def hand_built() -> tuple[EvalResults, dict[str, SampleScore]]:
    results, units = units_of(
        [
            server("no-start", launched=False),
            server("no-match", match=SchemaMatch(tool_f1=0.0, args_f1=0.0, schema_f1=0.0)),
            server("no-tests", tests=[]),
            server("tests-no-l4", tests=TESTS, l4_skipped="L4 off (--no-l4)"),
            server("all-levels", tests=TESTS[:2], ratings=[4, 1]),
            server("low-tasks", tests=TESTS[:1], ratings=[2]),
        ]
    )
    return results, {u.id: u for u in units}


def test_levels_of_each_edge_case(hand_built: tuple[EvalResults, dict[str, SampleScore]]) -> None:
    _, units = hand_built
    statuses = {slug: [level_status(u, level) for level in ("L1", "L2", "L3", "L4")] for slug, u in units.items()}
    assert statuses == {
        "no-start": ["stopped", "not reached", "not reached", "not reached"],
        "no-match": ["passed", "stopped", "not reached", "not reached"],
        "no-tests": ["passed", "passed", "stopped", "not reached"],
        "tests-no-l4": ["passed", "passed", "passed", "not run"],
        "all-levels": ["passed", "passed", "passed", "passed"],
        "low-tasks": ["passed", "passed", "passed", "stopped"],
    }
    highest = {slug: highest_passed(u) for slug, u in units.items()}
    assert highest == {"no-start": "L0", "no-match": "L1", "no-tests": "L2", "tests-no-l4": "L3",
                       "all-levels": "L4", "low-tasks": "L3"}  # fmt: skip
    assert stop_of(units["no-start"])[0] == "L1" and "did not start" in str(stop_of(units["no-start"])[1])
    assert stop_of(units["no-tests"]) == ("L3", "no unit test run")
    assert stop_of(units["low-tasks"]) == ("L4", "no task rated 3 or more")
    assert stop_of(units["all-levels"]) == (None, None)
    # Each stop is the one the server's explanation names.
    for unit in units.values():
        stop, reason = stop_of(unit)
        assert (stop is None) == ("stopped at" not in str(unit.explanation))
        if stop is not None:
            assert f"stopped at {stop}: {reason}" in str(unit.explanation)


def test_run_panels(hand_built: tuple[EvalResults, dict[str, SampleScore]]) -> None:
    from toolgauge.view.charts import render_svg

    results, units = hand_built
    grid, table, tests_chart, per_tool = run_panels(results, list(units.values()))
    assert isinstance(grid, ChartPanel) and grid.name == "levels"
    cells = {(r["server"], r["level"]): r for r in grid.spec["data"]["values"]}
    assert len(cells) == 6 * 4
    assert cells[("no-start", "L1")]["status"] == "stopped" and "did not start" in cells[("no-start", "L1")]["why"]
    assert cells[("tests-no-l4", "L4")]["status"] == "not run"
    svg = render_svg(grid.spec)
    assert svg.startswith("<svg") and svg.count("<path") >= 24 and "tests-no-l4" in svg

    assert isinstance(table, TablePanel)
    rows = {row[0]: row for row in table.rows}
    assert table.columns[:4] == ["server", "highest level passed", "stopped at", "reason"]
    assert [row[0] for row in table.rows][:1] == ["all-levels"]  # best first
    assert rows["no-tests"][1:4] == ["L2", "L3", "no unit test run"]
    assert rows["all-levels"][1:4] == ["L4", None, None]
    ut_hard = table.columns.index("ut_hard")
    assert rows["tests-no-l4"][ut_hard] == round(units["tests-no-l4"].scores["ut_hard"], 4) == round(2 / 3, 4)

    assert isinstance(tests_chart, ChartPanel) and tests_chart.name == "unit-tests"
    drawn = {(r["server"], r["outcome"]): r["tests"] for r in tests_chart.spec["data"]["values"]}
    assert drawn == {
        ("tests-no-l4", "hard pass"): 2, ("tests-no-l4", "called, not hard-passed"): 1,
        ("tests-no-l4", "not built"): 2, ("tests-no-l4", "not run"): 1,
        ("all-levels", "hard pass"): 2, ("low-tasks", "hard pass"): 1,
    }  # fmt: skip
    assert "<path" in render_svg(tests_chart.spec)

    assert isinstance(per_tool, TablePanel)
    mine = {(row[0], row[1]): row[2:] for row in per_tool.rows}
    # generated tool, tests, called, not built, not run, hard passed, hard pass rate, mean soft (both of called)
    assert mine[("tests-no-l4", "add")] == ["plus", 3, 3, 0, 0, 2, round(2 / 3, 4), round(1.4 / 3, 4)]
    assert mine[("tests-no-l4", "greet")] == [None, 2, 0, 2, 0, 0, None, None]
    assert mine[("tests-no-l4", "mul")] == [None, 1, 0, 0, 1, 0, None, None]
    assert {server for server, _ in mine} == {"tests-no-l4", "all-levels", "low-tasks"}


def test_no_server_reached_l3() -> None:
    results, units = units_of([server("a", launched=False), server("b", tests=[])], l4_run=False)
    panels = run_panels(results, units)
    assert [p.name for p in panels] == ["levels", "levels-table", "unit-tests-by-tool"]
    last = panels[-1]
    assert isinstance(last, TablePanel) and last.rows == [] and last.note is not None and "L3" in last.note
    # No L4 score is shown where the run skipped L4.
    table = panels[1]
    assert isinstance(table, TablePanel) and "sr_soft" not in table.columns


def test_a_servers_page(hand_built: tuple[EvalResults, dict[str, SampleScore]]) -> None:
    _, units = hand_built
    cascade, schema, tool_map, per_tool, tests = sample_panels([units["tests-no-l4"]])
    assert isinstance(cascade, TablePanel) and cascade.name == "cascade"
    assert [row[:3] for row in cascade.rows] == [
        ["L1", "passed", None],
        ["L2", "passed", None],
        ["L3", "passed", None],
        ["L4", "not run", "tasks not run; skipped: L4 off (--no-l4)"],
    ]
    assert "ut_hard 0.6667" in str(cascade.rows[2][3]) and "schema_f1 0.75" in str(cascade.rows[1][3])
    assert cascade.title == "cascade: " + str(units["tests-no-l4"].explanation)
    assert isinstance(schema, TablePanel) and schema.name == "schema-match"
    assert schema.rows == [["schema file", 1.0, 0.5, 0.75, 2, None], ["live tools/list", None, None, None, None,
                                                                     "not computed"]]  # fmt: skip
    # The matched reference tools and those with unit tests (mul: none matched it).
    assert isinstance(tool_map, TablePanel) and tool_map.rows == [
        ["add", "plus", 2, None, None],
        ["greet", "hello", 1, None, None],
        ["mul", None, None, None, None],
    ]
    assert isinstance(per_tool, TablePanel) and [row[0] for row in per_tool.rows] == ["add", "greet", "mul"]
    assert isinstance(tests, TablePanel)
    assert [row[:5] for row in tests.rows] == [
        ["add", 0, "called", True, 0.9],
        ["add", 1, "called", True, 0.5],
        ["add", 2, "called", False, 0.0],
        ["greet", 0, "not_built", None, None],
        ["greet", 1, "not_built", None, None],
        ["mul", 0, "not_run", None, None],
    ]
    assert tests.rows[2][5] == "error word in the answer"

    # Stopped at L1: the cascade says why, the rest is not reached; no unit-test tables.
    (cascade, _, tool_map) = sample_panels([units["no-start"]])
    assert isinstance(tool_map, TablePanel) and [row[0] for row in tool_map.rows] == ["add", "greet"]
    assert [row[1] for row in cascade.rows] == ["stopped", "not reached", "not reached", "not reached"]
    assert isinstance(cascade, TablePanel) and "did not start" in str(cascade.rows[0][2])
    # An L4 stop names its reason.
    cascade = sample_panels([units["low-tasks"]])[0]
    assert isinstance(cascade, TablePanel) and cascade.rows[3][:3] == ["L4", "stopped", "no task rated 3 or more"]


def test_the_spec_registers_the_views() -> None:
    assert GENESIS.run_panels is not None and GENESIS.sample_panels is not None
    assert sample_panels([SampleScore(id="x", sample="x")]) == []


# -- the fixture servers, evaluated in the sandbox ----------------------------------------------------------------


@needs_bwrap
@pytest.mark.parametrize("variant", ["reference", "strict"])
def test_panels_agree_with_the_scores_of_real_runs(tmp_path: Path, variant: str) -> None:
    from test_genesis_eval import CASES, bench_for, build_registry, run

    from toolgauge.view.charts import render_svg

    data, registry = build_registry(tmp_path, CASES)
    scored = run(bench_for(data, registry, variant), tmp_path)
    units = list(scored.servers.values())
    panels = {p.name: p for p in run_panels(scored.results, units)}
    assert list(panels) == ["levels", "levels-table", "unit-tests", "unit-tests-by-tool"]
    # The servers whose highest level passed is L1 or more are the cascade's L1 count, and so on.
    table = panels["levels-table"]
    assert isinstance(table, TablePanel)
    highest = [int(str(row[1])[1]) for row in table.rows]
    for level in (1, 2, 3, 4):
        assert sum(h >= level for h in highest) == scored.results.value("servers", f"L{level}", by="cascade")
    # Per server, the per-tool counts are what UT_hard and UT_soft divide: the variant's total.
    for unit in units:
        counts = outcome_counts(unit)
        per_tool = [row for row in panels["unit-tests-by-tool"].rows if row[0] == unit.id]  # type: ignore[union-attr]
        if not per_tool:
            assert unit.scores["unit_tests_counted"] == 0
            continue
        called = counts["hard pass"] + counts["called, not hard-passed"]
        total = called + (counts["not built"] + counts["not run"] if variant == "strict" else 0)
        assert unit.scores["unit_tests_counted"] == total, unit.id
        if total and "L1" not in unit.metadata["failures"]:
            assert unit.scores["ut_hard"] == pytest.approx(counts["hard pass"] / total), unit.id
            soft = sum(tool["soft_sum"] for tool in unit.metadata["L3"]["tools"].values())
            assert unit.scores["ut_soft"] == pytest.approx(soft / total), unit.id
    for name in ("levels", "unit-tests"):
        chart = panels[name]
        assert isinstance(chart, ChartPanel) and "<path" in render_svg(chart.spec)
    # A server's page: crash_on_call stopped at L3, its first test called and the others not run.
    cascade, _, _, _, tests = sample_panels([scored.servers["crash_on_call"]])
    assert isinstance(cascade, TablePanel) and cascade.rows[2][:2] == ["L3", "stopped"]
    assert str(cascade.rows[2][2]).startswith("no unit test passed; aborted: server died at add[0]")
    assert isinstance(tests, TablePanel) and [row[2] for row in tests.rows].count("called") == 1
