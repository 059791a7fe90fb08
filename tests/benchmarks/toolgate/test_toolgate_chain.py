"""ToolGate's post-generation flow (the paper's Table 4) from the store, and its paper blocks.

A pool of the eight fem seeds plus an exact copy of seed 0 goes through a chain of stored runs: a screen that
knows seed 1's answer, a rescreen of the survivors by a screen that knows seed 2's, a solve of what survives by
a solver that runs each candidate's own solution (and gets seed 3 wrong), then ``gate audit`` over the chain and
``gate export`` with exact duplicates removed. Every count is known by construction. The pure parts (joining
records, duplicates, Table 2/3 on hand-made records) are checked without a model or a sandbox.
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from typing import Any

import pytest

from helpers.chat_stub import ChatStub, completion, is_probe, tool_call_completion
from helpers.cli_helpers import invoke
from toolgauge.benchmarks.toolgate.answers import select_option
from toolgauge.benchmarks.toolgate.chain import chained_records, release_duplicates
from toolgauge.benchmarks.toolgate.domains import get_domain
from toolgauge.benchmarks.toolgate.paper import paper_blocks, table3_tools, unit_records
from toolgauge.benchmarks.toolgate.records import (
    Candidate,
    RecordedCandidate,
    ScreenCall,
    ScreenResult,
    SolveResult,
    VerifyResult,
    decide,
)
from toolgauge.benchmarks.toolgate.resources import role_resources
from toolgauge.report.paper_tables import PaperRun
from toolgauge.sandbox import detect_sandbox
from toolgauge.store import RoleCalls

needs_bwrap = pytest.mark.skipif(detect_sandbox() != "bwrap", reason="bubblewrap sandbox not available here")
SEEDS = get_domain("fem").seeds()


# --- pure: joining chained records, duplicates, resources, transfer ---------------------------------------


def screen(name: str, correct: int) -> ScreenResult:
    calls = [ScreenCall(permutation=["A", "B", "C", "D"], reply="A", displayed="A", chosen="A", correct=k < correct)
             for k in range(3)]  # fmt: skip
    passed = correct < 2
    return ScreenResult(screen=name, passed=passed, correct=correct, calls=calls, reason=None if passed else "too_easy")


def recorded(candidate: Candidate, **gates: Any) -> RecordedCandidate:
    return RecordedCandidate(candidate=candidate, outcome=decide(candidate.id, **gates))


def test_chained_records_join_gates_and_decide_again() -> None:
    a, b = SEEDS[0], SEEDS[1]
    verified = VerifyResult(passed=True, seconds=2.0)
    first = [recorded(a, verify=verified, screens=[screen("s1", 0)]), recorded(b, verify=verified,
                                                                              screens=[screen("s1", 0)])]  # fmt: skip
    second = [recorded(a, screens=[screen("s2", 2)]), recorded(b, screens=[screen("s2", 1)])]
    third = [recorded(b, solve=SolveResult(solved=True, answer=b.answer, seconds=30.0))]
    joined = chained_records([first, second, third])
    assert [r.outcome.id for r in joined] == [a.id, b.id]
    # a: verified, passed s1, rejected by s2 (a later screen decides, whatever the first run said).
    assert (joined[0].outcome.outcome, joined[0].outcome.rejected_by) == ("rejected", "screen")
    assert [s.screen for s in joined[0].outcome.gates.screens or []] == ["s1", "s2"]
    # b: every gate passed, solved in the last run: accepted, with the first run's verification kept.
    assert joined[1].outcome.outcome == "accepted" and joined[1].outcome.gates.verify == verified
    # Resources per role: two verifications of 2 s, s1 twice, s2 twice, one solve of 30 s (agent time).
    roles = role_resources(joined, [100.0, 80.0], {"solver": RoleCalls(3, 300, 30, 12.0)})
    assert [(r.role, r.episodes, r.wall_seconds) for r in roles] == [
        ("generator", 2, 180.0), ("verify", 2, 4.0), ("screen:s1", 2, None), ("screen:s2", 2, None),
        ("solver", 1, 30.0),
    ]  # fmt: skip
    assert roles[0].agent_hours == 180.0 / 3600 and roles[1].agent_hours is None
    assert roles[-1].usage == RoleCalls(3, 300, 30, 12.0)


def test_release_duplicates_keep_the_first_copy() -> None:
    copy = SEEDS[0].model_copy(update={"id": "copy", "question": "  " + SEEDS[0].question.upper() + " "})
    keyed = [(c.id, recorded(c)) for c in (SEEDS[0], SEEDS[1], copy)]
    assert release_duplicates(keyed) == {"copy": SEEDS[0].id}


def paper_run(run_id: str, records: list[RecordedCandidate], solver: str) -> PaperRun:
    from toolgauge.benchmarks.toolgate.protocol import score_records

    scored = score_records("toolgate", {"gates": ["solve"]}, [(r.outcome.id, r, None) for r in records])
    return PaperRun(id=run_id, benchmark="toolgate", model=solver, config={"solver": {"model": solver}},
                    results=scored.results, scores=scored.samples)  # fmt: skip


def test_table3_tool_transfer_hand_computed() -> None:
    def solve(ok: bool) -> dict[str, Any]:
        return {"solve": SolveResult(solved=ok, answer="A" if ok else None, reason=None if ok else "no_answer")}

    gpt = paper_run("r1", [recorded(c, **solve(True)) for c in SEEDS[:4]], "gpt")
    # Opus attempts 3 of gpt's 4 solved candidates and solves 2 of them; gpt never attempted SEEDS[4].
    opus = paper_run("r2", [recorded(SEEDS[0], **solve(True)), recorded(SEEDS[1], **solve(True)),
                            recorded(SEEDS[2], **solve(False)), recorded(SEEDS[4], **solve(True))], "opus")  # fmt: skip
    block = table3_tools([gpt, opus], {r.id: unit_records(r.scores()) for r in (gpt, opus)})
    assert block.columns[1:] == ["gpt", "opus"]
    grid = {row.label: [(c.value, c.n) for c in row.cells] for row in block.rows}
    assert grid["gpt"] == [(1.0, 4), (2 / 3, 3)]
    assert grid["opus"] == [(1.0, 2), (1.0, 3)]


# --- the chain through the CLI: real endpoints on 127.0.0.1, the real sandbox ------------------------------


def prompt_of(request: dict[str, Any]) -> str:
    return "\n".join(str(m.get("content") or "") for m in request["messages"])


def candidate_in(request: dict[str, Any], candidates: list[Candidate]) -> Candidate:
    prompt = prompt_of(request)
    return next(c for c in candidates if c.question.strip() in prompt)


def respond(pool: list[Candidate]) -> Any:
    """Screens named ``knows-<id>`` pick the true value for that seed only; the solver runs the solution.

    The model name (after ``#`` in the spec) is the request's ``model``. The solver submits the letter the
    solution's ANSWER: selects, except for seed 3, where it submits another letter.
    """

    def answer(request: dict[str, Any], headers: Any) -> tuple[int, bytes]:
        if is_probe(request):
            return 200, completion("OK")
        candidate = candidate_in(request, pool)
        model = str(request.get("model"))
        if model.startswith("knows-"):
            if candidate.id != model.removeprefix("knows-"):
                return 200, completion("no idea")
            shown = dict(re.findall(r"^\(([ABCD])\) (.*)$", prompt_of(request), flags=re.M))
            return 200, completion(next(k for k, v in shown.items() if v == candidate.answer_value))
        results = [m for m in request["messages"] if m["role"] == "tool"]
        if not results:
            return 200, tool_call_completion("run_python", {"code": candidate.solution}, prompt_tokens=10)
        line = next(x for x in json.loads(results[-1]["content"])["stdout"].splitlines() if x.startswith("ANSWER:"))
        letter: str | None = select_option(line.removeprefix("ANSWER:"), candidate.options).selected
        if candidate.id == SEEDS[3].id:
            letter = next(x for x in "ABCD" if x != letter)
        return 200, tool_call_completion("submit_answer", {"answer": letter}, prompt_tokens=10)

    return answer


def latest(store: str) -> str:
    return str(json.loads(invoke("runs", "--store", store, "--json").stdout)[0]["id"])


@needs_bwrap
def test_chain_of_runs_funnel_export_and_paper_blocks(tmp_path: Path, fem_installed: None) -> None:
    copy = SEEDS[0].model_copy(update={"id": "fem-seed-copy"})
    pool = [*SEEDS, copy]
    path = tmp_path / "pool.jsonl"
    path.write_text("".join(json.dumps(c.model_dump(mode="json")) + "\n" for c in pool))
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    with ChatStub(respond(pool)) as stub:
        first = invoke("gate", "screen", "--candidates", path, "--screen", f"{stub.model('knows-' + SEEDS[1].id)},"
                       "name=s1", "--store", store, "--json")  # fmt: skip
        assert first.exit_code == 0, first.output
        assert json.loads(first.stdout)["counts"]["rejected"] == 1
        screened = latest(store)
        second = invoke("gate", "rescreen", screened, "--pool", "survivors", "--screen",
                        f"{stub.model('knows-' + SEEDS[2].id)},name=s2", "--store", store, "--json")  # fmt: skip
        assert second.exit_code == 0, second.output
        counts = json.loads(second.stdout)["counts"]
        assert (counts["total"], counts["rejected"], counts["passed"]) == (8, 1, 7)
        rescreened = latest(store)
        both = invoke("gate", "solve", "--candidates", path, "--run", rescreened, "--solver", stub.model("solver"),
                      "--store", store)  # fmt: skip
        assert both.exit_code == 2 and "give --candidates FILE or --run RUN" in both.stderr
        solved = invoke("gate", "solve", "--run", rescreened, "--pool", "survivors", "--solver", stub.model("solver"),
                        "--time-limit", "120", "--concurrency", "2", "--store", store, "--json")  # fmt: skip
        assert solved.exit_code == 0, solved.output
        counts = json.loads(solved.stdout)["counts"]
        assert (counts["total"], counts["accepted"], counts["flagged"]) == (7, 6, 1)
        solve_run = latest(store)

    # The funnel over the chain: 9 generated, s1 excludes 1, s2 excludes 1, the solver fails 1, the copy goes.
    audit = invoke("gate", "audit", screened, rescreened, solve_run, "--store", store, "--json")
    assert audit.exit_code == 0, audit.output
    steps = {s["name"]: s for s in json.loads(audit.stdout)["funnel"]["steps"]}
    assert (steps["screen:s1"]["entered"], steps["screen:s1"]["passed"]) == (9, 8)
    assert (steps["screen:s2"]["entered"], steps["screen:s2"]["passed"]) == (8, 7)
    assert (steps["solved"]["entered"], steps["solved"]["passed"], steps["unique"]["passed"]) == (7, 6, 5)
    assert steps["solved"]["rejected"] == {"wrong_answer": 1}
    resources = {(r["run"], r["role"]): r for r in json.loads(audit.stdout)["resources"]}
    assert resources[(screened, "screen:s1")]["episodes"] == 9 and resources[(rescreened, "screen:s2")]["episodes"] == 8
    solver = resources[(solve_run, "solver")]
    assert (solver["episodes"], solver["calls"], solver["input_tokens"], solver["output_tokens"]) == (7, 14, 140, 28)
    assert (
        "runs " + " -> ".join([screened, rescreened, solve_run])
        in invoke("gate", "audit", screened, rescreened, solve_run, "--store", store).stdout
    )

    # Export removes the exact copy before release; --keep-duplicates keeps it.
    out = tmp_path / "release"
    exported = invoke("gate", "export", solve_run, "--out", out, "--seed", "3", "--store", store)
    assert exported.exit_code == 0, exported.output
    assert "6 accepted" not in exported.stdout and "(1 exact duplicate left out)" in exported.stdout
    released = [json.loads(line)["id"] for line in (out / "accepted.jsonl").read_text().splitlines()]
    assert len(released) == 5 and copy.id not in released and SEEDS[0].id in released
    log = [json.loads(line) for line in (out / "rejections.jsonl").read_text().splitlines()]
    assert [(e["id"], e["duplicate_of"]) for e in log if "duplicate_of" in e] == [(copy.id, SEEDS[0].id)]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["duplicates"] == {copy.id: SEEDS[0].id} and manifest["counts"]["accepted"] == 5
    summary = {r["id"]: r for r in csv.DictReader((out / "summary.csv").open())}
    assert summary[copy.id]["duplicate_of"] == SEEDS[0].id and summary[SEEDS[0].id]["duplicate_of"] == ""
    kept = tmp_path / "kept"
    assert invoke("gate", "export", solve_run, "--out", kept, "--keep-duplicates", "--store", store).exit_code == 0
    assert len((kept / "accepted.jsonl").read_text().splitlines()) == 6

    # The paper blocks from the stored runs.
    from toolgauge.api import stored_scores
    from toolgauge.benchmarks.toolgate.resources import role_usage
    from toolgauge.store import open_store

    st = open_store(store, create=False)
    try:
        runs = []
        for run_id in (screened, rescreened, solve_run):
            info = st.get_run(run_id)
            assert info is not None
            units = list(stored_scores(st, info).iter_samples())
            runs.append(PaperRun(id=run_id, benchmark=info.benchmark, model=info.model, config=info.config,
                                 results=info.results, scores=units))  # fmt: skip
        blocks = paper_blocks(runs, usage=lambda run_id: role_usage(st, run_id))
    finally:
        st.close()
    table4 = next(b for b in blocks if b.ref == "Table 4")
    remaining = {row.label: row.cells[2].value for row in table4.rows}
    assert remaining == {"generated": 9, "local verification": 9, "screen:s1": 8, "screen:s2": 7,
                         "tool-enabled solve": 6, "exact deduplication": 5}  # fmt: skip
    table2 = next(b for b in blocks if b.ref == "Table 2")
    solver = next(row for row in table2.rows if row.label.endswith("· solver"))
    # Seven solves, two model calls each (run_python, submit_answer), 10 + 2 tokens a call.
    assert [c.value for c in solver.cells[0:1]] + [c.value for c in solver.cells[3:]] == [7, 14, 140, 28]
    assert isinstance(solver.cells[1].value, float) and solver.cells[1].value > 0
    no_tool = next(b for b in blocks if b.ref == "Table 3" and "no-tool" in b.title)
    (pair,) = no_tool.rows
    # s1 and s2 both screened the 8 survivors of s1: they agree on 7 (neither solves), s2 alone solves seed 2.
    assert pair.label == "s1 / s2" and [c.value for c in pair.cells] == pytest.approx([7 / 8, 0, 0, 1, 7])
