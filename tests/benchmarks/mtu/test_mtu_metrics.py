"""MTU-Bench metrics: hand-derived values from the reference rules, the strict variant, properties."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolgauge.benchmarks.mtu.metrics import (
    TURN_METRICS,
    MtuScore,
    TurnOutcome,
    collapse_calls,
    dialogue_metrics,
    dialogue_results,
    judge_mtu_item,
    judge_turn,
    normalize_value,
    order_accuracy,
    reference_tool_number,
    reference_values_match,
    score_dialogue_turns,
    score_mtu,
    soft_turn_scores,
    strict_tool_number_and_order,
    strict_values_match,
    tally_metrics,
    task_process_rate,
)
from toolgauge.benchmarks.mtu.records import MtuItem, MtuSplit
from toolgauge.records import ToolCall
from toolgauge.results import EvalResults, Metric


def item(item_id: str, split: MtuSplit, answer: dict[str, dict[str, Any]]) -> MtuItem:
    return MtuItem(id=item_id, split=split, question="q", answer=answer, line=1, path="mem")


def call(name: str, **arguments: Any) -> ToolCall:
    return ToolCall(name=name, arguments=arguments)


def typed(score: MtuScore) -> EvalResults:
    """The score as the typed results a run reports."""
    return EvalResults(benchmark="mtu-bench", metrics=score.metrics())


# --- value normalisation and matching -------------------------------------------------------


def test_normalize_value_sequential_replaces() -> None:
    assert normalize_value("10") == "onezero"  # "0" is replaced before "10" can be
    assert normalize_value("my house") == "house"
    assert normalize_value("economy seats") == "econoseats"  # "my " inside a word goes too
    assert normalize_value("findprovider.name") == "bookappointment.name"
    assert normalize_value("today") == "monday"
    # Dates are spelled out digit by digit before the date table runs, so they never become weekdays.
    assert normalize_value("2024-01-05") == "twozerotwofour-zeroone-zerofive"


def test_reference_values_match_is_a_directed_substring_test() -> None:
    assert reference_values_match({"city": "new york"}, {"city": "new york city"})
    assert not reference_values_match({"city": "new york city"}, {"city": "new york"})
    assert reference_values_match({"n": "2"}, {"n": "2"})
    assert reference_values_match({"when": "today"}, {"when": "monday"})


def test_reference_values_match_size_keys_and_hotel() -> None:
    assert not reference_values_match({"a": "x"}, {"a": "x", "b": "y"})
    assert not reference_values_match({"a": "x"}, {"b": "x"})
    # "hotel" values are dropped from both sides before the size check.
    assert reference_values_match({"a": "x", "kind": "hotel"}, {"a": "x"})
    assert reference_values_match({"a": "x"}, {"a": "x", "type": "hotel"})


def test_strict_values_match_needs_equality() -> None:
    assert strict_values_match({"city": "paris"}, {"city": "paris"})
    assert not strict_values_match({"city": "new york"}, {"city": "new york city"})
    assert strict_values_match({"n": "2", "t": "hotel"}, {"n": "2"})
    assert strict_values_match({"when": "today"}, {"when": "monday"})


# --- tool number and order ------------------------------------------------------------------


def test_reference_tool_number_hand_example() -> None:
    gold = {"A": {"x": "1"}, "B": {"y": "2"}, "C": {}}
    pred = {"A": {"x": "1"}, "B": {"y": "3"}, "D": {}}
    number, labels = reference_tool_number(pred, gold)
    # labels walk the gold: A right, B wrong, C absent, D never added -> |{A}| / |{A,B,C,Bwrong}|
    assert labels == ["A", "Bwrong"]
    assert number == pytest.approx(1 / 4)
    # P=[A, Bwrong] against G=[A, B, C]: longest block [A] at i=0 -> cos(0) * 1/3
    assert order_accuracy(labels, list(gold)) == pytest.approx(1 / 3)


def test_reference_tool_number_empty_cases_and_stripped_keys() -> None:
    assert reference_tool_number({}, {}) == (1.0, [])
    assert reference_tool_number({"A": {}}, {}) == (0.0, ["A"])
    assert reference_tool_number({}, {"A": {}}) == (0.0, [])
    assert reference_tool_number({"A ": {}}, {" A": {}}) == (1.0, ["A"])


def test_reference_tool_number_compares_prediction_inside_gold() -> None:
    assert reference_tool_number({"A": {"c": "new york"}}, {"A": {"c": "new york city"}})[0] == 1.0
    assert reference_tool_number({"A": {"c": "new york city"}}, {"A": {"c": "new york"}}) == (0.0, ["Awrong"])


def test_order_accuracy_hand_examples() -> None:
    assert order_accuracy(["A", "B"], ["A", "B"]) == 1.0
    assert order_accuracy([], ["A"]) == 0.0
    assert order_accuracy(["B", "C"], ["A", "B", "C"]) == pytest.approx(2 / 3)
    # Block [B, C] starts at i=1 of a 3-long prediction: cos(pi/6) * 2/3.
    assert order_accuracy(["X", "B", "C"], ["A", "B", "C"]) == pytest.approx(math.cos(math.pi / 6) * 2 / 3)
    # Reversed: ties go to the earliest gold index, G[0]=A found at i=2: cos(pi/3) * 1/3.
    assert order_accuracy(["C", "B", "A"], ["A", "B", "C"]) == pytest.approx(1 / 6)
    assert order_accuracy(["X"], ["A"]) == 0.0


def test_reference_ignores_prediction_order_and_extra_tools() -> None:
    mm = item("M-M_0_0", "M-M", {"A": {"x": "1"}, "B": {}, "C": {}})
    verdict = judge_mtu_item(mm, [call("C"), call("X"), call("B"), call("A", x="1")], "reference")
    assert (verdict.tool_number_accuracy, verdict.tool_order_accuracy, verdict.turn_correct) == (1.0, 1.0, True)


def test_strict_counts_extra_calls_and_uses_prediction_order() -> None:
    gold = [call("A", x="1"), call("B"), call("C")]
    number, order, correct = strict_tool_number_and_order([call("C"), call("B"), call("A", x="1")], gold)
    assert (number, correct) == (1.0, 3)
    assert order == pytest.approx(1 / 6)
    number, order, correct = strict_tool_number_and_order([*gold, call("X")], gold)
    assert number == pytest.approx(3 / 4) and order == pytest.approx(1.0) and correct == 3


def test_repeated_calls_collapse_in_reference_but_count_in_strict() -> None:
    mm = item("M-M_0_0", "M-M", {"A": {"x": "2"}})
    repeated = [call("A", x="1"), call("A", x="2")]
    assert collapse_calls(repeated) == {"A": {"x": "2"}}
    assert judge_mtu_item(mm, repeated, "reference").turn_correct
    strict = judge_mtu_item(mm, repeated, "strict")
    assert strict.tool_number_accuracy == pytest.approx(1 / 2)
    assert not strict.turn_correct and strict.error_type == "extra_call"


def test_collapse_keeps_first_position_last_arguments() -> None:
    assert list(collapse_calls([call("A", x=1), call("B"), call("A", x=2)]).items()) == [("A", {"x": 2}), ("B", {})]


# --- single-call items ----------------------------------------------------------------------


def test_single_call_reference_direction_is_gold_inside_prediction() -> None:
    ss = item("S-S_0", "S-S", {"Find": {"city": "New York"}})
    longer = judge_mtu_item(ss, [call("Find", city="New York City")], "reference")
    assert longer.tool_correct and longer.parameters_correct and longer.turn_correct
    shorter = judge_mtu_item(ss, [call("Find", city="New")], "reference")
    assert shorter.tool_correct and not shorter.parameters_correct and shorter.error_type == "wrong_parameters"
    assert not judge_mtu_item(ss, [call("Find", city="New York City")], "strict").parameters_correct


def test_single_call_lowercases_str_of_values() -> None:
    ss = item("S-S_0", "S-S", {"Find": {"wifi": "True", "n": 2}})
    assert judge_mtu_item(ss, [call("Find", wifi=True, n="2")], "reference").parameters_correct
    assert judge_mtu_item(ss, [call("Find", wifi=True, n="2")], "strict").parameters_correct


def test_single_call_names_compared_raw_in_reference() -> None:
    ss = item("S-S_0", "S-S", {" Find": {}})
    assert not judge_mtu_item(ss, [call("Find")], "reference").tool_correct
    assert judge_mtu_item(ss, [call("Find")], "strict").tool_correct


def test_no_call_turns() -> None:
    ms = item("M-S_0_0", "M-S", {"": {}})
    assert judge_mtu_item(ms, [], "reference").turn_correct
    assert judge_mtu_item(ms, [], "strict").turn_correct
    wrong = judge_mtu_item(ms, [call("Find")], "reference")
    assert not wrong.tool_correct and wrong.error_type == "unexpected_call"
    # An undecodable call counts as no call in the reference single-call rules.
    broken = ToolCall(name="Find", parse_error="bad json")
    assert judge_mtu_item(ms, [broken], "reference").turn_correct
    assert judge_mtu_item(ms, [broken], "strict").error_type == "unexpected_call"
    # An empty-name call with arguments: tool "right", parameters wrong (as the reference has it).
    odd = judge_mtu_item(ms, [ToolCall(name="", arguments={"x": 1})], "reference")
    assert odd.tool_correct and not odd.parameters_correct


def test_single_call_error_types() -> None:
    ss = item("S-S_0", "S-S", {"Find": {"city": "paris"}})
    assert judge_mtu_item(ss, [], "reference").error_type == "no_call"
    assert judge_mtu_item(ss, [call("Other", city="paris")], "reference").error_type == "wrong_tool"
    assert judge_mtu_item(ss, [ToolCall(name="Find", parse_error="x")], "reference").error_type == "unparsable"
    two = [call("Find", city="paris"), call("Find", city="rome")]
    assert judge_mtu_item(ss, two, "reference").turn_correct  # the reference reads the first call only
    assert judge_mtu_item(ss, two, "strict").error_type == "extra_call"
    assert judge_mtu_item(ss, [call("Find", city="paris")], "strict").error_type is None


def test_multi_call_error_types() -> None:
    sm = item("S-M_0", "S-M", {"A": {"x": "1"}, "B": {"y": "2"}})
    good = [call("A", x="1"), call("B", y="2")]
    assert judge_mtu_item(sm, good, "strict").error_type is None
    assert judge_mtu_item(sm, [], "strict").error_type == "no_call"
    assert judge_mtu_item(sm, [call("Z")], "strict").error_type == "wrong_tool"
    assert judge_mtu_item(sm, [call("A", x="1")], "strict").error_type == "missing_call"
    assert judge_mtu_item(sm, [call("A", x="9"), call("B", y="2")], "strict").error_type == "wrong_parameters"
    assert judge_mtu_item(sm, [*good, call("C")], "strict").error_type == "extra_call"
    assert judge_mtu_item(sm, good[::-1], "strict").error_type == "wrong_order"
    assert judge_mtu_item(sm, [ToolCall(name="A", parse_error="x"), good[1]], "strict").error_type == "unparsable"
    mm = item("M-M_0_0", "M-M", {})
    assert judge_mtu_item(mm, [call("None")], "reference").error_type == "unexpected_call"


def test_ood_picks_rules_by_gold_size() -> None:
    single = item("OOD_0_0", "OOD", {"get": {"q": "snake"}})
    no_call_single = item("OOD_2_0", "OOD", {"": {}})
    multi = item("OOD_4_0", "OOD", {"a": {}, "b": {}})
    empty = item("OOD_5_0", "OOD", {})
    assert [i.multi_call for i in (single, no_call_single, multi, empty)] == [False, False, True, True]
    score = score_mtu(
        [single, no_call_single, multi, empty],
        [[call("get", q="snake")], [], [call("a"), call("b")], [call("a")]],
    )
    results = typed(score)
    ood = {m.name: m for m in results.metrics if m.group == "OOD"}
    assert all(m.by == "split" for m in ood.values())
    assert ood["n"].value == 4 and ood["n_single_tool"].value == 2 and ood["n_multi_tool"].value == 2
    assert {ood[k].kind for k in ("n", "n_single_tool", "n_multi_tool")} == {"count"}
    assert ood["tool_accuracy"].value == 1.0 and ood["parameter_accuracy"].value == 1.0
    assert ood["tool_number_accuracy"].value == pytest.approx(0.5)
    assert ood["tool_order_accuracy"].value == pytest.approx(0.5)
    # Each rate is over the items its rules apply to.
    assert {name: ood[name].n for name in TURN_METRICS} == {
        "tool_accuracy": 2, "parameter_accuracy": 2, "tool_number_accuracy": 2, "tool_order_accuracy": 2
    }  # fmt: skip
    assert score.splits["OOD"]["n"] == 4


# --- dialogue metrics -----------------------------------------------------------------------


def test_soft_turn_scores_and_tpr_hand_example() -> None:
    results = [True, False, True, True]
    assert soft_turn_scores(results) == pytest.approx([1, 0, 1 - math.exp(-1), 1 - math.exp(-2)])
    assert soft_turn_scores([False, True, False, True]) == pytest.approx([0, 1 - math.exp(-1), 0, 1 - math.exp(-1)])
    assert task_process_rate(results) == 0.25
    assert task_process_rate([True, True]) == 1.0
    metrics = dialogue_metrics([results, [True, True]])
    assert metrics["success_rate"] == 0.5
    assert metrics["turn_success_rate"] == pytest.approx((3 / 4 + 1) / 2)
    sats = (1 + 0 + (1 - math.exp(-1)) + (1 - math.exp(-2))) / 4
    assert metrics["soft_turn_success_rate"] == pytest.approx((sats + 1) / 2)
    assert metrics["task_process_rate"] == pytest.approx((0.25 + 1) / 2)
    assert metrics["n_dialogues"] == 2


def test_dialogue_results_overwrite_and_gaps() -> None:
    grouped = dialogue_results([("d1", 1, False), ("d2", 0, True), ("d1", 0, True), ("d1", 1, True), ("d3", 2, False)])
    # d1 turn 1 overwritten by the later entry; d3 has gaps at 0 and 1, which are left out.
    assert grouped == [[True, True], [True], [False]]


def test_ms_correct_flag_is_reset_per_turn() -> None:
    items = [item("M-S_0_0", "M-S", {"A": {"x": "1"}}), item("M-S_0_1", "M-S", {"B": {}})]
    score = score_mtu(items, [[call("A", x="1")], [call("C")]])
    assert [v.turn_correct for v in score.verdicts] == [True, False]
    results = typed(score)
    assert results.value("success_rate", "M-S", "split") == 0.0
    assert results.value("task_process_rate", "M-S", "split") == 0.5


def test_mm_duplicate_ids_overwrite_turn_but_count_in_means() -> None:
    items = [
        item("M-M_19_0", "M-M", {"A": {}}),
        item("M-M_19_1", "M-M", {"B": {}}),
        item("M-M_19_0", "M-M", {"C": {}}),
    ]
    score = score_mtu(items, [[call("A")], [call("B")], [call("X")]])
    results = typed(score)

    def mm(name: str) -> float | int | None:
        return results.value(name, "M-M", "split")

    assert mm("n") == 3 and mm("n_dialogues") == 1
    assert mm("tool_number_accuracy") == pytest.approx(2 / 3)
    # The dialogue is [wrong (later item at turn 0), right].
    assert mm("success_rate") == 0.0 and mm("turn_success_rate") == 0.5
    assert mm("soft_turn_success_rate") == pytest.approx((0 + 1 - math.exp(-1)) / 2)
    assert mm("task_process_rate") == 0.0
    number, success = results.metric("tool_number_accuracy", "M-M"), results.metric("success_rate", "M-M")
    assert number is not None and number.n == 3 and success is not None and success.n == 1


def test_score_mtu_keys_per_split_and_length_check() -> None:
    items = [
        item("S-S_0", "S-S", {"A": {}}),
        item("S-M_0", "S-M", {"A": {}, "B": {}}),
        item("M-S_0_0", "M-S", {"A": {}}),
        item("M-M_0_0", "M-M", {"A": {}}),
    ]
    score = score_mtu(items, [[call("A")], [call("A"), call("B")], [call("A")], [call("A")]])
    assert set(score.splits["S-S"]) == {"n", "tool_accuracy", "parameter_accuracy"}
    assert set(score.splits["S-M"]) == {"n", "tool_number_accuracy", "tool_order_accuracy"}
    dialogue_keys = {"success_rate", "turn_success_rate", "soft_turn_success_rate", "task_process_rate", "n_dialogues"}
    assert set(score.splits["M-S"]) == {"n", "tool_accuracy", "parameter_accuracy"} | dialogue_keys
    assert set(score.splits["M-M"]) == {"n", "tool_number_accuracy", "tool_order_accuracy"} | dialogue_keys
    assert all(value == 1 for split in score.splits.values() for key, value in split.items() if key[0] != "n")
    assert [v.id for v in score.verdicts] == [i.id for i in items]
    with pytest.raises(ValueError):
        score_mtu(items, [[]])
    # The typed form: every number of every split, rates over their items (dialogue rates over dialogues).
    results = typed(score)
    assert results.groups("split") == ["S-S", "S-M", "M-S", "M-M"]
    for split, row in score.splits.items():
        typed_row = {m.name: m for m in results.metrics if m.by == "split" and m.group == split}
        assert {name: m.value for name, m in typed_row.items()} == row
        assert all(m.kind == ("count" if name[0] == "n" else "rate") for name, m in typed_row.items())
        assert all(
            m.n == (row["n_dialogues"] if "rate" in name else row["n"])
            for name, m in typed_row.items()
            if m.kind == "rate"
        )
    assert all(m.kind == "count" or m.value == 1 for m in results.metrics)


def test_overall_pools_items_and_dialogues_in_any_split_order() -> None:
    items = [
        item("S-S_0", "S-S", {"A": {"x": "1"}}),
        item("S-S_1", "S-S", {"A": {"x": "1"}}),
        item("S-M_0", "S-M", {"A": {}, "B": {}}),
        item("M-S_0_0", "M-S", {"A": {}}),
        item("M-S_0_1", "M-S", {"B": {}}),
        item("M-M_0_0", "M-M", {"A": {}, "B": {}}),
        item("OOD_0_0", "OOD", {"A": {}}),
    ]
    predicted = [[call("A", x="1")], [call("B")], [call("B"), call("A")], [call("A")], [call("C")], [], [call("A")]]
    score = score_mtu(items, predicted)
    overall = score.overall
    # Single-call rules: S-S (2), M-S (2) and OOD's one-tool item (1); multi-call: S-M, M-M.
    assert overall["n"] == 7 and overall["n_single_tool"] == 5 and overall["n_multi_tool"] == 2
    assert overall["tool_accuracy"] == pytest.approx(3 / 5) and overall["parameter_accuracy"] == pytest.approx(3 / 5)
    tn = [v.tool_number_accuracy for v in score.verdicts if v.tool_number_accuracy is not None]
    assert overall["tool_number_accuracy"] == pytest.approx(sum(tn) / 2)
    # Dialogues M-S_0 ([right, wrong]) and M-M_0 ([wrong]) are not merged although both are dialogue 0.
    assert overall["n_dialogues"] == 2 and overall["success_rate"] == 0.0
    assert overall["turn_success_rate"] == pytest.approx((0.5 + 0) / 2)
    assert overall["task_process_rate"] == pytest.approx((0.5 + 0) / 2)
    results = typed(score)
    assert {m.name: m.value for m in results.overall()} == overall
    assert [m.group for m in results.metrics if m.group is None] == [None] * len(overall)
    tool = results.metric("tool_accuracy")
    assert tool is not None and tool.n == 5
    # The overall sums run split by split in MTU-Bench order: asking the splits in another order changes nothing.
    order = [6, 3, 4, 0, 1, 5, 2]
    shuffled = score_mtu([items[i] for i in order], [predicted[i] for i in order])
    assert shuffled.overall == overall and shuffled.splits == score.splits
    # One split: the overall metrics are that split's.
    only = score_mtu(items[:2], predicted[:2])
    assert {k: v for k, v in only.overall.items() if k in only.splits["S-S"]} == only.splits["S-S"]


def test_tally_metrics_counts_and_units() -> None:
    summary: dict[str, float | int] = {"tool_accuracy": 0.5, "success_rate": 1.0, "n_turns": 4, "n_dialogues": 2}
    assert tally_metrics(summary) == [
        Metric(name="tool_accuracy", value=0.5, n=4),
        Metric(name="success_rate", value=1.0, n=2),
    ]
    assert tally_metrics(summary, group="g", by="split", counts=True)[2:] == [
        Metric(name="n_turns", value=4, group="g", by="split", kind="count"),
        Metric(name="n_dialogues", value=2, group="g", by="split", kind="count"),
    ]


# --- toolgauge's own dialogues --------------------------------------------------------------


def test_score_dialogue_turns_hand_example() -> None:
    turns = [
        TurnOutcome(dialogue_id="d1", turn=0, expected=[call("A", x=1)], predicted=[call("A", x=1)]),
        TurnOutcome(dialogue_id="d1", turn=1, expected=[call("B"), call("C")], predicted=[call("C"), call("B")]),
        TurnOutcome(dialogue_id="d2", turn=0, expected=[], predicted=[]),
        TurnOutcome(dialogue_id="d2", turn=1, expected=[call("A", x=1)], predicted=[call("A", x=2)]),
    ]
    verdict = judge_turn(turns[1])
    assert verdict.tool_correct and verdict.parameters_correct and not verdict.turn_correct
    assert verdict.error_type == "wrong_order"
    result = score_dialogue_turns(turns)
    assert result["n_turns"] == 4 and result["n_dialogues"] == 2
    assert result["tool_accuracy"] == 1.0
    assert result["parameter_accuracy"] == 0.75
    # TO of turn 1: P=[gold#1, gold#0] vs G=[gold#0, gold#1]: block of 1 at i=1 -> cos(pi/4)/2.
    assert result["tool_order_accuracy"] == pytest.approx((1 + math.cos(math.pi / 4) / 2 + 1 + 0) / 4)
    assert result["tool_number_accuracy"] == pytest.approx((1 + 1 + 1 + 0) / 4)
    assert result["success_rate"] == 0.0
    assert result["turn_success_rate"] == 0.5
    assert result["task_process_rate"] == 0.5
    assert result["soft_turn_success_rate"] == pytest.approx(0.5)


def test_score_dialogue_turns_reference_variant_and_empty() -> None:
    turns = [TurnOutcome(dialogue_id="d", turn=0, expected=[call("B"), call("C")], predicted=[call("C"), call("B")])]
    assert score_dialogue_turns(turns, "reference")["success_rate"] == 1.0
    assert score_dialogue_turns([]) == {"n_turns": 0, "n_dialogues": 0}


# --- properties -----------------------------------------------------------------------------

_names = st.sampled_from(["A", "B", "C", "D", " A"])
_values = st.dictionaries(st.sampled_from(["x", "y"]), st.sampled_from(["1", "2", "hotel", "new york"]), max_size=2)
_call_lists = st.lists(st.builds(ToolCall, name=_names, arguments=_values), max_size=5)


@settings(max_examples=300, deadline=None)
@given(_call_lists, _call_lists)
def test_tool_number_and_order_are_fractions(predicted: list[ToolCall], gold: list[ToolCall]) -> None:
    number, labels = reference_tool_number(collapse_calls(predicted), collapse_calls(gold))
    assert 0 <= number <= 1
    assert 0 <= order_accuracy(labels, list(collapse_calls(gold))) <= 1 + 1e-12
    strict_number, strict_order, _ = strict_tool_number_and_order(predicted, gold)
    assert 0 <= strict_number <= 1 and 0 <= strict_order <= 1 + 1e-12


@settings(max_examples=300, deadline=None)
@given(_call_lists)
def test_perfect_predictions_score_one(gold: list[ToolCall]) -> None:
    unique = list({c.name.strip(): c for c in gold}.values())
    mm = item("M-M_0_0", "M-M", {c.name: c.arguments for c in unique})
    for variant in ("reference", "strict"):
        verdict = judge_mtu_item(mm, mm.gold_calls(), variant)
        assert verdict.turn_correct, (variant, verdict)
    assert judge_turn(TurnOutcome(dialogue_id="d", turn=0, expected=gold, predicted=gold)).turn_correct


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.booleans(), min_size=1, max_size=8), min_size=1, max_size=6))
def test_sats_never_exceeds_ats_and_tpr(dialogues: list[list[bool]]) -> None:
    metrics = dialogue_metrics(dialogues)
    assert 0 <= metrics["success_rate"] <= metrics["task_process_rate"] + 1e-12
    assert metrics["task_process_rate"] <= metrics["turn_success_rate"] + 1e-12
    assert metrics["soft_turn_success_rate"] <= metrics["turn_success_rate"] + 1e-12
    for results in dialogues:
        assert all(0 <= s <= 1 for s in soft_turn_scores(results))
