"""The ``gate`` commands end to end: the ``--json`` shape, usage errors, real OpenAI-compatible endpoints on
127.0.0.1 (tests/helpers/chat_stub.py) as screens and solver, audit, rescreen, export, resume and the stored report.

- A screen that always answers "A" rejects about P(>= 2 of 3 right | p = 1/4) = 10/64 = 15.625% of candidates
  under shuffling (checked in a band over 320 candidates) and shows its letter bias in ``gate audit``.
- A screen that always picks the true value rejects every candidate.
- A solver that runs the candidate's own solution through ``run_python`` and submits the letter it selects is
  accepted (real sandbox and the fem libraries; skipped without bubblewrap, and without the fem extra outside CI).
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from typing import Any

import pytest

from helpers.chat_stub import ChatStub, completion, is_probe
from helpers.cli_helpers import invoke, results_of, sample_rows
from toolgauge.benchmarks.toolgate.answers import (
    derive_seed,
    permutation_from_seed,
    present,
    select_option,
    to_displayed,
)
from toolgauge.benchmarks.toolgate.domains import get_domain
from toolgauge.benchmarks.toolgate.loader import load_candidates
from toolgauge.benchmarks.toolgate.records import LETTERS, Candidate
from toolgauge.sandbox import detect_sandbox

needs_bwrap = pytest.mark.skipif(detect_sandbox() != "bwrap", reason="bubblewrap sandbox not available here")
FEM = get_domain("fem")
SEEDS = FEM.seeds()
CANDIDATE_KEYS = {"id", "outcome", "rejected_by", "gates", "reason", "detail"}
COUNT_KEYS = {
    "total", "accepted", "rejected", "flagged", "passed",
    "rejected_by_format", "rejected_by_verify", "rejected_by_screen", "errors",
}  # fmt: skip


def write_pool(path: Path, candidates: list[Candidate]) -> Path:
    path.write_text("".join(json.dumps(c.model_dump(mode="json")) + "\n" for c in candidates))
    return path


def replicated(times: int) -> list[Candidate]:
    """The eight fem seeds, ``times`` times each, with distinct ids."""
    return [c.model_copy(update={"id": f"{c.id}-r{i:02d}"}) for i in range(times) for c in SEEDS]


def by_question(candidates: list[Candidate]) -> dict[str, Candidate]:
    return {c.question: c for c in candidates}


def prompt_of(request: dict[str, Any]) -> str:
    return "\n".join(str(m.get("content") or "") for m in request["messages"])


def answering(answer: Any) -> Any:
    """A stub ``respond`` answering the probe with OK and every other request with ``answer(request)``."""

    def respond(request: dict[str, Any], headers: Any) -> tuple[int, bytes]:
        if is_probe(request):
            return 200, completion("OK")
        return 200, answer(request)

    return respond


def store_of(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'runs.db'}"


def run_id_of(res: Any) -> str:
    found = re.search(r"run (\d{8}-\d{6}-[0-9a-f]+)", res.stdout)
    assert found, res.stdout
    return found.group(1)


# --- shape and usage ---------------------------------------------------------------------------------------


def test_json_is_exactly_the_gate_document(tmp_path):
    pool = write_pool(tmp_path / "pool.jsonl", SEEDS)
    res = invoke("gate", "screen", "--candidates", pool, "--screen", "gold", "--store", store_of(tmp_path), "--json")
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert set(data) == {"candidates", "counts"}
    assert data["counts"] == {
        "total": 8, "accepted": 0, "rejected": 8, "flagged": 0, "passed": 0,
        "rejected_by_format": 0, "rejected_by_verify": 0, "rejected_by_screen": 8, "errors": 0,
    }  # fmt: skip
    assert [c["id"] for c in data["candidates"]] == [c.id for c in SEEDS]
    for entry in data["candidates"]:
        assert set(entry) == CANDIDATE_KEYS
        assert (entry["outcome"], entry["rejected_by"], entry["reason"]) == ("rejected", "screen", "too_easy")
        assert set(entry["gates"]) == {"screens"}  # gates that did not run are absent
        (result,) = entry["gates"]["screens"]
        assert set(result) == {"screen", "passed", "correct", "calls", "reason", "detail", "fixed_order", "settings"}
        assert (result["screen"], result["passed"], result["correct"]) == ("gold", False, 3)
        for call in result["calls"]:
            assert set(call) >= {"permutation", "reply", "chosen", "correct", "seed", "displayed"}
            assert call["permutation"] == permutation_from_seed(call["seed"])
            assert call["chosen"] == next(c.answer for c in SEEDS if c.id == entry["id"])


def test_text_report_samples_and_stored_report(tmp_path):
    pool = write_pool(tmp_path / "pool.jsonl", SEEDS)
    rows = tmp_path / "rows.jsonl"
    res = invoke(
        "gate", "screen", "--candidates", pool, "--screen", "gold", "--store", store_of(tmp_path), "--samples", rows
    )
    assert res.exit_code == 0, res.output
    assert "8 candidates: accepted 0 · rejected 8" in res.stdout
    assert re.search(r"screen:gold\s+8\s+0\s+too_easy 8", res.stdout)
    assert "screens: letter bias" in res.stdout
    samples = sample_rows(rows)
    assert [s["id"] for s in samples] == [c.id for c in SEEDS]
    assert all(s["value"] == 0.0 and s["scores"]["screen:gold"] == 3 for s in samples)
    run_id = run_id_of(res)
    stored = invoke("report", run_id, "--store", store_of(tmp_path))
    assert stored.exit_code == 0 and "screen:gold" in stored.stdout and "too_easy 8" in stored.stdout
    results = results_of(invoke("report", run_id, "--store", store_of(tmp_path), "--json"))
    assert results.benchmark == "toolgate" and results.value("rejected") == 8
    assert results.value("rejected", group="screen:gold too_easy", by="reason") == 8
    assert results.value("funnel_passed", group="screen:gold", by="funnel") == 0
    # Rescoring from the store gives the same figures (no model is asked).
    again = results_of(invoke("rescore", run_id, "--store", store_of(tmp_path), "--json"))
    assert again.metrics == results.metrics


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["gate", "screen"], "give at least one --screen SPEC"),
        (["gate", "solve"], "give the solver: --solver SPEC"),
        (["gate", "solve", "--solver", "gold"], "--solver gold: the reference has no tool calls"),
        (["gate", "screen", "--screen", "gold", "--screen", "gold"], "two screens are named 'gold'"),
        (["gate", "screen", "--screen", "gold,temp=1"], "'temp=1' is not one of"),
        (["gate", "screen", "--screen", "gold", "--domain", "chemistry"], "unknown domain 'chemistry' (known: fem)"),
        (["gate", "screen", "--screen", "gold", "--time-limit", "inf"], "--time-limit must be a finite number"),
    ],
)
def test_usage_errors(tmp_path, args: list[str], message: str):
    pool = write_pool(tmp_path / "pool.jsonl", SEEDS[:1])
    res = invoke(*args, "--candidates", pool, "--store", store_of(tmp_path))
    assert res.exit_code == 2, res.output
    assert message in " ".join(res.stderr.split())


def test_malformed_candidates_file_names_the_line_and_field(tmp_path):
    bad = SEEDS[0].model_dump(mode="json") | {"options": ["1", "2", "3"]}
    path = tmp_path / "pool.jsonl"
    path.write_text(json.dumps(SEEDS[1].model_dump(mode="json")) + "\n" + json.dumps(bad) + "\n")
    res = invoke("gate", "screen", "--candidates", path, "--screen", "gold", "--store", store_of(tmp_path))
    assert res.exit_code == 2
    assert f"{path}:2: options: expected exactly 4 options, got 3" in " ".join(res.stderr.split())


def test_resume_of_a_finished_pool_run_asks_no_model(tmp_path):
    pool = write_pool(tmp_path / "pool.jsonl", SEEDS)
    args = ["gate", "screen", "--candidates", pool, "--screen", "gold", "--seed", "5", "--store", store_of(tmp_path)]
    first = invoke(*args)
    run_id = run_id_of(first)
    again = invoke(*args, "--resume", run_id)
    assert again.exit_code == 0, again.output
    results = results_of(invoke("report", run_id, "--store", store_of(tmp_path), "--json"))
    assert results.run is not None and results.run.resumed_samples == 8 and results.run.model_calls == 0
    other = invoke("gate", "screen", "--candidates", pool, "--screen", "gold", "--seed", "6", "--store",
                   store_of(tmp_path), "--resume", run_id)  # fmt: skip
    assert other.exit_code == 2 and "started with other settings" in other.stderr


def test_each_screen_call_has_its_own_recorded_seed_and_fixed_order_shows_the_original_order(tmp_path):
    """Without --seed every call of every candidate draws a fresh seed; with --seed N the seeds are derived from
    (N, candidate, screen, call), so the same N gives the same orders and each call still its own; --fixed-order
    shows the original order in every call (no seed)."""
    pool = write_pool(tmp_path / "pool.jsonl", SEEDS)
    store = store_of(tmp_path)

    def calls(*extra: str) -> list[dict[str, Any]]:
        res = invoke("gate", "screen", "--candidates", pool, "--screen", "gold", "--store", store, "--json", *extra)
        assert res.exit_code == 0, res.output
        data = json.loads(res.stdout)
        return [dict(call, id=c["id"]) for c in data["candidates"] for call in c["gates"]["screens"][0]["calls"]]

    fresh = calls()
    assert len(fresh) == 24 and len({c["seed"] for c in fresh}) == 24  # independent across candidates and calls
    assert all(c["permutation"] == permutation_from_seed(c["seed"]) for c in fresh)
    assert len({tuple(c["permutation"]) for c in fresh}) > 1
    derived = calls("--seed", "7")
    assert [c["seed"] for c in derived] == [derive_seed(7, c["id"], "gold", i % 3) for i, c in enumerate(derived)]
    assert len({c["seed"] for c in derived}) == 24
    assert [c["seed"] for c in calls("--seed", "7")] == [c["seed"] for c in derived]  # reproducible
    fixed = calls("--fixed-order")
    assert all(c["permutation"] == list("ABCD") and c["seed"] is None for c in fixed)


# --- real endpoints: screens ---------------------------------------------------------------------------------


def test_always_a_screen_rejects_about_a_sixth_and_audit_shows_its_letter_bias(tmp_path):
    candidates = replicated(40)  # 320 candidates, 960 calls
    pool = write_pool(tmp_path / "pool.jsonl", candidates)
    with ChatStub(answering(lambda request: completion("A"))) as stub:
        res = invoke(
            "gate", "screen", "--candidates", pool, "--screen", f"{stub.model('always-a')},name=always-a",
            "--seed", "2026", "--concurrency", "16", "--no-cache", "--store", store_of(tmp_path), "--json",
        )  # fmt: skip
        assert res.exit_code == 0, res.output
        # The probe, then three calls per candidate (the replicas repeat questions: without --no-cache the
        # response cache would answer a repeated presentation from its first reply).
        assert stub.requests == 1 + 3 * len(candidates)
    data = json.loads(res.stdout)
    rejected = data["counts"]["rejected"] / data["counts"]["total"]
    # P(>= 2 of 3 right) with p = 1/4: 3 * (1/4)^2 * (3/4) + (1/4)^3 = 10/64. Binomial sd over 320 candidates is
    # 0.0203: the band is +-4.5 sd (a fixed --seed makes the draw reproducible; any seed lands in it with
    # probability 1 - 7e-6).
    assert 10 / 64 - 0.091 <= rejected <= 10 / 64 + 0.091, rejected
    calls = [call for c in data["candidates"] for call in c["gates"]["screens"][0]["calls"]]
    right = sum(call["correct"] for call in calls) / len(calls)
    assert 0.25 - 0.07 <= right <= 0.25 + 0.07, right  # 960 calls, sd 0.014: +-5 sd
    assert all(call["displayed"] == "A" for call in calls)

    run_id = invoke("runs", "--store", store_of(tmp_path), "--json")
    run_id = json.loads(run_id.stdout)[0]["id"]
    audit = invoke("gate", "audit", run_id, "--store", store_of(tmp_path), "--json")
    assert audit.exit_code == 0, audit.output
    report = json.loads(audit.stdout)
    (bias,) = report["position_bias"]
    assert (bias["screen"], bias["calls"]) == ("always-a", 960)
    assert bias["chosen_share"] == {"A": 1.0, "B": 0.0, "C": 0.0, "D": 0.0, "none": 0.0}
    assert bias["by_correct_letter"]["A"]["accuracy"] == 1.0
    assert [bias["by_correct_letter"][letter]["accuracy"] for letter in "BCD"] == [0.0, 0.0, 0.0]
    # The correct option was shown at A in about a quarter of the calls: exactly the ones answered right.
    assert bias["by_correct_letter"]["A"]["n"] == sum(call["correct"] for call in calls)
    assert (report["middle_value_share"], report["middle_value_accuracy"]) == (0.5, 0.25)
    assert report["middle_value"]["middle_value_share"] == 0.5
    assert report["duplicates"]["exact_duplicates"] == 320 - 8
    text = invoke("gate", "audit", run_id, "--store", store_of(tmp_path))
    assert re.search(r"always-a\s+960\s+\S+\s+100\.00\s+0\.00\s+0\.00\s+0\.00\s+100\.00\s+0\.00", text.stdout)


def true_value_answer(candidates: list[Candidate]) -> Any:
    lookup = by_question(candidates)

    def answer(request: dict[str, Any]) -> bytes:
        prompt = prompt_of(request)
        candidate = next(c for q, c in lookup.items() if q.strip() in prompt)
        shown = dict(re.findall(r"^\(([ABCD])\) (.*)$", prompt, flags=re.M))
        return completion(next(letter for letter, value in shown.items() if value == candidate.answer_value))

    return answer


def test_true_value_screen_rejects_everything_then_rescreen_and_export(tmp_path):
    candidates = replicated(3)
    pool = write_pool(tmp_path / "pool.jsonl", candidates)
    store = store_of(tmp_path)
    with ChatStub(answering(true_value_answer(candidates))) as stub:
        res = invoke("gate", "screen", "--candidates", pool, "--screen", f"{stub.model()},name=truth",
                     "--store", store, "--json")  # fmt: skip
        assert res.exit_code == 0, res.output
        data = json.loads(res.stdout)
        assert data["counts"]["rejected"] == data["counts"]["total"] == 24
        assert all(s["correct"] == 3 for c in data["candidates"] for s in c["gates"]["screens"])
        # The same screen on the seeds with the paper's fixed order: still all too easy.
        fixed = invoke("gate", "screen", "--candidates", pool, "--screen", f"{stub.model()},name=truth",
                       "--fixed-order", "--store", store, "--json", "--limit", "8")  # fmt: skip
        assert json.loads(fixed.stdout)["counts"]["rejected"] == 8
        first_run = json.loads(invoke("runs", "--store", store, "--json").stdout)[1]["id"]

        # Rescreen the stored pool with a screen that cannot tell: a new run, every candidate passes it.
        with ChatStub(answering(lambda request: completion("not sure"))) as unsure:
            again = invoke("gate", "rescreen", first_run, "--screen", f"{unsure.model()},name=unsure",
                           "--pool", "all", "--store", store, "--json")  # fmt: skip
            assert again.exit_code == 0, again.output
        redone = json.loads(again.stdout)
        assert redone["counts"]["passed"] == 24
        assert all(c["gates"]["screens"][0]["calls"][0]["reason"] == "unparsable" for c in redone["candidates"])
        # The default pool is the locally verified one: this run verified nothing, so all 24 are in it.
        rescreen_id = json.loads(invoke("runs", "--store", store, "--json").stdout)[0]["id"]
        stored = results_of(invoke("report", rescreen_id, "--store", store, "--json"))
        assert stored.settings["source_run"] == first_run and stored.settings["command"] == "rescreen"
        assert results_of(invoke("rescore", rescreen_id, "--store", store, "--json")).metrics == stored.metrics
        empty = invoke("gate", "rescreen", first_run, "--screen", "gold", "--pool", "accepted", "--store", store)
        assert empty.exit_code == 2 and "has no accepted candidates to rescreen" in empty.stderr

    # Export of an all-rejected pool: no accepted items, every candidate in the rejection log and the summary.
    out = tmp_path / "release"
    exported = invoke("gate", "export", first_run, "--out", out, "--store", store)
    assert exported.exit_code == 0, exported.output
    assert "no accepted candidates" in exported.stderr
    assert (out / "accepted.jsonl").read_text() == "" and (out / "records.jsonl").read_text() == ""
    log = [json.loads(line) for line in (out / "rejections.jsonl").read_text().splitlines()]
    assert len(log) == 24 and all(e["outcome"]["rejected_by"] == "screen" for e in log)
    assert all(Candidate.model_validate(e["candidate"]) for e in log)
    summary = list(csv.DictReader((out / "summary.csv").open()))
    assert len(summary) == 24 and {r["outcome"] for r in summary} == {"rejected"}
    assert summary[0]["screens"] == "truth 3/3"
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["counts"] == {"accepted": 0, "rejected": 24, "flagged": 0, "passed": 0, "errors": 0}


def test_audit_of_a_candidates_file(tmp_path):
    pool = write_pool(tmp_path / "pool.jsonl", replicated(2))
    res = invoke("gate", "audit", "--candidates", pool, "--json")
    assert res.exit_code == 0, res.output
    report = json.loads(res.stdout)
    assert report["pool"] == 16 and report["position_bias"] == [] and report["agreement"] == []
    assert report["middle_value_share"] == 0.5 and report["middle_value"]["rank_counts"] == {
        "0": 4,
        "1": 4,
        "2": 4,
        "3": 4,
    }
    assert report["duplicates"]["exact_duplicates"] == 8 and len(report["duplicates"]["exact_groups"]) == 8
    assert report["topics"]["candidates"] == 16
    text = invoke("gate", "audit", "--candidates", pool)
    assert "middle_value_share 50.00" in text.stdout and "duplicates: 8 exact (8 groups)" in text.stdout
    both = invoke("gate", "audit", "latest", "--candidates", pool)
    assert both.exit_code == 2 and "give a run id or --candidates FILE" in both.stderr


# --- real endpoints: the solver, with the real sandbox and libraries ----------------------------------------


def solver_answer(candidates: list[Candidate]) -> Any:
    """A solver that runs the candidate's own solution, reads its ANSWER: and submits the letter it selects."""
    lookup = by_question(candidates)

    def call(name: str, arguments: dict[str, Any]) -> bytes:
        body = {
            "id": "c", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": None,
                "tool_calls": [{"id": f"call_{name}", "type": "function",
                                "function": {"name": name, "arguments": json.dumps(arguments)}}]}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }  # fmt: skip
        return json.dumps(body).encode()

    def answer(request: dict[str, Any]) -> bytes:
        if "tools" not in request:  # a screen's call: it cannot tell
            return completion("no idea")
        assert [t["function"]["name"] for t in request["tools"]] == ["run_python", "submit_answer"]
        candidate = next(c for q, c in lookup.items() if q.strip() in prompt_of(request))
        results = [m for m in request["messages"] if m["role"] == "tool"]
        if not results:
            return call("run_python", {"code": candidate.solution})
        reply = json.loads(results[-1]["content"])
        assert reply["exit_code"] == 0, reply
        line = next(x for x in reply["stdout"].splitlines() if x.startswith("ANSWER:"))
        reading = select_option(line.removeprefix("ANSWER:"), candidate.options)
        return call("submit_answer", {"answer": reading.selected})

    return answer


