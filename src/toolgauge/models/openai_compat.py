"""Any OpenAI-compatible chat endpoint through the official ``openai`` SDK."""

from __future__ import annotations

import json
import time
from typing import Any

import openai
from openai import AsyncOpenAI
from pydantic import BaseModel, Field

from toolgauge.errors import ModelError
from toolgauge.models.served_identity import ServedModel, cache_id_with, models_entry
from toolgauge.models.wire import (
    decode_body,
    learn_credentials,
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
    ToolCall,
    Usage,
)
from toolgauge.redact import redact_url

# Keys sent when there is no real one (no key in the environment, the embedded local server): nothing to hide.
PLACEHOLDER_KEYS = frozenset({"sk-no-key", "sk-local"})
# The probe's connect timeout: a dead host fails it in seconds, whatever the request timeout.
_PROBE_CONNECT_TIMEOUT = 5.0


class _WireFunction(BaseModel):
    name: str | None = None
    arguments: str | dict[str, Any] | None = None


class _WireToolCall(BaseModel):
    id: str | None = None
    function: _WireFunction | None = None


class _WireMessage(BaseModel):
    content: str | None = None
    tool_calls: list[_WireToolCall] | None = None


class _WireChoice(BaseModel):
    message: _WireMessage
    finish_reason: str | None = None


class _WireUsage(BaseModel):
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


class WireCompletion(BaseModel):
    """The part of a chat-completion body we use; anything else in a 200 reply is a transient fault."""

    model: str | None = None
    choices: list[_WireChoice] = Field(min_length=1)
    usage: _WireUsage | None = None
    system_fingerprint: str | None = None


def decode_completion(body: bytes, content_type: str = "") -> WireCompletion:
    """Decode and check a 200 body; raise ``TransientModelError`` when it is not a usable completion.

    An HTML error page from a proxy, ``{}``, a body cut short or one without choices is what an
    overloaded or restarting server sends: retried like a 5xx, never scored as an empty reply.
    """
    return decode_body(WireCompletion, body, content_type)[0]


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
    if isinstance(text, dict):  # some servers send an object instead of a JSON string
        text = json.dumps(text)
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
    except (ValueError, RecursionError):  # an over-long integer or nesting too deep: the model's bad JSON
        error = "arguments are not valid JSON: a number or nesting beyond the parser's limits"
    if error and finish_reason == "length":
        error = "call cut off by max_tokens (finish_reason=length)"
    return ToolCall(name=fn.name or "", arguments=args, id=raw.id, raw=text, parse_error=error)


