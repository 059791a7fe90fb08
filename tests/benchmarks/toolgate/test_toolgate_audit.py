"""Audits and the funnel on hand-built records, with every number derived by hand in the comments."""

from __future__ import annotations

import pytest

from toolgauge.benchmarks.toolgate.answers import grade_call, screen_verdict
from toolgauge.benchmarks.toolgate.audit import (
    answer_rank,
    audit,
    audit_metrics,
    duplicates,
    jaccard,
    middle_value,
    normalise_question,
    question_tokens,
)
from toolgauge.benchmarks.toolgate.records import (
    Candidate,
    Letter,
    RecordedCandidate,
    ScreenResult,
    SolveResult,
    VerifyResult,
    decide,
)

Q1 = "alpha beta gamma delta epsilon zeta eta theta iota kappa"
Q1_AGAIN = "Alpha  beta gamma delta epsilon zeta eta theta iota KAPPA"  # equal after normalisation
Q3 = "alpha beta gamma delta epsilon zeta eta theta iota lambda"  # Jaccard with Q1: 9 / 11
Q4 = "alpha beta gamma delta epsilon zeta omicron pi rho sigma"  # Jaccard with Q1: 6 / 14
Q8 = "mu nu xi omicron pi rho sigma tau upsilon phi"  # Jaccard with Q4: 4 / 16

IDENTITY: list[Letter] = ["A", "B", "C", "D"]
SWAP_AB: list[Letter] = ["B", "A", "C", "D"]


def cand(cid: str, question: str, options: list[str], answer: Letter, topic: str) -> Candidate:
    return Candidate(
        id=cid, domain="fem", question=question, options=options, answer=answer, solution="x", meta={"topic": topic}
    )


def screen(name: str, c: Candidate, calls: list[tuple[list[Letter], str]]) -> ScreenResult:
    return screen_verdict(name, [grade_call(reply, perm, c.answer, seed=i) for i, (perm, reply) in enumerate(calls)])


OK = VerifyResult(passed=True, selected="A")


