"""Loader for toolgauge's own multi-turn tool-calling format (JSONL, one dialogue per line).

A dialogue offers tools (OpenAI function specs) and has turns; each turn says which calls are
right for the user's message (``expected_calls``, empty when no call is right), what the tools
answered, and the gold assistant reply. The model is asked once per turn with the earlier turns
replayed from gold (see :func:`turn_history`). ``docs/datasets.md`` is the user-facing reference.

Validation is strict: every problem is one :class:`~toolgauge.errors.DataError` naming the file,
the line and the field (``turns[2].expected_calls[0].name``). Expected arguments are checked
against the tool's JSON Schema by a small validator for the subset this format allows.
"""

from __future__ import annotations

import codecs
import json
import re
import sys
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from toolgauge.errors import DataError
from toolgauge.jsonl import (
    JsonProblem,
    UniqueIds,
    json_type,
    jsonl_line_problem,
    max_input_bytes,
    open_input,
    parse_json,
    too_large,
)
from toolgauge.records import Message, ToolCall, ToolSpec
from toolgauge.unknown_fields import reported_error, unknown_field

__all__ = [
    "BUILTIN_SUITE",
    "SuiteDialogue",
    "SuiteTurn",
    "builtin_suite_path",
    "call_id",
    "load_suite",
    "turn_histories",
    "turn_history",
]


class SuiteTurn(BaseModel):
    """One user turn and what is right for it.

    ``tool_results[k]`` is what the tool answered to ``expected_calls[k]`` (text, usually JSON);
    there is exactly one result per expected call, so a turn without calls has no results.
    ``assistant`` is the gold reply after the tool results; it is replayed as history for later
    turns (the loader requires it on every turn but the last).
    """

    user: str
    expected_calls: list[ToolCall] = Field(default_factory=list)
    tool_results: list[str] = Field(default_factory=list)
    assistant: str | None = None

    @model_validator(mode="after")
    def _one_result_per_call(self) -> SuiteTurn:
        if len(self.tool_results) != len(self.expected_calls):
            raise ValueError(
                f"tool_results has {len(self.tool_results)} entries but expected_calls has {len(self.expected_calls)}"
            )
        return self


class SuiteDialogue:
    """One dialogue of a suite: the tools on offer and the turns, with where it was read from.

    ``path`` and ``line`` locate the dialogue in its file (empty and 0 for dialogues built in code).

    A dialogue is read-only and lean, because a suite can hold 100,000 of them: ``tools`` is a
    tuple that dialogues with the same tool list share, and the turns are kept as one compact JSON
    value that ``turns`` decodes into fresh :class:`SuiteTurn` records on every access (read it
    once into a local when looping). Use :meth:`replace` for a changed copy.

    Raises:
        ValueError: no turns, or a turn whose values are not JSON (tuples become lists).
    """

    __slots__ = ("_turns", "domain", "id", "line", "n_turns", "path", "system", "tools")

    id: str
    domain: str
    system: str | None
    tools: tuple[ToolSpec, ...]
    n_turns: int
    path: str
    line: int
    _turns: bytes

    def __init__(
        self,
        *,
        id: str,
        tools: Sequence[ToolSpec],
        turns: Sequence[SuiteTurn],
        domain: str = "",
        system: str | None = None,
        path: str = "",
        line: int = 0,
    ):
        if not turns:
            raise ValueError("a dialogue needs at least one turn")
        values = {
            "id": id,
            "domain": domain,
            "system": system,
            "tools": tools if isinstance(tools, tuple) else tuple(tools),
            "n_turns": len(turns),
            "path": path,
            "line": line,
            "_turns": _pack_turns(turns),
        }
        for name, value in values.items():
            object.__setattr__(self, name, value)

    @property
    def turns(self) -> list[SuiteTurn]:
        """The turns, decoded afresh on each access (changing them does not change the dialogue)."""
        return [SuiteTurn.model_validate(turn) for turn in json.loads(self._turns.decode("utf-8", "surrogatepass"))]

    def replace(self, **changes: Any) -> SuiteDialogue:
        """Return a copy with some fields changed (any of the constructor's keywords)."""
        unknown = set(changes) - _DIALOGUE_FIELDS
        if unknown:
            raise TypeError(f"SuiteDialogue has no field {sorted(unknown)[0]!r}")
        if "turns" in changes:
            fields = {name: getattr(self, name) for name in _DIALOGUE_FIELDS if name != "turns"}
            return SuiteDialogue(**{**fields, **changes})
        # Same turns: keep the packed form instead of decoding and encoding it again.
        changed = object.__new__(SuiteDialogue)
        for name in self.__slots__:
            object.__setattr__(changed, name, getattr(self, name))
        for name, value in changes.items():
            object.__setattr__(changed, name, tuple(value) if name == "tools" else value)
        return changed

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"SuiteDialogue is read-only (use replace(...) to change {name!r})")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SuiteDialogue):
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in self.__slots__)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"SuiteDialogue(id={self.id!r}, tools={len(self.tools)}, turns={self.n_turns}, path={self.path!r})"


