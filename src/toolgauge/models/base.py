"""The model-client seam every protocol talks to."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from toolgauge.records import AssistantTurn, ModelRequest


@runtime_checkable
class ModelClient(Protocol):
    """An async model: one request in, one assistant turn out.

    ``cacheable`` says whether answers may be served from the response cache (true for real
    endpoints, false for scripted, replay and gold clients, which are instant anyway).
    ``cache_id`` names the model in cache keys. Clients raise ``TransientModelError`` for
    failures worth retrying and ``ModelError`` for the rest.
    """

    name: str
    cacheable: bool

    @property
    def cache_id(self) -> str:
        """Identity of the model in cache keys."""
        ...

    async def start(self) -> None:
        """Acquire resources (start a server, open a connection pool)."""
        ...

    async def close(self) -> None:
        """Release resources."""
        ...

    async def generate(self, request: ModelRequest) -> AssistantTurn:
        """Answer one request."""
        ...