def build() -> list[RecordedCandidate]:
    c1 = cand("c1", Q1, ["1", "2", "3", "4"], "B", "poisson")  # answer 2: rank 1 (middle)
    c2 = cand("c2", Q1_AGAIN, ["4", "3", "2", "1"], "A", "poisson")  # answer 4: rank 3
    c3 = cand("c3", Q3, ["0.5", "0.1", "0.9", "0.3"], "D", "basix")  # answer 0.3 of 0.1 0.3 0.5 0.9: rank 1
    c4 = cand("c4", Q4, ["x", "y", "z", "w"], "C", "basix")  # not numeric
    c5 = cand("c5", "never verified", ["1", "2", "3", "4"], "D", "poisson")
    c7 = cand("c7", Q4, ["p", "q", "r", "s"], "A", "basix")  # exact duplicate of c4's question
    c8 = cand("c8", Q8, ["10", "20", "30", "40"], "D", "elasticity")  # answer 40: rank 3

    # Screen s1 always answers "A".
    s1 = {
        # c1 (answer B): B shown at B, A, D -> right only in the second call (1 of 3: passes).
        "c1": screen("s1", c1, [(IDENTITY, "A"), (SWAP_AB, "A"), (["C", "D", "A", "B"], "A")]),
        # c2 (answer A): A shown at A, B, A -> right twice: too easy.
        "c2": screen("s1", c2, [(IDENTITY, "A"), (SWAP_AB, "A"), (["A", "C", "B", "D"], "A")]),
        # c3 (answer D): D shown at A, D, A -> right twice: too easy.
        "c3": screen("s1", c3, [(["D", "A", "B", "C"], "A"), (IDENTITY, "A"), (["D", "C", "B", "A"], "A")]),
        # c4 (answer C): C shown at C three times; the last reply is unparsable.
        "c4": screen("s1", c4, [(IDENTITY, "A"), (IDENTITY, "A"), (IDENTITY, "I don't know")]),
        # c7 (answer A): A shown at B three times: always wrong.
        "c7": screen("s1", c7, [(SWAP_AB, "A")] * 3),
        # c8 (answer D): D shown at D; unparsable replies.
        "c8": screen("s1", c8, [(IDENTITY, "?")] * 3),
    }
    # Screen s2 picks the true value on c1 and c2, a wrong one on c4 and c7, nothing on c8.
    s2 = {
        # c1: B shown at C, B, A and chosen there: 3 of 3, too easy.
        "c1": screen("s2", c1, [(["D", "C", "B", "A"], "C"), (IDENTITY, "B"), (SWAP_AB, "A")]),
        "c2": screen("s2", c2, [(IDENTITY, "A")] * 3),  # 3 of 3 (a rescreen of a rejected candidate)
        "c4": screen("s2", c4, [(IDENTITY, "D")] * 3),  # C shown at C, D chosen: 0
        "c7": screen("s2", c7, [(IDENTITY, "B")] * 3),  # A shown at A, B chosen: 0
        "c8": screen("s2", c8, [(IDENTITY, "")] * 3),  # D shown at D, unparsable: 0
    }
    solved = SolveResult(solved=True, answer="C")
    records = [
        RecordedCandidate(candidate=c1, outcome=decide("c1", verify=OK, screens=[s1["c1"], s2["c1"]])),
        RecordedCandidate(candidate=c2, outcome=decide("c2", verify=OK, screens=[s1["c2"], s2["c2"]])),
        RecordedCandidate(candidate=c3, outcome=decide("c3", verify=OK, screens=[s1["c3"]])),
        RecordedCandidate(candidate=c4, outcome=decide("c4", verify=OK, screens=[s1["c4"], s2["c4"]], solve=solved)),
        RecordedCandidate(
            candidate=c5,
            outcome=decide("c5", verify=VerifyResult(passed=False, reason="mismatch", selected="A")),
        ),
        RecordedCandidate(
            candidate=None,
            raw={"id": "c6", "options": ["1"]},
            outcome=decide("c6", malformed="options: expected exactly 4 options, got 1"),
        ),
        RecordedCandidate(
            candidate=c7,
            outcome=decide("c7", verify=OK, screens=[s1["c7"], s2["c7"]], solve=SolveResult(solved=True, answer="A")),
        ),
        RecordedCandidate(
            candidate=c8,
            outcome=decide(
                "c8",
                verify=OK,
                screens=[s1["c8"], s2["c8"]],
                solve=SolveResult(solved=False, answer="A", reason="wrong_answer"),
            ),
        ),
    ]
    return records


def test_outcomes_of_the_hand_built_pool():
    outcomes = {r.outcome.id: (r.outcome.outcome, r.outcome.rejected_by, r.outcome.reason) for r in build()}
    assert outcomes == {
        "c1": ("rejected", "screen", "too_easy"),
        "c2": ("rejected", "screen", "too_easy"),
        "c3": ("rejected", "screen", "too_easy"),
        "c4": ("accepted", None, None),
        "c5": ("rejected", "verify", "mismatch"),
        "c6": ("rejected", "format", "malformed"),
        "c7": ("accepted", None, None),
        "c8": ("flagged", None, "wrong_answer"),
    }


