"""Turn an MTU-Bench prompt into a native tool-calling request (tool specs plus chat messages).

An MTU ``question`` is one string: numbered instructions (ReAct output format, "Today is ..."),
then "The following is a list of APIs and their parameters that you can use:" and the API list
(a Python-repr or JSON list, or an object ``{"apis": [...], "available_parameters": [...]}``),
then the dialogue. Two dialogue formats occur:

* ``user:`` / ``function:`` (Thought, ``Action:``, ``Action Input:``) / ``observation:`` /
  ``assistant:`` lines (M-S, some OOD), ending with the current ``User:`` turn;
* ``User:`` / ``Action: {tool: {arguments}}`` / ``Assistant:`` lines (M-M, some OOD), which record
  no tool results.

Past calls become assistant messages with ``tool_calls`` (ids ``call_1``, ``call_2``...) and each
is answered by a tool message (its observation, or a placeholder when the history has none, since
the chat format requires an answer to every call). Thoughts are dropped: native calls carry none.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

from toolgauge.benchmarks.mtu.records import MtuItem
from toolgauge.errors import DataError
from toolgauge.records import Message, ToolCall, ToolSpec
from toolgauge.schema_types import JSON_SCHEMA_TYPE_NAMES

API_LIST_MARKER = "The following is a list of APIs and their parameters that you can use:"
NO_RESULT = "(no result recorded in the dialogue history)"
NATIVE_CALL_INSTRUCTION = (
    "When an API call is needed, call the tool through function calling; otherwise reply in plain text."
)
NATIVE_MULTI_CALL_INSTRUCTION = (
    "When API calls are needed, make them through function calling, all in this turn and in the order "
    "they must run; otherwise reply in plain text."
)

# MTU type names, lower-cased, to JSON-Schema types.
_SCHEMA_TYPES = {**JSON_SCHEMA_TYPE_NAMES, "str": "string", "int": "integer", "double": "number"}
# Instructions about the ReAct text format have no meaning for native calls.
_REACT_ONLY = re.compile(r"\b(?:Thought|Action|Observation|format)\b")
_MULTI_CALL_HINT = "Multiple APIs may need to be called"
_NUMBERED = re.compile(r"^\s*\d+\.\s*(.*\S)\s*$")
_HISTORY_CALL = re.compile(r"Action:[ \t]*(.*?)[ \t]*\n[ \t]*Action Input:[ \t]*")
_FORMAT_A_MARKERS = ("user:", "function:", "observation:", "assistant:", "User:", "Assistant:")
_FORMAT_B_MARKERS = ("user:", "assistant:", "User:", "Action:", "Assistant:")


def mtu_native_request(item: MtuItem) -> tuple[list[ToolSpec], list[Message]]:
    """Return the tools and the chat messages that ask ``item``'s question through native tool calling.

    The messages are a system message (the item's instructions that still apply, its
    "Today is ..." line, and how to call tools natively), then the dialogue history and the current
    user turn. (Two OOD items end their dialogue with an assistant line; their messages end likewise.)

    Raises:
        DataError: The question has no API list, or the list cannot be read.
    """
    head, marker, rest = item.question.partition(API_LIST_MARKER)
    if not marker:
        raise DataError(item.path, "no API list in the question", line=item.line, field="question")
    try:
        api_value, end = read_literal(rest)
    except ValueError as exc:
        raise DataError(item.path, f"cannot read the API list: {exc}", line=item.line, field="question") from None
    tools = tool_specs(api_value)
    messages = [
        Message(role="system", content=system_prompt(head)),
        *history_messages(rest[end:]),
    ]
    return tools, messages


def read_literal(text: str) -> tuple[Any, int]:
    """Read the JSON or Python-repr literal at the start of ``text`` (after blanks).

    Returns the value and the index just past it. Python reprs go through ``ast.literal_eval``.

    Raises:
        ValueError: No literal could be read.
    """
    start = len(text) - len(text.lstrip())
    try:
        return json.JSONDecoder().raw_decode(text, start)
    except (ValueError, RecursionError):  # not JSON, nested too deep, or an int past Python's digit limit
        pass
    end = _literal_end(text, start)
    try:
        return ast.literal_eval(text[start:end]), end
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError) as exc:
        raise ValueError(f"not a JSON or Python literal ({exc.__class__.__name__})") from None


def _literal_end(text: str, start: int) -> int:
    """Index just past the bracketed literal starting at ``start``, skipping quoted strings."""
    if start >= len(text) or text[start] not in "[{(":
        raise ValueError("expected '[' or '{'")
    depth = 0
    quote: str | None = None
    index = start
    while index < len(text):
        char = text[index]
        if quote is not None:
            if char == "\\":
                index += 2
                continue
            if char == quote:
                quote = None
        elif char in "'\"":
            quote = char
        elif char in "[{(":
            depth += 1
        elif char in "]})":
            depth -= 1
            if depth == 0:
                return index + 1
        index += 1
    raise ValueError("unbalanced brackets")


def tool_specs(api_value: Any) -> list[ToolSpec]:
    """Build tool specs from a parsed MTU API list (entries that are not API objects are skipped)."""
    shared: list[Any] = []
    if isinstance(api_value, dict):
        # OOD's {"apis": [...], "available_parameters": [...]}: parameters are listed once for all
        # APIs without saying which API takes which, so every API gets all of them as optional.
        shared = _as_list(api_value.get("available_parameters"))
        api_value = api_value.get("apis", [])
    tools: list[ToolSpec] = []
    for api in _as_list(api_value):
        if not isinstance(api, dict) or not isinstance(api.get("name"), str) or not api["name"].strip():
            continue
        properties: dict[str, Any] = {}
        required: list[str] = []
        for name, schema in _parameters(api.get("required_parameters")):
            if name not in properties:
                properties[name] = schema
                required.append(name)
        for name, schema in [*_parameters(api.get("optional_parameters")), *_parameters(shared)]:
            properties.setdefault(name, schema)
        parameters: dict[str, Any] = {"type": "object", "properties": properties}
        if required:
            parameters["required"] = required
        tools.append(ToolSpec(name=api["name"].strip(), description=_tool_description(api), parameters=parameters))
    return tools


def _tool_description(api: dict[str, Any]) -> str:
    description = str(api.get("description") or "").strip()
    results = [name for name, _ in _parameters(api.get("result_parameters"))]
    if results:
        # Later calls may refer to these as "ToolName.result_name".
        description = f"{description} Returns: {', '.join(results)}.".strip()
    return description


def _parameters(value: Any) -> list[tuple[str, dict[str, Any]]]:
    """``(name, schema)`` pairs from MTU's parameter forms: names, objects, or a name->default map."""
    pairs: list[tuple[str, dict[str, Any]]] = []
    if isinstance(value, dict):
        for name, default in value.items():
            # Untyped: MTU gives only a default, and gold values for such parameters are strings,
            # lists, numbers or booleans alike (the scorer compares str(value)), so any JSON value
            # is allowed rather than forcing "string".
            pairs.append((str(name), {"description": f"Optional. Default: {default}."}))
        return pairs
    for entry in _as_list(value):
        if isinstance(entry, str) and entry.strip():
            pairs.append((entry.strip(), {}))  # a bare name: no type known, any JSON value (see above)
        elif isinstance(entry, dict) and isinstance(entry.get("name"), str) and entry["name"].strip():
            pairs.append((entry["name"].strip(), _schema(entry)))
    return pairs