@needs_bwrap
def test_check_accepts_what_a_solver_running_the_solution_finds_then_export(tmp_path, fem_installed):
    pool = write_pool(tmp_path / "pool.jsonl", SEEDS)
    store = store_of(tmp_path)
    with ChatStub(answering(solver_answer(SEEDS))) as stub:
        res = invoke(
            "gate", "check", "--candidates", pool, "--domain", "fem", "--screen", f"{stub.model()},name=unsure",
            "--solver", stub.model("solver"), "--time-limit", "120", "--concurrency", "2", "--store", store, "--json",
        )  # fmt: skip
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["counts"]["accepted"] == 8, data["counts"]
    for entry in data["candidates"]:
        gates = entry["gates"]
        assert set(gates) == {"verify", "screens", "solve"}
        assert gates["verify"]["passed"] and gates["screens"][0]["correct"] == 0
        solve = gates["solve"]
        assert (solve["solved"], solve["reason"], solve["time_limit"]) == (True, None, 120.0)
        assert solve["answer"] == next(c.answer for c in SEEDS if c.id == entry["id"])
        assert "transcript" not in solve

    run_id = json.loads(invoke("runs", "--store", store, "--json").stdout)[0]["id"]
    out = tmp_path / "release"
    assert invoke("gate", "export", run_id, "--out", out, "--seed", "11", "--store", store).exit_code == 0
    released = load_candidates(out / "accepted.jsonl", domain="fem")
    records = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()]
    assert [c.id for c in released] == [r["id"] for r in records] == [c.id for c in SEEDS]
    for item, record, original in zip(released, records, SEEDS, strict=True):
        release = record["release"]
        # The options are the seed's permutation of the original ones, and the answer letter follows its value.
        assert release["permutation"] == permutation_from_seed(release["seed"])
        assert item.options == present(original.options, release["permutation"])
        assert item.answer == to_displayed(original.answer, release["permutation"]) == release["answer"]
        assert item.answer_value == original.answer_value and item.solution == original.solution
        assert record["candidate"] == original.model_dump(mode="json")  # the gates' letters refer to this order
        transcript = record["outcome"]["gates"]["solve"]["transcript"]
        assert [s["call"]["name"] for s in transcript["steps"]] == ["run_python", "submit_answer"]
    assert any(item.options != original.options for item, original in zip(released, SEEDS, strict=True))
    # The same --seed gives the same release; the rejection log is empty; the summary lists every item.
    again = tmp_path / "again"
    invoke("gate", "export", run_id, "--out", again, "--seed", "11", "--store", store)
    assert (again / "accepted.jsonl").read_text() == (out / "accepted.jsonl").read_text()
    assert (out / "rejections.jsonl").read_text() == ""
    summary = list(csv.DictReader((out / "summary.csv").open()))
    assert [r["answer"] for r in summary] == [c.answer for c in released]
    assert all(r["outcome"] == "accepted" and r["answer"] in LETTERS for r in summary)
    text = invoke("report", run_id, "--store", store)
    assert re.search(r"solved\s+8\s+8", text.stdout) and re.search(r"unique\s+8\s+8", text.stdout)


@needs_bwrap
def test_verify_gate_on_the_seeds_and_a_broken_solution(tmp_path, fem_installed):
    broken = SEEDS[0].model_copy(update={"id": "broken", "solution": "raise SystemExit(3)\n"})
    pool = write_pool(tmp_path / "pool.jsonl", [*SEEDS[:2], broken])
    res = invoke("gate", "verify", "--candidates", pool, "--store", store_of(tmp_path), "--json")
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    outcomes = {c["id"]: (c["outcome"], c["rejected_by"], c["reason"]) for c in data["candidates"]}
    assert outcomes == {
        "fem-seed-01": ("passed", None, None),
        "fem-seed-02": ("passed", None, None),
        "broken": ("rejected", "verify", "crashed"),
    }
    assert data["counts"]["rejected_by_verify"] == 1
