"""What every HTTP model client shares.

One-line error texts, Retry-After, status codes and SDK failures as our errors, the merging of turns and the
gathering of a reply's parts, and the hosted clients' base (:class:`HostedModel`).
"""

from __future__ import annotations

import asyncio
import json
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from toolgauge.errors import ConnectionFailed, ModelError, TransientModelError
from toolgauge.records import AssistantTurn, GenerateOptions, Message, ProviderExchange, ThinkingBlock, ToolCall, Usage
from toolgauge.redact import learn_secret, learn_url_credentials, redact, redact_url

# Besides every 5xx: request timeout, conflict, too early, rate limited.
RETRYABLE_STATUS = frozenset({408, 409, 425, 429})
# The probe fails at once when nothing accepts the connection; a server that accepts but answers with a
# transient fault (5xx, 429, a malformed body, a reset) is alive, and gets a few quick attempts.
PROBE_ATTEMPTS = 4
PROBE_MAX_WAIT = 2.0
# The exception names (anywhere in the cause chain) of a connection that could not be made at all: httpx's
# and httpx2's, and aiohttp's (google-genai uses it when it is installed).
_REFUSED = frozenset({"ConnectError", "ConnectTimeout", "ClientConnectorError", "ClientConnectorDNSError"})
# What a hosted client keeps of the calls it received (see ``HostedModel._keep``): only the latest turns of a
# loop are ever sent back.
KEPT_CALLS = 4096


def retry_after_seconds(value: str | None) -> float | None:
    """A ``Retry-After`` header in seconds (None when absent, a date or not a number)."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


def one_line(text: str, limit: int = 300, *, secrets: list[str] | None = None) -> str:
    """One line of at most ``limit`` characters with secrets masked (servers echo keys and headers back).

    Redaction comes before truncation so a cut never leaves half a key behind; ``secrets`` are values
    to mask beyond the environment's (the client's own API key).
    """
    text = " ".join(redact(text, extra=[s for s in secrets or [] if s]).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def status_error(status: int, message: str, *, retry_after: str | None = None) -> ModelError:
    """The error for an HTTP status: transient (retried, ``Retry-After`` honoured) for 5xx and 408/409/425/429."""
    line = f"HTTP {status}: {one_line(message)}"
    if status >= 500 or status in RETRYABLE_STATUS:
        return TransientModelError(line, retry_after=retry_after_seconds(retry_after))
    return ModelError(line)


def set_options(options: GenerateOptions, names: Iterable[str]) -> list[str]:
    """The names among ``names`` whose option is set on ``options`` (what a client cannot honour, in order)."""
    return [name for name in names if getattr(options, name) is not None]


def decode_json_body(body: bytes, content_type: str = "") -> dict[str, Any]:
    """A 200 body as JSON; ``TransientModelError`` when it is not (an HTML page from a proxy, a body cut short).

    An overloaded or restarting server sends such bodies: retried like a 5xx, never scored as an empty reply.
    """
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):  # also UnicodeDecodeError and over-long integers
        kind = content_type.split(";")[0].strip() or "no content type"
        preview = body[:80].decode("utf-8", "replace")
        raise TransientModelError(f"malformed response: body is not JSON ({kind}): {one_line(preview)}") from None
    if not isinstance(data, dict):
        raise TransientModelError(f"malformed response: body is JSON {type(data).__name__}, not an object")
    return data


Body = TypeVar("Body", bound=BaseModel)


def decode_body(shape: type[Body], body: bytes, content_type: str = "") -> tuple[Body, dict[str, Any]]:
    """A 200 body checked against the part of the reply we use (``shape``), and the decoded JSON as it came.

    Raises:
        TransientModelError: the body is not JSON, or not of that shape (``{}``, a reply without its
            content): retried like a 5xx, never scored as an empty reply.
    """
    data = decode_json_body(body, content_type)
    try:
        return shape.model_validate(data), data
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "body"
        raise TransientModelError(f"malformed response: {where}: {first['msg']}") from None


def with_cause(exc: BaseException) -> str:
    """An SDK error's text with its cause's (the SDK says only "Connection error."; the cause says refused, reset)."""
    cause = exc.__cause__
    detail = str(cause) if cause is not None and str(cause) else ""
    return f"{exc} ({detail})" if detail and detail not in str(exc) else str(exc)


def sdk_error(exc: Exception, *, timeout: type[Exception], connection: type[Exception]) -> ModelError:
    """A failure of the ``openai`` or ``anthropic`` SDK (one error hierarchy) other than an HTTP status, as ours.

    ``timeout`` and ``connection`` are the SDK's ``APITimeoutError`` and ``APIConnectionError``: a timeout is
    transient, a connection that failed (refused, reset, a body cut short) is ``ConnectionFailed``, anything else
    a ``ModelError``.
    """
    name = exc.__class__.__name__
    if isinstance(exc, timeout):
        return TransientModelError(f"{name}: {one_line(str(exc))}")
    if isinstance(exc, connection):
        return ConnectionFailed(f"{name}: {one_line(with_cause(exc))}")
    return ModelError(f"{name}: {one_line(str(exc))}")


def refused(exc: BaseException) -> bool:
    """Whether the connection itself could not be made (as opposed to cut after connecting)."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if type(cause).__name__ in _REFUSED:
            return True
        cause = cause.__cause__ or cause.__context__
    return False