def test_position_bias_per_screen():
    report = audit(build())
    s1, s2 = report.position_bias
    # s1: 18 calls. Correct option shown at A: c1#2, c2#1, c2#3, c3#1, c3#3 (5, all right); at B: c1#1, c2#2,
    # c7 x3 (5, none right); at C: c4 x3 (3); at D: c1#3, c3#2, c8 x3 (5). Chosen: A 14, unparsable 4.
    assert (s1.screen, s1.calls, s1.accuracy) == ("s1", 18, pytest.approx(5 / 18))
    assert {k: (v.n, v.correct, v.accuracy) for k, v in s1.by_correct_letter.items()} == {
        "A": (5, 5, 1.0),
        "B": (5, 0, 0.0),
        "C": (3, 0, 0.0),
        "D": (5, 0, 0.0),
    }
    assert s1.chosen_share == {"A": 14 / 18, "B": 0.0, "C": 0.0, "D": 0.0, "none": 4 / 18}
    # s2: 15 calls. Shown at A: c1#3, c2 x3, c7 x3 (7; right: c1#3 and c2 x3 = 4); at B: c1#2 (1, right);
    # at C: c1#1 (right), c4 x3 (4; 1 right); at D: c8 x3 (3, none). Chosen: A 4, B 4, C 1, D 3, none 3.
    assert (s2.calls, s2.accuracy) == (15, pytest.approx(6 / 15))
    assert {k: (v.n, v.correct, v.accuracy) for k, v in s2.by_correct_letter.items()} == {
        "A": (7, 4, 4 / 7),
        "B": (1, 1, 1.0),
        "C": (4, 1, 0.25),
        "D": (3, 0, 0.0),
    }
    assert s2.chosen_share == {"A": 4 / 15, "B": 4 / 15, "C": 1 / 15, "D": 3 / 15, "none": 3 / 15}


def test_middle_value_figures():
    report = audit(build())
    # The pool: c1 c2 c3 c4 c7 c8 (c5 failed verification, c6 is malformed). Numeric: c1 (rank 1), c2 (3),
    # c3 (1), c8 (3): 2 of 4 are a middle value; always picking one of the two middle values: 1/4.
    mv = report.middle_value
    assert (mv.candidates, mv.numeric, mv.middle) == (6, 4, 2)
    assert (mv.middle_value_share, mv.middle_value_accuracy) == (0.5, 0.25)
    assert mv.rank_counts == {0: 0, 1: 2, 2: 0, 3: 2}
    # The paper's figure: answers in the middle in 80% of items -> a middle-value pick scores 40%.
    items = [cand(f"m{i}", "q", ["1", "2", "3", "4"], "B" if i < 8 else "D", "t") for i in range(10)]
    paper = middle_value(items)
    assert (paper.middle_value_share, paper.middle_value_accuracy) == (0.8, 0.4)
    # Numerically equal options leave no rank: not counted as numeric.
    assert answer_rank(cand("t", "q", ["1", "1.0", "2", "3"], "A", "t")) is None
    assert answer_rank(cand("t", "q", ["-1", "1e-3", "2", "x"], "A", "t")) is None
    assert answer_rank(cand("t", "q", ["-1", "1e-3", "2", "0.5"], "B", "t")) == 1
    assert middle_value([]).middle_value_share is None


def test_agreement_between_screens():
    (table,) = audit(build()).agreement
    # Screened by both: c1 (s1 no, s2 yes), c2 (both), c4, c7, c8 (neither): agreement 4 of 5.
    assert table.model_dump() == {
        "first": "s1",
        "second": "s2",
        "both_solved": 1,
        "only_first": 0,
        "only_second": 1,
        "neither": 3,
        "n": 5,
        "agreement": 0.8,
    }


def test_duplicates_and_topics():
    report = audit(build())
    dup = report.duplicates
    assert dup.exact_groups == [["c1", "c2"], ["c4", "c7"]]
    assert (dup.exact_duplicates, dup.unique) == (2, 4)
    # Near pairs: c1-c2 (1.0), c1-c3 and c2-c3 (9/11), c4-c7 (1.0); c1-c4 is 6/14 and c4-c8 4/16.
    assert dup.near_pairs == 4
    assert dup.clusters == [["c1", "c2", "c3"], ["c4", "c7"]]
    assert dup.largest_cluster_share == 0.5
    topics = report.topics
    assert topics.counts == {"basix": 3, "poisson": 2, "elasticity": 1}
    assert (topics.top_topic, topics.top_share) == ("basix", 0.5)
    assert topics.herfindahl == pytest.approx((9 + 4 + 1) / 36)


