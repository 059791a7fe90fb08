"""WildToolBench's views: each task's path through its gold call graph (metadata), its drawing and step table,
and where failed tasks left the graph.

Units come from real runs over the repository's fixture sessions (``tests/fixtures/wildtoolbench``: the gold
model, replayed step files, the official result file); WildToolBench has no real data on this machine. The
expected paths are derived by hand from the fixture graphs, as in tests/benchmarks/wildtoolbench/test_wild_protocol.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from test_wild_protocol import (
    EXPECTED_SCENARIO,
    OFFICIAL,
    SCENARIO,
    SESSIONS,
    call,
    replay,
    rows_by_id,
    run,
    scenario,
    session,
    step,
)

from helpers.cli_helpers import invoke
from helpers.view_runs import skip_or_fail_without, view_missing
from toolgauge.benchmarks.wildtoolbench.io import read_official
from toolgauge.benchmarks.wildtoolbench.loader import builtin_wild_path, load_wild
from toolgauge.benchmarks.wildtoolbench.options import WildOptions
from toolgauge.benchmarks.wildtoolbench.protocol import (
    ERROR_EMPTY,
    ERROR_NO_MATCH,
    WildBenchmark,
    task_facts,
    task_sample_score,
)
from toolgauge.benchmarks.wildtoolbench.views import graph_rows, how_it_failed, run_panels, sample_panels, step_rows
from toolgauge.models.offline import NoModel
from toolgauge.panels import ChartPanel, TablePanel
from toolgauge.results import SampleScore

OSLO = call("get_weather", city="Oslo", date="2026-03-03")
AIR = call("get_air_quality", city="Oslo")


def path_of(row: SampleScore) -> list[tuple[Any, ...]]:
    """(nodes, optimal, verdict) per step."""
    return [(e["nodes"], e["optimal"], e["verdict"]) for e in row.metadata["path"]]


def statuses(row: SampleScore) -> dict[str, str]:
    nodes, _ = graph_rows(row)
    return {r["label"]: r["status"] for r in nodes}


# --- the path in the metadata ----------------------------------------------------------------------------------


@pytest.mark.parametrize("path", [SESSIONS, builtin_wild_path()], ids=["fixtures", "builtin"])
def test_gold_walks_every_node_once_on_a_shortest_path(path: Path):
    sessions = load_wild(path)
    rows = run(WildBenchmark(sessions, WildOptions(), data_label="gold")).samples
    assert rows
    for row in rows:
        graph = row.metadata["gold_graph"]
        steps = row.metadata["path"]
        assert len(steps) == graph["min_steps"]
        assert all(e["verdict"] == "on the graph" and e["optimal"] is True for e in steps)
        taken = sorted(n for e in steps for n in e["nodes"])
        assert taken == [n["id"] for n in graph["nodes"]]
        # A step's nodes come after the nodes they depend on.
        when = {n: e["step"] for e in steps for n in e["nodes"]}
        assert all(when[d] < when[n["id"]] for n in graph["nodes"] for d in n["after"])


def test_gold_graph_lists_nodes_names_arguments_and_dependencies():
    s = session(1)
    row = rows_by_id(run(WildBenchmark([s], WildOptions(), data_label="gold")))[f"{s.id}#1"]
    graph = row.metadata["gold_graph"]
    nodes = s.tasks[1].nodes
    assert [(n["name"], n["after"]) for n in graph["nodes"]] == [(n.action.name, n.dependency_list) for n in nodes]
    assert json.loads(graph["nodes"][0]["args"]) == nodes[0].action.arguments


def test_the_parallel_branch_taken_together_is_optimal_and_split_is_not(tmp_path: Path):
    # Session 0 task 0: weather (0) and air quality (1) are independent, then the answer (2); fewest steps 2.
    s = session(0)
    together, _ = replay(tmp_path, [s], [step(s.id, 0, 0, None, OSLO, AIR), step(s.id, 0, 1, "Snow.")])
    split, _ = replay(tmp_path, [s], [step(s.id, 0, 0, None, AIR), step(s.id, 0, 1, None, OSLO),
                                      step(s.id, 0, 2, "Snow.")])  # fmt: skip
    one, two = rows_by_id(together)[f"{s.id}#0"], rows_by_id(split)[f"{s.id}#0"]
    # A step's nodes in the official order (by name): get_air_quality, get_weather.
    assert path_of(one) == [([1, 0], True, "on the graph"), ([2], True, "on the graph")]
    # The other branch: air quality first. Correct, but from step 0 on no shortest path is left.
    assert path_of(two) == [([1], False, "on the graph"), ([0], False, "on the graph"), ([2], False, "on the graph")]
    assert two.scores["label"] == "correct" and two.scores["is_optimal"] is False
    assert [r[0:3] for r in step_rows(two)] == [
        [0, 'get_air_quality({"city": "Oslo"})', "1 get_air_quality"],
        [1, 'get_weather({"city": "Oslo", "date": "2026-03-03"})', "0 get_weather"],
        [2, "text: Snow.", "2 prepare_to_answer"],
    ]


def test_a_same_name_group_taken_one_by_one_is_the_forced_branch(tmp_path: Path):
    # Session 2 task 2: two get_stock_price nodes (0, 1) then the answer (2). One call at a time expands the
    # group: node 0, then node 1 forced, then the answer: 3 steps where 2 would do.
    s = session(2)
    msft, nvda = call("get_stock_price", symbol="MSFT"), call("get_stock_price", symbol="NVDA")
    base = [step(s.id, 0, 0, "Hi."), step(s.id, 1, 0, None, call("get_stock_price", symbol="AAPL")),
            step(s.id, 1, 1, "231.50.")]  # fmt: skip
    apart, _ = replay(
        tmp_path, [s], [*base, step(s.id, 2, 0, None, msft), step(s.id, 2, 1, None, nvda), step(s.id, 2, 2, "Ok.")]
    )
    row = rows_by_id(apart)[f"{s.id}#2"]
    assert path_of(row) == [([0], False, "on the graph"), ([1], False, "on the graph"), ([2], False, "on the graph")]


def test_a_task_that_leaves_the_graph_at_step_1(tmp_path: Path):
    # Session 0 task 3 (Sequential): get_weather (0) -> book_taxi (1) -> answer (2). The weather call matches;
    # get_air_quality at step 1 matches no candidate step (only book_taxi is ready).
    s = session(0)
    bergen = call("get_weather", city="Bergen", date="2026-03-04")
    lines = [step(s.id, 3, 0, None, bergen), step(s.id, 3, 1, None, call("get_air_quality", city="Bergen"))]
    scored, _ = replay(tmp_path, [s], lines)
    row = rows_by_id(scored)[f"{s.id}#3"]
    assert row.scores["failing_step"] == 1
    assert path_of(row) == [([0], True, "on the graph"), (None, None, "left the graph")]
    left = row.metadata["path"][1]
    assert (left["expected"], left["reason"]) == ([1], ERROR_NO_MATCH)
    assert statuses(row) == {
        "0: get_weather": "taken",
        "1: book_taxi": "expected where it left",
        "2: prepare_to_answer": "not reached",
        "model: get_air_quality": "model's step off the graph",
    }
    nodes, edges = graph_rows(row)
    off = next(n for n in nodes if n["status"] == "model's step off the graph")
    assert (off["x"], off["step"]) == (1, "step 1")  # drawn in the column of book_taxi, the node it missed
    assert [e["taken"] for e in edges] == ["not taken", "not taken"]
    assert how_it_failed(row) == "left the graph"


@pytest.mark.parametrize("variant", ["reference", "strict"])
def test_scenario_paths_match_the_verdicts(variant: str):
    scored, _ = scenario(variant)
    rows = rows_by_id(scored)
    # s0 t2: a Chat task where the model calls get_weather: off the graph at step 0, the answer expected.
    chat = rows["wild_tool_bench_0#2"]
    assert path_of(chat) == [(None, None, "left the graph")]
    assert chat.metadata["path"][0]["expected"] == [0]
    # s0 t3: names right, arguments wrong at step 0; the later steps stayed on the graph but are not scored.
    wrong = rows["wild_tool_bench_0#3"]
    assert path_of(wrong) == [([0], True, "wrong arguments"), ([1], True, "not scored"), ([2], True, "not scored")]
    assert wrong.metadata["path"][0]["reason"] == wrong.metadata["first_argument_error"]
    assert statuses(wrong)["0: get_weather"] == "taken, wrong arguments"
    assert statuses(wrong)["1: book_taxi"] == "not reached"  # matched only after the failing step
    # s1 t3: no call and no text: an empty reply.
    empty = rows["wild_tool_bench_1#3"]
    assert path_of(empty) == [(None, None, "left the graph")]
    entry = empty.metadata["path"][0]
    assert (entry["calls"], entry["text"], entry["reason"]) == ([], None, ERROR_EMPTY)
    assert step_rows(empty)[0][1] == "(empty reply)"
    assert "model: empty reply" in statuses(empty)
    # Every failed task failed at the step its path says.
    for row in scored.samples:
        if row.value == 1.0:
            assert all(e["verdict"] == "on the graph" for e in row.metadata["path"])
        else:
            verdicts = [e["verdict"] for e in row.metadata["path"]]
            assert verdicts.index(how_it_failed(row)) == row.scores["failing_step"]


def test_a_task_without_a_log_has_an_empty_path():
    s = session(0)
    fact = task_facts(s)[0]
    row = task_sample_score(s, fact, None, None, "the model failed")
    assert row.metadata["path"] == [] and len(row.metadata["gold_graph"]["nodes"]) == fact.n_gold_nodes
    assert how_it_failed(row) == "no log" and step_rows(row) == []
    assert statuses(row) == {"0: get_weather": "not reached", "1: get_air_quality": "not reached",
                             "2: prepare_to_answer": "not reached"}  # fmt: skip


def test_an_official_result_file_gives_the_paths_of_the_replay_it_came_from():
    # The path is replayed from the logged action names, so a log written by the official harness gives it too.
    recorded = read_official(OFFICIAL)
    sessions = [s for s in load_wild(SESSIONS) if s.id in recorded]
    official = rows_by_id(
        run(WildBenchmark(sessions, WildOptions(), data_label="t", recorded=recorded), "official", NoModel("o"))
    )
    replayed = rows_by_id(scenario("reference")[0])
    assert set(official) == {k for k in EXPECTED_SCENARIO if not k.startswith("wild_tool_bench_2")}
    for key, row in official.items():
        assert [(e["nodes"], e["verdict"]) for e in row.metadata["path"]] == [
            (e["nodes"], e["verdict"]) for e in replayed[key].metadata["path"]
        ], key


# --- panels ------------------------------------------------------------------------------------------------


def test_sample_panels_draw_each_task_and_list_its_steps():
    skip_or_fail_without(view_missing(browser=False))
    from toolgauge.view.charts import render_svg

    scored, _ = scenario("reference")
    units = [u for u in scored.samples if u.sample == "wild_tool_bench_1"]
    panels = sample_panels(list(reversed(units)))  # in task order whatever order they come in
    assert [p.name for p in panels] == [f"task-{t}-{k}" for t in range(4) for k in ("graph", "steps")]
    for chart, table in zip(panels[::2], panels[1::2], strict=True):
        assert isinstance(chart, ChartPanel) and isinstance(table, TablePanel)
        svg = render_svg(chart.spec)
        assert svg.startswith("<svg") and "<path" in svg
    mixed = render_svg(panels[2].spec)
    assert "make_reservation" in mixed and "taken, wrong arguments" in mixed  # the node and the legend
    assert panels[3].rows[1][4:] == ["wrong arguments", "error_schema: nested args type inconsistent"]
    assert panels[5].rows[0][2] == "none (expected: 0 ask_user_for_required_parameters)"


def test_sample_panels_of_several_epochs_are_told_apart():
    scored, _ = scenario("reference")
    first = [u for u in scored.samples if u.sample == "wild_tool_bench_0"][:1]
    again = [u.model_copy(update={"epoch": 2}) for u in first]
    names = [p.name for p in sample_panels([*first, *again])]
    assert names == ["task-0-e1-graph", "task-0-e1-steps", "task-0-e2-graph", "task-0-e2-steps"]


def test_run_panels_say_where_and_how_failed_tasks_left_the_graph():
    skip_or_fail_without(view_missing(browser=False))
    from toolgauge.view.charts import render_svg

    scored, _ = scenario("reference")
    chart, table = run_panels(scored.results, scored.samples)
    assert isinstance(chart, ChartPanel) and isinstance(table, TablePanel)
    svg = render_svg(chart.spec)
    assert "step 0" in svg and "step 1" in svg and "Mixed Multi-Tool" in svg
    cells = chart.spec["layer"][0]["data"]["values"] if "data" not in chart.spec else chart.spec["data"]["values"]
    assert sum(c["tasks"] for c in cells) == 9  # the scenario's failed tasks
    assert {(c["task_type"], c["where"]) for c in cells if c["where"] == "step 1"} == {("Mixed Multi-Tool", "step 1")}
    rows = {r[0]: r[1:] for r in table.rows}
    # Mixed (s1t1): one failure, wrong arguments at step 1 after both lookups: 2 of 4 gold nodes reached.
    assert rows["Mixed Multi-Tool"] == [1, 0, 1, 0, 0.5]
    # Chat: s0t2 (a call), s1t3 and s2t0 (empty replies): all off the graph at step 0.
    assert rows["Chat"] == [3, 3, 0, 0, 0.0]
    assert sum(r[0] for r in rows.values()) == 9  # type: ignore[misc]


def test_a_run_where_every_task_passes_has_no_run_panel():
    scored = run(WildBenchmark(load_wild(SESSIONS), WildOptions(), data_label="gold"))
    assert run_panels(scored.results, scored.samples) == []


# --- end to end: a stored run read back by the viewer ------------------------------------------------------


def test_a_stored_run_has_the_views_on_its_sample_and_run_pages(tmp_path: Path):
    skip_or_fail_without(view_missing(browser=False))
    from toolgauge.cli.view import registry_benchmarks
    from toolgauge.store import open_store
    from toolgauge.view.data import ViewData

    url = f"sqlite:///{tmp_path / 's.db'}"
    res = invoke("eval", "wildtoolbench", "--data", str(SESSIONS), "--model", f"replay:{SCENARIO}", "--store", url,
                 "-q", "--json")  # fmt: skip
    assert res.exit_code in (0, 1), res.output
    run_id = json.loads(res.stdout)["run"]["id"]
    data = ViewData(open_store(url), registry_benchmarks())
    page = data.sample(run_id, "wild_tool_bench_1")
    assert page["panels_note"] is None
    assert [p["name"] for p in page["panels"]] == [f"task-{t}-{k}" for t in range(4) for k in ("graph", "steps")]
    graph = page["panels"][2]
    assert graph["kind"] == "chart" and graph["svg"].startswith("<svg") and "make_reservation" in graph["svg"]
    assert all(u["metadata"]["path"] for u in page["units"])
    found = data.run_panels(run_id)
    assert found["note"] is None
    assert [p["name"] for p in found["panels"]] == ["failing-steps", "how-tasks-failed"]