_DIALOGUE_FIELDS = frozenset({"id", "domain", "system", "tools", "turns", "path", "line"})


def _pack_turns(turns: Sequence[SuiteTurn]) -> bytes:
    """Encode turns as compact JSON (defaults left out); about the size of the file's own text."""
    try:
        data = [turn.model_dump(mode="json", exclude_defaults=True) for turn in turns]
        text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError) as exc:  # PydanticSerializationError is a ValueError
        raise ValueError(f"dialogue turns must hold JSON values: {exc}") from None
    return text.encode("utf-8", "surrogatepass")


def builtin_suite_path() -> Path:
    """Return the path of the packaged sample suite (``toolgauge/benchmarks/suite/data/sample.jsonl``)."""
    resource = resources.files("toolgauge.benchmarks.suite") / "data" / "sample.jsonl"
    # Installed as plain files (wheel or editable), so the resource is a real path.
    return Path(str(resource))


BUILTIN_SUITE: Path = builtin_suite_path()


def call_id(turn_index: int, call_index: int) -> str:
    """Return the deterministic id of expected call ``call_index`` of turn ``turn_index``."""
    return f"call_{turn_index}_{call_index}"


def turn_history(dialogue: SuiteDialogue, turn_index: int) -> list[Message]:
    """Return the messages the model sees when asked for turn ``turn_index``.

    The system prompt (when non-empty), then every earlier turn replayed from gold: the user
    message; an assistant message carrying the expected calls as ``tool_calls`` (ids from
    :func:`call_id`); one tool message per call with its result; the gold assistant reply.
    Last comes the current user message.

    Raises:
        IndexError: ``turn_index`` is not a turn of the dialogue.
    """
    if not 0 <= turn_index < dialogue.n_turns:
        raise IndexError(f"dialogue {dialogue.id!r} has {dialogue.n_turns} turns; no turn {turn_index}")
    return next(messages for index, (_, messages) in enumerate(turn_histories(dialogue)) if index == turn_index)


def turn_histories(dialogue: SuiteDialogue) -> Iterator[tuple[SuiteTurn, list[Message]]]:
    """Yield every turn with the messages of :func:`turn_history` for it, decoding the turns once.

    Each message list is a new list; the messages in it are shared with the later lists.
    """
    replayed: list[Message] = []
    if dialogue.system:
        replayed.append(Message(role="system", content=dialogue.system))
    for index, turn in enumerate(dialogue.turns):
        yield turn, [*replayed, Message(role="user", content=turn.user)]
        replayed.append(Message(role="user", content=turn.user))
        if turn.expected_calls:
            calls = [
                call.model_copy(update={"id": call_id(index, k)}, deep=True)
                for k, call in enumerate(turn.expected_calls)
            ]
            replayed.append(Message(role="assistant", content=None, tool_calls=calls))
            replayed.extend(
                Message(role="tool", content=result, tool_call_id=call.id, name=call.name)
                for call, result in zip(calls, turn.tool_results, strict=True)
            )
        if turn.assistant is not None:
            replayed.append(Message(role="assistant", content=turn.assistant))