def _schema(spec: dict[str, Any]) -> dict[str, Any]:
    """A JSON Schema for one MTU parameter; unknown or missing types allow any JSON value."""
    schema: dict[str, Any] = {}
    json_type = _SCHEMA_TYPES.get(str(spec.get("type", "")).strip().lower())
    if json_type:
        schema["type"] = json_type
    notes = [str(spec["description"]).strip()] if spec.get("description") else []
    for key, label in (("format", "Format"), ("pattern", "Pattern"), ("options", "Options"), ("default", "Default")):
        if key in spec:
            notes.append(f"{label}: {spec[key]}.")
    if notes:
        schema["description"] = " ".join(notes)
    enum = spec.get("enum")
    if isinstance(enum, list) and enum and all(isinstance(value, str | int | float | bool) for value in enum):
        schema["enum"] = enum
    if json_type == "array" and isinstance(spec.get("items"), dict):
        schema["items"] = _schema(spec["items"])
    if json_type == "object" and isinstance(spec.get("properties"), dict):
        schema["properties"] = {
            str(name): _schema(sub) if isinstance(sub, dict) else {} for name, sub in spec["properties"].items()
        }
    return schema


def system_prompt(instructions: str) -> str:
    """The item's instructions minus the ReAct format rules, plus how to call tools natively.

    Keeps the opening line and every numbered rule that does not talk about Thought / Action /
    Observation or the output format, renumbered, with repeats and all but the first "Today is ..."
    rule dropped. Then one rule on native calls: several calls in one turn when the instructions
    say multiple APIs may be needed (the multi-call prompts), one call otherwise. The choice reads
    the prompt only, never the gold answer.
    """
    lines = [line.strip() for line in instructions.strip().splitlines() if line.strip()]
    intro = lines[0] if lines and not _NUMBERED.match(lines[0]) else ""
    rules: list[str] = []
    for line in lines:
        found = _NUMBERED.match(line)
        if not found:
            continue
        rule = found.group(1).replace("no Action is taken", "no tool is called")
        if _REACT_ONLY.search(rule) or rule in rules:
            continue
        if rule.startswith("Today is") and any(kept.startswith("Today is") for kept in rules):
            continue
        rules.append(rule)
    rules.append(NATIVE_MULTI_CALL_INSTRUCTION if _MULTI_CALL_HINT in instructions else NATIVE_CALL_INSTRUCTION)
    numbered = [f"{index}. {rule}" for index, rule in enumerate(rules, start=1)]
    return "\n".join([intro, *numbered] if intro else numbered)


