"""``toolgauge paper tool-genesis``: every block checked against values computed by hand on three servers.

The runs are stored the way ``eval tool-genesis`` stores them (config, per-server results, scored results), with
per-server results written here so every unit test's verdict and every task rating is known: model ``m1``
(Direct, one server fails L1) and ``m2`` (Code-Agent, every test passes). The paper command scores them again
from the store, as it does any run.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

import pytest

from helpers.cli_helpers import invoke
from helpers.paths import FIXTURE_ROOT
from toolgauge.benchmark import rebuild
from toolgauge.benchmarks.tool_genesis import SPEC
from toolgauge.benchmarks.tool_genesis.metrics.compliance import Verdict
from toolgauge.benchmarks.tool_genesis.metrics.schema import SchemaMatch
from toolgauge.benchmarks.tool_genesis.metrics.unit_tests import UnitTestScore, summarise_unit_tests
from toolgauge.benchmarks.tool_genesis.paper import paper_blocks, pearson
from toolgauge.benchmarks.tool_genesis.paper_kinds import error_shaped, invalid_inputs, unit_test_kind
from toolgauge.benchmarks.tool_genesis.protocol import (
    GenesisBenchmark,
    GenesisEvalResult,
    LaunchRecord,
    TaskRecord,
    UnitTestRecord,
)
from toolgauge.benchmarks.tool_genesis.records import UnitTest
from toolgauge.engine.runner import SampleOutcome
from toolgauge.errors import UsageError
from toolgauge.report.paper_tables import PaperBlock, PaperRun
from toolgauge.sandbox import detect_sandbox
from toolgauge.stats.epochs import aggregate_epochs
from toolgauge.store import open_store

FIXTURES = FIXTURE_ROOT / "genesis"
HEADLINE = ("compliance", "server_execution", "schema_f1", "ut_soft", "ut_hard", "sr_soft")
# (slug, primary_label): the fixture server three times, in two domains.
SERVERS = (("alpha", "Testing"), ("beta", "Finance"), ("gamma", "Finance"))
TESTS = (("add", 0), ("add", 1), ("add", 2), ("greet", 0), ("greet", 1))  # add[2] expects "Error: b is required"
Verdicts = dict[tuple[str, int], tuple[float, bool] | str]


def write_data(folder: Path) -> Path:
    spec = json.loads((FIXTURES / "spec.json").read_text())
    servers = [{**spec, "server_slug": slug, "server_name": slug, "primary_label": label} for slug, label in SERVERS]
    path = folder / "data.json"
    path.write_text(json.dumps(servers))
    return path


def server_result(
    slug: str, *, compliant: bool = True, schema_f1: float = 1.0, tests: Verdicts | None = None,
    ratings: list[int] | None = None, reference: list[int] | None = None,
) -> GenesisEvalResult:  # fmt: skip
    """One server's stored results: ``tests`` maps (tool, index) to (soft, hard pass) or ``"not_built"``."""
    result = GenesisEvalResult(
        slug=slug, variant="reference", source="generate",
        compliance=Verdict(ok=compliant, reason=None if compliant else "anyOf is not allowed"),
        mcp_valid=Verdict(ok=True), launches=[LaunchRecord(attempt=1, ok=True, tools=2)],
    )  # fmt: skip
    if not compliant:
        result.l4_skipped = "L1 failed"
        return result
    result.schema_match = SchemaMatch(tool_f1=schema_f1, args_f1=schema_f1, schema_f1=schema_f1)
    scores = []
    for (tool, index), verdict in (tests or {}).items():
        if verdict == "not_built":
            result.unit_tests.append(UnitTestRecord(gold_tool=tool, index=index, status="not_built"))
            continue
        assert not isinstance(verdict, str)
        soft, hard = verdict
        score = UnitTestScore(hard_pass=hard, soft=soft, struct_f1=soft, embed_sim=soft)
        scores.append(score)
        result.unit_tests.append(UnitTestRecord(gold_tool=tool, index=index, status="called", pred_tool=tool,
                                                score=score))  # fmt: skip
    not_built = sum(1 for r in result.unit_tests if r.status == "not_built")
    result.ut_summary = summarise_unit_tests(scores, not_built=not_built)
    result.tasks = [
        TaskRecord(index=i, task="Add 2 and 3.", rating=r, reference_rating=(reference or [])[i] if reference else None)
        for i, r in enumerate(ratings or [])
    ]
    return result


