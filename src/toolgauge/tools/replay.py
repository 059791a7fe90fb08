"""Recorded tool outputs as a ``ToolBackend``: a mapping from a call to the result it got.

For tests and for replaying a run offline: no process, no sandbox. A call matches a recording when
the tool name is the same and the arguments are equal as JSON (key order does not matter). A call
without a recording is answered with an error result (``failure="no_recording"``), never an exception.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from toolgauge.records import ToolCall, ToolSpec
from toolgauge.tools.backend import ToolCallOutcome, unknown_tool


def call_key(name: str, arguments: Mapping[str, Any]) -> str:
    """The lookup key of a call: the tool name and its arguments as canonical JSON."""
    return name + json.dumps(arguments, sort_keys=True, ensure_ascii=False, default=str)


class ReplayBackend:
    """Answers calls from recorded results.

    ``recordings`` maps :func:`call_key` of a call to its result (a :class:`ToolCallOutcome`, or plain
    text for a successful result). ``calls`` lists every call received, in order.
    """

    def __init__(self, tools: Sequence[ToolSpec], recordings: Mapping[str, ToolCallOutcome | str]):
        self._tools = list(tools)
        self._recordings = {
            k: v if isinstance(v, ToolCallOutcome) else ToolCallOutcome(text=v) for k, v in recordings.items()
        }
        self.calls: list[ToolCall] = []

    @classmethod
    def from_pairs(
        cls, tools: Sequence[ToolSpec], pairs: Iterable[tuple[ToolCall, ToolCallOutcome | str]]
    ) -> ReplayBackend:
        """A backend from (call, result) pairs; a later pair for the same call replaces an earlier one."""
        return cls(tools, {call_key(c.name, c.arguments): r for c, r in pairs})

    async def list_tools(self) -> list[ToolSpec]:
        """The recorded tools."""
        return list(self._tools)

    async def call(self, call: ToolCall) -> ToolCallOutcome:
        """The recorded result of ``call``, or an error result when there is none."""
        self.calls.append(call)
        if all(t.name != call.name for t in self._tools):
            return unknown_tool(call.name, (t.name for t in self._tools))
        found = self._recordings.get(call_key(call.name, call.arguments))
        if found is not None:
            return found
        shown = json.dumps(call.arguments, sort_keys=True, ensure_ascii=False, default=str)
        return ToolCallOutcome.error(f"Error: no recorded answer for {call.name}({shown})", "no_recording")