def test_similarity_helpers():
    assert normalise_question("  A\u00a0b\n\tC ") == "a b c"
    assert question_tokens("Mesh 17x14, degree 2.5!") == frozenset({"mesh", "17", "x", "14", "degree", "2.5"})
    assert jaccard(question_tokens(Q1), question_tokens(Q3)) == pytest.approx(9 / 11)
    assert jaccard(question_tokens(Q1), question_tokens(Q4)) == pytest.approx(6 / 14)
    assert jaccard(frozenset(), frozenset()) == 1.0
    # Exactly at the threshold counts (7 shared of 10 distinct tokens).
    a = cand("a", "aa bb cc dd ee ff gg hh", ["1", "2", "3", "4"], "A", "x")
    b = cand("b", "aa bb cc dd ee ff gg ii jj", ["1", "2", "3", "4"], "A", "x")
    assert jaccard(question_tokens(a.question), question_tokens(b.question)) == 0.7
    assert duplicates([a, b]).near_pairs == 1
    assert duplicates([a, b], threshold=0.71).near_pairs == 0


def test_funnel_counts_and_reasons():
    funnel = audit(build()).funnel
    assert funnel.attempts == 8
    assert [(s.name, s.entered, s.passed, s.rejected, s.not_run) for s in funnel.steps] == [
        ("verified", 8, 6, {"malformed": 1, "mismatch": 1}, 0),
        ("screen:s1", 6, 4, {"too_easy": 2}, 0),
        ("screen:s2", 4, 3, {"too_easy": 1}, 0),
        ("solved", 3, 2, {"wrong_answer": 1}, 0),
        ("unique", 2, 1, {"exact_duplicate": 1}, 0),
    ]
    assert funnel.count("attempts") == 8 and funnel.count("solved") == 2 and funnel.count("nope") is None


def test_funnel_when_only_verification_ran():
    records = [
        RecordedCandidate(candidate=cand("a", "q a", ["1", "2", "3", "4"], "A", "t"), outcome=decide("a", verify=OK)),
        RecordedCandidate(
            candidate=cand("b", "q b", ["1", "2", "3", "4"], "A", "t"),
            outcome=decide("b", verify=VerifyResult(passed=False, reason="timeout")),
        ),
        RecordedCandidate(candidate=cand("c", "q c", ["1", "2", "3", "4"], "A", "t"), outcome=decide("c")),
    ]
    funnel = audit(records).funnel
    # a passed verification, b timed out, c saw no gate: c is "not run" at each step and goes on with a. Neither
    # was solved (the solve gate did not run), and both come out of the funnel with distinct questions.
    assert [(s.name, s.entered, s.passed, s.rejected, s.not_run) for s in funnel.steps] == [
        ("verified", 3, 1, {"timeout": 1}, 1),
        ("solved", 2, 0, {}, 2),
        ("unique", 2, 2, {"exact_duplicate": 0}, 0),
    ]
    assert funnel.count("solved") == 0


def test_audit_metrics_are_typed():
    metrics = audit_metrics(audit(build()))
    by_key = {(m.name, m.group, m.by): m for m in metrics}
    assert by_key[("middle_value_share", None, None)].value == 0.5
    assert by_key[("middle_value_accuracy", None, None)].value == 0.25
    assert by_key[("exact_duplicates", None, None)].kind == "count"
    assert by_key[("screen_call_accuracy", "s2", "screen")].value == pytest.approx(0.4)
    assert by_key[("accuracy_by_correct_letter", "s1 A", "screen_correct_letter")].value == 1.0
    assert by_key[("accuracy_by_correct_letter", "s1 A", "screen_correct_letter")].n == 5
    assert by_key[("chosen_share", "s1 none", "screen_chosen_letter")].value == pytest.approx(4 / 18)
    assert by_key[("funnel_passed", "screen:s2", "funnel")].value == 3