def store_run(store: str, data: Path, model: str, strategy: str, results: list[GenesisEvalResult], l4: bool) -> str:
    """Store a finished Tool-Genesis evaluation as ``eval tool-genesis`` does; returns its id."""
    config = {"data": str(data), "variant": "reference", "source": "generate", "out": str(data.parent / model),
              "strategy": strategy, "n": len(SERVERS), "l4": l4, "l4_skipped": None if l4 else "--skip-l4",
              "call_timeout": 30.0}  # fmt: skip
    st = open_store(store)
    try:
        run_id = st.create_run("tool-genesis", model, config)
        for r in results:
            st.record_sample(run_id, r.slug, result=r.model_dump(mode="json"), error=None, latency_s=0.1)
        bench = rebuild(SPEC, config)  # a config as stored before issue 23: migrated
        assert isinstance(bench, GenesisBenchmark)
        outcomes = [SampleOutcome(key=r.slug, result=r, error=None, latency_s=0.1) for r in results]
        scored = aggregate_epochs([bench.score(bench.samples(), outcomes)], HEADLINE, seed=0)
        st.save_results(run_id, scored.results)
        st.set_run_status(run_id, "finished", n_samples=len(results))
    finally:
        st.close()
    return run_id


M1_TESTS: Verdicts = {("add", 0): (0.8, True), ("add", 1): (0.6, True), ("add", 2): (0.0, False),
                      ("greet", 0): "not_built", ("greet", 1): "not_built"}  # fmt: skip
C_TESTS: Verdicts = {("add", 0): (1.0, True), ("add", 1): (1.0, True), ("add", 2): (0.5, True),
                     ("greet", 0): (1.0, True), ("greet", 1): (0.0, False)}  # fmt: skip
ALL_PASS: Verdicts = dict.fromkeys(TESTS, (1.0, True))


@pytest.fixture()
def stored(tmp_path: Path) -> dict[str, Any]:
    data = write_data(tmp_path)
    store = f"sqlite:///{tmp_path / 'store.db'}"
    m1 = [
        server_result("alpha", schema_f1=0.5, tests=M1_TESTS, ratings=[5], reference=[5]),
        server_result("beta", compliant=False),
        server_result("gamma", schema_f1=1.0, tests=C_TESTS, ratings=[2], reference=[4]),
    ]
    m2 = [
        server_result("alpha", tests=ALL_PASS, ratings=[5], reference=[5]),
        server_result("beta", tests=ALL_PASS, ratings=[5], reference=[5]),
        server_result("gamma", tests=ALL_PASS, ratings=[2], reference=[5]),
    ]
    no_l4 = [server_result(slug, tests=ALL_PASS) for slug, _ in SERVERS]
    return {
        "store": store,
        "data": data,
        "m1": store_run(store, data, "m1", "direct", m1, l4=True),
        "m2": store_run(store, data, "m2", "code-agent", m2, l4=True),
        "no_l4": store_run(store, data, "m3", "direct", no_l4, l4=False),
    }


def paper_json(*args: str) -> dict[str, PaperBlock]:
    res = invoke("paper", "tool-genesis", *args, "--json")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["paper"] == "tool-genesis"
    return {b["ref"] + (f" {b['title']}" if b["ref"].startswith("§4, Figures") else ""): PaperBlock(**b)
            for b in doc["blocks"]}  # fmt: skip


def values(block: PaperBlock, label: str) -> list[Any]:
    row = next(r for r in block.rows if r.label == label)
    return [c.value for c in row.cells]