def load_suite(path: Path) -> list[SuiteDialogue]:
    """Read and validate a suite file.

    Blank lines are skipped; every other line must be one dialogue object. The file is read line
    by line, and dialogues with the same tool list share one tuple of tools.

    Raises:
        DataError: the file cannot be read, is empty, or a line is not a valid dialogue
            (malformed JSON, missing/mistyped/unknown field, duplicate id, unknown tool,
            arguments that break the tool's schema, one tool result per call...).
    """
    shown = str(path)
    dialogues: list[SuiteDialogue] = []
    ids = UniqueIds(shown, what="dialogue id", first="first used on line")
    known_tools = _ToolLists()
    for number, raw, last_line in _content_lines(_read_lines(path, shown)):
        try:
            dialogue = _parse_dialogue(raw, shown, number, known_tools, last_line=last_line)
        except _Problem as problem:
            raise DataError(shown, problem.message, line=number, field=problem.field) from None
        ids.add(dialogue.id, number)
        dialogues.append(dialogue)
    if not dialogues:
        raise DataError(shown, "no dialogues: the file is empty")
    return dialogues


def _read_lines(path: Path, shown: str) -> Iterator[tuple[int, str]]:
    """Yield ``(line number, text)`` of a UTF-8 file one line at a time (a leading BOM is dropped).

    Lines end at a line feed only (U+2028 may sit inside a JSON string) and lose a trailing
    carriage return.
    Errors read as :func:`toolgauge.jsonl.read_text`'s do.
    """
    left = max_input_bytes()
    with open_input(path) as handle:
        number = 0
        while True:
            try:
                data = handle.readline(left + 1)  # the input limit holds for a file that grows while read
            except OSError as exc:
                raise DataError(shown, f"cannot read the file: {exc.strerror or exc}") from None
            if not data:
                return
            left -= len(data)
            if left < 0:
                raise DataError(shown, too_large(max_input_bytes()))
            number += 1
            if number == 1:
                data = data.removeprefix(codecs.BOM_UTF8)
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                raise DataError(shown, "not valid UTF-8 text (binary file?)", line=number) from None
            if "\x00" in text:  # valid UTF-8 can still be binary: NUL never occurs in JSON or text data
                raise DataError(shown, "contains NUL bytes (binary file?)", line=number)
            yield number, text.removesuffix("\n").removesuffix("\r")


def _content_lines(lines: Iterator[tuple[int, str]]) -> Iterator[tuple[int, str, bool]]:
    """The non-blank lines, each with whether it is the last one (one line read ahead, so still streaming)."""
    held: tuple[int, str] | None = None
    for number, text in lines:
        if not text.strip():
            continue
        if held is not None:
            yield *held, False
        held = (number, text)
    if held is not None:
        yield *held, True


class _ToolLists:
    """Tool lists already parsed in this file, by their JSON text (the last few hundred)."""

    limit = 256

    def __init__(self) -> None:
        self._by_text: OrderedDict[str, tuple[ToolSpec, ...]] = OrderedDict()

    def get(self, text: str) -> tuple[ToolSpec, ...] | None:
        tools = self._by_text.get(text)
        if tools is not None:
            self._by_text.move_to_end(text)
        return tools

    def put(self, text: str, tools: tuple[ToolSpec, ...]) -> None:
        self._by_text[text] = tools
        if len(self._by_text) > self.limit:
            self._by_text.popitem(last=False)


# --- reading and parsing ---------------------------------------------------------------------


