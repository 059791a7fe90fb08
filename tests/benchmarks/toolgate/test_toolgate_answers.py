"""The answer rules: ANSWER: lines, value matching, screen replies, seeded permutations, order invariance."""

from __future__ import annotations

import itertools
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolgauge.benchmarks.toolgate.answers import (
    answer_lines,
    derive_seed,
    grade_answer,
    grade_call,
    half_unit,
    new_seed,
    parse_number,
    parse_reply,
    permutation_from_seed,
    present,
    read_answer,
    screen_prompt,
    screen_verdict,
    select_option,
    shuffled,
    to_displayed,
    to_original,
)
from toolgauge.benchmarks.toolgate.records import LETTERS, Candidate

OPTIONS = ["0.058996", "0.060723", "0.060074", "0.061291"]  # the paper's item 0023


# --- ANSWER: lines -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("stdout", "selected", "reason"),
    [
        ("ANSWER: B\n", "B", None),
        ("log line\nANSWER:B\nmore logs\n", "B", None),
        ("ANSWER:   D   \r\n", "D", None),
        # A value equal to an option's text after trimming.
        ("ANSWER: 0.060074\n", "C", None),
        ("ANSWER:  0.061291  \n", "D", None),
        # Numbers within half a unit of the option's last printed decimal (6 decimals: +-5e-7, bounds included).
        ("ANSWER: 0.0607231234\n", "B", None),
        ("ANSWER: 0.0607225\n", "B", None),
        ("ANSWER: 0.0607235\n", "B", None),
        ("ANSWER: 6.0723e-2\n", "B", None),
        ("ANSWER: 60.723E-3\n", "B", None),
        ("ANSWER: +0.0589961\n", "A", None),
        # No line at all, or lines that do not start with the prefix.
        ("0.060723\n", None, "no_answer"),
        ("", None, "no_answer"),
        ("  ANSWER: B\n", None, "no_answer"),
        ("answer: B\n", None, "no_answer"),
        ("The ANSWER: B\n", None, "no_answer"),
        # Two lines are two answers, even identical.
        ("ANSWER: B\nANSWER: B\n", None, "several_answers"),
        ("ANSWER: B\nANSWER: 0.060723\n", None, "several_answers"),
        # Nothing matches: not a letter, no option text, a number outside every tolerance.
        ("ANSWER: 0.0607236\n", None, "no_matching_option"),
        ("ANSWER: 0.06072\n", None, "no_matching_option"),
        ("ANSWER: E\n", None, "no_matching_option"),
        ("ANSWER: b\n", None, "no_matching_option"),
        ("ANSWER: np.float64(0.060723)\n", None, "no_matching_option"),
        ("ANSWER: nan\n", None, "no_matching_option"),
        ("ANSWER:\n", None, "no_matching_option"),
    ],
)
def test_answer_rules(stdout, selected, reason):
    reading = read_answer(stdout, OPTIONS)
    assert (reading.selected, reading.reason) == (selected, reason), reading
    if reason is not None:
        assert reading.detail


def test_ambiguous_and_boundaries():
    # Options one unit apart: the midpoint is within half a unit of both (bounds included).
    options = ["1.5", "1.6", "2.0", "3.0"]
    reading = read_answer("ANSWER: 1.55\n", options)
    assert (reading.reason, reading.detail) == ("ambiguous_option", "'1.55' matches options A, B")
    assert read_answer("ANSWER: 1.549\n", options).selected == "A"
    # Different precisions: "2" accepts [1.5, 2.5], "2.25" accepts [2.245, 2.255]; 2.25 is the text of D.
    mixed = ["2", "2.25", "7", "2.7"]
    assert read_answer("ANSWER: 2.25\n", mixed).selected == "B"  # equal text wins before numbers
    assert read_answer("ANSWER: 2.251\n", mixed).reason == "ambiguous_option"  # within "2" and "2.25"
    assert read_answer("ANSWER: 1.6\n", mixed).selected == "A"
    # Scientific notation in an option: 1.5e-3 has its last decimal at 1e-4, so +-5e-5.
    sci = ["1.5e-3", "2.5e-3", "1", "2"]
    assert read_answer("ANSWER: 0.00154\n", sci).selected == "A"
    assert read_answer("ANSWER: 0.00156\n", sci).reason == "no_matching_option"
    # Non-numeric options match by text only.
    words = ["linear", "quadratic", "cubic", "quartic"]
    assert read_answer("ANSWER:  cubic \n", words).selected == "C"
    assert read_answer("ANSWER: Cubic\n", words).reason == "no_matching_option"


