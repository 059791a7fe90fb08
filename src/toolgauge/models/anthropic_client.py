"""Anthropic's Messages API through the official ``anthropic`` SDK (``anthropic:MODEL``).

Our provider-neutral messages become Messages-API blocks: system messages go to ``system``, tool calls
to ``tool_use`` blocks and tool results to ``tool_result`` blocks in a user turn. Thinking blocks come back
into ``AssistantTurn.thinking`` and are sent back (signature intact) with the assistant turn they belong
to, as the API requires during a tool-use loop; no other client ever sends them.
"""

from __future__ import annotations

import json
import re
from collections import OrderedDict
from typing import Any

import anthropic
from pydantic import BaseModel

from toolgauge.errors import ConnectionFailed, ModelError, TransientModelError
from toolgauge.models.wire import (
    HostedModel,
    decode_body,
    one_line,
    probe_until_answered,
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
# Thinking blocks remembered by the id of a tool call they came with, for protocols that rebuild the
# assistant message from its calls alone (bounded: only the latest turn of each loop is ever needed).
_REMEMBERED = 4096


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


class AnthropicClient(HostedModel):
    """Claude through the Messages API (or any server speaking it at ``base_url``)."""

    provider = PROVIDER

    def __init__(
        self, model: str, *, api_key: str, base_url: str | None = None, timeout: float = 120.0, name: str | None = None
    ):
        super().__init__(model, api_key=api_key, base_url=base_url, timeout=timeout, name=name)
        self._client: anthropic.AsyncAnthropic | None = None
        self._thinking_by_call: OrderedDict[str, list[ThinkingBlock]] = OrderedDict()

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
        texts: list[str] = []
        calls: list[ToolCall] = []
        thinking: list[ThinkingBlock] = []
        finish = FINISH_REASONS.get(reply.stop_reason or "", reply.stop_reason)
        for block in reply.content:
            if block.type == "text" and block.text:
                texts.append(block.text)
            elif block.type == "tool_use":
                calls.append(_tool_call(block, finish))
            elif block.type == "thinking":
                thinking.append(ThinkingBlock(provider=PROVIDER, text=block.thinking or "", signature=block.signature))
            elif block.type == "redacted_thinking":
                thinking.append(ThinkingBlock(provider=PROVIDER, signature=block.data, redacted=True))
        if thinking:
            self._remember(calls, thinking)
        usage = Usage()
        if reply.usage is not None:
            u = reply.usage
            cached = (u.cache_creation_input_tokens or 0) + (u.cache_read_input_tokens or 0)
            usage = Usage(input_tokens=(u.input_tokens or 0) + cached, output_tokens=u.output_tokens or 0)
        sent = {k: v for k, v in body.items() if k not in ("messages", "tools", "system")}
        if request.options.extra_body:
            sent["extra_body"] = request.options.extra_body
        return AssistantTurn(
            content="".join(texts) or None,
            tool_calls=calls,
            finish_reason=finish,
            usage=usage,
            model=reply.model,
            thinking=thinking or None,
            exchange=ProviderExchange(provider=PROVIDER, request=sent, response=raw),
        )

    async def _send(self, body: dict[str, Any], *, extra_body: dict[str, Any] | None = None) -> tuple[WireMessage, Any]:
        """POST one request; every failure becomes a ``ModelError`` (or its transient subclasses)."""
        if self._client is None:
            await self.start()
        assert self._client is not None
        try:
            raw = await self._client.messages.with_raw_response.create(**body, extra_body=extra_body)
            content = await raw.read()
            content_type = raw.headers.get("content-type", "")
        except anthropic.APIStatusError as exc:
            # The SDK's text may start "Error code: 429 - " or "429 ": the status is already in our line.
            status = exc.status_code
            message = str(exc.message).removeprefix(f"Error code: {status} - ").removeprefix(f"{status} ")
            raise status_error(exc.status_code, message, retry_after=exc.response.headers.get("retry-after")) from exc
        except anthropic.APITimeoutError as exc:
            raise TransientModelError(f"{exc.__class__.__name__}: {one_line(str(exc))}") from exc
        except anthropic.APIConnectionError as exc:
            raise ConnectionFailed(f"{exc.__class__.__name__}: {one_line(_with_cause(exc))}") from exc
        except anthropic.AnthropicError as exc:
            raise ModelError(f"{exc.__class__.__name__}: {one_line(str(exc))}") from exc
        return decode_body(WireMessage, content, content_type)

    def _remember(self, calls: list[ToolCall], thinking: list[ThinkingBlock]) -> None:
        for call in calls:
            if call.id:
                self._thinking_by_call[call.id] = thinking
        while len(self._thinking_by_call) > _REMEMBERED:
            self._thinking_by_call.popitem(last=False)

    def _convert_messages(self, messages: list[Message]) -> tuple[str, list[dict[str, Any]]]:
        """System text and Messages-API turns (consecutive turns of one role merged, as the API wants)."""
        system: list[str] = []
        turns: list[dict[str, Any]] = []
        pending: list[str] = []  # ids of tool calls not yet answered, for results that name none
        for index, message in enumerate(messages):
            blocks: list[dict[str, Any]]
            if message.role == "system":
                if message.content:
                    system.append(message.content)
                continue
            if message.role == "assistant":
                role = "assistant"
                blocks = [*self._thinking_blocks(message)]
                if message.content:
                    blocks.append({"type": "text", "text": message.content})
                for i, call in enumerate(message.tool_calls):
                    call_id = _tool_id(call.id, f"call_{index}_{i}")
                    pending.append(call_id)
                    blocks.append({"type": "tool_use", "id": call_id, "name": call.name, "input": call.arguments})
            elif message.role == "tool":
                role = "user"
                wanted = _tool_id(message.tool_call_id, "") if message.tool_call_id else ""
                call_id = wanted if wanted in pending else (pending[0] if pending else wanted or f"call_{index}")
                if call_id in pending:
                    pending.remove(call_id)
                blocks = [{"type": "tool_result", "tool_use_id": call_id, "content": message.content or ""}]
            else:
                role = "user"
                blocks = [{"type": "text", "text": message.content}] if message.content else []
            if not blocks:
                continue  # the API rejects empty turns and empty text blocks
            if turns and turns[-1]["role"] == role:
                turns[-1]["content"].extend(blocks)
            else:
                turns.append({"role": role, "content": blocks})
        for turn in turns:  # tool results must come first in a user turn
            turn["content"].sort(key=lambda b: b["type"] != "tool_result")
        return "\n\n".join(system), turns

    def _thinking_blocks(self, message: Message) -> list[dict[str, Any]]:
        """This provider's signed thinking blocks of an assistant message (remembered by call id if not on it)."""
        thinking = message.thinking
        if thinking is None:
            thinking = next(
                (self._thinking_by_call[c.id] for c in message.tool_calls if c.id and c.id in self._thinking_by_call),
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


def _tool_id(value: str | None, fallback: str) -> str:
    """A tool-call id the API accepts (letters, digits, ``_`` and ``-``)."""
    return _TOOL_ID.sub("_", value) if value else fallback


def _with_cause(exc: BaseException) -> str:
    cause = exc.__cause__
    detail = str(cause) if cause is not None and str(cause) else ""
    return f"{exc} ({detail})" if detail and detail not in str(exc) else str(exc)