class _Problem(Exception):
    """A problem on the current line; ``load_suite`` adds the path and line number."""

    def __init__(self, field: str | None, message: str):
        super().__init__(message)
        self.field = field
        self.message = message


def _reject_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _Problem(None, f"malformed JSON: key {key!r} appears twice in one object")
        result[key] = value
    return result


# The shapes a line may have. Each level is validated on its own so an unknown-field error can
# list the fields that level allows.


class _FileModel(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class _FileDialogue(_FileModel):
    id: str = Field(min_length=1)
    domain: str = ""
    system: str | None = None
    tools: list[dict[str, Any]]
    turns: list[dict[str, Any]] = Field(min_length=1)


class _FileTool(_FileModel):
    type: str
    function: dict[str, Any]


class _FileFunction(_FileModel):
    name: str
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})


class _FileTurn(_FileModel):
    user: str = Field(min_length=1)
    expected_calls: list[dict[str, Any]]
    tool_results: list[str] = Field(default_factory=list)
    assistant: str | None = None


class _FileCall(_FileModel):
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


_M = TypeVar("_M", bound=_FileModel)

_EXPECTED_BY_ERROR = {
    "string_type": "a string",
    "int_type": "an integer",
    "bool_type": "a boolean",
    "dict_type": "an object",
    "list_type": "an array",
    "model_type": "an object",
}


def _field(prefix: str, *parts: str | int) -> str:
    """Join a field path: ``_field("turns[0]", "expected_calls", 1)`` -> ``turns[0].expected_calls[1]``."""
    text = prefix
    for part in parts:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text = f"{text}.{part}" if text else part
    return text


def _validate(model: type[_M], data: dict[str, Any], prefix: str) -> _M:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        error = reported_error(exc)
        where = _field(prefix, *error["loc"])
        kind = error["type"]
        if kind == "missing":
            message = "missing required field"
        elif kind == "extra_forbidden":
            message = unknown_field(str(error["loc"][-1]), model.model_fields)
        elif kind in ("too_short", "string_too_short"):
            message = "must not be empty"
        elif kind in _EXPECTED_BY_ERROR:
            message = f"expected {_EXPECTED_BY_ERROR[kind]}, got {json_type(error['input'])}"
        else:
            message = str(error["msg"])
        raise _Problem(where, message) from None


def _parse_dialogue(raw: str, path: str, line: int, known_tools: _ToolLists, *, last_line: bool) -> SuiteDialogue:
    try:
        data = parse_json(raw, object_pairs_hook=_reject_duplicate_keys)
    except JsonProblem as problem:
        message = jsonl_line_problem(problem, raw, last=last_line)
        raise _Problem(None, message.replace("invalid JSON", "malformed JSON", 1)) from None
    if not isinstance(data, dict):
        raise _Problem(None, f"expected a JSON object (one dialogue per line), got {json_type(data)}")
    dialogue = _validate(_FileDialogue, data, "")

    # Suites repeat a few tool lists over many dialogues: parse each once and share the records.
    tools_text = json.dumps(dialogue.tools)
    shared = known_tools.get(tools_text)
    tools: dict[str, ToolSpec] = {}
    if shared is None:
        for index, entry in enumerate(dialogue.tools):
            tool, name_field = _parse_tool(entry, f"tools[{index}]")
            if tool.name in tools:
                raise _Problem(name_field, f"duplicate tool name {tool.name!r}")
            tools[tool.name] = tool
        shared = tuple(tools.values())
        known_tools.put(tools_text, shared)
    else:
        tools = {tool.name: tool for tool in shared}

    last = len(dialogue.turns) - 1
    turns = [
        _parse_turn(entry, f"turns[{index}]", tools, is_last=index == last)
        for index, entry in enumerate(dialogue.turns)
    ]
    return SuiteDialogue(
        id=dialogue.id,
        domain=sys.intern(dialogue.domain),
        system=None if dialogue.system is None else sys.intern(dialogue.system),
        tools=shared,
        turns=turns,
        path=path,
        line=line,
    )


