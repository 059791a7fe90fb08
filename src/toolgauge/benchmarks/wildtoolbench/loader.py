"""Read WildToolBench sessions: the official ``Wild-Tool-Bench.jsonl`` and toolgauge's own session format.

Each line of a file is one session, in either format (told apart line by line):

- **official**: ``id``, ``english_env_info``, ``english_tools``, ``english_tasks``, ``english_answer_list``,
  ``english_task_types``, ``english_turn_subtypes`` and the Chinese counterparts without the prefix;
  ``language`` picks which half is read. Task types and subtypes are labels, so both languages read the
  ``english_`` lists (as the official scorer does) and fall back to the unprefixed ones.
- **toolgauge**: ``{"id", "language"?, "env_info", "tools", "tasks": [{"user", "type", "subtype"?, "calls":
  [...], "answer"}]}``. A call is ``{"name", "arguments", "observation", "after"?}`` or a clarifying
  question ``{"clarify", "user_input", "after"?}``; ``after`` lists the 0-based indices of earlier entries
  of ``calls`` that must come first; ``answer`` is the final reply, which becomes the
  ``prepare_to_answer`` node after every entry nothing else waits for. ``docs/datasets.md`` is the reference.

Every problem is one :class:`~toolgauge.errors.DataError` naming the file, line and field.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from toolgauge.benchmarks.wildtoolbench.graph import PSEUDO_ANSWER, PSEUDO_CLARIFY, PSEUDO_TOOLS, CallGraph, GraphError
from toolgauge.benchmarks.wildtoolbench.records import (
    MAX_TASKS,
    TASK_TYPES,
    TURN_SUBTYPES,
    Language,
    TaskType,
    TurnSubtype,
    WildAction,
    WildNode,
    WildSession,
    WildTask,
)
from toolgauge.errors import DataError
from toolgauge.jsonl import JsonProblem, jsonl_values, parse_json, read_text
from toolgauge.unknown_fields import unknown_field

__all__ = ["builtin_wild_path", "load_wild", "parse_session"]


def builtin_wild_path() -> Path:
    """Return the packaged sample sessions (``toolgauge/benchmarks/wildtoolbench/data/wild_sample.jsonl``)."""
    return Path(str(resources.files("toolgauge.benchmarks.wildtoolbench") / "data" / "wild_sample.jsonl"))


def load_wild(path: Path, language: Language = "en") -> list[WildSession]:
    """Read and validate a session file in either format.

    Args:
        path: a JSONL file, one session per line (blank lines skipped).
        language: which half of official-format lines to read; toolgauge-format lines carry their own.

    Raises:
        DataError: unreadable or empty file, malformed JSON, a missing or mistyped field, an unknown task
            type or subtype, list lengths that disagree, a cyclic or dangling ``dependency_list``, a
            pseudo-tool misused, a gold call to a tool the session does not offer, or a duplicate id.
    """
    shown = str(path)
    sessions: list[WildSession] = []
    first_line: dict[str, int] = {}
    for number, obj in jsonl_values(read_text(path), shown):
        try:
            session = parse_session(obj, language)
        except _Problem as problem:
            raise DataError(shown, problem.message, line=number, field=problem.field) from None
        if session.id in first_line:
            raise DataError(
                shown, f"duplicate session id {session.id!r} (first on line {first_line[session.id]})", line=number,
                field="id",
            )  # fmt: skip
        first_line[session.id] = number
        sessions.append(session)
    if not sessions:
        raise DataError(shown, "no sessions: the file is empty")
    return sessions


def parse_session(obj: Any, language: Language = "en") -> WildSession:
    """Validate one decoded line (either format) into a session.

    Raises:
        _Problem: what is wrong and where (``load_wild`` adds the path and line).
    """
    if not isinstance(obj, dict):
        raise _Problem(None, f"expected a JSON object, got {_kind(obj)}")
    if "english_tasks" in obj or "answer_list" in obj or "english_answer_list" in obj:
        return _official_session(obj, language)
    return _toolgauge_session(obj)


# --- errors and small typed readers ------------------------------------------------------------------


class _Problem(Exception):
    """A problem on the current line; ``load_wild`` adds the path and line number."""

    def __init__(self, field: str | None, message: str):
        super().__init__(message)
        self.field = field
        self.message = message


def _kind(value: Any) -> str:
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}
    for typ, name in names.items():
        if type(value) is typ:
            return name
    return "a number"


def _get(obj: dict[str, Any], key: str, field: str) -> Any:
    if key not in obj:
        raise _Problem(field, "missing")
    return obj[key]


def _text(value: Any, field: str, *, allow_empty: bool = False) -> str:
    if not isinstance(value, str):
        raise _Problem(field, f"must be a string, got {_kind(value)}")
    if not allow_empty and not value.strip():
        raise _Problem(field, "must not be empty")
    return value


def _list(value: Any, field: str) -> list[Any]:
    if not isinstance(value, list):
        raise _Problem(field, f"must be a list, got {_kind(value)}")
    return value


def _object(value: Any, field: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _Problem(field, f"must be an object, got {_kind(value)}")
    return value


def _arguments(value: Any, field: str) -> dict[str, Any]:
    # The official data may hold arguments as a JSON string; decode it so both shapes compare alike.
    if isinstance(value, str):
        try:
            value = parse_json(value) if value.strip() else {}
        except JsonProblem as problem:
            raise _Problem(
                field, f"a string that is not JSON: {problem.message.removeprefix('invalid JSON: ')}"
            ) from None
    return _object(value, field)


def _index_list(value: Any, field: str) -> list[int]:
    items = _list(value, field)
    for k, item in enumerate(items):
        if isinstance(item, bool) or not isinstance(item, int):
            raise _Problem(f"{field}[{k}]", f"must be a node index (an integer), got {_kind(item)}")
    return list(items)


def _task_type(value: Any, field: str) -> TaskType:
    for known in TASK_TYPES:
        if value == known:
            return known
    raise _Problem(field, f"unknown task type {value!r} (known: {', '.join(TASK_TYPES)})")


def _subtype(value: Any, field: str) -> TurnSubtype:
    for known in TURN_SUBTYPES:
        if value == known:
            return known
    raise _Problem(field, f"unknown turn subtype {value!r} (known: {', '.join(TURN_SUBTYPES)})")


def _float_to_number(value: Any) -> Any:
    """The official ``"type": "float"`` -> ``"number"`` rewrite, applied to every schema object."""
    if isinstance(value, dict):
        return {k: ("number" if k == "type" and v == "float" else _float_to_number(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [_float_to_number(v) for v in value]
    return value


def _tools(value: Any, field: str) -> list[dict[str, Any]]:
    """Tools in OpenAI shape; bare ``{"name", "description", "parameters"}`` entries are wrapped."""
    items = _list(value, field)
    if not items:
        raise _Problem(field, "a session needs at least one tool")
    tools: list[dict[str, Any]] = []
    seen: set[str] = set()
    for k, item in enumerate(items):
        where = f"{field}[{k}]"
        entry = _object(item, where)
        if "function" in entry:
            fn = _object(entry["function"], f"{where}.function")
            where = f"{where}.function"
        else:
            fn = entry
        name = _text(_get(fn, "name", f"{where}.name"), f"{where}.name")
        if name in PSEUDO_TOOLS:
            raise _Problem(f"{where}.name", f"{name!r} is a pseudo-tool of the benchmark and cannot be a real tool")
        if name in seen:
            raise _Problem(f"{where}.name", f"tool {name!r} is listed twice")
        seen.add(name)
        description = fn.get("description", "")
        if not isinstance(description, str):
            raise _Problem(f"{where}.description", f"must be a string, got {_kind(description)}")
        parameters = fn.get("parameters", {"type": "object", "properties": {}})
        _object(parameters, f"{where}.parameters")
        tools.append(
            {
                "type": "function",
                "function": {"name": name, "description": description, "parameters": _float_to_number(parameters)},
            }
        )
    return tools


# --- the official format -----------------------------------------------------------------------------


def _official_session(obj: dict[str, Any], language: Language) -> WildSession:
    prefix = "english_" if language == "en" else ""
    session_id = _text(_get(obj, "id", "id"), "id")
    env_info = _text(_get(obj, f"{prefix}env_info", f"{prefix}env_info"), f"{prefix}env_info", allow_empty=True)
    tools = _tools(_get(obj, f"{prefix}tools", f"{prefix}tools"), f"{prefix}tools")
    tasks_field, answers_field = f"{prefix}tasks", f"{prefix}answer_list"
    texts = _list(_get(obj, tasks_field, tasks_field), tasks_field)
    answers = _list(_get(obj, answers_field, answers_field), answers_field)
    types_field = "english_task_types" if "english_task_types" in obj else "task_types"
    subtypes_field = "english_turn_subtypes" if "english_turn_subtypes" in obj else "turn_subtypes"
    types = _list(_get(obj, types_field, types_field), types_field)
    subtypes = _list(_get(obj, subtypes_field, subtypes_field), subtypes_field)
    n = len(texts)
    if not 1 <= n <= MAX_TASKS:
        raise _Problem(tasks_field, f"has {n} tasks; a session has 1 to {MAX_TASKS}")
    _same_length(answers, n, answers_field, tasks_field)
    _same_length(types, n, types_field, tasks_field)
    if len(subtypes) != n - 1:
        raise _Problem(subtypes_field, f"has {len(subtypes)} entries; expected {n - 1} (one per task after the first)")
    names = [t["function"]["name"] for t in tools]
    tasks: list[WildTask] = []
    for t, (text, answer) in enumerate(zip(texts, answers, strict=True)):
        user = _text(text, f"{tasks_field}[{t}]")
        nodes_field = f"{answers_field}[{t}]"
        raw_nodes = _list(answer, nodes_field)
        nodes = [_official_node(item, f"{nodes_field}[{k}]") for k, item in enumerate(raw_nodes)]
        _check_task(nodes, names, _official_field(nodes_field), nodes_field)
        tasks.append(WildTask(user=user, nodes=nodes))
    return WildSession(
        id=session_id,
        language=language,
        env_info=env_info,
        tools=tools,
        tasks=tasks,
        task_types=[_task_type(v, f"{types_field}[{k}]") for k, v in enumerate(types)],
        turn_subtypes=[_subtype(v, f"{subtypes_field}[{k}]") for k, v in enumerate(subtypes)],
    )


def _official_field(nodes_field: str) -> Callable[[int, str], str]:
    def field_of(k: int, sub: str) -> str:
        return f"{nodes_field}[{k}].{sub}" if sub else f"{nodes_field}[{k}]"

    return field_of


def _same_length(items: Sequence[Any], n: int, field: str, other: str) -> None:
    if len(items) != n:
        raise _Problem(field, f"has {len(items)} entries but {other} has {n}")


def _official_node(item: Any, field: str) -> WildNode:
    node = _object(item, field)
    action = _object(_get(node, "action", f"{field}.action"), f"{field}.action")
    name = _text(_get(action, "name", f"{field}.action.name"), f"{field}.action.name")
    arguments = _arguments(action.get("arguments", {}), f"{field}.action.arguments")
    if "observation" not in node:
        raise _Problem(f"{field}.observation", "missing")
    deps = _index_list(_get(node, "dependency_list", f"{field}.dependency_list"), f"{field}.dependency_list")
    user_input = node.get("user_input")
    if user_input is not None:
        user_input = _text(user_input, f"{field}.user_input", allow_empty=True)
    return WildNode(
        action=WildAction(name=name, arguments=arguments),
        observation=node["observation"],
        dependency_list=deps,
        user_input=user_input,
    )


# --- toolgauge's session format ----------------------------------------------------------------------

_SESSION_KEYS = {"id", "language", "env_info", "tools", "tasks"}
_TASK_KEYS = {"user", "type", "subtype", "calls", "answer"}
_CALL_KEYS = {"name", "arguments", "observation", "after"}
_CLARIFY_KEYS = {"clarify", "user_input", "after"}


def _no_unknown_keys(obj: dict[str, Any], allowed: set[str], field: str | None) -> None:
    unknown = sorted(set(obj) - allowed)
    if unknown:
        where = f"{field}.{unknown[0]}" if field else unknown[0]
        raise _Problem(where, unknown_field(unknown[0], sorted(allowed)))


def _toolgauge_session(obj: dict[str, Any]) -> WildSession:
    _no_unknown_keys(obj, _SESSION_KEYS, None)
    session_id = _text(_get(obj, "id", "id"), "id")
    language = obj.get("language", "en")
    if language not in ("en", "zh"):
        raise _Problem("language", f'must be "en" or "zh", got {language!r}')
    env_info = _text(_get(obj, "env_info", "env_info"), "env_info", allow_empty=True)
    tools = _tools(_get(obj, "tools", "tools"), "tools")
    raw_tasks = _list(_get(obj, "tasks", "tasks"), "tasks")
    if not 1 <= len(raw_tasks) <= MAX_TASKS:
        raise _Problem("tasks", f"has {len(raw_tasks)} tasks; a session has 1 to {MAX_TASKS}")
    names = [t["function"]["name"] for t in tools]
    tasks: list[WildTask] = []
    types: list[TaskType] = []
    subtypes: list[TurnSubtype] = []
    for t, raw in enumerate(raw_tasks):
        where = f"tasks[{t}]"
        task = _object(raw, where)
        _no_unknown_keys(task, _TASK_KEYS, where)
        user = _text(_get(task, "user", f"{where}.user"), f"{where}.user")
        types.append(_task_type(_get(task, "type", f"{where}.type"), f"{where}.type"))
        subtype = task.get("subtype")
        if t == 0:
            if subtype is not None:
                raise _Problem(f"{where}.subtype", "the first task has no subtype (leave it out)")
        else:
            subtypes.append(_subtype(_get(task, "subtype", f"{where}.subtype"), f"{where}.subtype"))
        calls = _list(task.get("calls", []), f"{where}.calls")
        nodes = [_toolgauge_node(item, f"{where}.calls[{k}]") for k, item in enumerate(calls)]
        answer = _text(_get(task, "answer", f"{where}.answer"), f"{where}.answer")
        waited_for = {d for node in nodes for d in node.dependency_list}
        sinks = [k for k in range(len(nodes)) if k not in waited_for]
        has_tools = any(node.action.name != PSEUDO_CLARIFY for node in nodes)
        nodes.append(
            WildNode(
                action=WildAction(name=PSEUDO_ANSWER, arguments={"answer_type": "tool" if has_tools else "chat"}),
                observation=answer,
                dependency_list=sinks,
            )
        )
        _check_task(nodes, names, _toolgauge_field(where, nodes), f"{where}.calls")
        tasks.append(WildTask(user=user, nodes=nodes))
    return WildSession(
        id=session_id,
        language=language,
        env_info=env_info,
        tools=tools,
        tasks=tasks,
        task_types=types,
        turn_subtypes=subtypes,
    )


def _toolgauge_field(task_field: str, nodes: list[WildNode]) -> Callable[[int, str], str]:
    """Name a node's field in the file's own terms (the last node is the task's ``answer``)."""
    last = len(nodes) - 1
    renames = {"action.name": "name", "dependency_list": "after", "action.arguments": "arguments"}

    def field_of(k: int, sub: str) -> str:
        if k == last:
            return f"{task_field}.answer"
        if sub == "observation" and nodes[k].action.name == PSEUDO_CLARIFY:
            sub = "clarify"
        sub = renames.get(sub, sub)
        return f"{task_field}.calls[{k}].{sub}" if sub else f"{task_field}.calls[{k}]"

    return field_of


def _toolgauge_node(item: Any, field: str) -> WildNode:
    call = _object(item, field)
    after = _index_list(call.get("after", []), f"{field}.after")
    if "clarify" in call:
        _no_unknown_keys(call, _CLARIFY_KEYS, field)
        question = _text(call["clarify"], f"{field}.clarify")
        reply = _text(_get(call, "user_input", f"{field}.user_input"), f"{field}.user_input")
        return WildNode(
            action=WildAction(name=PSEUDO_CLARIFY, arguments={}),
            observation=question,
            dependency_list=after,
            user_input=reply,
        )
    _no_unknown_keys(call, _CALL_KEYS, field)
    name = _text(_get(call, "name", f"{field}.name"), f"{field}.name")
    if name in PSEUDO_TOOLS:
        raise _Problem(f"{field}.name", f'write {name!r} as a task\'s "answer" or a {{"clarify", "user_input"}} entry')
    if "observation" not in call:
        raise _Problem(f"{field}.observation", "missing (what the tool returned)")
    return WildNode(
        action=WildAction(name=name, arguments=_arguments(call.get("arguments", {}), f"{field}.arguments")),
        observation=call["observation"],
        dependency_list=after,
    )


# --- checks shared by both formats -------------------------------------------------------------------


def _check_task(nodes: list[WildNode], tools: list[str], field_of: Callable[[int, str], str], list_field: str) -> None:
    """Names, pseudo-tool rules and the dependency graph of one task's gold nodes."""
    if not nodes:
        raise _Problem(list_field, "a task needs at least one node (its final answer)")
    offered = set(tools)
    answers = [k for k, node in enumerate(nodes) if node.action.name == PSEUDO_ANSWER]
    for k, node in enumerate(nodes):
        name = node.action.name
        if name == PSEUDO_CLARIFY:
            if node.user_input is None or not node.user_input.strip():
                raise _Problem(field_of(k, "user_input"), "a clarifying question needs the user's reply")
            if not isinstance(node.observation, str) or not node.observation.strip():
                raise _Problem(field_of(k, "observation"), "a clarifying question's observation must be its text")
        elif name == PSEUDO_ANSWER:
            if not isinstance(node.observation, str):
                raise _Problem(field_of(k, "observation"), "the final answer's observation must be its text")
        elif name not in offered:
            raise _Problem(field_of(k, "action.name"), f"gold call to {name!r}, which is not among the session's tools")
    if len(answers) != 1:
        raise _Problem(list_field, f"needs exactly one {PSEUDO_ANSWER} node, found {len(answers)}")
    try:
        CallGraph.build([n.action.name for n in nodes], [n.dependency_list for n in nodes])
    except GraphError as exc:
        sub = {"name": "action.name", "answer_list": ""}.get(exc.field, exc.field)
        raise _Problem(list_field if exc.node is None else field_of(exc.node, sub), exc.message) from None
    answer = answers[0]
    dependents = [k for k, node in enumerate(nodes) if answer in node.dependency_list]
    if dependents:
        raise _Problem(
            field_of(dependents[0], "dependency_list"), f"waits for {PSEUDO_ANSWER}, which must be the last step"
        )
    before = [_ancestors(nodes, k) for k in range(len(nodes))]
    missing = [k for k in range(len(nodes)) if k != answer and k not in before[answer]]
    if missing:
        raise _Problem(
            field_of(answer, "dependency_list"),
            f"{PSEUDO_ANSWER} must come after every other node; node {missing[0]} is not before it",
        )
    # The official loop asserts that a clarifying step holds the question alone, so no other node may be
    # able to run in the same step: each must come before or after it.
    for k, node in enumerate(nodes):
        if node.action.name != PSEUDO_CLARIFY:
            continue
        loose = [j for j in range(len(nodes)) if j != k and j not in before[k] and k not in before[j]]
        if loose:
            raise _Problem(
                field_of(k, "dependency_list"),
                f"node {loose[0]} could run in the same step as this clarifying question; make one wait for the other",
            )


def _ancestors(nodes: list[WildNode], start: int) -> set[int]:
    seen: set[int] = set()
    todo = list(nodes[start].dependency_list)
    while todo:
        k = todo.pop()
        if k not in seen and 0 <= k < len(nodes):
            seen.add(k)
            todo.extend(nodes[k].dependency_list)
    return seen
