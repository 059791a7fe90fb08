"""Anthropic's Messages API through the official ``anthropic`` SDK (``anthropic:MODEL``).

Our provider-neutral messages become Messages-API blocks: system messages go to ``system``, tool calls
to ``tool_use`` blocks and tool results to ``tool_result`` blocks in a user turn. Thinking blocks come back
into ``AssistantTurn.thinking`` and are sent back (signature intact) with the assistant turn they belong
to, as the API requires during a tool-use loop; no other client ever sends them.
"""

from __future__ import annotations

import json
import re
from typing import Any

import anthropic
from pydantic import BaseModel

from toolgauge.errors import ModelError
from toolgauge.models.wire import (
    HostedModel,
    ReplyParts,
    decode_body,
    merged_turns,
    one_line,
    probe_until_answered,
    sdk_error,
    set_options,
    status_error,
)
from toolgauge.records import (
    AssistantTurn,
    GenerateOptions,
    Message,
    ModelRequest,
    ProviderExchange,
    ThinkingBlock,
    ToolCall,
    Usage,
)

PROVIDER = "anthropic"
# The API's stop reasons in our (OpenAI) finish reasons; an unknown one is kept as it is.
FINISH_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "refusal": "content_filter",
}
# reasoning_effort in the API's output_config.effort levels (it has no "minimal": the lowest is "low").
EFFORT = {"minimal": "low", "low": "low", "medium": "medium", "high": "high"}
# The options the Messages API has no field for (sampling is the model's own in the current API).
UNSUPPORTED = {
    "temperature": "the Messages API takes no temperature",
    "top_p": "the Messages API takes no top_p",
    "seed": "the Messages API takes no seed",
}
_TOOL_ID = re.compile(r"[^a-zA-Z0-9_-]")


class _Block(BaseModel):
    type: str
    text: str | None = None
    id: str | None = None
    name: str | None = None
    input: Any = None
    thinking: str | None = None
    signature: str | None = None
    data: str | None = None


class _Usage(BaseModel):
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_creation_input_tokens: int | None = None
    cache_read_input_tokens: int | None = None


class WireMessage(BaseModel):
    """The part of a Messages-API reply we use; anything else in a 200 reply is a transient fault."""

    content: list[_Block]
    stop_reason: str | None = None
    model: str | None = None
    usage: _Usage | None = None


