"""A sample's named steps (``EpisodeContext.checkpoint`` / ``save_step``), on SQLite and on PostgreSQL.

A sample stopped after its second named step resumes at its third: the first two are not run again, their
model calls stay in its transcript once, and the calls of the step that was running are forgotten.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel

from helpers.episode_helpers import ClientWithoutLifecycle
from toolgauge.engine import EngineConfig, EpisodeContext, run_episodes
from toolgauge.records import AssistantTurn, Message, ModelRequest
from toolgauge.store import Store, open_store

STEPS = ("one", "two", "three")
NO_CACHE = EngineConfig(concurrency=2, show_progress=False, use_cache=False)


class Done(BaseModel):
    text: str


class Step(BaseModel):
    text: str


class Upper(ClientWithoutLifecycle):
    """Answers with the prompt in capitals, counting calls."""

    name = "upper"
    cacheable = False
    cache_id = "upper-v1"

    def __init__(self) -> None:
        self.calls: list[str] = []

    async def generate(self, request: ModelRequest) -> AssistantTurn:
        text = request.messages[-1].content or ""
        self.calls.append(text)
        return AssistantTurn(content=text.upper())


class Session:
    """One run of the three-step episode: which steps it ran, and where it fails."""

    def __init__(self, *, fail_in: tuple[str, str] | None = None, reject: str | None = None):
        self.ran: list[tuple[str, str]] = []
        self.fail_in = fail_in  # (sample, step): that step fails after its model call
        self.reject = reject  # a saved step whose value this session cannot read (as if another version saved it)

    def parse(self, name: str):
        def parse(value: object) -> Step:
            if name == self.reject:
                raise ValueError(f"cannot read step {name}")
            return Step.model_validate(value)

        return parse

    async def episode(self, sample: str, ctx: EpisodeContext) -> Done:
        texts = []
        for name in STEPS:
            step = await ctx.checkpoint(name, self.parse(name))
            if step is None:
                self.ran.append((ctx.sample_key, name))
                # The judge role's calls are stored under "<sample>#judge": a step keeps those too.
                turn = await ctx.generate([Message(role="user", content=f"{sample} {name}")], role="judge")
                if (ctx.sample_key, name) == self.fail_in:
                    raise RuntimeError(f"{name} failed after its model call")
                step = Step(text=turn.content or "")
                await ctx.save_step(name, step.model_dump())
            texts.append(step.text)
        return Done(text="|".join(texts))


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path):
    url = f"sqlite:///{tmp_path / 'steps.db'}" if request.param == "sqlite" else request.getfixturevalue("pg_url")
    st = open_store(url)
    yield st
    st.close()


async def run(store: Store, run_id: str, session: Session, client: Upper) -> list[str | None]:
    out = await run_episodes(
        [("a", "a"), ("b", "b")],
        session.episode,
        Done,
        client=client,
        roles={"judge": client},
        store=store,
        run_id=run_id,
        config=NO_CACHE,
    )
    return [o.result.text if o.result is not None else None for o in out.outcomes]


def prompts(store: Store, run_id: str, key: str) -> list[str]:
    """The prompts of a sample's stored model calls, in the order they were stored."""
    return [(call.messages or [])[-1].content or "" for call in store.transcript(run_id, key)]


async def test_a_sample_resumed_after_its_second_step_does_not_redo_the_first_two(store: Store):
    run_id = store.create_run("steps", "upper", {})
    first, client = Session(fail_in=("a", "three")), Upper()
    assert await run(store, run_id, first, client) == [None, "B ONE|B TWO|B THREE"]
    assert store.sample_steps(run_id, "a") == {"one": {"text": "A ONE"}, "two": {"text": "A TWO"}}
    assert prompts(store, run_id, "a") == ["a one", "a two", "a three"]  # the failed step's call is stored

    second, again = Session(), Upper()
    assert await run(store, run_id, second, again) == ["A ONE|A TWO|A THREE", "B ONE|B TWO|B THREE"]
    assert second.ran == [("a", "three")]  # sample b was done; sample a ran its third step alone
    assert again.calls == ["a three"]
    # The reused steps' calls once, the abandoned call of step three gone, the new one logged.
    assert prompts(store, run_id, "a") == ["a one", "a two", "a three"]
    assert prompts(store, run_id, "b") == ["b one", "b two", "b three"]
    assert store.run_steps(run_id) == {
        key: {name: {"text": f"{key} {name}".upper()} for name in STEPS} for key in ("a", "b")
    }


async def test_a_saved_step_the_episode_cannot_read_is_redone_with_the_steps_after_it(store: Store):
    run_id = store.create_run("steps", "upper", {})
    await run(store, run_id, Session(fail_in=("a", "three")), Upper())
    second, again = Session(reject="two"), Upper()
    assert await run(store, run_id, second, again) == ["A ONE|A TWO|A THREE", "B ONE|B TWO|B THREE"]
    assert second.ran == [("a", "two"), ("a", "three")]
    # Step one's call kept; step two's old call dropped with its step; no call twice.
    assert prompts(store, run_id, "a") == ["a one", "a two", "a three"]
    assert list(store.sample_steps(run_id, "a")) == list(STEPS)


def test_a_step_saved_before_any_call_keeps_no_call_and_the_first_value_stands(store: Store):
    run_id = store.create_run("steps", "upper", {})
    store.save_step(run_id, "a", "setup", {"n": 1})
    store.save_step(run_id, "a", "setup", {"n": 2})  # saved before: kept as it was
    store.record_call({"run_id": run_id, "sample_key": "a", "step": 0})
    store.record_call({"run_id": run_id, "sample_key": "a#judge", "role": "judge", "step": 0})
    store.forget_calls(run_id, keep=[])
    assert store.transcript(run_id, "a") == []
    assert store.sample_steps(run_id, "a") == {"setup": {"n": 1}}
    assert store.sample_steps(run_id, "b") == {}


def test_a_read_only_store_from_before_steps_has_none(tmp_path: Path):
    url = f"sqlite:///{tmp_path / 'old.db'}"
    store = open_store(url)
    run_id = store.create_run("steps", "upper", {})
    with store.engine.begin() as conn:
        conn.exec_driver_sql("DROP TABLE sample_steps")  # as a store written before the table existed
    store.close()
    reader = open_store(url, create=False)
    try:
        assert reader.sample_steps(run_id, "a") == {} and reader.run_steps(run_id) == {}
    finally:
        reader.close()
