"""ToolGate's views (``toolgate.views.run_panels``): the audit tables of ``gate audit``, from the run's units.

A real pool run in a SQLite store: the eight fem seeds three times each plus a reworded copy (exact and near
duplicates), screened by a real endpoint on 127.0.0.1 that always answers "A" and by the gold screen, both on
every candidate (``--all-screens``: an agreement table). The viewer's panels of that run, computed from its
per-candidate units, must hold exactly the numbers ``gate audit RUN --json`` reports on the same stored run.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from helpers.chat_stub import ChatStub, completion, is_probe
from helpers.cli_helpers import invoke
from helpers.view_runs import skip_or_fail_without, view_missing
from toolgauge.benchmarks.toolgate.audit import audit
from toolgauge.benchmarks.toolgate.construction import RoundResult, round_score
from toolgauge.benchmarks.toolgate.domains import get_domain
from toolgauge.benchmarks.toolgate.protocol import stored_records
from toolgauge.benchmarks.toolgate.records import LETTERS, Candidate
from toolgauge.benchmarks.toolgate.views import run_panels, units_audit
from toolgauge.results import EvalResults

skip_or_fail_without(view_missing(browser=False))


def _always_a(request: dict[str, Any], _headers: Any) -> tuple[int, bytes]:
    return 200, completion("OK" if is_probe(request) else "A")


@pytest.fixture(scope="module")
def pool_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """(store URL, run id) of the screened pool."""
    tmp = tmp_path_factory.mktemp("toolgate-views")
    seeds = get_domain("fem").seeds()
    candidates: list[Candidate] = [c.model_copy(update={"id": f"{c.id}-r{i}"}) for i in range(3) for c in seeds]
    reworded = seeds[0].model_copy(
        update={"id": "reworded", "question": seeds[0].question + " Give the nearest option.", "meta": {"topic": "x"}}
    )
    candidates.append(reworded)
    pool = tmp / "pool.jsonl"
    pool.write_text("".join(json.dumps(c.model_dump(mode="json")) + "\n" for c in candidates))
    url = f"sqlite:///{tmp / 'gate.db'}"
    with ChatStub(_always_a) as stub:
        res = invoke(
            "gate", "screen", "--candidates", pool, "--screen", f"{stub.model('always-a')},name=always-a",
            "--screen", "gold", "--all-screens", "--seed", "7", "--no-cache", "--store", url, "-q",
        )  # fmt: skip
    assert res.exit_code == 0, res.output
    runs = json.loads(invoke("runs", "--store", url, "--json").stdout)
    return url, runs[0]["id"]


def _viewer_panels(url: str, run_id: str) -> dict[str, dict[str, Any]]:
    """The run's panels as the viewer serves them (the registry's toolgate SPEC, the viewer's verdicts)."""
    from toolgauge.cli.view import registry_benchmarks
    from toolgauge.store import open_store
    from toolgauge.view.data import ViewData

    st = open_store(url, create=False)
    try:
        found = ViewData(st, registry_benchmarks()).run_panels(run_id)
    finally:
        st.close()
    assert found["note"] is None, found["note"]
    return {p["name"]: p for p in found["panels"]}


def test_the_viewers_audit_tables_are_what_gate_audit_reports(pool_run: tuple[str, str]):
    url, run_id = pool_run
    res = invoke("gate", "audit", run_id, "--store", url, "--json")
    assert res.exit_code == 0, res.output
    report = json.loads(res.stdout)
    panels = _viewer_panels(url, run_id)
    assert list(panels) == ["letter-bias", "middle-value", "agreement", "duplicates", "topics"]
    assert all(p["kind"] == "table" for p in panels.values())
    # Each screen's letter bias: accuracy by the correct option's displayed letter, n per letter, letters chosen.
    assert [b["screen"] for b in report["position_bias"]] == ["always-a", "gold"]
    assert panels["letter-bias"]["rows"] == [
        [b["screen"], b["calls"], b["accuracy"],
         *(b["by_correct_letter"][x]["accuracy"] for x in LETTERS), *(b["by_correct_letter"][x]["n"] for x in LETTERS),
         *(b["chosen_share"][x] for x in LETTERS), b["chosen_share"]["none"]]
        for b in report["position_bias"]
    ]  # fmt: skip
    always_a = panels["letter-bias"]["rows"][0]
    assert always_a[1] == 3 * 25 and always_a[11:16] == [1.0, 0.0, 0.0, 0.0, 0.0]  # it chose A every time
    mv = report["middle_value"]
    assert panels["middle-value"]["rows"] == [
        [mv["candidates"], mv["numeric"], mv["middle"], mv["middle_value_share"], mv["middle_value_accuracy"],
         *mv["rank_counts"].values()]
    ]  # fmt: skip
    assert mv["candidates"] == 25
    [pair] = report["agreement"]
    assert panels["agreement"]["rows"] == [
        [pair["first"], pair["second"], pair["both_solved"], pair["only_first"], pair["only_second"], pair["neither"],
         pair["n"], pair["agreement"]]
    ]  # fmt: skip
    assert pair["n"] == 25 and pair["only_first"] == 0  # gold solves every candidate: never "only always-a"
    dup = report["duplicates"]
    assert dup["exact_duplicates"] == 16 and dup["near_pairs"] > dup["exact_duplicates"]
    listed = {(row[0], row[2]) for row in panels["duplicates"]["rows"]}
    assert listed == {("exact", ", ".join(g)) for g in dup["exact_groups"]} | {
        ("near", ", ".join(c)) for c in dup["clusters"]
    }
    assert f"{dup['exact_duplicates']} exact ({len(dup['exact_groups'])} groups)" in panels["duplicates"]["title"]
    assert f"{dup['near_pairs']} near pairs" in panels["duplicates"]["title"]
    topics = report["topics"]
    assert panels["topics"]["rows"] == [
        [name, count, count / topics["candidates"]] for name, count in topics["counts"].items()
    ]
    assert panels["topics"]["note"] == f"Herfindahl {topics['herfindahl']:.4f} (1: one topic)"


def test_the_same_tables_from_gate_run_rounds_and_failed_units_left_out(pool_run: tuple[str, str]):
    """A ``gate run``'s units hold a round's candidate and outcome: the same audit as on the records themselves."""
    from toolgauge.store import open_store

    url, run_id = pool_run
    st = open_store(url, create=False)
    try:
        records = [record for _, record in stored_records(st, run_id).records]
    finally:
        st.close()
    units = [
        round_score(f"round-{i + 1:04d}", RoundResult(round=f"round-{i + 1:04d}", candidate_id=r.outcome.id,
                                                      candidate=r.candidate, outcome=r.outcome), None)
        for i, r in enumerate(records)
    ]  # fmt: skip
    units.append(round_score("round-9999", None, "generator failed"))
    assert units_audit(units) == audit(records)
    results = EvalResults(benchmark="toolgate-run")
    mine = {p.name: p.model_dump(mode="json") for p in run_panels(results, units)}
    theirs = _viewer_panels(url, run_id)
    assert list(mine) == list(theirs)
    assert all(mine[name]["rows"] == theirs[name]["rows"] for name in mine)


def test_a_run_without_recorded_candidates_has_no_audit_tables():
    assert run_panels(EvalResults(benchmark="toolgate"), [round_score("round-0001", None, "boom")]) == []


def test_the_toolgate_spec_registers_its_run_panels():
    from toolgauge.benchmarks.toolgate import SPEC

    assert getattr(SPEC.run_panels, "lazy_target", None) == ("toolgauge.benchmarks.toolgate.views", "run_panels")