def test_mismatch_names_the_option_selected():
    reading = grade_answer("ANSWER: 0.060074\n", OPTIONS, "B")
    assert (reading.selected, reading.reason) == ("C", "mismatch")
    assert reading.detail == "selected C ('0.060074'), proposed B"
    assert grade_answer("ANSWER: C\n", OPTIONS, "C").reason is None
    # Other reasons are kept as they are (no mismatch without a selection).
    assert grade_answer("", OPTIONS, "B").reason == "no_answer"


def test_number_helpers():
    assert parse_number("1.5e-3") == Decimal("0.0015")
    assert parse_number(".5") == Decimal("0.5")
    assert parse_number("5.") == Decimal(5)
    for text in ("inf", "nan", "1,5", "0x10", "1_000", "", "e5", "--1"):
        assert parse_number(text) is None, text
    assert half_unit("0.060723") == Decimal("5e-7")
    assert half_unit("12") == Decimal("0.5")
    assert half_unit("1.2e3") == Decimal(50)
    assert half_unit("1.5e-3") == Decimal("5e-5")
    assert answer_lines("a\nANSWER: 1\r\nANSWER: 2") == ["ANSWER: 1", "ANSWER: 2"]


# --- screen replies ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "letter"),
    [
        ("B", "B"),
        ("(C)", "C"),
        ("**D**", "D"),
        ("The answer is A.", "A"),
        ("Answer: B", "B"),  # the A of "Answer" is inside a word
        ("B. Because B is the value of the discrete problem.", "B"),  # one letter, named twice
        ("\n  c\n", None),  # lower case is not a letter name
        ("", None),
        ("I cannot tell.", None),
        ("A or B", None),
        ("A careful computation gives C", None),  # two letters named: unparsable
        ("E", None),
    ],
)
def test_reply_parsing(reply, letter):
    parsed, problem = parse_reply(reply)
    assert parsed == letter
    assert (problem is None) == (letter is not None)


def test_grading_maps_the_displayed_letter_back():
    permutation = ["C", "A", "D", "B"]  # displayed A is original C, displayed B is original A, ...
    assert present(["a", "b", "c", "d"], permutation) == ["c", "a", "d", "b"]
    assert to_original("B", permutation) == "A" and to_displayed("A", permutation) == "B"
    right = grade_call("B", permutation, "A", seed=7)
    assert (right.displayed, right.chosen, right.correct, right.seed) == ("B", "A", True, 7)
    wrong = grade_call("A", permutation, "A", seed=7)
    assert (wrong.displayed, wrong.chosen, wrong.correct) == ("A", "C", False)
    garbled = grade_call("A or B", permutation, "A", seed=None)
    assert (garbled.chosen, garbled.correct, garbled.reason) == (None, False, "unparsable")
    assert garbled.detail == "the reply names several letters: A, B"


def test_screen_verdict_two_of_three_is_too_easy():
    calls = [grade_call(r, list(LETTERS), "A", seed=None) for r in ("A", "A", "B")]
    verdict = screen_verdict("m@t0", calls, settings={"temperature": 0})
    assert (verdict.passed, verdict.correct, verdict.reason) == (False, 2, "too_easy")
    assert verdict.settings == {"temperature": 0}
    one = screen_verdict("m", [grade_call(r, list(LETTERS), "A", seed=None) for r in ("A", "x", "B")])
    assert (one.passed, one.correct, one.reason) == (True, 1, None)
    assert one.calls[1].reason == "unparsable"


