"""Helpers for episode code: run it inside the real engine with scripted clients; a fake MCP client session."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import mcp_types
from pydantic import BaseModel

from toolgauge.engine import EngineConfig, EpisodeContext, run_episodes
from toolgauge.models.base import ModelClient
from toolgauge.models.offline import ScriptedClient
from toolgauge.records import AssistantTurn, Message, ModelRequest
from toolgauge.store import open_store

R = TypeVar("R", bound=BaseModel)


class ClientWithoutLifecycle:
    """A test client's ``start`` and ``close``, which have nothing to do (a base for hand-written clients)."""

    async def start(self) -> None:
        pass

    async def close(self) -> None:
        pass


class CachedEndpoint(ClientWithoutLifecycle):
    """Answers with the prompt reversed, through the response cache (as an HTTP model's answers go)."""

    name = "endpoint"
    cacheable = True
    cache_id = "endpoint-v1"

    def __init__(self) -> None:
        self.calls = 0

    async def generate(self, request: ModelRequest) -> AssistantTurn:
        self.calls += 1
        return AssistantTurn(content=(request.messages[-1].content or "")[::-1])


class Echo(BaseModel):
    """The result of :func:`echo_episode`: the model's reply text."""

    text: str | None


async def echo_episode(sample: str, ctx: EpisodeContext) -> Echo:
    """The smallest real episode: send the sample as the user's message, keep the reply."""
    turn = await ctx.generate([Message(role="user", content=sample)])
    return Echo(text=turn.content)


async def in_episode(
    tmp_path: Path,
    body: Callable[[EpisodeContext], Awaitable[R]],
    result_type: type[R],
    *,
    model: ModelClient | None = None,
    **roles: ModelClient,
) -> R:
    """Run ``body`` as the one episode of a run; ``model`` answers role ``model``, ``roles`` the others.

    The episode must not fail: its error is the assertion message.
    """
    tmp_path.mkdir(parents=True, exist_ok=True)  # toolgauge makes no folder for a named store
    store = open_store(f"sqlite:///{tmp_path / 'runs.db'}")
    run_id = store.create_run("test", "scripted", {})

    async def episode(sample: str, ctx: EpisodeContext) -> R:
        return await body(ctx)

    try:
        out = await run_episodes(
            [("s1", "x")],
            episode,
            result_type,
            client=model or ScriptedClient(outputs=[]),
            store=store,
            run_id=run_id,
            roles=roles,
            config=EngineConfig(concurrency=1, show_progress=False),
        )
        outcome = out.outcomes[0]  # read back from the store: while it is open
    finally:
        store.close()
    assert outcome.error is None, outcome.error
    assert outcome.result is not None
    return outcome.result


class FakeMcpClient:
    """The client half of an MCP connection to an adding server: ``call_tool`` returns ``{"sum": a + b}``.

    Wrapped in a ``toolgauge.tools.McpServerSession``, it lets the real session and ``McpBackend`` code run
    without a server process. ``calls`` lists (tool name, arguments) as the server would receive them.
    """

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> mcp_types.CallToolResult:
        self.calls.append((name, arguments))
        text = json.dumps({"sum": arguments["a"] + arguments["b"]})
        return mcp_types.CallToolResult(content=[mcp_types.TextContent(type="text", text=text)], is_error=False)
