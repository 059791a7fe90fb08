"""BFCL AST checker rules, each derived by hand from bfcl-eval 2026.3.23's ast_checker."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolgauge.benchmarks.bfcl.io import bfcl_tools
from toolgauge.benchmarks.bfcl.loader import BfclEntry, bfcl_language
from toolgauge.benchmarks.bfcl.metrics import (
    check_bfcl_entry,
    score_bfcl,
    standardize_string,
    unsatisfiable_reason,
)

DOC = {
    "name": "math.stats",
    "description": "",
    "parameters": {
        "type": "dict",
        "properties": {
            "number": {"type": "integer"},
            "ratio": {"type": "float"},
            "currency": {"type": "string"},
            "flag": {"type": "boolean"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "opts": {"type": "dict", "properties": {}},
            "rows": {"type": "array", "items": {"type": "dict"}},
            "var": {"type": "integer"},
            "unlisted": {"type": "string"},
        },
        "required": ["number"],
    },
}
ANSWER = {
    "math.stats": {
        "number": [5],
        "ratio": [0.5, ""],
        "currency": ["USD", ""],
        "flag": [True, ""],
        "tags": [["a", "b"], ""],
        "opts": [{"k": ["v"], "opt": ["", "x"]}, ""],
        "rows": [[{"x": [1]}], ""],
        "var": ["myVariable", ""],
    }
}


def entry(
    category: str = "simple_python",
    functions: list[dict[str, Any]] | None = None,
    truth: list[dict[str, Any]] | None = None,
) -> BfclEntry:
    return BfclEntry(
        id=f"{category}_0",
        category=category,
        question=[[{"role": "user", "content": "q"}]],
        functions=functions if functions is not None else [DOC],
        ground_truth=truth if truth is not None else [ANSWER],
        path="mem",
        line=1,
    )


def verdict(text_or_calls: Any, *, category: str = "simple_python", to_dot: bool = False, **kw: Any) -> Any:
    return check_bfcl_entry(entry(category, **kw), text_or_calls, underscore_to_dot=to_dot)


def error(text: str, **kw: Any) -> str | None:
    result = verdict(text, **kw)
    assert not result.valid
    return result.error_type


def test_exact_call_is_valid_and_decoded() -> None:
    result = verdict("[math.stats(number=5)]")
    assert result.valid and result.error_type is None
    assert result.decoded == [{"math.stats": {"number": 5}}]


def test_name_conversion() -> None:
    assert verdict("[math.stats(number=5)]", to_dot=False).valid
    assert verdict([{"math_stats": json.dumps({"number": 5})}], to_dot=True).valid
    assert error("[math_stats(number=5)]") == "simple_function_checker:wrong_func_name"
    assert verdict("[math.stats(number=5)]", to_dot=True).error_type == "simple_function_checker:wrong_func_name"


def test_required_and_unexpected_parameters() -> None:
    assert error("[math.stats(ratio=0.5)]") == "simple_function_checker:missing_required"
    assert error("[math.stats(number=5, colour='red')]") == "simple_function_checker:unexpected_param"
    # In the schema but not in the possible answer: rejected even though it is optional.
    assert error("[math.stats(number=5, unlisted='x')]") == "simple_function_checker:unexpected_param"


def test_types() -> None:
    assert verdict("[math.stats(number=5, ratio=1)]").error_type == "value_error:others"  # int->float, then 1.0
    assert verdict([{"math.stats": '{"number": 5, "ratio": 0}'}]).error_type == "value_error:others"
    assert error("[math.stats(number=5.0)]") == "type_error:simple"  # no float->int
    assert error("[math.stats(number=True)]") == "type_error:simple"  # bool is not int
    assert error("[math.stats(number=5, flag=1)]") == "type_error:simple"
    # A "" option is not a list, so BFCL's nested item check passes and the list comparison fails.
    assert error("[math.stats(number=5, tags=[1, 2])]") == "value_error:list/tuple"
    strict = [{"math.stats": {**ANSWER["math.stats"], "tags": [["a", "b"]]}}]
    assert error("[math.stats(number=5, tags=[1, 2])]", truth=strict) == "type_error:nested"
    assert error("[math.stats(number=5, currency=3)]") == "type_error:simple"


def test_int_accepted_for_float() -> None:
    doc = {**DOC, "parameters": {**DOC["parameters"], "required": []}}
    truth = [{"math.stats": {"number": [5, ""], "ratio": [2.0]}}]
    assert check_bfcl_entry(entry(functions=[doc], truth=truth), "[math.stats(ratio=2)]", underscore_to_dot=False).valid


def test_string_standardisation() -> None:
    assert verdict("[math.stats(number=5, currency='u.s.d')]").valid
    assert verdict("[math.stats(number=5, currency=' U S-D ')]").valid
    assert error("[math.stats(number=5, currency='dollars')]") == "value_error:string"


def test_lists_are_ordered_but_elements_standardised() -> None:
    assert verdict("[math.stats(number=5, tags=['A', 'b'])]").valid
    assert error("[math.stats(number=5, tags=['b', 'a'])]") == "value_error:list/tuple"
    assert verdict("[math.stats(number=5, tags=[])]").valid  # "" option standardises to []


def test_dicts_one_level() -> None:
    assert verdict("[math.stats(number=5, opts={'k': 'V'})]").valid  # optional key omitted
    assert verdict("[math.stats(number=5, opts={'k': 'v', 'opt': 'x'})]").valid
    assert error("[math.stats(number=5, opts={'k': 'v', 'z': 1})]") == "value_error:dict_key"
    assert error("[math.stats(number=5, opts={'k': 'w'})]") == "value_error:dict_value"
    assert error("[math.stats(number=5, opts={'opt': 'x'})]") == "value_error:dict_key"  # 'k' missing


def test_list_of_dicts() -> None:
    assert verdict("[math.stats(number=5, rows=[{'x': 1}])]").valid
    assert error("[math.stats(number=5, rows=[{'x': 1}, {'x': 1}])]") == "value_error:list_dict_count"
    # BFCL reports the failure of the *last* option tried: here the "" option (length 0).
    assert error("[math.stats(number=5, rows=[{'x': 2}])]") == "value_error:list_dict_count"
    strict = [{"math.stats": {**ANSWER["math.stats"], "rows": [[{"x": [1]}]]}}]
    assert error("[math.stats(number=5, rows=[{'x': 2}])]", truth=strict) == "value_error:dict_value"


def test_variable_answers_skip_normalisation() -> None:
    # The answer holds a string for an integer parameter: a variable name, compared exactly.
    assert verdict("[math.stats(number=5, var='myVariable')]").valid
    assert error("[math.stats(number=5, var='MYVARIABLE')]") == "value_error:others"


def test_other_values_and_missing_optional() -> None:
    assert error("[math.stats(number=6)]") == "value_error:others"
    truth = [{"math.stats": {"number": [5], "ratio": [0.5]}}]  # ratio may not be omitted
    assert (
        check_bfcl_entry(entry(truth=truth), "[math.stats(number=5)]", underscore_to_dot=False).error_type
        == "simple_function_checker:missing_optional"
    )


def test_counts_and_decoder_failures() -> None:
    assert error("[math.stats(number=5), math.stats(number=5)]") == "simple_function_checker:wrong_count"
    assert error("The answer is 120.") == "ast_decoder:decoder_failed"
    assert error("") == "simple_function_checker:wrong_count"
    assert verdict([{"math.stats": "[1]"}]).error_type == "ast_decoder:decoder_wrong_output_format"
    assert verdict([{"math.stats": "{bad json"}]).error_type == "ast_decoder:decoder_failed"


GET = {"name": "get", "parameters": {"type": "dict", "properties": {"city": {"type": "string"}}, "required": ["city"]}}
PUT = {"name": "put", "parameters": {"type": "dict", "properties": {"n": {"type": "integer"}}, "required": ["n"]}}


def test_multiple_checks_the_expected_function_only() -> None:
    multiple = {"category": "multiple", "functions": [GET, PUT], "truth": [{"put": {"n": [1]}}]}
    assert verdict("[put(n=1)]", **multiple).valid
    assert verdict("[get(city='x')]", **multiple).error_type == "simple_function_checker:wrong_func_name"
    assert verdict("[put(n=1), put(n=1)]", **multiple).error_type == "multiple_function_checker:wrong_count"


def test_parallel_any_order_greedy() -> None:
    parallel = {
        "category": "parallel",
        "functions": [GET],
        "truth": [{"get": {"city": ["Paris"]}}, {"get": {"city": ["Rome"]}}],
    }
    assert verdict("[get(city='rome'), get(city='PARIS')]", **parallel).valid
    assert verdict("[get(city='Rome')]", **parallel).error_type == "parallel_function_checker_no_order:wrong_count"
    assert (
        verdict("[get(city='Rome'), get(city='Rome')]", **parallel).error_type
        == "parallel_function_checker_no_order:cannot_find_match"
    )


def test_java_and_javascript_values_are_converted_strings() -> None:
    doc = {
        "name": "A.run",
        "parameters": {
            "type": "dict",
            "properties": {"n": {"type": "long"}, "names": {"type": "ArrayList", "items": {"type": "String"}}},
            "required": ["n"],
        },
    }
    truth = [{"A.run": {"n": [42], "names": [["x", "y"], ""]}}]
    java = {"category": "simple_java", "functions": [doc], "truth": truth}
    assert verdict('[A.run(n=42L, names=new ArrayList<>(Arrays.asList("x", "y")))]', **java).valid
    assert verdict("[A.run(n=42)]", **java).error_type == "type_error:simple"  # '42' stays a string for long
    assert verdict([{"A.run": '{"n": 42}'}], **java).error_type == "type_error:java"
    js_doc = {
        "name": "run",
        "parameters": {
            "type": "dict",
            "properties": {"v": {"type": "array", "items": {"type": "float"}}, "d": {"type": "dict"}},
            "required": ["v"],
        },
    }
    js = {
        "category": "simple_javascript",
        "functions": [js_doc],
        "truth": [{"run": {"v": [[1.5, 2.0]], "d": [{"k": ["v"]}, ""]}}],
    }
    assert verdict("[run(v=[1.5, 2.0], d={k: 'v'})]", **js).valid
    assert verdict([{"run": '{"v": [1.5, 2.0]}'}], **js).error_type == "type_error:js"


def test_relevance_rules_and_loophole_flag() -> None:
    irr = {"category": "irrelevance", "functions": [GET], "truth": []}
    refusal = verdict("Sorry, none of these functions fit.", **irr)
    assert refusal.valid and not refusal.unparsable
    broken = verdict('<tool_call>{"name": "get", "arguments": {"city": "x"}', **irr)
    assert broken.valid and broken.unparsable  # BFCL counts it as a correct abstention
    assert verdict("[get(city='x')]", **irr).error_type == "irrelevance_error:decoder_success"
    assert verdict([], **irr).valid
    assert verdict([{"get": "{not json"}], **irr).unparsable
    rel = {"category": "live_relevance", "functions": [GET], "truth": []}
    assert verdict("[get()]", **rel).valid  # any call, arguments not checked
    assert verdict("", **rel).error_type == "relevance_error:decoder_failed"
    assert verdict("[{}]", **rel).error_type == "relevance_error:decoder_failed"


def test_checker_crash_is_reported_not_raised() -> None:
    # Java has no "string" type; BFCL's checker raises KeyError and aborts the whole run.
    result = verdict('[get(city="abc")]', category="simple_java", functions=[GET], truth=[{"get": {"city": ["x"]}}])
    assert result.error_type == "toolgauge:checker_crash"


def test_unsatisfiable_reasons() -> None:
    assert unsatisfiable_reason(entry()) is None
    empty_required = [{"math.stats": {"number": []}}]
    assert "no acceptable value" in (unsatisfiable_reason(entry(truth=empty_required)) or "")
    off_schema = [{"math.stats": {"number": [5], "ghost": ["", 1]}}]
    assert "not in the function's schema" in (unsatisfiable_reason(entry(truth=off_schema)) or "")
    assert check_bfcl_entry(
        entry(truth=empty_required), "[math.stats(number=5)]", underscore_to_dot=False
    ).unsatisfiable


def test_score_summary_and_aggregates() -> None:
    entries = []
    for category in (
        "simple_python",
        "simple_java",
        "simple_javascript",
        "multiple",
        "parallel",
        "parallel_multiple",
        "live_simple",
    ):
        entries.append(
            entry(category, functions=[GET], truth=[{"get": {"city": ["x"]}}]).model_copy(
                update={"id": f"{category}_1"}
            )
        )
    outputs = {"simple_python_1": "[get(city='x')]", "multiple_1": "[get(city='x')]"}
    score = score_bfcl(entries, outputs, underscore_to_dot=False)
    results = score.results
    assert results.benchmark == "bfcl"
    assert results.settings == {"underscore_to_dot": False}
    assert [(m.name, m.value, m.n, m.kind) for m in results.metrics if m.group == "simple_python"] == [
        ("accuracy", 1.0, 1, "rate"),
        ("correct", 1, 1, "count"),
        ("unsatisfiable", 0, 1, "count"),
    ]
    assert results.value("correct", "parallel", by="category") == 0  # missing output = empty reply
    assert results.value("accuracy", "simple", by="aggregate") == pytest.approx(1 / 3)
    assert results.value("accuracy", "non_live", by="aggregate") == pytest.approx((1 / 3 + 1 + 0 + 0) / 4)
    assert results.value("accuracy", "live", by="aggregate") == 0.0
    assert results.groups("aggregate") == ["simple", "non_live", "live"]  # no irrelevance or relevance entries
    assert results.details["aggregate_categories"]["live"] == ["live_simple"]
    error_types = results.details["error_types"]
    assert error_types["parallel_function_checker_no_order:wrong_count"] == 2
    assert error_types["simple_function_checker:wrong_count"] == 1  # live_simple: [] decoded
    # Java/JavaScript decoders find no call in an empty reply: a wrong output format.
    assert error_types["ast_decoder:decoder_wrong_output_format"] == 2
    assert [v.id for v in score.verdicts] == [e.id for e in entries]


def test_categories_are_reported_in_bfcls_order_whatever_the_entry_order() -> None:
    entries = [
        entry(category, functions=[GET], truth=[{"get": {"city": ["x"]}}]).model_copy(update={"id": f"{category}_1"})
        for category in ("live_simple", "irrelevance", "multiple", "simple_python")
    ]
    results = score_bfcl(entries, {}, underscore_to_dot=False).results
    assert results.groups("category") == ["simple_python", "multiple", "live_simple", "irrelevance"]
    assert results.value("irrelevance_correct") == 1  # "" is a correct abstention, and plain text
    assert results.value("irrelevance_correct_but_unparsable") == 0


@pytest.mark.parametrize(
    ("category", "language"),
    [("simple_python", "python"), ("simple_java", "java"), ("simple_javascript", "javascript"),
     ("live_simple", "python"), ("irrelevance", "python")],
)  # fmt: skip
def test_one_language_rule_for_what_the_model_sees_and_the_checker(category: str, language: str) -> None:
    assert bfcl_language(category) == language
    hint = {"python": "Python 3", "java": "Java 8 SDK", "javascript": "JavaScript"}[language]
    tools = bfcl_tools(entry(category, functions=[GET], truth=[{"get": {"city": ["x"]}}]), underscore_to_dot=False)
    assert tools[0].description.endswith(f"Note that the provided function is in {hint} syntax.")


@given(st.text())
def test_standardisation_is_idempotent(text: str) -> None:
    once = standardize_string(text)
    assert standardize_string(once) == once
    assert not any(char in once for char in " ,./-_*^")
