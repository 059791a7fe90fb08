"""Any OpenAI-compatible chat endpoint through the official ``openai`` SDK."""

from __future__ import annotations

import json
from typing import Any

import openai
from openai import AsyncOpenAI

from toolgauge.errors import ModelError, TransientModelError
from toolgauge.records import AssistantTurn, Message, ModelRequest, ToolCall, Usage
from toolgauge.redact import redact

_RETRYABLE_STATUS = {408, 409, 425, 429}


def message_to_openai(message: Message) -> dict[str, Any]:
    """Convert a message to the OpenAI wire shape.

    Assistant messages always carry a ``content`` key: llama.cpp's chat templates fail with
    HTTP 500 when it is missing.
    """
    out: dict[str, Any] = {"role": message.role}
    if message.role == "assistant":
        out["content"] = message.content or ""
        if message.tool_calls:
            out["tool_calls"] = [
                {
                    "id": call.id or f"call_{i}",
                    "type": "function",
                    "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
                }
                for i, call in enumerate(message.tool_calls)
            ]
    else:
        out["content"] = message.content or ""
    if message.role == "tool":
        out["tool_call_id"] = message.tool_call_id or ""
        if message.name:
            out["name"] = message.name
    return out


def tool_choice_param(choice: str | None) -> Any:
    """Map our tool_choice (None, "auto", "none", or a tool name) to the API's form."""
    if choice is None or choice in ("auto", "none"):
        return choice
    return {"type": "function", "function": {"name": choice}}


def parse_tool_call(raw: Any, finish_reason: str | None) -> ToolCall:
    """Decode one API tool call; undecodable arguments become a parse error, not an exception."""
    fn = raw.function
    text = fn.arguments or ""
    error: str | None = None
    args: dict[str, Any] = {}
    try:
        decoded = json.loads(text) if text.strip() else {}
        if isinstance(decoded, dict):
            args = decoded
        else:
            error = f"arguments are JSON {type(decoded).__name__}, not an object"
    except json.JSONDecodeError as exc:
        error = f"arguments are not valid JSON: {exc.msg}"
    if error and finish_reason == "length":
        error = "call cut off by max_tokens (finish_reason=length)"
    return ToolCall(name=fn.name or "", arguments=args, id=raw.id, raw=text, parse_error=error)


class OpenAICompatClient:
    """A chat-completions endpoint: OpenAI itself, vLLM, SGLang, Ollama, llama.cpp server, ..."""

    cacheable = True

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 120.0,
        name: str | None = None,
    ):
        self.model = model
        self.base_url = base_url
        self.name = name or model
        self._api_key = api_key
        self._timeout = timeout
        self._client: AsyncOpenAI | None = None

    @property
    def cache_id(self) -> str:
        """Model name plus endpoint, so two servers never share cached answers."""
        return f"{self.model}@{self.base_url or 'default'}"

    async def start(self) -> None:
        """Create the SDK client (retries are the engine's job, so the SDK's are off)."""
        if self._client is None:
            try:
                self._client = AsyncOpenAI(
                    base_url=self.base_url,
                    api_key=self._api_key,
                    timeout=self._timeout,
                    max_retries=0,
                )
            except openai.OpenAIError as exc:
                raise ModelError(str(exc)) from exc

    async def close(self) -> None:
        """Close the HTTP connection pool."""
        if self._client is not None:
            await self._client.close()
            self._client = None

    async def generate(self, request: ModelRequest) -> AssistantTurn:
        """Send one chat completion and convert the answer."""
        if self._client is None:
            await self.start()
        assert self._client is not None
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": [message_to_openai(m) for m in request.messages],
        }
        opts = request.options
        if request.tools:
            kwargs["tools"] = [t.to_openai() for t in request.tools]
            choice = tool_choice_param(opts.tool_choice)
            if choice is not None:
                kwargs["tool_choice"] = choice
        if opts.temperature is not None:
            kwargs["temperature"] = opts.temperature
        if opts.max_tokens is not None:
            kwargs["max_tokens"] = opts.max_tokens
        if opts.seed is not None:
            kwargs["seed"] = opts.seed
        try:
            resp = await self._client.chat.completions.create(**kwargs)
        except openai.APIStatusError as exc:
            retry_after = _retry_after(exc.response.headers.get("retry-after"))
            message = f"HTTP {exc.status_code}: {_short(exc.message)}"
            if exc.status_code >= 500 or exc.status_code in _RETRYABLE_STATUS:
                raise TransientModelError(message, retry_after=retry_after) from exc
            raise ModelError(message) from exc
        except (openai.APITimeoutError, openai.APIConnectionError) as exc:
            raise TransientModelError(f"{exc.__class__.__name__}: {_short(str(exc))}") from exc
        except openai.OpenAIError as exc:
            raise ModelError(f"{exc.__class__.__name__}: {_short(str(exc))}") from exc
        if not resp.choices:
            raise ModelError("response has no choices")
        choice0 = resp.choices[0]
        msg = choice0.message
        finish = choice0.finish_reason
        calls = [parse_tool_call(tc, finish) for tc in (msg.tool_calls or []) if getattr(tc, "function", None)]
        usage = Usage()
        if resp.usage is not None:
            usage = Usage(input_tokens=resp.usage.prompt_tokens or 0, output_tokens=resp.usage.completion_tokens or 0)
        return AssistantTurn(content=msg.content, tool_calls=calls, finish_reason=finish, usage=usage, model=resp.model)


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


def _short(text: str, limit: int = 300, *, secrets: list[str] | None = None) -> str:
    """One line of at most ``limit`` characters with secrets masked (servers echo keys and headers back).

    Redaction comes before truncation so a cut never leaves half a key behind; ``secrets`` are values
    to mask beyond the environment's (the client's own API key).
    """
    text = " ".join(redact(text, extra=[s for s in secrets or [] if s]).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
