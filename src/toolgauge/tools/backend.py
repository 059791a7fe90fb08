"""What answers a model's tool calls: the ``ToolBackend`` protocol and the typed result of one call.

A backend lists the tools it offers (as the model sees them) and answers one ``ToolCall`` at a time
with a :class:`ToolCallOutcome`; :func:`toolgauge.tools.loop.run_tool_loop` drives a model against
one. Implementations: :class:`~toolgauge.tools.mcp_backend.McpBackend` (an MCP server running in the
sandbox), :class:`~toolgauge.tools.workspace.CodeWorkspace` (files and Python in the sandbox) and
:class:`~toolgauge.tools.replay.ReplayBackend` (recorded outputs).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

from pydantic import BaseModel

from toolgauge.records import ToolCall, ToolSpec


class ToolCallOutcome(BaseModel):
    """One tool call as the harness saw it.

    ``text`` is what a model reads. ``content`` is an MCP result's content list in wire shape
    (``{"type": "text", "text": ..., "annotations": null}``, which is what the official Tool-Genesis
    evaluator serialises), or None when the call produced no MCP result. ``is_error`` is the tool's own
    error flag; ``failure`` says why the call produced no result at all (timeout, server died, unknown
    tool, undecodable arguments). ``stop`` asks the tool loop to end after the current model step (a
    ``finish`` tool).
    """

    content: list[dict[str, Any]] | None = None
    text: str = ""
    is_error: bool = False
    failure: str | None = None
    seconds: float = 0.0
    stop: bool = False

    @classmethod
    def error(cls, text: str, failure: str | None = None) -> ToolCallOutcome:
        """A result that is an error message for the model (``failure`` set when no tool ran)."""
        return cls(text=text, is_error=True, failure=failure)


class ToolBackend(Protocol):
    """Answers tool calls during an episode.

    ``call`` must not raise for anything the tool does: a crash, a timeout or bad arguments are an
    outcome with ``failure`` or ``is_error`` set. Backends holding processes are async context managers.
    """

    async def list_tools(self) -> list[ToolSpec]:
        """The tools offered to the model, under the names the model must call them by."""
        ...

    async def call(self, call: ToolCall) -> ToolCallOutcome:
        """Run one call and return its outcome."""
        ...


def unknown_tool(name: str, known: Iterable[str]) -> ToolCallOutcome:
    """The outcome of a call to a tool that is not offered."""
    listed = ", ".join(sorted(known)) or "none"
    return ToolCallOutcome.error(f"Error: unknown tool {name!r}; available tools: {listed}.", "unknown_tool")


def bad_arguments(reason: str) -> ToolCallOutcome:
    """The outcome of a call whose argument text could not be decoded."""
    return ToolCallOutcome.error(
        f"Error: the arguments could not be decoded ({reason}); send a JSON object.", "bad_arguments"
    )
