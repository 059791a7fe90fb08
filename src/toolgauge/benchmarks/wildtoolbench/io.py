"""WildToolBench recorded outputs: the step JSONL format, and the official result file (read and write).

Step JSONL, one line per model step::

    {"session": "<id>", "task": <0-based task index>, "step": <0-based step within the task>,
     "content": <string or null>, "tool_calls": [{"name": "...", "arguments": {...} or "<JSON text>"}]}

A missing ``(session, task, step)`` means the model returned nothing at that step. The table read here
is keyed by session, then ``(task, step)``; :mod:`toolgauge.benchmarks.wildtoolbench.protocol` turns it
into the per-sample list of turns the engine's ``ReplayClient`` serves by running step (see
``WildBenchmark.replay_table``).

The official result file (``result/<model>/Wild-Tool-Bench_result.jsonl``, one
:class:`~toolgauge.benchmarks.wildtoolbench.log.WildSessionResult` a line) is read by :func:`read_official`;
:func:`write_official_results` writes our runs in that shape so the official ``eval_runner`` can score them too.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from toolgauge.benchmarks.wildtoolbench.log import WildSessionResult
from toolgauge.errors import DataError
from toolgauge.jsonl import jsonl_values, read_jsonl_objects, read_text
from toolgauge.records import AssistantTurn, ToolCall
from toolgauge.report.export import write_lines_atomic
from toolgauge.unknown_fields import unknown_field

__all__ = [
    "PredictionFormat",
    "StepTable",
    "detect_format",
    "read_official",
    "read_steps",
    "steps_from_results",
    "write_official_results",
    "write_steps",
]

PredictionFormat = Literal["steps", "official"]
#: session id -> (task, step) -> the recorded turn.
StepTable = dict[str, dict[tuple[int, int], AssistantTurn]]

_STEP_KEYS = {"session", "task", "step", "content", "tool_calls"}


def detect_format(path: Path) -> PredictionFormat:
    """Tell the two prediction formats apart by the first non-blank line.

    Raises:
        DataError: the file is unreadable, empty, or its first line is neither format.
    """
    shown = str(path)
    for number, obj in jsonl_values(read_text(path), shown):
        if isinstance(obj, dict) and "result" in obj and "id" in obj:
            return "official"
        if isinstance(obj, dict) and "session" in obj:
            return "steps"
        raise DataError(
            shown,
            'neither a step line ({"session", "task", "step", ...}) nor an official result line ({"id", "result"})',
            line=number,
        )
    raise DataError(shown, "no predictions: the file is empty")


def read_steps(path: Path) -> StepTable:
    """Read a step JSONL file into ``{session: {(task, step): turn}}``.

    Arguments given as a string are decoded; text that is not a JSON object is kept as ``raw`` with a
    ``parse_error``, so the scorer reports it as the official "invalid json format" argument error.

    Raises:
        DataError: malformed JSON, a missing or mistyped field, an unknown field, or the same
            ``(session, task, step)`` twice.
    """
    shown = str(path)
    table: StepTable = {}
    first_line: dict[tuple[str, int, int], int] = {}
    for number, obj in read_jsonl_objects(path):
        unknown = sorted(set(obj) - _STEP_KEYS)
        if unknown:
            raise DataError(shown, unknown_field(unknown[0], sorted(_STEP_KEYS)), line=number, field=unknown[0])
        session = obj.get("session")
        if not isinstance(session, str) or not session:
            raise DataError(shown, "must be a non-empty string (the session id)", line=number, field="session")
        task = _index(obj, "task", shown, number)
        step = _index(obj, "step", shown, number)
        content = obj.get("content")
        if content is not None and not isinstance(content, str):
            raise DataError(shown, "must be a string or null", line=number, field="content")
        raw_calls = obj.get("tool_calls") or []
        if not isinstance(raw_calls, list):
            raise DataError(shown, "must be a list of {name, arguments}", line=number, field="tool_calls")
        calls = [_call(item, shown, number, f"tool_calls[{k}]") for k, item in enumerate(raw_calls)]
        key = (session, task, step)
        if key in first_line:
            raise DataError(
                shown, f"session {session!r} task {task} step {step} is recorded twice (first on line "
                f"{first_line[key]})", line=number,
            )  # fmt: skip
        first_line[key] = number
        table.setdefault(session, {})[(task, step)] = AssistantTurn(
            content=content, tool_calls=calls, finish_reason="tool_calls" if calls else "stop"
        )
    if not table:
        raise DataError(shown, "no recorded steps: the file is empty")
    return table


def _index(obj: dict[str, Any], key: str, path: str, line: int) -> int:
    value = obj.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise DataError(path, "must be a 0-based index (an integer >= 0)", line=line, field=key)
    return value


def _call(item: Any, path: str, line: int, field: str) -> ToolCall:
    if not isinstance(item, dict):
        raise DataError(path, "must be an object {name, arguments}", line=line, field=field)
    name = item.get("name")
    if not isinstance(name, str) or not name:
        raise DataError(path, "must be a non-empty string", line=line, field=f"{field}.name")
    arguments = item.get("arguments", {})
    if isinstance(arguments, dict):
        return ToolCall(name=name, arguments=arguments)
    if not isinstance(arguments, str):
        raise DataError(path, "must be an object or a JSON string", line=line, field=f"{field}.arguments")
    try:
        decoded = json.loads(arguments)
    except json.JSONDecodeError as exc:
        return ToolCall(name=name, raw=arguments, parse_error=f"invalid JSON: {exc.msg}")
    except (ValueError, RecursionError):  # an over-long integer or nesting too deep: still the model's bad JSON
        return ToolCall(name=name, raw=arguments, parse_error="invalid JSON: number or nesting beyond limits")
    if not isinstance(decoded, dict):
        return ToolCall(name=name, raw=arguments, parse_error="arguments are not a JSON object")
    return ToolCall(name=name, arguments=decoded, raw=arguments)


def write_official_results(path: Path, results: Iterable[WildSessionResult], *, model_name: str) -> None:
    """Write sessions as the official ``Wild-Tool-Bench_result.jsonl`` (atomically, one session per line).

    ``results`` is read once, one session at a time: only one session's log is in memory at once.
    """
    lines = (
        json.dumps(
            {"id": result.id, "model_name": model_name, **result.model_dump(mode="json", exclude={"id"})},
            ensure_ascii=False,
        )
        + "\n"
        for result in results
    )
    write_lines_atomic(path, lines)


def read_official(path: Path) -> dict[str, WildSessionResult | str]:
    """Read an official result file into ``{session id: result}``.

    The official generator writes ``{"id", "result": "Error during inference: ..."}`` for a session whose
    inference raised; such a session maps to that text, and is scored as failed rather than rejected.

    Raises:
        DataError: unreadable file, malformed JSON, a line without the official shape (naming the field, e.g.
            ``result[0].inference_log.task_idx``), or a session id twice.
    """
    shown = str(path)
    out: dict[str, WildSessionResult | str] = {}
    for number, obj in read_jsonl_objects(path):
        session = obj.get("id")
        if not isinstance(session, str):
            raise DataError(shown, "missing or not a string", line=number, field="id")
        if session in out:
            raise DataError(shown, f"session {session!r} has two result lines", line=number, field="id")
        if isinstance(obj.get("result"), str):
            out[session] = obj["result"]
            continue
        try:
            out[session] = WildSessionResult.model_validate(obj)
        except ValidationError as exc:
            error = exc.errors()[0]
            message = "missing required field" if error["type"] == "missing" else str(error["msg"])
            raise DataError(shown, message, line=number, field=_location(error["loc"]) or None) from None
    if not out:
        raise DataError(shown, "no results: the file is empty")
    return out


def _location(loc: tuple[int | str, ...]) -> str:
    """A validation error's location as written in the file (``steps[k]`` is the ``step_k`` key)."""
    parts: list[str] = []
    items = list(loc)
    for index, part in enumerate(items):
        if isinstance(part, int) and index and items[index - 1] == "steps":
            parts[-1] = f".step_{part}"
        elif isinstance(part, int):
            parts.append(f"[{part}]")
        else:
            parts.append(f".{part}" if parts else part)
    return "".join(parts)


def steps_from_results(results: Iterable[WildSessionResult]) -> Iterator[dict[str, Any]]:
    """Yield the model's replies in logged sessions as step JSONL lines (replayable with ``replay:PATH``)."""
    for result in results:
        for task, log in enumerate(result.result):
            for step, entry in enumerate(log.steps):
                output = entry.inference_output
                calls = [
                    {"name": c.function.name, "arguments": _decoded_or_text(c.function.arguments)}
                    for c in output.tool_calls or []
                ]
                yield {"session": result.id, "task": task, "step": step, "content": output.content, "tool_calls": calls}


def _decoded_or_text(arguments: str) -> Any:
    """Arguments as an object when the text decodes to one, else the text itself (kept verbatim)."""
    try:
        decoded = json.loads(arguments)
    except (ValueError, RecursionError):
        return arguments
    return decoded if isinstance(decoded, dict) else arguments


def write_steps(path: Path, results: Iterable[WildSessionResult]) -> None:
    """Write logged sessions as step JSONL (atomically; ``results`` is read once, one session at a time)."""
    write_lines_atomic(path, (json.dumps(line, ensure_ascii=False) + "\n" for line in steps_from_results(results)))