# OpenAI's rule for function names; suites are sent to OpenAI-compatible endpoints as they are.
_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


def _parse_tool(entry: dict[str, Any], prefix: str) -> tuple[ToolSpec, str]:
    """Accept the OpenAI form ``{"type": "function", "function": {...}}`` or the bare function."""
    if "function" in entry or "type" in entry:
        wrapper = _validate(_FileTool, entry, prefix)
        if wrapper.type != "function":
            raise _Problem(_field(prefix, "type"), f"expected 'function', got {wrapper.type!r}")
        prefix = _field(prefix, "function")
        function = _validate(_FileFunction, wrapper.function, prefix)
    else:
        function = _validate(_FileFunction, entry, prefix)
    name_field = _field(prefix, "name")
    if not _TOOL_NAME.fullmatch(function.name):
        raise _Problem(name_field, f"{function.name!r} is not a valid tool name (1-64 of A-Z a-z 0-9 _ -)")
    parameters_field = _field(prefix, "parameters")
    _check_schema(function.parameters, parameters_field)
    if function.parameters.get("type") != "object":
        raise _Problem(parameters_field, 'tool parameters must be an object schema ("type": "object")')
    spec = ToolSpec(name=function.name, description=function.description, parameters=function.parameters)
    return spec, name_field


def _parse_turn(entry: dict[str, Any], prefix: str, tools: dict[str, ToolSpec], *, is_last: bool) -> SuiteTurn:
    turn = _validate(_FileTurn, entry, prefix)
    calls: list[ToolCall] = []
    for index, call_entry in enumerate(turn.expected_calls):
        call_prefix = _field(prefix, "expected_calls", index)
        call = _validate(_FileCall, call_entry, call_prefix)
        tool = tools.get(call.name)
        if tool is None:
            known = ", ".join(tools) or "none"
            raise _Problem(_field(call_prefix, "name"), f"no tool named {call.name!r} in tools (known: {known})")
        _check_value(call.arguments, tool.parameters, _field(call_prefix, "arguments"))
        calls.append(ToolCall(name=call.name, arguments=call.arguments))
    if len(turn.tool_results) != len(calls):
        raise _Problem(
            _field(prefix, "tool_results"),
            f"has {len(turn.tool_results)} entries but expected_calls has {len(calls)} "
            "(one result per expected call, in the same order)",
        )
    if turn.assistant is None and not is_last:
        raise _Problem(_field(prefix, "assistant"), "required on every turn but the last (it is replayed as history)")
    return SuiteTurn(user=turn.user, expected_calls=calls, tool_results=turn.tool_results, assistant=turn.assistant)


# --- the JSON-Schema subset ------------------------------------------------------------------

_TYPES = ("object", "array", "string", "integer", "number", "boolean", "null")
_CONSTRAINTS = (
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "enum",
    "minimum",
    "maximum",
)
# Accepted and ignored: they describe, they do not constrain ("format" is not asserted).
_ANNOTATIONS = ("description", "title", "default", "examples", "format")