async def probe_until_answered(call: Callable[[], Awaitable[object]]) -> None:
    """Make the one-token probe ``call``; a transient fault gets a few quick attempts, a refused connection none.

    Raises:
        ModelError: with the server's answer (``HTTP 404: model 'x' not found``) or the connection failure.
    """
    for attempt in range(1, PROBE_ATTEMPTS + 1):
        try:
            await call()
            return
        except ConnectionFailed as exc:
            if refused(exc) or attempt == PROBE_ATTEMPTS:
                raise ModelError(str(exc) if refused(exc) else f"{exc} (after {attempt} attempts)") from exc
            await asyncio.sleep(0.25)
        except TransientModelError as exc:
            if attempt == PROBE_ATTEMPTS:
                raise ModelError(f"{exc} (after {attempt} attempts)") from exc
            await asyncio.sleep(min(PROBE_MAX_WAIT, exc.retry_after if exc.retry_after is not None else 0.25))


def learn_credentials(api_key: str | None, base_url: str | None) -> None:
    """Mask what a client sends (its key as a token, a URL's user:password) wherever it is echoed back.

    In completions, error bodies, transcripts, the store.
    """
    learn_secret(api_key)
    if base_url:
        learn_url_credentials(base_url)


Part = TypeVar("Part")


def merged_turns(
    messages: list[Message], parts_of: Callable[[int, Message], tuple[str, list[Part]]]
) -> tuple[str, list[tuple[str, list[Part]]]]:
    """The system text and the provider's turns of ``messages``, as the Messages API and Gemini want them.

    System messages are joined into one text; every other message becomes ``parts_of(index, message)``, its
    provider role and parts (asked in order), and consecutive turns of one role are merged. A message without
    parts is left out (the APIs reject empty turns).
    """
    system: list[str] = []
    turns: list[tuple[str, list[Part]]] = []
    for index, message in enumerate(messages):
        if message.role == "system":
            if message.content:
                system.append(message.content)
            continue
        role, parts = parts_of(index, message)
        if not parts:
            continue
        if turns and turns[-1][0] == role:
            turns[-1][1].extend(parts)
        else:
            turns.append((role, parts))
    return "\n\n".join(system), turns


@dataclass
class ReplyParts:
    """A provider's answer gathered part by part: its texts, tool calls and thinking, in order."""

    texts: list[str] = field(default_factory=list)
    calls: list[ToolCall] = field(default_factory=list)
    thinking: list[ThinkingBlock] = field(default_factory=list)

    def turn(
        self, *, finish_reason: str | None, usage: Usage, model: str | None, exchange: ProviderExchange
    ) -> AssistantTurn:
        """The answer as our turn (no text and no thinking are None)."""
        return AssistantTurn(
            content="".join(self.texts) or None,
            tool_calls=self.calls,
            finish_reason=finish_reason,
            usage=usage,
            model=model,
            thinking=self.thinking or None,
            exchange=exchange,
        )


Client = TypeVar("Client")
Kept = TypeVar("Kept")


class HostedModel(ABC, Generic[Client, Kept]):
    """What a named provider's client holds: model, key, endpoint and the cache identity they make.

    The key (and a URL's password) is learned as a secret at once, so it is masked wherever a server
    echoes it: error lines, transcripts, the store. ``Client`` is the provider SDK's client (made by
    ``start``); ``Kept`` what the provider wants back with a call it made (see ``_keep``).
    """

    provider = "hosted"
    cacheable = True

    def __init__(
        self, model: str, *, api_key: str, base_url: str | None = None, timeout: float = 120.0, name: str | None = None
    ):
        self.model = model
        self.base_url = base_url
        self.name = name or f"{self.provider}:{model}"
        learn_credentials(api_key, base_url)
        self._api_key = api_key
        self._timeout = timeout
        self._client: Client | None = None
        self._kept: OrderedDict[str, Kept] = OrderedDict()

    @property
    def cache_id(self) -> str:
        """Provider, model and endpoint: answers of another server never come from the cache."""
        return f"{self.provider}:{self.model}@{redact_url(self.base_url) if self.base_url else 'default'}"

    @abstractmethod
    async def start(self) -> None:
        """Create the SDK client (each provider's)."""

    async def _started(self) -> Client:
        """The SDK client, created on first use."""
        if self._client is None:
            await self.start()
        assert self._client is not None
        return self._client

    def _keep(self, call: str, value: Kept) -> None:
        """Keep what the provider wants back with the call keyed ``call`` (the latest ``KEPT_CALLS`` calls').

        For protocols that rebuild a model turn from its calls alone, without what came with them (Anthropic's
        thinking blocks, Gemini's call signatures).
        """
        self._kept[call] = value
        while len(self._kept) > KEPT_CALLS:
            self._kept.popitem(last=False)
