"""What every HTTP model client shares: one-line error texts, Retry-After, status codes to our errors."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from toolgauge.errors import ConnectionFailed, ModelError, TransientModelError
from toolgauge.records import GenerateOptions
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


class HostedModel:
    """What a named provider's client holds: model, key, endpoint and the cache identity they make.

    The key (and a URL's password) is learned as a secret at once, so it is masked wherever a server
    echoes it: error lines, transcripts, the store.
    """

    provider = "hosted"
    cacheable = True

    def __init__(
        self, model: str, *, api_key: str, base_url: str | None = None, timeout: float = 120.0, name: str | None = None
    ):
        self.model = model
        self.base_url = base_url
        self.name = name or f"{self.provider}:{model}"
        learn_secret(api_key)
        if base_url:
            learn_url_credentials(base_url)
        self._api_key = api_key
        self._timeout = timeout

    @property
    def cache_id(self) -> str:
        """Provider, model and endpoint: answers of another server never come from the cache."""
        return f"{self.provider}:{self.model}@{redact_url(self.base_url) if self.base_url else 'default'}"
