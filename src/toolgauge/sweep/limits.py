"""Per-endpoint model concurrency across a sweep: a client wrapper that takes a slot around each request.

The narrowest seam: every model request goes through ``ModelClient.generate``, so a wrapper client that
holds a slot of its endpoint's limit for the time of one request caps the requests in flight to that endpoint,
whatever the cells, shards and workers. On the local executor the slots are an ``asyncio.Semaphore`` per
endpoint (one event loop runs every cell); on Ray, a named actor (``toolgauge.sweep.ray_executor``) hands them
out to every worker of the cluster.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Protocol
from urllib.parse import urlsplit

from toolgauge.models.base import ModelClient
from toolgauge.records import AssistantTurn, GenerateOptions, ModelRequest


class Limiter(Protocol):
    """Hands out slots of an endpoint's limit."""

    def slot(self, endpoint: str, limit: int) -> contextlib.AbstractAsyncContextManager[None]:
        """Hold one of ``limit`` slots of ``endpoint`` for the time of the ``async with`` block."""
        ...


class LocalLimiter:
    """Slots of one process: an ``asyncio.Semaphore`` per endpoint (made with the first limit asked for)."""

    def __init__(self) -> None:
        self._semaphores: dict[str, asyncio.Semaphore] = {}

    @contextlib.asynccontextmanager
    async def slot(self, endpoint: str, limit: int) -> AsyncIterator[None]:
        """Hold one slot of ``endpoint``."""
        semaphore = self._semaphores.setdefault(endpoint, asyncio.Semaphore(limit))
        async with semaphore:
            yield


def endpoint_of(spec: str) -> str | None:
    """The endpoint a model spec sends requests to (``scheme://host:port``), or None for offline models.

    Models served by one server share its limit: ``http://h:8000/v1#a`` and ``http://h:8000/v1#b`` are one
    endpoint. ``openai:MODEL`` is the OpenAI endpoint (or ``$OPENAI_BASE_URL``); ``local`` is a server each
    worker starts for itself, so it has no shared limit.
    """
    spec = spec.strip()
    url: str | None = None
    if spec.startswith(("http://", "https://")):
        url = spec.partition("#")[0]
    elif spec.startswith("openai-compatible:"):
        url = spec.removeprefix("openai-compatible:").partition("#")[0]
    elif spec.startswith("openai:"):
        url = spec.removeprefix("openai:").partition("@")[2] or "openai"
    elif spec.startswith(("anthropic:", "google:", "azure:", "openrouter:")):
        # A named provider: its own URL when the spec gives one, else the provider's API is the endpoint.
        provider, _, rest = spec.partition(":")
        url = rest.partition("@")[2] or provider
    if url is None:
        return None
    if url in ("openai", "anthropic", "google", "azure", "openrouter"):
        return url
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return f"{parts.scheme}://{host}:{port}"


class LimitedClient:
    """A model client shown under the sweep's name for it, whose every request holds a slot of its endpoint.

    Without an endpoint (gold, scripted, replay) requests are passed on as they are.
    """

    def __init__(self, inner: ModelClient, limiter: Limiter | None, endpoint: str | None, limit: int, *, name: str):
        self.inner = inner
        self.limiter = limiter
        self.endpoint = endpoint
        self.limit = limit
        self.name = name
        self.cacheable = inner.cacheable

    @property
    def cache_id(self) -> str:
        """The wrapped client's cache identity (a limit never changes an answer)."""
        return self.inner.cache_id

    async def start(self) -> None:
        """Start the wrapped client."""
        await self.inner.start()

    async def close(self) -> None:
        """Close the wrapped client."""
        await self.inner.close()

    async def probe(self) -> None:
        """Probe the wrapped client's endpoint, if it has one (one request: it holds a slot too)."""
        probe = getattr(self.inner, "probe", None)
        if probe is not None:
            async with self._slot():
                await probe()

    def unsupported(self, options: GenerateOptions) -> list[str]:
        """The options the wrapped client cannot honour (none if it does not say)."""
        ask = getattr(self.inner, "unsupported", None)
        return list(ask(options)) if ask is not None else []

    async def generate(self, request: ModelRequest) -> AssistantTurn:
        """Answer one request while holding a slot of the endpoint."""
        async with self._slot():
            return await self.inner.generate(request)

    def _slot(self) -> contextlib.AbstractAsyncContextManager[None]:
        if self.limiter is None or self.endpoint is None:
            return contextlib.nullcontext()
        return self.limiter.slot(self.endpoint, self.limit)