def test_every_block_matches_the_hand_computed_values(stored: dict[str, Any]) -> None:
    blocks = paper_json(stored["m1"], stored["m2"], "--store", stored["store"], "--oracle-run", stored["m2"])

    # Table 2: fractions over the three servers; beta failed L1 (not compliant) but launched.
    table2 = blocks["Table 2"]
    assert table2.columns == ["Model", "Strategy", "Compliance", "Exec.", "Schema-F1", "UT_soft", "UT_hard", "SR"]
    assert [r.label for r in table2.rows] == ["m1", "m2"]  # Direct rows first
    m1 = values(table2, "m1")
    assert m1[0] == "Direct"
    expected = [2 / 3, 1.0, (0.5 + 1.0) / 3, ((0.8 + 0.6) / 3 + 3.5 / 5) / 3, (2 / 3 + 4 / 5) / 3, (1.0 + 0.4) / 3]
    assert m1[1:] == pytest.approx(expected)
    assert values(table2, "m2")[1:] == pytest.approx([1.0, 1.0, 1.0, 1.0, 1.0, (1 + 1 + 0.4) / 3])
    assert table2.rows[0].cells[1].ci_low is not None  # 95% intervals by server, from the run's summary

    # Figure 5(a): Pearson across servers of each signal with r_i = SR_soft (alpha 1.0, beta 0, gamma 0.4).
    sva = blocks["Figure 5(a)"]
    r = [1.0, 0.0, 0.4]
    want = [statistics.correlation(x, r) for x in ([0.5, 0, 1.0], [1.4 / 3, 0, 3.5 / 5], [2 / 3, 0, 4 / 5])]
    assert values(sva, "m1 · Direct")[:3] == pytest.approx(want)
    assert values(sva, "m1 · Direct")[3] == 3
    # m2: every signal is 1 on every server (constant), so no correlation is defined.
    assert values(sva, "m2 · Code-Agent")[:3] == [None, None, None]
    assert not sva.exact

    # Figure 5(b): Start 3, L1 2 (beta stops), L2 2, L3 2, L4 1 (gamma's rating 2 is below 3).
    fig5b = blocks["Figure 5(b)"]
    assert values(fig5b, "m1 · Direct") == pytest.approx([1.0, 2 / 3, 2 / 3, 2 / 3, 1 / 3])
    assert [c.n for c in fig5b.rows[0].cells] == [3, 2, 2, 2, 1]
    assert fig5b.data["steps"]["m1 · Direct"] == [["Start", 3], ["L1", 2], ["L2", 2], ["L3", 2], ["L4", 1]]

    # A.3: add[2] is the one boundary test of each server. m1 standard: alpha 1.4/2 soft 2/2 hard (greet not
    # built: not counted), beta 0, gamma 3/4 and 3/4; boundary: alpha 0, beta 0, gamma 0.5 soft and 1 hard.
    kinds = blocks["App. A.3"]
    assert values(kinds, "m1 · Direct") == pytest.approx(
        [(0.7 + 0 + 0.75) / 3, (1 + 0 + 0.75) / 3, 12, (0 + 0 + 0.5) / 3, (0 + 0 + 1) / 3, 3]
    )

    # By domain: Finance holds beta (failed) and gamma; Testing alpha.
    domain = blocks["§4, Figures 3–4 m1 · Direct: metrics by domain (primary_label)"]
    assert [r.label for r in domain.rows] == ["Finance", "Testing"]
    assert values(domain, "Finance") == pytest.approx([2, 0.5, 1.0, 0.5, 3.5 / 5 / 2, 0.8 / 2, 0.4 / 2])
    assert values(domain, "Testing") == pytest.approx([1, 1.0, 1.0, 0.5, 1.4 / 3, 2 / 3, 1.0])

    # Dataset statistics, from the data: per server 2 tools, 5 tests (1 boundary), 1 task.
    stats = blocks["§4, Figure 4"]
    assert values(stats, "Finance") == [2, 4, 10, 2, 2]
    assert values(stats, "all") == [3, 6, 15, 3, 3]

    # A.4: replay oracle (alpha 5 vs 5, gamma 2 vs 4; beta has no tasks) and the GT proxy m2 (5, 5, 2).
    oracle = blocks["App. A.4"]
    assert oracle.columns[-1] == "SR / GT proxy (m2)"
    eps = 1e-6
    replay = (1 / (1 + eps) + 0.4 / (0.8 + eps)) / 2
    proxy = (1 / (1 + eps) + 0 + 0.4 / (0.4 + eps)) / 3
    assert values(oracle, "m1 · Direct") == pytest.approx([1.4 / 3, replay, proxy])


def test_text_html_and_the_missing_input_lines(stored: dict[str, Any], tmp_path: Path) -> None:
    page = tmp_path / "paper.html"
    res = invoke("paper", "tool-genesis", stored["no_l4"], "--store", stored["store"], "--html", page)
    assert res.exit_code == 0, res.output
    out = res.stdout
    assert "tool-genesis · Table 2 · Direct vs Code-Agent" in out
    # One strategy and no L4: the blocks say which run would fill them, in one line each.
    assert "no Code-Agent run: eval tool-genesis --strategy code-agent would fill its rows" in out
    sva_line = next(line for line in out.splitlines() if "Figure 5(a)" in line)
    assert "needs r_i (SR_soft per server), which only a run with L4 has" in sva_line
    assert any("App. A.4" in line and "needs a run with L4" in line for line in out.splitlines())
    assert "100.00" in out  # rates in percent, as every table shows them
    text = page.read_text()
    assert text.startswith("<!doctype html>") and "Content-Security-Policy" in text and "<script" not in text
    assert "Figure 5(b)" in text and "<svg" in text  # the cascade drawn with the viewer's funnel chart


def test_a_sweep_id_a_bad_run_and_a_foreign_option_are_one_line(stored: dict[str, Any]) -> None:
    bad = invoke("paper", "tool-genesis", "nosuchrun", "--store", stored["store"])
    assert bad.exit_code == 2 and bad.stderr.strip().count("\n") == 0
    assert "no run 'nosuchrun'" in bad.stderr
    unknown = invoke("paper", "nosuchpaper", stored["m1"], "--store", stored["store"])
    assert unknown.exit_code == 2 and "no paper 'nosuchpaper'" in unknown.stderr
    foreign = invoke("paper", "tool-genesis", stored["m1"], "--store", stored["store"], "--data", stored["data"])
    assert foreign.exit_code == 2 and "--data does not apply to tool-genesis" in foreign.stderr