def test_screen_prompt_shows_displayed_options():
    text = screen_prompt("  Q?  ", ["x", "y", "z", "w"])
    assert text == "Q?\n\n(A) x\n(B) y\n(C) z\n(D) w\n\nReply with exactly one letter: A, B, C or D."


# --- seeds and permutations --------------------------------------------------------------------------------


def test_permutations_are_reproducible_from_their_seed_and_independent_across_calls():
    assert permutation_from_seed(12345) == permutation_from_seed(12345)
    assert sorted(permutation_from_seed(12345)) == list(LETTERS)
    # Seeds derived per (run, candidate, screen, call) differ, and so (over many) do the orders.
    seeds = {derive_seed("run", f"c{i}", "screen", call) for i in range(200) for call in range(3)}
    assert len(seeds) == 600
    orders = {tuple(permutation_from_seed(s)) for s in seeds}
    assert len(orders) == 24  # all 24 orders occur
    assert derive_seed("run", "c1", "s", 0) == derive_seed("run", "c1", "s", 0)
    assert 0 <= new_seed() < 2**63 and new_seed() != new_seed()
    # Displayed position of the correct option is uniform over many seeds (no letter favoured).
    counts = {letter: 0 for letter in LETTERS}
    for seed in range(4000):
        counts[to_displayed("C", permutation_from_seed(seed))] += 1
    assert all(900 < n < 1100 for n in counts.values()), counts


def test_release_shuffle_moves_the_answer_letter_with_its_value():
    candidate = Candidate(
        id="x", domain="fem", question="q", options=OPTIONS, answer="B", solution="print('ANSWER: 0.060723')"
    )
    for seed in range(30):
        released = shuffled(candidate, seed)
        assert released.answer_value == "0.060723"
        assert sorted(released.options) == sorted(OPTIONS)
        assert released.options == present(OPTIONS, permutation_from_seed(seed))


# --- value grading is invariant to the option order ---------------------------------------------------------

number_text = st.one_of(
    st.decimals(min_value=-1000, max_value=1000, places=4, allow_nan=False, allow_infinity=False).map(str),
    st.integers(min_value=-50, max_value=50).map(str),
    st.floats(min_value=1e-6, max_value=1e6, allow_nan=False).map(lambda x: f"{x:.3e}"),
)
option_text = st.one_of(number_text, st.text(alphabet="abcxyz ", min_size=1, max_size=6).filter(str.strip))


@settings(max_examples=300, deadline=None)
@given(
    options=st.lists(option_text, min_size=4, max_size=4, unique_by=str.strip),
    answer=st.one_of(number_text, option_text),
    order=st.permutations(range(4)),
)
def test_value_grading_is_invariant_to_option_order(options, answer, order):
    answer = answer.strip()
    if answer in LETTERS:  # a letter names a position, not a value
        return
    reordered = [options[i] for i in order]
    before, after = select_option(answer, options), select_option(answer, reordered)
    assert before.reason == after.reason
    if before.selected is not None:
        assert after.selected is not None
        assert options[LETTERS.index(before.selected)] == reordered[LETTERS.index(after.selected)]


@settings(max_examples=200, deadline=None)
@given(answer=st.sampled_from(LETTERS), seed=st.integers(min_value=0, max_value=2**63 - 1))
def test_a_screen_that_picks_the_true_value_is_right_under_every_order(answer, seed):
    options = ["1.0", "2.0", "3.0", "4.0"]
    permutation = permutation_from_seed(seed)
    shown = present(options, permutation)
    # The screen reads the displayed options and names the letter showing the true value.
    reply = LETTERS[shown.index(options[LETTERS.index(answer)])]
    assert grade_call(reply, permutation, answer, seed=seed).correct


def test_all_24_orders_grade_the_same_value():
    # Exhaustive check alongside the property test: each order, each way of naming the value.
    for order in itertools.permutations(range(4)):
        reordered = [OPTIONS[i] for i in order]
        for text, value in [("0.060723", "0.060723"), ("6.07231e-2", "0.060723"), ("0.0589958", "0.058996")]:
            reading = select_option(text, reordered)
            assert reading.selected is not None
            assert reordered[LETTERS.index(reading.selected)] == value
