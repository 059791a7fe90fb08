"""WildToolBench argument checker: every branch of the official ToolArgsChecker rules.

Expected strings are the official constants; numeric scores in them are derived by hand from the rules
(difflib ratio = 2*matches/total length; ROUGE-L F from the LCS of whitespace tokens, P = LCS/len(pred),
R = LCS/len(gold), F = 2PR/(P+R)), as the comments show.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from toolgauge.benchmarks.wildtoolbench.args import (
    CORRECT,
    ERROR_ARGS_JSON_DECODE,
    ERROR_CALL_COUNT,
    ERROR_TOOL_UNDEFINED,
    MATCH_ERROR_ROUGE_FAIL,
    SCHEMA_ERROR_MISSING,
    SCHEMA_ERROR_NESTED_ENUM,
    SCHEMA_ERROR_NESTED_MISSING,
    SCHEMA_ERROR_NESTED_TYPE,
    SCHEMA_ERROR_NESTED_UNDEFINED,
    SCHEMA_ERROR_TYPE,
    SCHEMA_ERROR_UNDEFINED,
    check_call,
    check_step,
    is_schema_error,
)
from toolgauge.benchmarks.wildtoolbench.log import WildAnswerAction, WildToolCall

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "text": {"type": "string"},
        "untyped": {"description": "no type: the official checker requires a string"},
        "count": {"type": "integer"},
        "amount": {"type": "number"},
        "ratio": {"type": "float"},
        "flag": {"type": "boolean"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        "either": {"anyOf": [{"type": "string", "enum": ["a", "b"]}, {"type": "integer"}]},
        "tags": {"type": "array", "items": {"type": "string"}},
        "place": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "zip": {"type": "integer"}},
            "required": ["city"],
        },
        "extra": {"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": True},
        "blob": {"type": "object", "additionalProperties": True},
    },
    "required": ["text"],
    "additionalProperties": True,  # ignored at the top level by the official checker
}
TOOLS = [{"type": "function", "function": {"name": "f", "description": "", "parameters": PARAMETERS}}]


def check(predicted: dict[str, Any] | str, gold: dict[str, Any] | str) -> str:
    as_text = [
        value if isinstance(value, str) else json.dumps(value, ensure_ascii=False) for value in (predicted, gold)
    ]
    return check_call(TOOLS, "f", as_text[0], as_text[1])


# ---- schema check -------------------------------------------------------------------------------


def test_identical_arguments_are_correct() -> None:
    args = {"text": "hello", "count": 2, "place": {"city": "Paris"}}
    assert check(args, args) == CORRECT


def test_invalid_json_in_prediction_or_gold() -> None:
    assert check('{"text": ', {"text": "x"}) == ERROR_ARGS_JSON_DECODE
    assert check({"text": "x"}, "{oops") == ERROR_ARGS_JSON_DECODE


def test_arguments_that_are_not_an_object_are_a_top_level_type_error() -> None:
    assert check("[1, 2]", {"text": "x"}) == SCHEMA_ERROR_TYPE


def test_missing_required_and_undefined_key_at_top_level() -> None:
    assert check({"count": 1}, {"text": "x"}) == SCHEMA_ERROR_MISSING
    # top-level additionalProperties: true is dropped when the official checker builds the top schema
    assert check({"text": "x", "bogus": 1}, {"text": "x"}) == SCHEMA_ERROR_UNDEFINED


def test_a_wrongly_typed_top_level_argument_reports_the_nested_string() -> None:
    # the official recursion enters each argument with a non-empty path, so this is already "nested"
    assert check({"text": 5}, {"text": "5"}) == SCHEMA_ERROR_NESTED_TYPE


def test_no_type_means_string() -> None:
    assert check({"text": "x", "untyped": 3}, {"text": "x", "untyped": 3}) == SCHEMA_ERROR_NESTED_TYPE
    assert check({"text": "x", "untyped": "3"}, {"text": "x", "untyped": "3"}) == CORRECT


def test_float_type_accepts_only_floats_and_number_accepts_both() -> None:
    # "float": [float] in JSON_TO_PYTHON_TYPES, "number": [int, float]
    assert check({"text": "x", "ratio": 2}, {"text": "x", "ratio": 2}) == SCHEMA_ERROR_NESTED_TYPE
    assert check({"text": "x", "ratio": 2.0}, {"text": "x", "ratio": 2.0}) == CORRECT
    assert check({"text": "x", "amount": 2}, {"text": "x", "amount": 2}) == CORRECT


def test_number_types_must_be_equal_for_matching_so_500_0_is_not_500() -> None:
    assert check({"text": "x", "amount": 500.0}, {"text": "x", "amount": 500}) == (
        "error_match: value type inconsistent at 'amount'"
    )


def test_bool_passes_integer_schema_but_not_matching() -> None:
    # isinstance(True, int) is True, so the schema check passes; type(True) is not type(1) at matching
    assert check({"text": "x", "count": True}, {"text": "x", "count": 1}) == (
        "error_match: value type inconsistent at 'count'"
    )
    assert check({"text": "x", "flag": 1}, {"text": "x", "flag": True}) == SCHEMA_ERROR_NESTED_TYPE


def test_enum() -> None:
    assert check({"text": "x", "unit": "kelvin"}, {"text": "x", "unit": "celsius"}) == SCHEMA_ERROR_NESTED_ENUM


def test_any_of_passes_on_one_branch_and_reports_the_first_branch_error() -> None:
    assert check({"text": "x", "either": 7}, {"text": "x", "either": 7}) == CORRECT
    assert check({"text": "x", "either": "a"}, {"text": "x", "either": "a"}) == CORRECT
    # "c": first branch fails on enum, second on type -> the first branch's error
    assert check({"text": "x", "either": "c"}, {"text": "x", "either": "a"}) == SCHEMA_ERROR_NESTED_ENUM


def test_nested_object_rules() -> None:
    assert check({"text": "x", "place": {"zip": 1}}, {"text": "x"}) == SCHEMA_ERROR_NESTED_MISSING
    assert check({"text": "x", "place": {"city": "a", "street": "b"}}, {"text": "x"}) == SCHEMA_ERROR_NESTED_UNDEFINED
    assert check({"text": "x", "place": {"city": "a", "zip": "1"}}, {"text": "x"}) == SCHEMA_ERROR_NESTED_TYPE


def test_nested_additional_properties_true_is_honoured() -> None:
    args = {"text": "x", "extra": {"a": 1, "anything": [1, 2]}}
    assert check(args, args) == CORRECT


def test_array_items_are_checked() -> None:
    assert check({"text": "x", "tags": ["a", 2]}, {"text": "x", "tags": ["a", "2"]}) == SCHEMA_ERROR_NESTED_TYPE


def test_tool_not_offered_is_toolgauges_own_result() -> None:
    assert check_call(TOOLS, "nope", "{}", "{}") == ERROR_TOOL_UNDEFINED


def test_schema_error_predicate() -> None:
    assert is_schema_error(SCHEMA_ERROR_NESTED_TYPE) and is_schema_error(ERROR_ARGS_JSON_DECODE)
    assert not is_schema_error("error_match: value mismatch at 'count'")


# ---- value matching -----------------------------------------------------------------------------


def test_omitted_or_added_optional_key_fails() -> None:
    assert (
        check({"text": "x"}, {"text": "x", "unit": "celsius"}) == "error_match: args keys mismatch (missing: ['unit'])"
    )
    assert check({"text": "x", "unit": "celsius"}, {"text": "x"}) == "error_match: args keys mismatch (extra: ['unit'])"


def test_scalar_mismatch_names_the_path() -> None:
    assert check({"text": "x", "count": 3}, {"text": "x", "count": 4}) == "error_match: value mismatch at 'count'"
    got = check({"text": "x", "place": {"city": "a", "zip": 2}}, {"text": "x", "place": {"city": "a", "zip": 3}})
    assert got == "error_match: value mismatch at 'place.zip'"


def test_array_length_and_element_paths() -> None:
    assert check({"text": "x", "tags": ["a"]}, {"text": "x", "tags": ["a", "b"]}) == (
        "error_match: array length mismatch at 'tags'"
    )
    # "c" vs "b": short gold, difflib ratio 2*0/2 = 0.00
    assert check({"text": "x", "tags": ["a", "c"]}, {"text": "x", "tags": ["a", "b"]}) == (
        "error_match: string similarity too low at 'tags[1]' (edit score: 0.00)"
    )


def test_string_equal_after_removing_whitespace_and_lowercasing() -> None:
    assert check({"text": "New  york"}, {"text": "newyork"}) == CORRECT


def test_short_gold_string_fails_on_difflib_ratio() -> None:
    # gold "New York" (8 chars < 10); "New York City" shares the 8-char block: 2*8/(13+8) = 0.76 < 0.8
    assert check({"text": "New York City"}, {"text": "New York"}) == (
        "error_match: string similarity too low at 'text' (edit score: 0.76)"
    )


def test_short_gold_string_passing_difflib_still_needs_rouge() -> None:
    # "Bejing" vs "Beijing": difflib 2*6/13 = 0.92 >= 0.8, but ROUGE-L over one token each: LCS 0 -> F 0.00
    assert check({"text": "Bejing"}, {"text": "Beijing"}) == (
        "error_match: string similarity too low at 'text' (rouge score: 0.00)"
    )
    # "ACME Inc." vs "ACME Inc": difflib 2*8/17 = 0.94; rouge splits sentences on "." -> same tokens, F 1.0
    assert check({"text": "ACME Inc."}, {"text": "ACME Inc"}) == CORRECT


def test_long_string_rouge_l_threshold() -> None:
    # LCS(the quick brown fox jumped over it / the quick brown fox jumps over) = 5: P 5/7, R 5/6, F 50/65 = 0.77
    assert check({"text": "the quick brown fox jumped over it"}, {"text": "the quick brown fox jumps over"}) == CORRECT
    # LCS = 1 ("a"): P 1/5, R 1/6, F 2/11 = 0.18
    assert check({"text": "reserve seats at a restaurant"}, {"text": "book a table for two people"}) == (
        "error_match: string similarity too low at 'text' (rouge score: 0.18)"
    )


def test_rouge_is_case_sensitive() -> None:
    # whitespace-free lowercase forms differ ("leaps" vs "jumps"); no token matches with its case: F 0.00
    assert check({"text": "quick brown fox leaps"}, {"text": "Quick Brown Fox Jumps"}) == (
        "error_match: string similarity too low at 'text' (rouge score: 0.00)"
    )


def test_cjk_strings_are_tokenised_with_jieba() -> None:
    # jieba: 上海浦东新区/的/天气 vs 上海浦东新区/天气: LCS 2, P 1, R 2/3 -> F 0.80 >= 0.7
    assert check({"text": "上海浦东新区天气"}, {"text": "上海浦东新区的天气"}) == CORRECT
    # 北京市/的/天气 vs 北京/的/天气 (gold 5 chars: difflib 2*5/11 = 0.91 passes): LCS 2 of 3 -> F 0.67
    assert check({"text": "北京市的天气"}, {"text": "北京的天气"}) == (
        "error_match: string similarity too low at 'text' (rouge score: 0.67)"
    )


def test_rouge_exceptions_become_rouge_calculation_failed() -> None:
    # gold "?..." (short): difflib 2*3/7 = 0.86 passes; the rouge package finds no sentence in "..." and raises
    assert check({"text": "..."}, {"text": "?..."}) == f"{MATCH_ERROR_ROUGE_FAIL} at 'text'"
    # an empty prediction against a long gold: rouge raises on the empty hypothesis
    assert check({"text": ""}, {"text": "a long gold sentence"}) == f"{MATCH_ERROR_ROUGE_FAIL} at 'text'"


def test_a_crash_inside_matching_is_reported_as_the_official_comparison_failure() -> None:
    # "blob" has no "properties", so the official code looks sub-keys up in the schema itself: key "type"
    # finds the string "object", and the list branch then calls "object".get(...)
    args = {"text": "x", "blob": {"type": [1]}}
    assert check(args, args) == "error: comparison failed - 'str' object has no attribute 'get'"


# ---- several calls in one step --------------------------------------------------------------------


def call(arguments: str, name: str = "f") -> WildToolCall:
    return WildToolCall.model_validate(
        {"id": "c", "type": "function", "function": {"name": name, "arguments": arguments}}
    )


def gold(arguments: dict[str, Any], name: str = "f") -> WildAnswerAction:
    return WildAnswerAction(name=name, arguments=json.dumps(arguments, ensure_ascii=False))


def test_step_pairs_calls_sorted_by_name_and_argument_text() -> None:
    predicted = [call('{"text": "Paris"}'), call('{"text": "Berlin"}')]
    expected = [gold({"text": "Berlin"}), gold({"text": "Paris"})]
    assert check_step(TOOLS, predicted, expected) == [CORRECT, CORRECT]


def test_step_pairing_follows_the_argument_text_not_the_best_match() -> None:
    # predicted texts sort '{"text": "Paris"...' < '{"unit": ...', gold texts sort Berlin < Paris: Paris meets
    # Berlin. "Paris" vs "Berlin" (6 chars): difflib matches "r" then "i", 2*2/11 = 0.36
    predicted = [call('{"unit": "celsius", "text": "Berlin"}'), call('{"text": "Paris", "unit": "celsius"}')]
    expected = [gold({"text": "Paris", "unit": "celsius"}), gold({"text": "Berlin", "unit": "celsius"})]
    results = check_step(TOOLS, predicted, expected)
    assert results == ["error_match: string similarity too low at 'text' (edit score: 0.36)"] * 2


def test_step_with_a_missing_call_reports_the_count() -> None:
    # sorted gold starts with "a", which pairs with the one prediction; "b" is left over
    assert check_step(TOOLS, [call('{"text": "a"}')], [gold({"text": "b"}), gold({"text": "a"})]) == [
        CORRECT,
        ERROR_CALL_COUNT,
    ]


@pytest.mark.parametrize("value", [0, -3, 10**6])
def test_equal_integers_match(value: int) -> None:
    assert check({"text": "x", "count": value}, {"text": "x", "count": value}) == CORRECT
