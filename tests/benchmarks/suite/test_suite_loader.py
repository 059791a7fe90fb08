"""toolgauge's own suite format: the built-in suite, turn history, and every kind of bad input."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from helpers.paths import DOCS
from toolgauge.benchmarks.suite.loader import (
    BUILTIN_SUITE,
    SuiteDialogue,
    SuiteTurn,
    builtin_suite_path,
    load_suite,
    turn_history,
)
from toolgauge.errors import DataError
from toolgauge.records import ToolCall, ToolSpec

# --- helpers -----------------------------------------------------------------------------------


def forecast_tool() -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": "get_forecast",
            "description": "Forecast for a city on a date.",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string"},
                    "date": {"type": "string", "description": "YYYY-MM-DD"},
                    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                },
                "required": ["city", "date"],
            },
        },
    }


def timer_tool() -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": "set_timer",
            "parameters": {
                "type": "object",
                "properties": {
                    "minutes": {"type": "integer", "minimum": 1},
                    "labels": {"type": "array", "items": {"type": "string"}},
                },
                "required": ["minutes"],
            },
        },
    }


def dialogue(dialogue_id: str = "d-1") -> dict[str, Any]:
    """A valid three-turn dialogue; tests break one thing in a copy of it."""
    return {
        "id": dialogue_id,
        "domain": "weather",
        "system": "Be brief.",
        "tools": [forecast_tool(), timer_tool()],
        "turns": [
            {
                "user": "Forecast for Lyon on 2025-06-14, and a 5 minute timer.",
                "expected_calls": [
                    {"name": "get_forecast", "arguments": {"city": "Lyon", "date": "2025-06-14"}},
                    {"name": "set_timer", "arguments": {"minutes": 5}},
                ],
                "tool_results": ['{"sky": "rain"}', '{"status": "running"}'],
                "assistant": "Rain in Lyon; timer started.",
            },
            {"user": "Thanks!", "expected_calls": [], "assistant": "You're welcome."},
            {
                "user": "Forecast for Oslo on 2025-06-15 in fahrenheit.",
                "expected_calls": [
                    {
                        "name": "get_forecast",
                        "arguments": {"city": "Oslo", "date": "2025-06-15", "unit": "fahrenheit"},
                    }
                ],
                "tool_results": ['{"temp_f": 50}'],
            },
        ],
    }


def write_lines(tmp_path: Path, *lines: dict[str, Any] | str) -> Path:
    path = tmp_path / "suite.jsonl"
    text = "\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines)
    path.write_text(text + "\n", encoding="utf-8")
    return path


def load_error(path: Path) -> str:
    with pytest.raises(DataError) as caught:
        load_suite(path)
    return str(caught.value)


# --- the built-in suite --------------------------------------------------------------------------

JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
}


def assert_matches_schema(value: Any, schema: dict[str, Any], where: str) -> None:
    """An independent check of the schema subset the built-in suite uses."""
    kind = schema.get("type")
    if kind is not None:
        assert isinstance(value, JSON_TYPES[kind]), f"{where}: {value!r} is not {kind}"
        if kind in ("integer", "number"):
            assert not isinstance(value, bool), f"{where}: boolean where a number is expected"
    if "enum" in schema:
        assert value in schema["enum"], f"{where}: {value!r} not in {schema['enum']}"
    if "minimum" in schema:
        assert value >= schema["minimum"], f"{where}: below minimum"
    if "maximum" in schema:
        assert value <= schema["maximum"], f"{where}: above maximum"
    if isinstance(value, dict):
        properties = schema.get("properties", {})
        for name in schema.get("required", []):
            assert name in value, f"{where}: required {name!r} missing"
        for name, item in value.items():
            assert name in properties, f"{where}: {name!r} is not a parameter"
            assert_matches_schema(item, properties[name], f"{where}.{name}")
    if isinstance(value, list) and "items" in schema:
        for index, item in enumerate(value):
            assert_matches_schema(item, schema["items"], f"{where}[{index}]")


@pytest.fixture(scope="module")
def builtin() -> list[SuiteDialogue]:
    return load_suite(BUILTIN_SUITE)


def test_builtin_suite_path_is_the_packaged_file() -> None:
    assert builtin_suite_path() == BUILTIN_SUITE
    assert BUILTIN_SUITE.is_file()
    assert BUILTIN_SUITE.name == "sample.jsonl"


def test_builtin_suite_size_and_shape(builtin: list[SuiteDialogue]) -> None:
    assert 18 <= len(builtin) <= 30
    assert len({d.id for d in builtin}) == len(builtin)
    assert 5 <= len({d.domain for d in builtin}) <= 6
    for d in builtin:
        assert 2 <= len(d.tools) <= 5, d.id
        assert 1 <= len(d.turns) <= 4, d.id
        assert d.path == str(BUILTIN_SUITE)
    assert [d.line for d in builtin] == list(range(1, len(builtin) + 1))


def test_builtin_suite_mixes_turn_kinds(builtin: list[SuiteDialogue]) -> None:
    turns = [t for d in builtin for t in d.turns]
    no_call = [t for t in turns if not t.expected_calls]
    parallel = [t for t in turns if len(t.expected_calls) > 1]
    # Very simple dialogues a tiny model can get right: one turn, one call.
    simple = [d for d in builtin if len(d.turns) == 1 and len(d.turns[0].expected_calls) == 1]
    assert len(no_call) >= 10
    assert len(parallel) >= 4
    assert len(simple) >= 5
    # Some no-call turns open a dialogue (asking for missing information or refusing).
    assert any(not d.turns[0].expected_calls for d in builtin)


def test_builtin_expected_calls_match_their_schemas(builtin: list[SuiteDialogue]) -> None:
    for d in builtin:
        tools = {t.name: t for t in d.tools}
        for ti, turn in enumerate(d.turns):
            for ci, call in enumerate(turn.expected_calls):
                where = f"{d.id} turns[{ti}].expected_calls[{ci}]"
                assert call.name in tools, where
                assert_matches_schema(call.arguments, tools[call.name].parameters, where)
            assert len(turn.tool_results) == len(turn.expected_calls)
            for result in turn.tool_results:
                json.loads(result)  # the built-in results are all JSON documents
            if ti < len(d.turns) - 1:
                assert turn.assistant, f"{d.id} turns[{ti}] needs a gold reply to replay"


def argument_values(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [v for item in value.values() for v in argument_values(item)]
    if isinstance(value, list):
        return [v for item in value for v in argument_values(item)]
    return [value]


def test_builtin_argument_values_are_stated_by_the_user(builtin: list[SuiteDialogue]) -> None:
    """Fair scoring: every expected value appears verbatim in what the user has said so far."""
    for d in builtin:
        said = ""
        for ti, turn in enumerate(d.turns):
            said += " " + turn.user.lower()
            for call in turn.expected_calls:
                for value in argument_values(call.arguments):
                    text = str(value).lower()
                    assert re.search(rf"(?<![\w]){re.escape(text)}(?![\w])", said), (
                        f"{d.id} turns[{ti}] {call.name}: {value!r} not stated by the user"
                    )


# --- turn history --------------------------------------------------------------------------------


def hand_made() -> SuiteDialogue:
    forecast = ToolSpec(name="get_forecast", parameters={"type": "object", "properties": {}})
    timer = ToolSpec(name="set_timer")
    return SuiteDialogue(
        id="h-1",
        system="Be brief.",
        tools=[forecast, timer],
        turns=[
            SuiteTurn(
                user="u0",
                expected_calls=[
                    ToolCall(name="get_forecast", arguments={"city": "Lyon"}),
                    ToolCall(name="set_timer", arguments={"minutes": 5}),
                ],
                tool_results=["r0", "r1"],
                assistant="a0",
            ),
            SuiteTurn(user="u1", assistant="a1"),
            SuiteTurn(user="u2", expected_calls=[ToolCall(name="set_timer")], tool_results=["r2"]),
        ],
    )


def test_turn_history_first_turn_is_system_and_user() -> None:
    history = turn_history(hand_made(), 0)
    assert [(m.role, m.content) for m in history] == [("system", "Be brief."), ("user", "u0")]


def test_turn_history_replays_gold_with_paired_tool_messages() -> None:
    d = hand_made()
    history = turn_history(d, 2)
    assert [m.role for m in history] == [
        "system",
        "user",
        "assistant",
        "tool",
        "tool",
        "assistant",
        "user",
        "assistant",
        "user",
    ]
    calls_message = history[2]
    assert calls_message.content is None
    assert [(c.name, c.arguments, c.id) for c in calls_message.tool_calls] == [
        ("get_forecast", {"city": "Lyon"}, "call_0_0"),
        ("set_timer", {"minutes": 5}, "call_0_1"),
    ]
    tool_messages = history[3:5]
    assert [(m.tool_call_id, m.name, m.content) for m in tool_messages] == [
        ("call_0_0", "get_forecast", "r0"),
        ("call_0_1", "set_timer", "r1"),
    ]
    assert [m.content for m in history[5:]] == ["a0", "u1", "a1", "u2"]
    assert all(not m.tool_calls for m in history[5:])
    # Replaying must not write ids into the dialogue's own expected calls.
    assert [c.id for c in d.turns[0].expected_calls] == [None, None]


def test_turn_history_ids_follow_the_turn_index() -> None:
    d = hand_made()
    d = d.replace(turns=[*d.turns, SuiteTurn(user="u3")])
    history = turn_history(d, 3)
    ids = [c.id for m in history for c in m.tool_calls]
    assert ids == ["call_0_0", "call_0_1", "call_2_0"]
    assert [m.tool_call_id for m in history if m.role == "tool"] == ids


def test_turn_history_without_system_prompt() -> None:
    d = hand_made().replace(system=None)
    assert turn_history(d, 1)[0].role == "user"


@pytest.mark.parametrize("index", [-1, 3])
def test_turn_history_rejects_a_turn_that_does_not_exist(index: int) -> None:
    with pytest.raises(IndexError, match="has 3 turns"):
        turn_history(hand_made(), index)


def test_turn_history_on_a_loaded_dialogue(tmp_path: Path) -> None:
    [loaded] = load_suite(write_lines(tmp_path, dialogue()))
    history = turn_history(loaded, 2)
    assert [m.role for m in history] == [
        "system",
        "user",
        "assistant",
        "tool",
        "tool",
        "assistant",
        "user",
        "assistant",
        "user",
    ]
    assert history[-1].content == "Forecast for Oslo on 2025-06-15 in fahrenheit."


def test_suite_turn_needs_one_result_per_call() -> None:
    with pytest.raises(ValidationError, match="tool_results has 0 entries but expected_calls has 1"):
        SuiteTurn(user="u", expected_calls=[ToolCall(name="f")])


# --- good input ------------------------------------------------------------------------------------


def test_loads_a_valid_file_and_skips_blank_lines(tmp_path: Path) -> None:
    path = write_lines(tmp_path, dialogue("a"), "", "   ", dialogue("b"))
    loaded = load_suite(path)
    assert [(d.id, d.line, d.path) for d in loaded] == [("a", 1, str(path)), ("b", 4, str(path))]
    first = loaded[0]
    assert [t.name for t in first.tools] == ["get_forecast", "set_timer"]
    assert first.tools[0].description == "Forecast for a city on a date."
    assert first.turns[1].tool_results == []
    assert first.turns[2].assistant is None
    assert first.turns[0].expected_calls[1] == ToolCall(name="set_timer", arguments={"minutes": 5})


def test_accepts_bare_tool_specs(tmp_path: Path) -> None:
    d = dialogue()
    d["tools"] = [tool["function"] for tool in d["tools"]]
    [loaded] = load_suite(write_lines(tmp_path, d))
    assert loaded.tools[0].parameters == forecast_tool()["function"]["parameters"]


def test_tool_without_parameters_gets_an_empty_object_schema(tmp_path: Path) -> None:
    d = dialogue()
    d["tools"].append({"type": "function", "function": {"name": "ping"}})
    d["turns"][2]["expected_calls"].append({"name": "ping"})
    d["turns"][2]["tool_results"].append("pong")
    [loaded] = load_suite(write_lines(tmp_path, d))
    assert loaded.tools[2].parameters == {"type": "object", "properties": {}}
    assert loaded.turns[2].expected_calls[1].arguments == {}


def test_open_objects_accept_extra_arguments(tmp_path: Path) -> None:
    d = dialogue()
    timer = d["tools"][1]["function"]["parameters"]
    timer["additionalProperties"] = True
    d["tools"].append({"type": "function", "function": {"name": "log", "parameters": {"type": "object"}}})
    d["turns"][0]["expected_calls"][1]["arguments"]["sound"] = "bell"
    d["turns"][2]["expected_calls"].append({"name": "log", "arguments": {"anything": [1, 2]}})
    d["turns"][2]["tool_results"].append("ok")
    [loaded] = load_suite(write_lines(tmp_path, d))
    assert loaded.turns[0].expected_calls[1].arguments == {"minutes": 5, "sound": "bell"}


# --- bad input: one test per kind, each asserting the exact error line ----------------------------


def test_error_malformed_json_line(tmp_path: Path) -> None:
    path = write_lines(tmp_path, dialogue(), '{"id": "x", ')
    assert (
        load_error(path) == f"{path}:2: malformed JSON: Expecting property name enclosed in double quotes (column 13)"
    )


def test_error_line_is_not_an_object(tmp_path: Path) -> None:
    path = write_lines(tmp_path, "[1, 2]")
    assert load_error(path) == f"{path}:1: expected a JSON object (one dialogue per line), got array"


def test_error_duplicate_json_key(tmp_path: Path) -> None:
    path = write_lines(tmp_path, '{"id": "a", "id": "b"}')
    assert load_error(path) == f"{path}:1: malformed JSON: key 'id' appears twice in one object"


def test_error_non_json_constant(tmp_path: Path) -> None:
    path = write_lines(tmp_path, '{"id": NaN}')
    assert load_error(path) == f"{path}:1: malformed JSON: NaN is not a JSON value"


def test_error_missing_field(tmp_path: Path) -> None:
    d = dialogue()
    del d["turns"][1]["user"]
    path = write_lines(tmp_path, d)
    assert load_error(path) == f"{path}:1: turns[1].user: missing required field"


def test_error_missing_expected_calls(tmp_path: Path) -> None:
    d = dialogue()
    del d["turns"][1]["expected_calls"]
    path = write_lines(tmp_path, d)
    assert load_error(path) == f"{path}:1: turns[1].expected_calls: missing required field"


def test_error_mistyped_field(tmp_path: Path) -> None:
    d = dialogue()
    d["turns"][2]["expected_calls"][0]["name"] = 7
    path = write_lines(tmp_path, dialogue("other"), d)
    assert load_error(path) == f"{path}:2: turns[2].expected_calls[0].name: expected a string, got integer"


def test_error_tool_result_must_be_text(tmp_path: Path) -> None:
    d = dialogue()
    d["turns"][2]["tool_results"] = [{"temp_f": 50}]
    path = write_lines(tmp_path, d)
    assert load_error(path) == f"{path}:1: turns[2].tool_results[0]: expected a string, got object"


def test_error_unknown_field(tmp_path: Path) -> None:
    d = dialogue()
    d["turns"][0]["expected_calls"][0]["args"] = {}
    path = write_lines(tmp_path, d)
    assert load_error(path) == (
        f"{path}:1: turns[0].expected_calls[0].args: unknown field; did you mean 'arguments'? "
        "(allowed: name, arguments)"
    )


def test_error_unknown_top_level_field(tmp_path: Path) -> None:
    d = dialogue()
    d["turn"] = []
    path = write_lines(tmp_path, d)
    assert load_error(path) == (
        f"{path}:1: turn: unknown field; did you mean 'turns'? (allowed: id, domain, system, tools, turns)"
    )


def test_error_misspelt_field_is_reported_with_a_did_you_mean_not_as_the_missing_one(tmp_path: Path) -> None:
    d = dialogue()
    d["turns"][0]["expected_call"] = d["turns"][0].pop("expected_calls")
    d["turns"][0]["colour"] = "red"  # a second unknown field with nothing close: the first one is reported
    path = write_lines(tmp_path, d)
    assert load_error(path) == (
        f"{path}:1: turns[0].expected_call: unknown field; did you mean 'expected_calls'? "
        "(allowed: user, expected_calls, tool_results, assistant)"
    )


def test_error_no_turns(tmp_path: Path) -> None:
    d = dialogue()
    d["turns"] = []
    path = write_lines(tmp_path, d)
    assert load_error(path) == f"{path}:1: turns: must not be empty"


def test_error_empty_id(tmp_path: Path) -> None:
    path = write_lines(tmp_path, dialogue(""))
    assert load_error(path) == f"{path}:1: id: must not be empty"


def test_error_duplicate_dialogue_id(tmp_path: Path) -> None:
    path = write_lines(tmp_path, dialogue("a"), dialogue("b"), dialogue("a"))
    assert load_error(path) == f"{path}:3: id: duplicate dialogue id 'a' (first used on line 1)"


def test_error_call_names_an_unknown_tool(tmp_path: Path) -> None:
    d = dialogue()
    d["turns"][2]["expected_calls"][0]["name"] = "get_weather"
    path = write_lines(tmp_path, d)
    assert load_error(path) == (
        f"{path}:1: turns[2].expected_calls[0].name: no tool named 'get_weather' in tools "
        "(known: get_forecast, set_timer)"
    )


def test_error_tool_results_length_mismatch(tmp_path: Path) -> None:
    d = dialogue()
    d["turns"][0]["tool_results"] = ['{"sky": "rain"}']
    path = write_lines(tmp_path, d)
    assert load_error(path) == (
        f"{path}:1: turns[0].tool_results: has 1 entries but expected_calls has 2 "
        "(one result per expected call, in the same order)"
    )


def test_error_tool_results_omitted_for_a_call(tmp_path: Path) -> None:
    d = dialogue()
    del d["turns"][2]["tool_results"]
    path = write_lines(tmp_path, d)
    assert load_error(path) == (
        f"{path}:1: turns[2].tool_results: has 0 entries but expected_calls has 1 "
        "(one result per expected call, in the same order)"
    )


def test_error_gold_reply_missing_on_an_earlier_turn(tmp_path: Path) -> None:
    d = dialogue()
    del d["turns"][1]["assistant"]
    path = write_lines(tmp_path, d)
    assert load_error(path) == (
        f"{path}:1: turns[1].assistant: required on every turn but the last (it is replayed as history)"
    )


def set_args(turn: int, call: int, arguments: dict[str, Any]) -> dict[str, Any]:
    d = dialogue()
    d["turns"][turn]["expected_calls"][call]["arguments"] = arguments
    return d


@pytest.mark.parametrize(
    ("broken", "expected"),
    [
        pytest.param(
            set_args(2, 0, {"city": "Oslo"}),
            "turns[2].expected_calls[0].arguments.date: missing (required by the tool's schema)",
            id="required-missing",
        ),
        pytest.param(
            set_args(2, 0, {"city": "Oslo", "date": "2025-06-15", "days": 3}),
            "turns[2].expected_calls[0].arguments.days: not a property of the schema (known: city, date, unit)",
            id="unknown-key",
        ),
        pytest.param(
            set_args(2, 0, {"city": 12, "date": "2025-06-15"}),
            "turns[2].expected_calls[0].arguments.city: expected string, got integer",
            id="wrong-type",
        ),
        pytest.param(
            set_args(2, 0, {"city": "Oslo", "date": "2025-06-15", "unit": "kelvin"}),
            'turns[2].expected_calls[0].arguments.unit: "kelvin" is not one of the allowed values '
            '("celsius", "fahrenheit")',
            id="enum",
        ),
        pytest.param(
            set_args(0, 1, {"minutes": True}),
            "turns[0].expected_calls[1].arguments.minutes: expected integer, got boolean",
            id="boolean-is-not-integer",
        ),
        pytest.param(
            set_args(0, 1, {"minutes": 2.5}),
            "turns[0].expected_calls[1].arguments.minutes: expected integer, got number",
            id="fraction-is-not-integer",
        ),
        pytest.param(
            set_args(0, 1, {"minutes": 0}),
            "turns[0].expected_calls[1].arguments.minutes: 0 is below the minimum 1",
            id="minimum",
        ),
        pytest.param(
            set_args(0, 1, {"minutes": 5, "labels": ["tea", 3]}),
            "turns[0].expected_calls[1].arguments.labels[1]: expected string, got integer",
            id="array-item",
        ),
        pytest.param(
            set_args(0, 1, []),
            "turns[0].expected_calls[1].arguments: expected an object, got array",
            id="arguments-not-object",
        ),
    ],
)
def test_error_arguments_break_the_schema(tmp_path: Path, broken: dict[str, Any], expected: str) -> None:
    path = write_lines(tmp_path, broken)
    assert load_error(path) == f"{path}:1: {expected}"


def test_integral_float_counts_as_integer(tmp_path: Path) -> None:
    [loaded] = load_suite(write_lines(tmp_path, set_args(0, 1, {"minutes": 5.0})))
    assert loaded.turns[0].expected_calls[1].arguments == {"minutes": 5.0}


def with_forecast_parameters(change: dict[str, Any]) -> dict[str, Any]:
    d = dialogue()
    parameters = d["tools"][0]["function"]["parameters"]
    parameters.update(copy.deepcopy(change))
    return d


@pytest.mark.parametrize(
    ("broken", "expected"),
    [
        pytest.param(
            with_forecast_parameters({"properties": {"city": {"oneOf": [{"type": "string"}]}, "date": {}, "unit": {}}}),
            "tools[0].function.parameters.properties.city.oneOf: unsupported JSON-Schema keyword "
            "(supported: type, properties, required, additionalProperties, items, enum, minimum, maximum, "
            "description, title, default, examples, format)",
            id="unsupported-keyword",
        ),
        pytest.param(
            with_forecast_parameters({"type": "dict"}),
            "tools[0].function.parameters.type: expected one of object, array, string, integer, number, "
            "boolean, null (or a list of them)",
            id="unknown-type",
        ),
        pytest.param(
            with_forecast_parameters({"type": "array"}),
            'tools[0].function.parameters: tool parameters must be an object schema ("type": "object")',
            id="not-an-object-schema",
        ),
        pytest.param(
            with_forecast_parameters({"required": ["city", "country"]}),
            "tools[0].function.parameters.required: 'country' is not in properties",
            id="required-not-a-property",
        ),
        pytest.param(
            with_forecast_parameters(
                {"properties": {"city": {"type": "string", "enum": ["Oslo", 3]}, "date": {}, "unit": {}}}
            ),
            "tools[0].function.parameters.properties.city.enum[1]: expected string, got integer",
            id="enum-value-of-wrong-type",
        ),
    ],
)
def test_error_tool_schema_outside_the_subset(tmp_path: Path, broken: dict[str, Any], expected: str) -> None:
    path = write_lines(tmp_path, broken)
    assert load_error(path) == f"{path}:1: {expected}"


def test_error_invalid_tool_name(tmp_path: Path) -> None:
    d = dialogue()
    d["tools"][1]["function"]["name"] = "math.timer"
    path = write_lines(tmp_path, d)
    assert load_error(path) == (
        f"{path}:1: tools[1].function.name: 'math.timer' is not a valid tool name (1-64 of A-Z a-z 0-9 _ -)"
    )


def test_error_duplicate_tool_name(tmp_path: Path) -> None:
    d = dialogue()
    d["tools"].append(forecast_tool()["function"])
    path = write_lines(tmp_path, d)
    assert load_error(path) == f"{path}:1: tools[2].name: duplicate tool name 'get_forecast'"


def test_error_tool_type_is_not_function(tmp_path: Path) -> None:
    d = dialogue()
    d["tools"][0]["type"] = "retrieval"
    path = write_lines(tmp_path, d)
    assert load_error(path) == f"{path}:1: tools[0].type: expected 'function', got 'retrieval'"


@pytest.mark.parametrize("content", ["", "\n\n  \n"], ids=["empty", "blank-lines"])
def test_error_empty_file(tmp_path: Path, content: str) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text(content, encoding="utf-8")
    assert load_error(path) == f"{path}: no dialogues: the file is empty"


def test_error_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "absent.jsonl"
    assert load_error(path) == f"{path}: file not found"


def test_error_path_is_a_directory(tmp_path: Path) -> None:
    assert load_error(tmp_path) == f"{tmp_path}: cannot read the file: Is a directory"


def test_error_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "latin1.jsonl"
    path.write_bytes(json.dumps(dialogue()).encode() + b'\n{"id": "caf\xe9"}\n')
    assert load_error(path) == f"{path}:2: not valid UTF-8 text (binary file?)"


def test_the_documented_example_is_a_valid_dialogue(tmp_path: Path) -> None:
    docs = DOCS / "datasets.md"
    block = docs.read_text(encoding="utf-8").split("```json\n", 1)[1].split("```", 1)[0]
    path = write_lines(tmp_path, json.loads(block))
    [loaded] = load_suite(path)
    assert [len(t.expected_calls) for t in loaded.turns] == [2, 1, 0]
    assert [m.role for m in turn_history(loaded, 1)][-3:] == ["tool", "assistant", "user"]