def history_messages(text: str) -> list[Message]:
    """Chat messages for the dialogue after the API list, ending with the current user turn."""
    body = text.strip()
    if body.startswith("History Dialog:"):
        body = body[len("History Dialog:") :]
    markers = _FORMAT_A_MARKERS if re.search(r"(?m)^function:", body) else _FORMAT_B_MARKERS
    messages: list[Message] = []
    pending: list[str] = []
    counter = 0

    def answer_pending(first_result: str | None = None) -> None:
        for index, call_id in enumerate(pending):
            content = first_result if index == 0 and first_result else NO_RESULT
            messages.append(Message(role="tool", tool_call_id=call_id, content=content))
        pending.clear()

    def add_calls(calls: list[ToolCall]) -> None:
        nonlocal counter
        numbered: list[ToolCall] = []
        for call in calls:
            counter += 1
            numbered.append(call.model_copy(update={"id": f"call_{counter}"}))
        messages.append(Message(role="assistant", content=None, tool_calls=numbered))
        pending.extend(call.id for call in numbered if call.id)

    for role, content in _segments(body, markers):
        if role == "observation:":
            result = _strip_label(content, "Observation:")
            if pending:
                answer_pending(result)
            # An observation with no call before it repeats an earlier result: nothing to answer.
            continue
        answer_pending()
        if role in ("user:", "User:"):
            messages.append(Message(role="user", content=content))
        elif role in ("assistant:", "Assistant:"):
            if content:
                messages.append(Message(role="assistant", content=content))
        elif role == "function:":
            calls = _react_history_calls(content)
            if calls:
                add_calls(calls)
        elif role == "Action:":
            calls = _dict_history_calls(content)
            if calls:
                add_calls(calls)
    answer_pending()
    return messages


def _segments(body: str, markers: tuple[str, ...]) -> list[tuple[str, str]]:
    """Split the dialogue into ``(marker, text)`` pieces; lines without a marker continue the piece."""
    pieces: list[tuple[str, list[str]]] = []
    for line in body.split("\n"):
        marker = next((m for m in markers if line.startswith(m)), None)
        if marker is not None:
            pieces.append((marker, [line[len(marker) :]]))
        elif pieces:
            pieces[-1][1].append(line)
    return [(marker, _clean("\n".join(lines))) for marker, lines in pieces]


def _clean(text: str) -> str:
    # "assistant: : text" and "observation: : {...}" carry a second colon.
    text = text.strip()
    if text.startswith(":"):
        text = text[1:].strip()
    return text


def _strip_label(text: str, label: str) -> str:
    return text[len(label) :].strip() if text.startswith(label) else text


def _react_history_calls(text: str) -> list[ToolCall]:
    """Calls written as ``Action: name`` / ``Action Input: {...}`` in a ``function:`` piece."""
    calls: list[ToolCall] = []
    for found in _HISTORY_CALL.finditer(text + "\n"):
        name = found.group(1).strip().strip("\"'")
        if not name or "None" in name:
            continue
        try:
            arguments, _ = read_literal(text[found.end() :])
        except ValueError:
            arguments = None
        if isinstance(arguments, dict):
            calls.append(ToolCall(name=name, arguments={str(key): value for key, value in arguments.items()}))
        else:
            raw = text[found.end() :].split("\n", 1)[0]
            calls.append(ToolCall(name=name, raw=raw, parse_error="Action Input is not an object"))
    return calls


def _dict_history_calls(text: str) -> list[ToolCall]:
    """Calls written as ``Action: {"tool": {arguments}}``; ``{}``, blank or unreadable means none."""
    try:
        value, _ = read_literal(text)
    except ValueError:
        return []
    if not isinstance(value, dict):
        return []
    return [
        ToolCall(name=str(name).strip(), arguments=dict(arguments) if isinstance(arguments, dict) else {})
        for name, arguments in value.items()
        if str(name).strip()
    ]


def _as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list | tuple) else []
