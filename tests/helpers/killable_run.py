"""A run for the kill -9 test that never finishes: ``python tests/helpers/killable_run.py STORE_URL RUN_ID ANSWERS``.

Its model answers ANSWERS calls and then never answers again, so a kill lands mid-run whatever the machine's load.
"""

from __future__ import annotations

import asyncio
import sys

from pydantic import BaseModel

from toolgauge.engine import EngineConfig, EpisodeContext, run_episodes
from toolgauge.models.offline import ScriptedClient
from toolgauge.records import AssistantTurn, Message, ModelRequest
from toolgauge.store import open_store

N_SAMPLES = 200


class Echo(BaseModel):
    text: str | None


async def episode(sample: str, ctx: EpisodeContext) -> Echo:
    turn = await ctx.generate([Message(role="user", content=sample)])
    return Echo(text=turn.content)


def samples() -> list[tuple[str, str]]:
    return [(f"s{i:03d}", f"q{i}") for i in range(N_SAMPLES)]


async def main(url: str, run_id: str, answers: int) -> None:
    store = open_store(url)
    if store.get_run(run_id) is None:
        store.create_run("kill-test", "scripted", {}, run_id=run_id)
    answered = 0

    async def answer_then_hang(request: ModelRequest) -> AssistantTurn:
        nonlocal answered
        answered += 1
        if answered > answers:
            await asyncio.Event().wait()
        return AssistantTurn(content=(request.messages[-1].content or "").upper())

    await run_episodes(
        samples(),
        episode,
        Echo,
        client=ScriptedClient(policy=answer_then_hang),
        store=store,
        run_id=run_id,
        config=EngineConfig(concurrency=4, show_progress=False),
    )


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
