"""Clients that need no model: scripted outputs, recorded outputs, and the reference answer."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any

from toolgauge.errors import ModelError
from toolgauge.records import AssistantTurn, ModelRequest, ToolCall

Policy = Callable[[ModelRequest], AssistantTurn | Awaitable[AssistantTurn]]
ScriptItem = AssistantTurn | str | Mapping[str, Any]


def as_turn(item: ScriptItem) -> AssistantTurn:
    """Turn a scripted item (text, a dict with content/tool_calls, or a turn) into a turn."""
    if isinstance(item, AssistantTurn):
        return item
    if isinstance(item, str):
        return AssistantTurn(content=item, finish_reason="stop")
    calls = [c if isinstance(c, ToolCall) else ToolCall.model_validate(c) for c in item.get("tool_calls", [])]
    return AssistantTurn(
        content=item.get("content"),
        tool_calls=calls,
        finish_reason=item.get("finish_reason", "tool_calls" if calls else "stop"),
    )


class _NoResources:
    cacheable = False

    @property
    def cache_id(self) -> str:
        return str(getattr(self, "name", "offline"))

    async def start(self) -> None:
        """Nothing to start."""

    async def close(self) -> None:
        """Nothing to release."""


class ScriptedClient(_NoResources):
    """Answers from a list of outputs in order, or from a policy function of the request.

    With a list, the outputs are consumed in call order across the whole run (so use
    ``concurrency=1`` where order matters); ``cycle=True`` starts over when they run out,
    otherwise a call past the end raises ``ModelError`` (a script too short is a mistake in the
    test or demo that wrote it, never an empty reply to score).

    ``request_count`` counts the requests. The requests themselves are kept in ``requests`` only
    with ``record_requests=True`` (for tests that inspect them): each holds a full message
    history, so keeping them all would make a long run's memory grow with every call.
    """

    def __init__(
        self,
        outputs: Iterable[ScriptItem] | None = None,
        *,
        policy: Policy | None = None,
        cycle: bool = False,
        name: str = "scripted",
        delay: float = 0.0,
        record_requests: bool = False,
    ):
        if (outputs is None) == (policy is None):
            raise ValueError("give exactly one of outputs or policy")
        self.name = name
        self._outputs = [as_turn(o) for o in outputs] if outputs is not None else []
        self._policy = policy
        self._cycle = cycle
        self._next = 0
        self._delay = delay
        self._record_requests = record_requests
        self._requests: list[ModelRequest] = []
        self.request_count = 0

    @property
    def requests(self) -> list[ModelRequest]:
        """Every request received, in call order (needs ``record_requests=True``).

        Raises:
            RuntimeError: the client was made without ``record_requests=True``.
        """
        if not self._record_requests:
            raise RuntimeError("ScriptedClient keeps its requests only with record_requests=True")
        return self._requests

    async def generate(self, request: ModelRequest) -> AssistantTurn:
        """Return the next scripted output (or the policy's answer)."""
        self.request_count += 1
        if self._record_requests:
            self._requests.append(request)
        if self._delay:
            await asyncio.sleep(self._delay)
        if self._policy is not None:
            answer = self._policy(request)
            return await answer if inspect.isawaitable(answer) else answer
        if self._next >= len(self._outputs):
            if not self._cycle or not self._outputs:
                raise ModelError(
                    f"{self.name}: the script has {len(self._outputs)} outputs and call {self.request_count} "
                    "asked for one more"
                )
            self._next = 0
        turn = self._outputs[self._next]
        self._next += 1
        return turn


class ReplayClient(_NoResources):
    """Serves recorded outputs keyed by (sample key, step); a missing one is an empty turn."""

    def __init__(self, recorded: Mapping[str, Sequence[AssistantTurn]], *, name: str = "replay"):
        self.name = name
        self._recorded = recorded

    async def generate(self, request: ModelRequest) -> AssistantTurn:
        """Return the recorded output for this sample and step."""
        turns = self._recorded.get(request.sample_key, ())
        if request.step < len(turns):
            return turns[request.step]
        return AssistantTurn(content=None, finish_reason="stop")


class GoldClient(_NoResources):
    """Emits the reference answer the protocol attached to the request (the upper bound)."""

    name = "gold"

    async def generate(self, request: ModelRequest) -> AssistantTurn:
        """Return ``request.gold`` (an empty turn if the protocol gave none)."""
        return request.gold if request.gold is not None else AssistantTurn(content=None, finish_reason="stop")


class NoModel(_NoResources):
    """The evaluated model of a run that asks none: its outputs were recorded elsewhere.

    Official result logs, generated servers: ``name`` says where they come from. A request is a bug
    and raises.
    """

    def __init__(self, name: str):
        self.name = name

    async def generate(self, request: ModelRequest) -> AssistantTurn:
        """Refuse: nothing in this run may ask the evaluated model."""
        raise ModelError(
            f"{self.name}: this run scores recorded outputs and asks no model (sample {request.sample_key})"
        )
