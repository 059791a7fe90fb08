"""``toolgauge paper wildtoolbench``: dataset statistics from data alone and Tables 2–4 from a 2-model sweep.

The fixture's three sessions (tests/fixtures/wildtoolbench/sessions.jsonl) are counted by hand below; the
sweep runs the gold model (every task right) and a scripted model that refuses every task in words (so it gets
exactly the three Chat tasks right, and its nine failures are refusals).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from helpers.cli_helpers import invoke
from helpers.paths import FIXTURE_ROOT
from toolgauge.benchmarks.wildtoolbench.paper import category, dag_shape, paper_blocks
from toolgauge.benchmarks.wildtoolbench.records import WildAction, WildNode, WildTask
from toolgauge.report.paper_tables import PaperBlock, PaperRun

SESSIONS = FIXTURE_ROOT / "wildtoolbench" / "sessions.jsonl"


def blocks_of(res: Any) -> dict[str, PaperBlock]:
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    return {b["ref"]: PaperBlock(**b) for b in doc["blocks"]}


def values(block: PaperBlock, label: str) -> list[Any]:
    return [c.value for c in next(r for r in block.rows if r.label == label).cells]


def test_dataset_statistics_from_the_data_alone() -> None:
    blocks = blocks_of(invoke("paper", "wildtoolbench", "--data", SESSIONS, "--json"))
    assert set(blocks) == {"§3.6, Figure 5", "Figure 5"}
    stats = blocks["§3.6, Figure 5"]
    # Per task (calls, depth, width): s0 (2,1,2) (1,1,1) chat (2,2,1); s1 (1,1,1) (3,2,2) (1,1,1) chat;
    # s2 chat (1,1,1) (2,1,2) (1,1,1): 14 calls over 12 tasks, 9 of them call a tool.
    assert [v for row in stats.rows for v in [c.value for c in row.cells]] == pytest.approx(
        [3, 12, 9, 3.0, 14, 14 / 12, 14 / 9, 11 / 9, 2, 12 / 9, 2]
    )
    kinds = blocks["Figure 5"]
    counts = {row.label: row.cells[0].value for row in kinds.rows}
    assert counts == {
        "Single-Tool": 3, "Parallel Multi-Tool": 2, "Sequential Multi-Tool": 1, "Mixed Multi-Tool": 1, "Clarify": 2,
        "Chat": 3, "First Turn": 3, "Coreferential Reference": 4, "Partial Information": 3, "Long-Range Dependency": 2,
    }  # fmt: skip
    assert values(kinds, "Chat")[1] == pytest.approx(3 / 12)


@pytest.fixture(scope="module")
def swept(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str, str]:
    """A 2-model sweep of the fixture sessions: (store URL, sweep id, the scripted model's label)."""
    tmp_path = tmp_path_factory.mktemp("paper-wild")
    script = tmp_path / "script.json"
    script.write_text(json.dumps(["I cannot help with that."] * 200))
    sweep_file = tmp_path / "SWEEP.toml"
    sweep_file.write_text(
        f'[[model]]\nspec = "gold"\n[[model]]\nspec = "scripted:{script}"\n'
        f'[[benchmark]]\nname = "wildtoolbench"\ndata = "{SESSIONS}"\n'
    )
    store = f"sqlite:///{tmp_path / 's.db'}"
    res = invoke("sweep", sweep_file, "--store", store, "--json")
    assert res.exit_code == 0, res.output
    return store, json.loads(res.stdout)["sweep"], f"scripted:{script}"


def test_tables_2_to_4_from_a_two_model_sweep(swept: tuple[str, str, str], tmp_path: Path) -> None:
    store, sweep_id, scripted = swept
    page = tmp_path / "wild.html"
    blocks = blocks_of(invoke("paper", "wildtoolbench", sweep_id, "--store", store, "--json", "--html", page))

    table2 = blocks["Table 2"]
    assert table2.columns[2:] == ["g_single", "g_multi", "g_clarify", "g_chat", "1", "2", "3", "4", "Task", "Session"]
    assert [r.label for r in table2.rows] == ["gold", scripted]  # the sweep's cells, in order
    assert values(table2, "gold") == ["Models"] + [1.0] * 10
    # Only the Chat tasks are right: one in position 1 (s2), 3 (s0) and 4 (s1) of the sessions; 3 of 12 tasks.
    assert values(table2, scripted)[1:] == pytest.approx([0, 0, 0, 1, 1 / 3, 0, 1 / 3, 1 / 3, 0.25, 0])

    table3 = blocks["Table 3"]
    acc_and_op = [0, 1, 2, 3, 7, 8, 9]  # the accuracy and OP columns (AP follows the official pooled steps)
    assert [values(table3, "gold")[1:][i] for i in acc_and_op] == [1.0] * 7
    assert [values(table3, scripted)[1:][i] for i in acc_and_op] == [0.0] * 7

    table4 = blocks["Table 4"]
    assert values(table4, scripted)[1:] == [1.0] + [0.0] * 9 + [9]  # nine failures, every one a refusal
    assert values(table4, "gold")[-1] == 0
    assert "No run has a category tag" in table2.notes[0]
    text = page.read_text()
    assert "Table 4" in text and "<svg" in text and "<script" not in text

    # The same sweep in the terminal; one of its runs given alone is one row.
    shown = invoke("paper", "wildtoolbench", sweep_id, "--store", store)
    assert shown.exit_code == 0 and "wildtoolbench · Table 3 · Tool orchestration" in shown.stdout
    foreign = invoke("paper", "wildtoolbench", sweep_id, "--store", store, "--oracle-run", "x")
    assert foreign.exit_code == 2 and "--oracle-run does not apply to wildtoolbench" in foreign.stderr
    other = invoke("paper", "tool-genesis", sweep_id, "--store", store)
    assert other.exit_code == 2 and f"sweep {sweep_id} has no run of tool-genesis" in other.stderr


def test_nothing_to_lay_out_is_one_line() -> None:
    res = invoke("paper", "wildtoolbench")
    assert res.exit_code == 2 and "give runs (or sweeps) of wildtoolbench, or --data FILE" in res.stderr
    gone = invoke("paper", "wildtoolbench", "--data", "/nonexistent/sessions.jsonl")
    assert gone.exit_code == 2 and "no such file" in gone.stderr
    # No run and no data from Python: the statistics say what would fill them.
    assert all(b.missing is not None for b in paper_blocks([]))


def test_categories_come_from_tags() -> None:
    def run(*tags: str, config: dict[str, Any] | None = None) -> PaperRun:
        return PaperRun(id="r", benchmark="wildtoolbench", model="m", tags=tags, config=config)

    assert category(run("category=proprietary")) == "Proprietary General Models"
    assert category(run("nightly", "specialized")) == "Open-Source Specialized Models"
    assert category(run("group=Frontier labs")) == "Frontier labs"
    assert category(run(config={"tags": ["open-source"]})) == "Open-Source General Models"  # stored with the run
    assert category(run("nightly")) == "Models"


def test_dag_shape_by_hand() -> None:
    def node(name: str, *deps: int) -> WildNode:
        return WildNode(action=WildAction(name=name), dependency_list=list(deps))

    # a, b in parallel; clarify; c after a and the question; d after c; the answer after d: depth 3, width 2.
    task = WildTask(user="u", nodes=[node("a"), node("b"), node("ask_user_for_required_parameters"),
                                     node("c", 0, 2), node("d", 3), node("prepare_to_answer", 4)])  # fmt: skip
    assert dag_shape(task) == (4, 3, 2)
    assert dag_shape(WildTask(user="u", nodes=[node("prepare_to_answer")])) == (0, 0, 0)


def test_the_viewer_paper_tab(swept: tuple[str, str, str]) -> None:
    from starlette.testclient import TestClient

    from toolgauge.cli.view import registry_benchmarks
    from toolgauge.store import open_store
    from toolgauge.view.app import create_app
    from toolgauge.view.data import ViewData

    store_url, sweep_id, scripted = swept
    st = open_store(store_url, create=False)
    try:
        client = TestClient(create_app(ViewData(st, registry_benchmarks())))
        doc = client.get(f"/api/paper/wildtoolbench?run={sweep_id}").json()
        assert doc["paper"] == "wildtoolbench"
        table2 = next(b for b in doc["blocks"] if b["ref"] == "Table 2")
        assert [r["label"] for r in table2["rows"]] == ["gold", scripted]
        assert table2["charts"] and table2["charts"][0]["svg"].lstrip().startswith("<svg")
        # A run page's link names the run's benchmark; an unknown run is the API's one-line error.
        bad = client.get("/api/paper/wildtoolbench?run=nosuchrun")
        assert bad.status_code == 404 and "no run 'nosuchrun'" in bad.json()["error"]
        assert "needs runs" in client.get("/api/paper/wildtoolbench").json()["error"]
    finally:
        st.close()