def test_paper_blocks_from_python_runs_without_a_store() -> None:
    # A run with no verdicts and no data still lays out every block; the data-driven ones say what they need.
    run = PaperRun(id="r1", benchmark="tool-genesis", model="m", config={"source": "gold", "l4": False})
    blocks = paper_blocks([run])
    assert [b.ref for b in blocks][:4] == ["Table 2", "Figure 5(a)", "Figure 5(b)", "App. A.3"]
    assert next(b for b in blocks if b.ref == "§4, Figure 4").missing is not None
    generated = PaperRun(id="g1", benchmark="tool-genesis-generate", model="m", config={})
    with pytest.raises(UsageError, match="only generated servers"):
        paper_blocks([generated])


def test_the_kind_rule_on_each_of_its_clauses() -> None:
    tool = {"name": "add", "input_schema": {"type": "object", "properties": {"a": {"type": "integer"},
            "b": {"anyOf": [{"type": "integer"}, {"type": "null"}]}}, "required": ["a"]}}  # fmt: skip
    plain = UnitTest(function_name="add", arguments={"a": 1, "b": 2}, function_output_content="3")
    assert unit_test_kind(plain, tool) == "standard"
    refused = UnitTest(function_name="add", arguments={"a": 1}, function_output_content="Error: b is required")
    assert unit_test_kind(refused, tool) == "boundary"
    assert error_shaped("Error: b is required") and error_shaped('{"success": false, "data": 1}')
    assert error_shaped("Invalid date") and not error_shaped('{"success": true}')
    assert invalid_inputs({"b": 2}, tool)  # required a missing
    assert invalid_inputs({"a": 1, "c": 2}, tool)  # undeclared argument
    assert invalid_inputs({"a": "1"}, tool) and invalid_inputs({"a": True}, tool)  # wrong type (a bool is no int)
    assert not invalid_inputs({"a": 1, "b": None}, tool)  # anyOf allows null
    assert invalid_inputs({"a": 1, "b": ""}, tool) and invalid_inputs("not json", tool)


def test_pearson_by_hand() -> None:
    assert pearson([0, 1, 2], [0, 2, 4]) == pytest.approx(1.0)
    assert pearson([0, 1, 2], [4, 2, 0]) == pytest.approx(-1.0)
    assert pearson([1, 1], [0, 1]) is None and pearson([1], [1]) is None


@pytest.mark.skipif(detect_sandbox() != "bwrap", reason="bubblewrap sandbox not available here")
def test_table2_from_a_sweep_of_two_models_and_both_strategies(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two scripted models × Direct and Code-Agent in one sweep: Table 2's four rows, Direct first."""
    monkeypatch.chdir(tmp_path)  # each cell writes its servers under .toolgauge/genesis/<model>-<strategy> here
    schema = (FIXTURES / "correct" / "tools.json").read_text()
    scripts = {}
    for name, fixture in (("good", "correct"), ("noisy", "wrong_output_shape")):
        code = (FIXTURES / fixture / "server.py").read_text()
        scripts[name] = tmp_path / f"{name}.json"  # a text answer: direct's reply, and code-agent's last word
        scripts[name].write_text(json.dumps([f"Schema:\n```json\n{schema}\n```\nServer:\n```python\n{code}```\n"]))
    data = tmp_path / "data.json"
    data.write_text("[" + (FIXTURES / "spec.json").read_text() + "]")
    models = "".join(f'[[model]]\nspec = "scripted:{path}"\n' for path in scripts.values())
    benchmarks = "".join(
        f'[[benchmark]]\nname = "tool-genesis"\ndata = "{data}"\nstrategy = "{strategy}"\nskip_l4 = true\n'
        for strategy in ("code-agent", "direct")
    )
    (tmp_path / "SWEEP.toml").write_text(models + benchmarks)
    store = f"sqlite:///{tmp_path / 's.db'}"
    swept = invoke("sweep", tmp_path / "SWEEP.toml", "--store", store, "--json")
    assert swept.exit_code == 0, swept.output
    sweep_id = json.loads(swept.stdout)["sweep"]

    table2 = paper_json(sweep_id, "--store", store)["Table 2"]
    good, noisy = (f"scripted:{scripts[name]}" for name in ("good", "noisy"))
    assert [(r.label, r.cells[0].value) for r in table2.rows] == [
        (good, "Direct"), (noisy, "Direct"), (good, "Code-Agent"), (noisy, "Code-Agent"),
    ]  # fmt: skip
    for row in table2.rows:  # both servers are compliant, run, match every tool and answer without an error word
        assert [c.value for c in row.cells[1:4]] == [1.0, 1.0, 1.0] and row.cells[5].value == 1.0
        assert row.cells[6].value is None  # no L4: SR unknown
    assert not any("no Code-Agent run" in note for note in table2.notes)
