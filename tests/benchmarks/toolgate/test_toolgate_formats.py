"""ToolGate's fixed formats: the candidate, the loader's one-line errors, gate records and outcomes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from toolgauge.benchmarks.toolgate.domains import domain_names, get_domain
from toolgauge.benchmarks.toolgate.loader import candidate_problem, load_candidates, validate_candidate
from toolgauge.benchmarks.toolgate.records import (
    Candidate,
    GateReport,
    ScreenCall,
    ScreenResult,
    SolveResult,
    VerifyResult,
    decide,
)
from toolgauge.errors import DataError, UsageError


def good(**changes: object) -> dict[str, object]:
    data: dict[str, object] = {
        "id": "q1",
        "domain": "fem",
        "question": "What is it?",
        "options": ["0.1", "0.2", "0.3", "0.4"],
        "answer": "B",
        "solution": "print('ANSWER: B')\n",
        "meta": {"topic": "t"},
    }
    data.update(changes)
    return data


def write(path: Path, *rows: object) -> Path:
    path.write_text("".join((row if isinstance(row, str) else json.dumps(row)) + "\n" for row in rows))
    return path


def test_a_good_candidate_and_its_public_part():
    candidate = Candidate.model_validate(good())
    assert candidate.answer_index == 1 and candidate.answer_value == "0.2"
    assert candidate.topic == "t"
    # question.json: the candidate without answer and solution.
    assert candidate.public() == {
        "id": "q1",
        "domain": "fem",
        "question": "What is it?",
        "options": ["0.1", "0.2", "0.3", "0.4"],
        "meta": {"topic": "t"},
    }
    assert Candidate.model_validate(good(meta={})).topic == "unknown"
    # meta may be left out; it defaults to an empty object.
    data = good()
    del data["meta"]
    assert Candidate.model_validate(data).meta == {}


@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        ({"options": ["1", "2", "3"]}, "options", "expected exactly 4 options, got 3"),
        ({"options": ["1", "2", "3", "4", "5"]}, "options", "expected exactly 4 options, got 5"),
        ({"options": ["1", "2", "1", "4"]}, "options", "options A and C are the same ('1')"),
        # Distinct after trimming: a value selects the option whose trimmed text equals it.
        ({"options": ["1", "2", " 2 ", "4"]}, "options", "options B and C are the same ('2')"),
        ({"options": ["1", "", "3", "4"]}, "options", "option B is empty"),
        ({"options": ["1", "  ", "3", "4"]}, "options", "option B is empty"),
        ({"options": ["1", 2, "3", "4"]}, "options[1]", "expected a string, got integer"),
        ({"options": "1,2,3,4"}, "options", "expected an array of 4 strings, got string"),
        ({"answer": "E"}, "answer", "expected one of A, B, C, D, got 'E'"),
        ({"answer": "b"}, "answer", "expected one of A, B, C, D, got 'b'"),
        ({"answer": 1}, "answer", "expected one of A, B, C, D, got integer"),
        ({"solution": ""}, "solution", "must not be empty"),
        ({"solution": None}, "solution", "expected a string, got null"),
        ({"question": "   "}, "question", "must not be empty"),
        ({"id": 7}, "id", "expected a string, got integer"),
        ({"meta": []}, "meta", "expected an object, got array"),
        (
            {"solutoin": "x"},
            "solutoin",
            "unknown field; did you mean 'solution'? (allowed: id, domain, question, options, answer, solution, meta)",
        ),
        (
            {"colour": "red"},
            "colour",
            "unknown field (allowed: id, domain, question, options, answer, solution, meta)",
        ),
    ],
)
def test_every_malformed_candidate_is_one_clear_line(tmp_path, changes, field, message):
    path = write(tmp_path / "pool.jsonl", good(id="first"), good(**changes))
    with pytest.raises(DataError) as caught:
        load_candidates(path)
    assert str(caught.value) == f"{path}:2: {field}: {message}"
    # Inside gate run the same problem is the detail of a "malformed" rejection.
    assert candidate_problem(good(**changes)) == f"{field}: {message}"
    # The model refuses it too (a candidate built in code cannot be malformed).
    with pytest.raises(ValidationError):
        Candidate.model_validate(good(**changes))


@pytest.mark.parametrize("missing", ["id", "domain", "question", "options", "answer", "solution"])
def test_a_missing_field(tmp_path, missing):
    data = good()
    del data[missing]
    path = write(tmp_path / "pool.jsonl", data)
    with pytest.raises(DataError, match=rf"^{path}:1: {missing}: missing required field$"):
        load_candidates(path)
    assert candidate_problem(data) == f"{missing}: missing required field"


def test_file_level_problems(tmp_path):
    path = write(tmp_path / "pool.jsonl", good(), good(), "")
    with pytest.raises(DataError) as caught:
        load_candidates(path)
    assert str(caught.value) == f"{path}:2: id: duplicate id 'q1' (first on line 1)"
    bad_json = write(tmp_path / "bad.jsonl", good(id="a"), '{"id": ')
    with pytest.raises(DataError, match=rf"^{bad_json}:2: invalid JSON"):
        load_candidates(bad_json)
    not_object = write(tmp_path / "list.jsonl", "[1, 2]")
    with pytest.raises(DataError, match=rf"^{not_object}:1: expected a JSON object, got list$"):
        load_candidates(not_object)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n\n")
    with pytest.raises(DataError, match=r"no candidates: the file is empty"):
        load_candidates(empty)
    with pytest.raises(DataError, match=r"file not found"):
        load_candidates(tmp_path / "nope.jsonl")
    assert candidate_problem([1]) == "expected a JSON object (one candidate per line), got array"


def test_domain_is_checked_when_given(tmp_path):
    path = write(tmp_path / "pool.jsonl", good(domain="chem"))
    with pytest.raises(DataError, match=r":1: domain: expected 'fem', got 'chem'$"):
        load_candidates(path, domain="fem")
    assert [c.domain for c in load_candidates(path)] == ["chem"]
    assert validate_candidate(good(), domain="fem").id == "q1"


def test_blank_lines_are_skipped_and_order_kept(tmp_path):
    path = write(tmp_path / "pool.jsonl", good(id="a"), "", good(id="b", answer="D"))
    assert [(c.id, c.answer) for c in load_candidates(path)] == [("a", "B"), ("b", "D")]


def test_the_domain_folders():
    assert "fem" in domain_names()
    fem = get_domain("fem")
    assert fem.info.extra == "fem"
    assert set(fem.info.modules) == {"skfem", "basix", "ufl"}
    assert fem.install_hint() == "domain not installed: pip install 'toolgauge[fem]'"
    assert "ANSWER:" in fem.guide()
    with pytest.raises(UsageError, match=r"unknown domain 'chem' \(known: .*fem"):
        get_domain("chem")


def test_a_domain_whose_library_is_missing_says_how_to_install_it(monkeypatch, fem_installed):
    fem = get_domain("fem")
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "basix" else real(name, *a))
    assert fem.missing_modules() == ["basix"]
    with pytest.raises(UsageError) as caught:
        fem.require_installed()
    assert str(caught.value) == "domain not installed: pip install 'toolgauge[fem]' (missing: basix)"


# --- gate records and outcomes -----------------------------------------------------------------------------


def call(correct: bool) -> ScreenCall:
    return ScreenCall(seed=1, permutation=["B", "A", "C", "D"], reply="A", displayed="A", chosen="B", correct=correct)


def screen(name: str, correct: int) -> ScreenResult:
    calls = [call(i < correct) for i in range(3)]
    passed = correct < 2
    return ScreenResult(screen=name, passed=passed, correct=correct, calls=calls, reason=None if passed else "too_easy")


VERIFIED = VerifyResult(passed=True, selected="B", answer="B")


def test_records_keep_reason_and_pass_consistent():
    with pytest.raises(ValidationError):
        VerifyResult(passed=True, reason="crashed")
    with pytest.raises(ValidationError):
        VerifyResult(passed=False)
    with pytest.raises(ValidationError):
        VerifyResult(passed=False, reason="exploded")  # not a reason name: details go in `detail`
    with pytest.raises(ValidationError):
        SolveResult(solved=False)
    with pytest.raises(ValidationError):
        ScreenCall(permutation=["A", "A", "C", "D"], reply="A", correct=False)


def test_outcomes_follow_the_gates_that_ran():
    crashed = VerifyResult(passed=False, reason="crashed", detail="exit code 1\nValueError: x")
    assert decide("c", malformed="options: expected exactly 4 options, got 3").model_dump(exclude={"gates"}) == {
        "id": "c",
        "outcome": "rejected",
        "rejected_by": "format",
        "reason": "malformed",
        "detail": "options: expected exactly 4 options, got 3",
    }
    rejected = decide("c", verify=crashed)
    assert (rejected.outcome, rejected.rejected_by, rejected.reason) == ("rejected", "verify", "crashed")
    # Only verification ran and it passed: "passed".
    assert decide("c", verify=VERIFIED).outcome == "passed"
    # The second screen is too easy: rejected by a screen even though the first passed.
    easy = decide("c", verify=VERIFIED, screens=[screen("s1", 1), screen("s2", 2)])
    assert (easy.outcome, easy.rejected_by, easy.reason, easy.detail) == (
        "rejected",
        "screen",
        "too_easy",
        "s2: 2 of 3 calls correct",
    )
    assert decide("c", screens=[screen("s1", 0)]).outcome == "passed"
    solved = SolveResult(solved=True, answer="B")
    assert decide("c", verify=VERIFIED, screens=[screen("s1", 1)], solve=solved).outcome == "accepted"
    wrong = SolveResult(solved=False, answer="C", reason="wrong_answer")
    flagged = decide("c", verify=VERIFIED, screens=[screen("s1", 1)], solve=wrong)
    assert (flagged.outcome, flagged.rejected_by, flagged.reason) == ("flagged", None, "wrong_answer")
    # gate solve alone decides accepted / flagged.
    assert decide("c", solve=solved).outcome == "accepted"


def test_json_shape_drops_gates_that_did_not_run():
    outcomes = [
        decide("a", verify=VERIFIED),
        decide("b", verify=VerifyResult(passed=False, reason="timeout", detail="wall clock of 300 s exceeded")),
        decide("c", verify=VERIFIED, screens=[screen("gpt", 0)], solve=SolveResult(solved=True, answer="B")),
    ]
    report = GateReport.of(outcomes).to_json()
    assert report["counts"] == {
        "total": 3,
        "accepted": 1,
        "rejected": 1,
        "flagged": 0,
        "passed": 1,
        "rejected_by_format": 0,
        "rejected_by_verify": 1,
        "rejected_by_screen": 0,
    }
    first, second, third = report["candidates"]
    assert set(first) == {"id", "outcome", "rejected_by", "gates", "reason", "detail"}
    assert list(first["gates"]) == ["verify"]
    assert first["gates"]["verify"]["selected"] == "B"
    assert {"passed", "reason", "detail", "selected"} <= set(first["gates"]["verify"])
    assert second["gates"]["verify"]["reason"] == "timeout"
    assert second["rejected_by"] == "verify"
    assert list(third["gates"]) == ["verify", "screens", "solve"]
    call_json = third["gates"]["screens"][0]["calls"][0]
    assert {"permutation", "reply", "chosen", "correct"} <= set(call_json)
    assert third["gates"]["solve"] == {
        "solved": True,
        "answer": "B",
        "reason": None,
        "detail": None,
        "seconds": None,
        "time_limit": None,
    }
    assert first["gates"]["verify"]["reason"] is None  # a gate that ran keeps its null fields
    json.dumps(report)  # plain JSON


def test_a_misspelt_domain_json_field_gets_the_did_you_mean(tmp_path, monkeypatch):
    from toolgauge.benchmarks.toolgate import domains

    folder = tmp_path / "optics"
    folder.mkdir()
    described = {"title": "Optics", "extra": "optics", "module": {"numpy": "numpy"}}
    (folder / "domain.json").write_text(json.dumps(described))
    monkeypatch.setattr(domains, "DOMAINS_DIR", tmp_path)
    with pytest.raises(DataError) as caught:
        domains.get_domain("optics")
    assert str(caught.value) == (
        f"{folder / 'domain.json'}: module: unknown field; did you mean 'modules'? "
        "(allowed: title, extra, modules, semantic_check)"
    )
