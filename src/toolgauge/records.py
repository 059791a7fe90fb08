"""Pydantic records every protocol shares.

Messages follow the OpenAI chat shape because every client we talk to speaks it; the
records stay provider-neutral otherwise (arguments are decoded dicts, not JSON strings).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Role = Literal["system", "user", "assistant", "tool"]


class ToolSpec(BaseModel):
    """A tool offered to the model: name, description and JSON-Schema parameters."""

    model_config = ConfigDict(frozen=True)

    name: str
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})

    def to_openai(self) -> dict[str, Any]:
        """Return the OpenAI ``tools`` entry for this tool."""
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }


class ToolCall(BaseModel):
    """One call the model made (or the reference expects).

    ``arguments`` is the decoded argument object. When the model's argument text could not be
    decoded, ``arguments`` is empty and ``parse_error`` says why; ``raw`` keeps the text as sent.
    """

    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    id: str | None = None
    raw: str | None = None
    parse_error: str | None = None


class ThinkingBlock(BaseModel):
    """A piece of a model's reasoning, as the provider returned it (Anthropic thinking, Gemini thoughts).

    ``signature`` is the provider's opaque proof that the block is its own; ``redacted`` blocks carry only
    that (their text is encrypted). A client sends blocks back only to the ``provider`` that made them, and
    only where its API wants them (Anthropic, during a tool-use loop); every other client leaves them out.
    """

    model_config = ConfigDict(frozen=True)

    provider: str
    text: str = ""
    signature: str | None = None
    redacted: bool = False
    # The tool call a signature belongs to, where the provider signs calls rather than thoughts (Gemini).
    call_id: str | None = None


class ProviderExchange(BaseModel):
    """The provider's own request and response for one call, kept in the transcript beside our neutral form.

    ``request`` is the wire request without its messages and tools (those are stored once, provider-neutral,
    and converted the same way every call); ``response`` is the decoded response body as it came.
    """

    provider: str
    request: dict[str, Any] = Field(default_factory=dict)
    response: Any = None


class Message(BaseModel):
    """One chat message in OpenAI roles (``thinking``: the reasoning an assistant turn came with, if kept)."""

    role: Role
    content: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None
    # None (not []) when absent, so messages without reasoning keep their cache keys (dumped with exclude_none).
    thinking: list[ThinkingBlock] | None = None


class Usage(BaseModel):
    """Token usage of one model call."""

    input_tokens: int = 0
    output_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens


class AssistantTurn(BaseModel):
    """What a model returned for one request: text, native tool calls, or both."""

    content: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    finish_reason: str | None = None
    usage: Usage = Field(default_factory=Usage)
    model: str | None = None
    thinking: list[ThinkingBlock] | None = None
    exchange: ProviderExchange | None = None

    def as_message(self) -> Message:
        """Return this turn as an assistant message for the next request (its reasoning kept with it)."""
        return Message(role="assistant", content=self.content, tool_calls=list(self.tool_calls), thinking=self.thinking)


# GenerateOptions fields added after the first cache keys were written (left out of a key while None).
LATER_OPTIONS = ("reasoning_effort", "top_p", "stop", "thinking_budget", "extra_body")


class GenerateOptions(BaseModel):
    """Sampling and tool-choice options for one request.

    ``tool_choice`` is ``"auto"``, ``"none"``, or the name of one tool to force. ``reasoning_effort``
    (``"low"``, ``"medium"``, ...) is sent only when set; None leaves the server's default.
    """

    model_config = ConfigDict(frozen=True)

    temperature: float | None = 0.0
    max_tokens: int | None = 512
    tool_choice: str | None = None
    seed: int | None = None
    reasoning_effort: str | None = None
    # Issue 20's generation options; a client sends each only when set (None: the server's default).
    top_p: float | None = None
    stop: tuple[str, ...] | None = None
    thinking_budget: int | None = None
    # Provider-specific request fields merged into the request body (vLLM/SGLang ``chat_template_kwargs`` ...).
    extra_body: dict[str, Any] | None = None


class ModelRequest(BaseModel):
    """Everything a model client needs for one call.

    ``sample_key`` and ``step`` identify where in a run the call happens; replay and gold
    clients use them (and ``gold``) to answer, real endpoints ignore them and they are not
    part of the cache key.
    """

    messages: list[Message]
    tools: list[ToolSpec] = Field(default_factory=list)
    options: GenerateOptions = Field(default_factory=GenerateOptions)
    sample_key: str = ""
    step: int = 0
    gold: AssistantTurn | None = None

    def cache_payload(self) -> dict[str, Any]:
        """Return the parts of the request that determine a model's answer."""
        return {
            "messages": [m.model_dump(exclude_none=True) for m in self.messages],
            "tools": [t.model_dump() for t in self.tools],
            # Options added after the cache's first keys are left out while unset: such requests keep their keys.
            "options": self.options.model_dump(
                exclude={name for name in LATER_OPTIONS if getattr(self.options, name) is None}
            ),
        }
