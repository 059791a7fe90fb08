"""Recorded model outputs as JSONL lines ``{"id", <index field>, "content", "tool_calls"}``, one per model step."""

from __future__ import annotations

from pathlib import Path

from toolgauge.errors import DataError
from toolgauge.jsonl import jsonl_values, read_text
from toolgauge.records import AssistantTurn, ToolCall


def read_recorded_turns(path: Path, *, index_field: str, what: str) -> dict[str, list[AssistantTurn]]:
    """Read recordings into (sample id -> turns by index); a gap is an empty reply.

    Args:
        path: The JSONL file.
        index_field: The field holding the 0-based step index (``"turn"``, ``"step"``); when absent, the
            line is the sample's next turn.
        what: What a line is, for the error message (``"recorded turn"``).

    Raises:
        DataError: A line that is not JSON (or not an object) or lacks ``id`` or has mistyped fields; an
            empty file.
    """
    table: dict[str, list[AssistantTurn]] = {}
    for n, obj in jsonl_values(read_text(path), path):
        try:
            key = str(obj["id"])
            index = int(obj.get(index_field, len(table.get(key, []))))
            calls = [ToolCall.model_validate(c) for c in obj.get("tool_calls") or []]
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise DataError(str(path), f"not a {what}: {exc}".splitlines()[0], line=n) from exc
        turns = table.setdefault(key, [])
        while len(turns) <= index:
            turns.append(AssistantTurn())
        turns[index] = AssistantTurn(content=obj.get("content"), tool_calls=calls)
    if not table:
        raise DataError(str(path), f"no {what}s: the file is empty")
    return table
