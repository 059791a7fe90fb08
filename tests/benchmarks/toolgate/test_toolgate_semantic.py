"""ToolGate's domain semantic check after gate 1 (fem: mesh refinement) and the audit flags it carries.

Pure: :func:`judge_check` on hand-made sandbox results (pass, fail, undecided). End to end (real sandbox and the
fem libraries): ``gate verify --domain-checks`` on three seeds, one of them given options so close that refining
its mesh moves the answer across them; then the flags reach ``gate export``. By construction (run by hand on the
seeds: fem-seed-07's answer 9.663207 becomes 9.643459 on the refined mesh, a move of 0.019748).
"""

from __future__ import annotations

import csv
import json
from decimal import Decimal
from pathlib import Path

import pytest

from helpers.cli_helpers import invoke
from toolgauge.benchmarks.toolgate.domains import get_domain
from toolgauge.benchmarks.toolgate.records import SemanticResult, VerifyResult, decide
from toolgauge.benchmarks.toolgate.semantic import judge_check, option_spacing
from toolgauge.sandbox import SandboxResult, detect_sandbox

needs_bwrap = pytest.mark.skipif(detect_sandbox() != "bwrap", reason="bubblewrap sandbox not available here")
FEM = get_domain("fem")
SEEDS = {c.id: c for c in FEM.seeds()}
SEED7 = SEEDS["fem-seed-07"]  # options 9.639724, 9.700780, 9.663207 (C, proposed), 9.955963


def ran(stdout: str, stderr: str = "", returncode: int | None = 0, timed_out: bool = False) -> SandboxResult:
    return SandboxResult(returncode=returncode, stdout=stdout, stderr=stderr, timed_out=timed_out,
                         reason=None if returncode == 0 else "exit", seconds=1.5)  # fmt: skip


VERIFIED = VerifyResult(passed=True, selected="C", answer="9.663207")


def test_option_spacing_is_the_smallest_gap() -> None:
    assert option_spacing(list(SEED7.options)) == Decimal("9.663207") - Decimal("9.639724")
    assert option_spacing(["a", "1", "2", "3"]) is None


def test_judge_check_pass_fail_and_undecided() -> None:
    # Moved by 0.019748 < spacing 0.023483: passed, no flag.
    ok = judge_check("mesh_refinement", SEED7, VERIFIED, ran("ANSWER: 9.643459\n"))
    assert ok.passed and ok.flags == [] and ok.answer == "9.643459" and ok.seconds == 1.5
    assert ok.detail == "answer 9.663207 -> 9.643459 (moved 0.019748), options' spacing 0.023483"
    # The same move with options 0.013207 apart: rejected by verify, reason semantic_check.
    close = SEED7.model_copy(update={"options": ["9.650000", *SEED7.options[1:]]})
    bad = judge_check("mesh_refinement", close, VERIFIED, ran("ANSWER: 9.643459\n"))
    assert not bad.passed and bad.reason == "semantic_check"
    outcome = decide(close.id, verify=VERIFIED, semantic=bad)
    assert (outcome.outcome, outcome.rejected_by, outcome.reason) == ("rejected", "verify", "semantic_check")
    # Undecided: passed, with an audit flag each.
    assert judge_check("c", SEED7, VERIFIED, ran("", "boom", returncode=1)).flags == ["check_failed"]
    assert judge_check("c", SEED7, VERIFIED, ran("nothing\n")).flags == ["no_answer"]
    assert judge_check("c", SEED7, VERIFIED.model_copy(update={"answer": "C"}), ran("ANSWER: C\n")).flags == [
        "not_numeric"
    ]
    own = judge_check("c", SEED7, VERIFIED, ran("ANSWER: 9.0\n", "TOOLGATE_FLAG no_mesh_refined\n"))
    assert own.passed and own.flags == ["no_mesh_refined"]
    flagged = decide(SEED7.id, verify=VERIFIED, semantic=own)
    assert flagged.outcome == "passed" and flagged.gates.audit_flags == ["c:no_mesh_refined"]
    with pytest.raises(ValueError, match="reason exactly when"):
        SemanticResult(check="c", passed=False)


@needs_bwrap
def test_verify_with_domain_checks_rejects_flags_and_exports_flags(tmp_path: Path, fem_installed: None) -> None:
    close = SEED7.model_copy(update={"id": "seed-07-close", "options": ["9.650000", *SEED7.options[1:]]})
    pool = [SEEDS["fem-seed-01"], SEEDS["fem-seed-04"], close]
    path = tmp_path / "pool.jsonl"
    path.write_text("".join(json.dumps(c.model_dump(mode="json")) + "\n" for c in pool))
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    res = invoke("gate", "verify", "--candidates", path, "--domain-checks", "--time-limit", "120", "--store", store,
                 "--json")  # fmt: skip
    assert res.exit_code == 0, res.output
    found = {c["id"]: c for c in json.loads(res.stdout)["candidates"]}
    # seed 01 builds scikit-fem meshes: refined, its answer moves less than its options' spacing.
    one = found["fem-seed-01"]
    assert one["outcome"] == "passed" and one["gates"]["semantic"]["passed"] and not one["gates"]["semantic"]["flags"]
    # seed 04 is Basix only: nothing to refine, passed with an audit flag.
    four = found["fem-seed-04"]
    assert four["outcome"] == "passed" and four["gates"]["semantic"]["flags"] == ["no_mesh_refined"]
    # The close-options copy of seed 07: verified, then rejected by the domain check.
    seven = found["seed-07-close"]
    assert seven["gates"]["verify"]["passed"] and seven["gates"]["semantic"]["answer"].startswith("9.643")
    assert (seven["outcome"], seven["rejected_by"], seven["reason"]) == ("rejected", "verify", "semantic_check")
    # Without --domain-checks nothing changes: no semantic record, the config as before.
    plain = invoke("gate", "verify", "--candidates", path, "--limit", "1", "--store", store, "--json")
    assert "semantic" not in json.loads(plain.stdout)["candidates"][0]["gates"]

    runs = json.loads(invoke("runs", "--store", store, "--json").stdout)
    checked = runs[1]["id"]
    audit = json.loads(invoke("gate", "audit", checked, "--store", store, "--json").stdout)
    verified = next(s for s in audit["funnel"]["steps"] if s["name"] == "verified")
    assert (verified["passed"], verified["rejected"]) == (2, {"semantic_check": 1})
    out = tmp_path / "release"
    assert invoke("gate", "export", checked, "--out", out, "--store", store).exit_code == 0
    log = {e["id"]: e for e in map(json.loads, (out / "rejections.jsonl").read_text().splitlines())}
    assert log["fem-seed-04"]["audit_flags"] == ["mesh_refinement:no_mesh_refined"]
    assert log["fem-seed-01"]["audit_flags"] == []
    summary = {r["id"]: r for r in csv.DictReader((out / "summary.csv").open())}
    assert summary["fem-seed-04"]["audit_flags"] == "mesh_refinement:no_mesh_refined"
    assert summary["seed-07-close"]["reason"] == "semantic_check"