class AnthropicClient(HostedModel[anthropic.AsyncAnthropic, list[ThinkingBlock]]):
    """Claude through the Messages API (or any server speaking it at ``base_url``).

    The thinking blocks of a reply are kept by the id of each tool call they came with (``_keep``).
    """

    provider = PROVIDER

    async def start(self) -> None:
        """Create the SDK client (retries are the engine's job, so the SDK's are off)."""
        if self._client is None:
            try:
                self._client = anthropic.AsyncAnthropic(
                    api_key=self._api_key, base_url=self.base_url, timeout=self._timeout, max_retries=0
                )
            except anthropic.AnthropicError as exc:
                raise ModelError(one_line(str(exc))) from exc

    async def close(self) -> None:
        """Close the HTTP connection pool."""
        if self._client is not None:
            await self._client.close()
            self._client = None

    async def probe(self) -> None:
        """One one-token message before the run: a wrong model name, key or URL fails before any sample."""
        body = {"model": self.model, "max_tokens": 1, "messages": [{"role": "user", "content": "Say OK."}]}
        await probe_until_answered(lambda: self._send(body))

    def unsupported(self, options: GenerateOptions) -> list[str]:
        """The set options this API cannot honour (asked once at the start of a run)."""
        return [f"{name} ({UNSUPPORTED[name]})" for name in set_options(options, UNSUPPORTED)]

    def request_body(self, request: ModelRequest) -> dict[str, Any]:
        """The Messages-API request for one of ours."""
        opts = request.options
        system, messages = self._convert_messages(request.messages)
        body: dict[str, Any] = {"model": self.model, "messages": messages, "max_tokens": opts.max_tokens or 4096}
        if system:
            body["system"] = system
        if request.tools:
            body["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": t.parameters} for t in request.tools
            ]
            choice = tool_choice_param(opts.tool_choice)
            if choice is not None:
                body["tool_choice"] = choice
        if opts.stop is not None:
            body["stop_sequences"] = list(opts.stop)
        if opts.thinking_budget is not None:
            body["thinking"] = {"type": "enabled", "budget_tokens": opts.thinking_budget}
            # The API counts thinking in max_tokens (and wants the budget below it): the answer keeps its own limit.
            body["max_tokens"] += opts.thinking_budget
        if opts.reasoning_effort is not None:
            body["output_config"] = {"effort": EFFORT.get(opts.reasoning_effort, opts.reasoning_effort)}
        return body

    async def generate(self, request: ModelRequest) -> AssistantTurn:
        """Send one message request and convert the reply."""
        body = self.request_body(request)
        reply, raw = await self._send(body, extra_body=request.options.extra_body)
        got = ReplyParts()
        finish = FINISH_REASONS.get(reply.stop_reason or "", reply.stop_reason)
        for block in reply.content:
            if block.type == "text" and block.text:
                got.texts.append(block.text)
            elif block.type == "tool_use":
                got.calls.append(_tool_call(block, finish))
            elif block.type == "thinking":
                got.thinking.append(
                    ThinkingBlock(provider=PROVIDER, text=block.thinking or "", signature=block.signature)
                )
            elif block.type == "redacted_thinking":
                got.thinking.append(ThinkingBlock(provider=PROVIDER, signature=block.data, redacted=True))
        for call in got.calls:
            if call.id and got.thinking:
                self._keep(call.id, got.thinking)
        usage = Usage()
        if reply.usage is not None:
            u = reply.usage
            cached = (u.cache_creation_input_tokens or 0) + (u.cache_read_input_tokens or 0)
            usage = Usage(input_tokens=(u.input_tokens or 0) + cached, output_tokens=u.output_tokens or 0)
        sent = {k: v for k, v in body.items() if k not in ("messages", "tools", "system")}
        if request.options.extra_body:
            sent["extra_body"] = request.options.extra_body
        exchange = ProviderExchange(provider=PROVIDER, request=sent, response=raw)
        return got.turn(finish_reason=finish, usage=usage, model=reply.model, exchange=exchange)

    async def _send(self, body: dict[str, Any], *, extra_body: dict[str, Any] | None = None) -> tuple[WireMessage, Any]:
        """POST one request; every failure becomes a ``ModelError`` (or its transient subclasses)."""
        client = await self._started()
        try:
            raw = await client.messages.with_raw_response.create(**body, extra_body=extra_body)
            content = await raw.read()
            content_type = raw.headers.get("content-type", "")
        except anthropic.APIStatusError as exc:
            # The SDK's text may start "Error code: 429 - " or "429 ": the status is already in our line.
            status = exc.status_code
            message = str(exc.message).removeprefix(f"Error code: {status} - ").removeprefix(f"{status} ")
            raise status_error(exc.status_code, message, retry_after=exc.response.headers.get("retry-after")) from exc
        except anthropic.AnthropicError as exc:
            raise sdk_error(exc, timeout=anthropic.APITimeoutError, connection=anthropic.APIConnectionError) from exc
        return decode_body(WireMessage, content, content_type)

    def _convert_messages(self, messages: list[Message]) -> tuple[str, list[dict[str, Any]]]:
        """System text and Messages-API turns (consecutive turns of one role merged, as the API wants)."""
        pending: list[str] = []  # ids of tool calls not yet answered, for results that name none

        def blocks_of(index: int, message: Message) -> tuple[str, list[dict[str, Any]]]:
            if message.role == "assistant":
                blocks = [*self._thinking_blocks(message)]
                if message.content:
                    blocks.append({"type": "text", "text": message.content})
                for i, call in enumerate(message.tool_calls):
                    call_id = _tool_id(call.id, f"call_{index}_{i}")
                    pending.append(call_id)
                    blocks.append({"type": "tool_use", "id": call_id, "name": call.name, "input": call.arguments})
                return "assistant", blocks
            if message.role == "tool":
                wanted = _tool_id(message.tool_call_id, "") if message.tool_call_id else ""
                call_id = wanted if wanted in pending else (pending[0] if pending else wanted or f"call_{index}")
                if call_id in pending:
                    pending.remove(call_id)
                return "user", [{"type": "tool_result", "tool_use_id": call_id, "content": message.content or ""}]
            # No empty text block: the API rejects them.
            return "user", [{"type": "text", "text": message.content}] if message.content else []

        system, turns = merged_turns(messages, blocks_of)
        return system, [{"role": role, "content": _results_first(blocks)} for role, blocks in turns]

    def _thinking_blocks(self, message: Message) -> list[dict[str, Any]]:
        """This provider's signed thinking blocks of an assistant message (remembered by call id if not on it)."""
        thinking = message.thinking
        if thinking is None:
            thinking = next(
                (self._kept[c.id] for c in message.tool_calls if c.id and c.id in self._kept),
                None,
            )
        out: list[dict[str, Any]] = []
        for block in thinking or []:
            if block.provider != PROVIDER or not block.signature:
                continue
            if block.redacted:
                out.append({"type": "redacted_thinking", "data": block.signature})
            else:
                out.append({"type": "thinking", "thinking": block.text, "signature": block.signature})
        return out


def tool_choice_param(choice: str | None) -> dict[str, Any] | None:
    """Our tool_choice (None, "auto", "none", "required"/"any", or a tool name) in the API's form."""
    if choice is None:
        return None
    if choice in ("auto", "none", "any"):
        return {"type": choice}
    if choice == "required":
        return {"type": "any"}
    return {"type": "tool", "name": choice}


def _tool_call(block: _Block, finish: str | None) -> ToolCall:
    raw = json.dumps(block.input)
    if isinstance(block.input, dict):
        return ToolCall(name=block.name or "", arguments=block.input, id=block.id, raw=raw)
    error = f"arguments are JSON {type(block.input).__name__}, not an object"
    if finish == "length":
        error = "call cut off by max_tokens (stop_reason=max_tokens)"
    return ToolCall(name=block.name or "", id=block.id, raw=raw, parse_error=error)


def _results_first(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A turn's blocks with its tool results first, as the API wants them in a user turn (otherwise in order)."""
    return sorted(blocks, key=lambda b: b["type"] != "tool_result")


def _tool_id(value: str | None, fallback: str) -> str:
    """A tool-call id the API accepts (letters, digits, ``_`` and ``-``)."""
    return _TOOL_ID.sub("_", value) if value else fallback
