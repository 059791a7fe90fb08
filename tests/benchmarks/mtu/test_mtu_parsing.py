"""ReAct parsing for MTU-Bench: every branch of the reference parsers, the crash fixes, rendering."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolgauge.benchmarks.mtu.react import (
    parse_mtu_response,
    parse_react_multi,
    parse_react_single,
    render_react,
)
from toolgauge.records import ToolCall


def calls_of(calls: list[ToolCall]) -> list[tuple[str, dict[str, Any]]]:
    return [(call.name, call.arguments) for call in calls]


# --- single-call parser (get_predict_SIN) ---------------------------------------------------


def test_single_plain_call() -> None:
    text = 'Thought: book it.\nAction: BookRestaurant\nAction Input: {"name": "Slug", "people": 5}'
    assert calls_of(parse_react_single(text)) == [("BookRestaurant", {"name": "Slug", "people": 5})]
    assert parse_react_single(text)[0].raw == '{"name": "Slug", "people": 5}'


def test_single_markers_need_not_start_a_line_and_input_may_span_lines() -> None:
    text = 'Thought: x. Action: GetWeather Action Input: {\n  "city": "Paris",\n  "date": "2024-01-05"\n}'
    assert calls_of(parse_react_single(text)) == [("GetWeather", {"city": "Paris", "date": "2024-01-05"})]


def test_single_thought_only_is_no_call() -> None:
    assert parse_react_single("Thought: I need the city first.") == []


def test_single_action_without_any_action_input_is_no_call() -> None:
    # The reference checks for "\nAction Input" first and returns ("", {}).
    assert parse_react_single("Thought: x\nAction: GetWeather") == []


def test_single_none_in_name_is_no_call() -> None:
    assert parse_react_single('Action: None\nAction Input: {"a": "b"}') == []
    assert parse_react_single('Action: NoneOfThem\nAction Input: {"a": "b"}') == []


def test_single_action_input_none_is_no_call_instead_of_crashing() -> None:
    # The reference's get_input raises IndexError here (no {...}); the fix treats it as unparsable.
    assert parse_react_single("Thought: missing city.\n\nAction: None\nAction Input: None") == []
    assert parse_react_single('Action: "FindEvents"\nAction Input: User did not provide enough.') == []


def test_single_action_input_without_colon_keeps_the_tool_with_empty_arguments() -> None:
    # Crash fix: "\nAction Input" is present but "\nAction Input:" is not.
    assert calls_of(parse_react_single('Action: GetWeather\nAction Input {"city": "Paris"}')) == [("GetWeather", {})]


def test_single_action_input_without_action_line_is_no_call() -> None:
    # Crash fix: the reference indexes split("\nAction:")[1] and raises.
    assert parse_react_single('Action Input: {"city": "Paris"}') == []


def test_single_comma_in_name_keeps_first_part() -> None:
    assert calls_of(parse_react_single('Action: GetWeather, ShareLocation\nAction Input: {"city": "Rome"}')) == [
        ("GetWeather", {"city": "Rome"})
    ]


def test_single_python_booleans_are_rewritten() -> None:
    assert calls_of(parse_react_single('Action: A\nAction Input: {"wifi": True, "pets": False}')) == [
        ("A", {"wifi": True, "pets": False})
    ]


def test_single_quote_repair() -> None:
    assert calls_of(parse_react_single("Action: A\nAction Input: {'city': 'Paris', 'n': 2}")) == [
        ("A", {"city": "Paris", "n": 2})
    ]


def test_single_quote_repair_keeps_a_backslash_before_escaped_quotes() -> None:
    # \' becomes \\' (an escaped backslash, then a quote): the value keeps a literal backslash.
    assert calls_of(parse_react_single("Action: A\nAction Input: {'name': 'Joe\\'s'}")) == [("A", {"name": "Joe\\'s"})]


def test_single_undecodable_input_is_no_call() -> None:
    assert parse_react_single("Action: A\nAction Input: {city: Paris}") == []


def test_single_nested_object_is_cut_at_first_brace_and_fails() -> None:
    text = 'Action: update\nAction Input: {"contact": "Al", "new": {"name": "bell"}}'
    assert parse_react_single(text) == []


def test_single_takes_the_first_object_and_first_action() -> None:
    text = 'Action: A\nAction Input: {"x": 1}\nAction: B\nAction Input: {"y": 2}'
    assert calls_of(parse_react_single(text)) == [("A", {"x": 1})]


def test_single_empty_name_kept_only_with_arguments() -> None:
    assert calls_of(parse_react_single('Action: \nAction Input: {"x": 1}')) == [("", {"x": 1})]
    assert parse_react_single("Action: \nAction Input: {}") == []


def test_single_text_after_input_is_ignored() -> None:
    text = 'Action: A\nAction Input: {"x": "1"}\nObservation: {"ok": true}'
    # rsplit on the LAST "}" then the first {...}: the first object wins.
    assert calls_of(parse_react_single(text)) == [("A", {"x": "1"})]


# --- multi-call parser (get_target_SIN_MUL) -------------------------------------------------


def test_multi_calls_in_order_with_repeats_kept() -> None:
    text = (
        "Thought: three calls.\n"
        'Action: A\nAction Input: {"x": 1}\n'
        'Action: B\nAction Input: {"y": "b"}\n'
        'Action: A\nAction Input: {"x": 2}'
    )
    assert calls_of(parse_react_multi(text)) == [("A", {"x": 1}), ("B", {"y": "b"}), ("A", {"x": 2})]


def test_multi_name_quotes_removed() -> None:
    assert calls_of(parse_react_multi('Action: "api_A"\nAction Input: {"p": 1}')) == [("api_A", {"p": 1})]


def test_multi_needs_space_after_colon() -> None:
    assert parse_react_multi('Action:A\nAction Input: {"p": 1}') == []


def test_multi_skips_the_prompt_placeholder_block() -> None:
    text = "Action: The name of the API to be called.\nAction Input: {}\nAction: B\nAction Input: {}"
    assert calls_of(parse_react_multi(text)) == [("B", {})]


def test_multi_cuts_at_please_provide_your() -> None:
    text = 'Action: B\nAction Input: {"q": 1}\nPlease provide your city.'
    assert calls_of(parse_react_multi(text)) == [("B", {"q": 1})]


def test_multi_bad_input_keeps_call_with_empty_arguments() -> None:
    (call,) = parse_react_multi("Action: B\nAction Input: {'q': 1}")
    assert (call.name, call.arguments) == ("B", {})
    assert call.parse_error is not None


def test_multi_nested_object_breaks() -> None:
    (call,) = parse_react_multi('Action: B\nAction Input: {"a": {"b": 1}}')
    assert call.arguments == {} and call.parse_error is not None


def test_multi_action_without_input_is_call_with_empty_arguments() -> None:
    # Crash fix: the reference indexes split("\nAction Input:")[1] and raises.
    (call,) = parse_react_multi("Thought: t\nNext Assistant Action: Ask the user for the city.")
    assert call.name == "Ask the user for the city."
    assert call.arguments == {} and call.parse_error is not None


def test_multi_none_is_a_call() -> None:
    assert calls_of(parse_react_multi("Action: None\nAction Input: {}")) == [("None", {})]


def test_multi_booleans_and_indented_lines() -> None:
    text = 'Action: A\nAction Input: {\n  "a": True,\n  "b": "x"\n}'
    assert calls_of(parse_react_multi(text)) == [("A", {"a": True, "b": "x"})]


def test_multi_thought_removal_quirk() -> None:
    # With no thought before the first Action, "Thought: " + "" is removed everywhere, even inside values.
    bare = 'Action: A\nAction Input: {"x": "Thought: y"}'
    assert calls_of(parse_react_multi(bare)) == [("A", {"x": "y"})]
    with_thought = 'Thought: go\nAction: A\nAction Input: {"x": "Thought: y"}'
    assert calls_of(parse_react_multi(with_thought)) == [("A", {"x": "Thought: y"})]


# --- dispatch -------------------------------------------------------------------------------


def test_parse_mtu_response_dispatch() -> None:
    text = 'Action: A\nAction Input: {"x": 1}\nAction: B\nAction Input: {"y": 2}'
    assert [c.name for c in parse_mtu_response(text, "S-S")] == ["A"]
    assert [c.name for c in parse_mtu_response(text, "M-S")] == ["A"]
    assert [c.name for c in parse_mtu_response(text, "S-M")] == ["A", "B"]
    assert [c.name for c in parse_mtu_response(text, "M-M")] == ["A", "B"]
    assert [c.name for c in parse_mtu_response(text, "OOD", multi=True)] == ["A", "B"]
    assert [c.name for c in parse_mtu_response(text, "OOD", multi=False)] == ["A"]


def test_parse_mtu_response_rejects_ood_without_multi_and_unknown_split() -> None:
    with pytest.raises(ValueError, match="OOD"):
        parse_mtu_response("", "OOD")
    with pytest.raises(ValueError, match="unknown"):
        parse_mtu_response("", "X-Y")


# --- render_react ---------------------------------------------------------------------------


def test_render_no_call_has_no_action() -> None:
    text = render_react([])
    assert text.startswith("Thought:") and "Action" not in text
    assert parse_react_single(text) == [] and parse_react_multi(text) == []


def test_render_escapes_strings_the_parsers_would_touch() -> None:
    call = ToolCall(name="A", arguments={"q": "Action: x} True False Please provide your Thought: "})
    text = render_react([call])
    assert json.loads(text.split("Action Input: ", 1)[1]) == call.arguments
    assert calls_of(parse_react_single(text)) == [("A", call.arguments)]
    assert calls_of(parse_react_multi(text)) == [("A", call.arguments)]


_names = st.from_regex(r"[a-z_][A-Za-z0-9_]{0,15}", fullmatch=True).filter(lambda name: "None" not in name)
_scalars = st.one_of(
    st.text(max_size=20),
    st.integers(-(10**6), 10**6),
    st.booleans(),
    st.none(),
    st.floats(allow_nan=False, allow_infinity=False),
)
_arguments = st.dictionaries(st.text(max_size=8), st.one_of(_scalars, st.lists(_scalars, max_size=3)), max_size=4)
_calls = st.lists(st.builds(ToolCall, name=_names, arguments=_arguments), max_size=4)


@settings(max_examples=200, deadline=None)
@given(_calls)
def test_render_round_trips_through_the_multi_parser(calls: list[ToolCall]) -> None:
    assert calls_of(parse_react_multi(render_react(calls))) == calls_of(calls)


@settings(max_examples=200, deadline=None)
@given(st.builds(ToolCall, name=_names, arguments=_arguments))
def test_render_round_trips_through_the_single_parser(call: ToolCall) -> None:
    assert calls_of(parse_react_single(render_react([call]))) == calls_of([call])


def test_render_nested_object_cannot_survive_the_reference_parsers() -> None:
    # Documented limitation (M-S_17_3): the reference cuts the input at the first "}".
    text = render_react([ToolCall(name="update", arguments={"new_information": {"new_name": "bell"}})])
    assert parse_react_single(text) == []
    assert parse_react_multi(text)[0].arguments == {}