class OpenAICompatClient:
    """A chat-completions endpoint: OpenAI itself, vLLM, SGLang, Ollama, llama.cpp server, ..."""

    cacheable = True
    # The provider named in the raw exchange kept with each answer (``ProviderExchange.provider``).
    provider = "openai"

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
        learn_credentials(None if api_key in PLACEHOLDER_KEYS else api_key, base_url)
        self._api_key = api_key
        self._timeout = timeout
        self._client: AsyncOpenAI | None = None
        # What the probe learnt of the served model (its /v1/models entry, the answer's system_fingerprint).
        self.served: ServedModel | None = None

    @property
    def cache_id(self) -> str:
        """Model name plus endpoint, so two servers never share cached answers (a URL password is masked).

        Plus, once the probe has run, a digest of what the server said of the model it serves, so a checkpoint
        redeployed under the same name misses the cache (models/served_identity.py).
        """
        return cache_id_with(f"{self.model}@{redact_url(self.base_url) if self.base_url else 'default'}", self.served)

    async def start(self) -> None:
        """Create the SDK client (retries are the engine's job, so the SDK's are off)."""
        if self._client is None:
            try:
                self._client = self._new_client()
            except openai.OpenAIError as exc:
                raise ModelError(str(exc)) from exc

    def _new_client(self) -> AsyncOpenAI:
        """The SDK client this endpoint is reached with (no retries of its own)."""
        return AsyncOpenAI(base_url=self.base_url, api_key=self._api_key, timeout=self._timeout, max_retries=0)

    async def close(self) -> None:
        """Close the HTTP connection pool."""
        if self._client is not None:
            await self._client.close()
            self._client = None

    async def probe(self) -> None:
        """Send one tiny real completion (``max_tokens=1``) to check endpoint, model name and key.

        Raises ``ModelError`` with the server's answer (``HTTP 404: model 'x' not found``) or the
        connection failure. Not cached and not a sample call: the run has not started yet.
        """
        if self._client is None:
            await self.start()
        assert self._client is not None
        client = self._client.with_options(
            timeout=openai.Timeout(self._timeout, connect=min(self._timeout, _PROBE_CONNECT_TIMEOUT)), max_retries=0
        )
        kwargs = {"model": self.model, "messages": [{"role": "user", "content": "Say OK."}], "max_tokens": 1}

        async def answer_and_identify() -> None:
            answer, _ = await _complete(client, kwargs)
            served = await self._models_entry(client)
            self.served = served.model_copy(update={"system_fingerprint": answer.system_fingerprint})

        await probe_until_answered(answer_and_identify)

    def unsupported(self, options: GenerateOptions) -> list[str]:
        """The set options chat completions cannot carry (asked once at the start of a run)."""
        return [
            f"{name} (chat completions has no such field; a server that takes one reads it from extra_body)"
            for name in set_options(options, ["thinking_budget"])
        ]

    async def _models_entry(self, client: AsyncOpenAI) -> ServedModel:
        """This model's ``/v1/models`` entry; empty when the server has no listing or it cannot be read."""
        try:
            raw = await client.models.with_raw_response.list()
            listing = json.loads(raw.http_response.content)
        except (openai.OpenAIError, ValueError, RecursionError):
            return ServedModel()
        return models_entry(listing, self.model, now=time.time())

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
        if opts.reasoning_effort:
            kwargs["reasoning_effort"] = opts.reasoning_effort
        if opts.top_p is not None:
            kwargs["top_p"] = opts.top_p
        if opts.stop is not None:
            kwargs["stop"] = list(opts.stop)
        if opts.extra_body:
            kwargs["extra_body"] = opts.extra_body  # the SDK merges it into the JSON body
        resp, raw = await _complete(self._client, kwargs)
        # The request as sent, less what the transcript keeps provider-neutral (messages, tools).
        sent = {k: v for k, v in kwargs.items() if k not in ("messages", "tools")}
        choice0 = resp.choices[0]
        msg = choice0.message
        finish = choice0.finish_reason
        calls = [parse_tool_call(tc, finish) for tc in (msg.tool_calls or []) if tc.function is not None]
        usage = Usage()
        if resp.usage is not None:
            usage = Usage(input_tokens=resp.usage.prompt_tokens or 0, output_tokens=resp.usage.completion_tokens or 0)
        return AssistantTurn(
            content=msg.content,
            tool_calls=calls,
            finish_reason=finish,
            usage=usage,
            model=resp.model,
            exchange=ProviderExchange(provider=self.provider, request=sent, response=raw),
        )


async def _complete(client: AsyncOpenAI, kwargs: dict[str, Any]) -> tuple[WireCompletion, dict[str, Any]]:
    """POST one chat completion: the checked reply and its body as it came.

    Every failure becomes a ``ModelError`` (or its transient subclasses).
    """
    try:
        raw = await client.chat.completions.with_raw_response.create(**kwargs)
    except openai.APIStatusError as exc:
        # The SDK prefixes "Error code: 404 - "; the status is already in our line.
        message = exc.message.removeprefix(f"Error code: {exc.status_code} - ")
        raise status_error(exc.status_code, message, retry_after=exc.response.headers.get("retry-after")) from exc
    except openai.OpenAIError as exc:
        raise sdk_error(exc, timeout=openai.APITimeoutError, connection=openai.APIConnectionError) from exc
    http = raw.http_response
    return decode_body(WireCompletion, http.content, http.headers.get("content-type", ""))
