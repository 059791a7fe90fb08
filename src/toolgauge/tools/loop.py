"""The one tool loop: a model works with a backend's tools until it answers or runs out of steps.

Each step asks the model once (``ctx.generate`` with the backend's tools, so the engine's cache,
retries, timeouts and call log apply). A reply without tool calls is the final answer and ends the
loop. Otherwise every call runs through the backend, in order, and its result goes back as a tool
message, cut to :data:`MAX_TOOL_OUTPUT_CHARS`. A backend may end the loop after a step (``stop`` on a
result, e.g. a ``finish`` tool). A model that fails for good ends the loop with the error recorded;
the loop does not raise it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, Field

from toolgauge.errors import ModelError
from toolgauge.records import AssistantTurn, GenerateOptions, Message, ToolCall
from toolgauge.tools.backend import ToolBackend, ToolCallOutcome, bad_arguments, unknown_tool

if TYPE_CHECKING:
    from toolgauge.engine import EpisodeContext

# Tool results go back into the model's context: short enough for small-context models.
MAX_TOOL_OUTPUT_CHARS = 4000

StopReason = Literal["answer", "tool", "max_steps", "model_error"]


class ToolStep(BaseModel):
    """One tool call the model made at model step ``step``, and its result as the model read it."""

    step: int
    call: ToolCall
    result: ToolCallOutcome


class ToolTranscript(BaseModel):
    """What happened in one run of the loop.

    ``messages`` is the whole conversation (the opening messages included), ``turns`` the model's
    replies in order, ``steps`` every tool call with its result. ``stopped`` says why the loop ended:
    ``answer`` (a reply without tool calls, kept in ``final_answer``), ``tool`` (the backend asked),
    ``max_steps`` or ``model_error`` (the error is in ``model_error``).
    """

    messages: list[Message] = Field(default_factory=list)
    turns: list[AssistantTurn] = Field(default_factory=list)
    steps: list[ToolStep] = Field(default_factory=list)
    final_answer: str | None = None
    stopped: StopReason = "answer"
    model_error: str | None = None

    @property
    def model_steps(self) -> int:
        """How many model calls answered."""
        return len(self.turns)

    @property
    def tool_calls(self) -> list[ToolCall]:
        """Every tool call made, in order."""
        return [s.call for s in self.steps]

    def observations(self, step: int) -> list[str]:
        """The tool results the model read after model step ``step``, in call order."""
        return [s.result.text for s in self.steps if s.step == step]


def truncate(text: str, limit: int = MAX_TOOL_OUTPUT_CHARS) -> str:
    """Cut ``text`` to at most ``limit`` characters, saying how much was dropped."""
    if len(text) <= limit:
        return text
    dropped = len(text) - limit
    return f"{text[:limit]}\n... [{dropped} more characters cut]"


async def run_tool_loop(
    ctx: EpisodeContext,
    messages: Sequence[Message],
    backend: ToolBackend,
    max_steps: int,
    *,
    role: str = "model",
    options: GenerateOptions | None = None,
) -> ToolTranscript:
    """Let the model of ``role`` work with ``backend``'s tools, from ``messages``, for at most ``max_steps`` calls.

    The tools are listed once, at the start. A call with undecodable arguments or to a tool that is not
    offered is answered with an error message and not run; a backend that raises is reported to the
    model as a failed call. The transcript records everything; ``messages`` is not changed.
    """
    tools = await backend.list_tools()
    offered = {t.name for t in tools}
    transcript = ToolTranscript(messages=list(messages), stopped="max_steps")
    for step in range(max_steps):
        try:
            turn = await ctx.generate(list(transcript.messages), tools, options, role=role)
        except ModelError as exc:
            transcript.model_error = str(exc)
            transcript.stopped = "model_error"
            break
        transcript.turns.append(turn)
        # Some endpoints reject an assistant message without content, so send "" rather than nothing.
        transcript.messages.append(
            Message(
                role="assistant", content=turn.content or "", tool_calls=list(turn.tool_calls), thinking=turn.thinking
            )
        )
        if not turn.tool_calls:
            transcript.final_answer = turn.content or ""
            transcript.stopped = "answer"
            break
        stop = False
        for index, call in enumerate(turn.tool_calls):
            result = await _execute(backend, call, offered)
            transcript.steps.append(ToolStep(step=step, call=call, result=result))
            call_id = call.id or f"call_{step}_{index}"
            transcript.messages.append(Message(role="tool", content=result.text, tool_call_id=call_id, name=call.name))
            stop = stop or result.stop
        if stop:
            transcript.stopped = "tool"
            break
    return transcript


async def _execute(backend: ToolBackend, call: ToolCall, offered: set[str]) -> ToolCallOutcome:
    """Run one call and return its outcome with the text the model reads (cut) and the error flag settled."""
    if call.parse_error:
        result = bad_arguments(call.parse_error)
    elif call.name not in offered:
        result = unknown_tool(call.name, offered)
    else:
        try:
            result = await backend.call(call)
        except Exception as exc:  # a broken tool must not end the episode; the model sees the failure
            result = ToolCallOutcome.error(
                f"Error: the tool call failed: {exc.__class__.__name__}: {exc}", str(exc) or exc.__class__.__name__
            )
    text = result.text or (f"Error: {result.failure}" if result.failure else "")
    return result.model_copy(update={"text": truncate(text), "is_error": result.is_error or result.failure is not None})