def _check_schema(schema: Any, where: str) -> None:
    """Reject a schema that uses keywords or shapes outside the supported subset."""
    if not isinstance(schema, dict):
        raise _Problem(where, f"expected a JSON-Schema object, got {json_type(schema)}")
    for keyword in schema:
        if keyword not in _CONSTRAINTS and keyword not in _ANNOTATIONS:
            raise _Problem(
                _field(where, keyword),
                f"unsupported JSON-Schema keyword (supported: {', '.join(_CONSTRAINTS + _ANNOTATIONS)})",
            )
    if "type" in schema:
        kinds = schema["type"]
        names = [kinds] if isinstance(kinds, str) else kinds
        if not isinstance(names, list) or not names or any(name not in _TYPES for name in names):
            raise _Problem(_field(where, "type"), f"expected one of {', '.join(_TYPES)} (or a list of them)")
    properties = schema.get("properties", {})
    if not isinstance(properties, dict):
        raise _Problem(_field(where, "properties"), f"expected an object, got {json_type(properties)}")
    for name, sub in properties.items():
        _check_schema(sub, _field(where, "properties", name))
    required = schema.get("required", [])
    if not isinstance(required, list) or not all(isinstance(name, str) for name in required):
        raise _Problem(_field(where, "required"), "expected an array of property names")
    for name in required:
        if name not in properties:
            raise _Problem(_field(where, "required"), f"{name!r} is not in properties")
    extra = schema.get("additionalProperties", False)
    if not isinstance(extra, bool):
        _check_schema(extra, _field(where, "additionalProperties"))
    if "items" in schema:
        _check_schema(schema["items"], _field(where, "items"))
    for bound in ("minimum", "maximum"):
        if bound in schema and json_type(schema[bound]) not in ("integer", "number"):
            raise _Problem(_field(where, bound), f"expected a number, got {json_type(schema[bound])}")
    if "enum" in schema:
        options = schema["enum"]
        if not isinstance(options, list) or not options:
            raise _Problem(_field(where, "enum"), "expected a non-empty array of allowed values")
        if "type" in schema:
            for index, option in enumerate(options):
                _check_value(option, {"type": schema["type"]}, _field(where, "enum", index))


def _is_type(value: Any, name: str) -> bool:
    if name == "integer":
        # JSON Schema counts 3.0 as an integer; booleans are never numbers.
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, float) and value.is_integer()
        )
    if name == "number":
        return json_type(value) in ("integer", "number")
    return json_type(value) == name


def _same_json(left: Any, right: Any) -> bool:
    # Python says True == 1; JSON does not.
    return isinstance(left, bool) == isinstance(right, bool) and bool(left == right)


def _check_value(value: Any, schema: dict[str, Any], where: str) -> None:
    """Check a JSON value against a schema already accepted by :func:`_check_schema`."""
    if "type" in schema:
        names = [schema["type"]] if isinstance(schema["type"], str) else schema["type"]
        if not any(_is_type(value, name) for name in names):
            raise _Problem(where, f"expected {' or '.join(names)}, got {json_type(value)}")
    if "enum" in schema and not any(_same_json(value, option) for option in schema["enum"]):
        allowed = ", ".join(json.dumps(option) for option in schema["enum"])
        raise _Problem(where, f"{json.dumps(value)} is not one of the allowed values ({allowed})")
    if json_type(value) in ("integer", "number"):
        if "minimum" in schema and value < schema["minimum"]:
            raise _Problem(where, f"{value} is below the minimum {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            raise _Problem(where, f"{value} is above the maximum {schema['maximum']}")
    if isinstance(value, dict):
        _check_object(value, schema, where)
    if isinstance(value, list) and "items" in schema:
        for index, item in enumerate(value):
            _check_value(item, schema["items"], _field(where, index))


def _check_object(value: dict[str, Any], schema: dict[str, Any], where: str) -> None:
    properties: dict[str, Any] = schema.get("properties", {})
    for name in schema.get("required", []):
        if name not in value:
            raise _Problem(_field(where, name), "missing (required by the tool's schema)")
    # Unlike plain JSON Schema, an absent additionalProperties closes an object that lists its
    # properties: an expected argument the tool does not declare is an authoring mistake.
    extra = schema.get("additionalProperties", "properties" not in schema)
    for name, item in value.items():
        if name in properties:
            _check_value(item, properties[name], _field(where, name))
        elif extra is False:
            known = ", ".join(properties) or "none"
            raise _Problem(_field(where, name), f"not a property of the schema (known: {known})")
        elif isinstance(extra, dict):
            _check_value(item, extra, _field(where, name))
