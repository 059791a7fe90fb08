"""Failures that stop a whole run: the endpoint stops answering, or a store write fails.

Either stops every worker at once (no further model calls), records no sample as failed because
of it, and leaves a run that a resume finishes with every sample stored exactly once.
"""

from __future__ import annotations

import math

import pytest
from sqlalchemy import func, select

from helpers.episode_helpers import ClientWithoutLifecycle, Echo, echo_episode
from toolgauge.engine import EngineConfig, EpisodeContext, run_episodes
from toolgauge.errors import ConnectionFailed, EndpointDown, ModelError, StoreWriteError
from toolgauge.records import AssistantTurn, Message, ModelRequest
from toolgauge.store import Store, open_store, schema


class Endpoint(ClientWithoutLifecycle):
    """Answers ``up_for`` calls, then refuses every connection (``down``) until brought back up."""

    name = "endpoint"
    cacheable = True
    cache_id = "endpoint-v1"

    def __init__(self, up_for: float = math.inf, *, flaky_every: int = 0):
        self.up_for = up_for
        self.flaky_every = flaky_every
        self.calls = 0
        self.failures = 0

    async def generate(self, request: ModelRequest) -> AssistantTurn:
        self.calls += 1
        if self.calls > self.up_for or (self.flaky_every and self.calls % self.flaky_every == 0):
            self.failures += 1
            raise ConnectionFailed("APIConnectionError: Connection error. (connection refused)")
        return AssistantTurn(content=(request.messages[-1].content or "")[::-1])


FAST = EngineConfig(concurrency=4, backoff_base=0.001, backoff_cap=0.01, show_progress=False)
SAMPLES = [(f"s{i:02d}", f"text {i}") for i in range(40)]


def sample_rows(store: Store, run_id: str) -> list[tuple[str, str, int]]:
    """(key, status, rows with that key) for every stored sample of the run."""
    s = schema.samples.c
    with store.engine.connect() as conn:
        rows = conn.execute(
            select(s.sample_key, func.min(s.status), func.count()).where(s.run_id == run_id).group_by(s.sample_key)
        ).all()
    return [(r[0], r[1], r[2]) for r in rows]


async def test_a_dead_endpoint_stops_the_run_after_the_streak_and_resume_finishes_each_sample_once(tmp_path):
    store = open_store(f"sqlite:///{tmp_path / 'runs.db'}")
    run_id = store.create_run("t", "m", {})
    dying = Endpoint(up_for=10)
    with pytest.raises(EndpointDown, match="8 connection failures in a row"):
        await run_episodes(SAMPLES, echo_episode, Echo, client=dying, store=store, run_id=run_id, config=FAST)
    assert dying.failures == FAST.outage_streak  # not one call more once the streak is reached
    before = sample_rows(store, run_id)
    assert {status for _, status, _ in before} == {"done"}  # no sample stored as failed by the outage
    assert len(before) == 10

    healthy = Endpoint()
    out = await run_episodes(SAMPLES, echo_episode, Echo, client=healthy, store=store, run_id=run_id, config=FAST)
    assert healthy.calls == 30 and out.resumed == 10
    after = sample_rows(store, run_id)
    assert [(k, status, n) for k, status, n in after] == [(k, "done", 1) for k, _ in SAMPLES]
    assert [o.result.text for o in out.outcomes if o.result] == [s[::-1] for _, s in SAMPLES]


async def test_one_worker_stops_when_a_sample_spends_its_whole_retry_budget_on_connection_failures(tmp_path):
    store = open_store(f"sqlite:///{tmp_path / 'runs.db'}")
    cfg = EngineConfig(concurrency=1, max_retries=2, backoff_base=0.001, backoff_cap=0.01, show_progress=False)
    dying = Endpoint(up_for=3)
    run_id = store.create_run("t", "m", {})
    with pytest.raises(EndpointDown, match="3 connection failures in a row"):
        await run_episodes(SAMPLES, echo_episode, Echo, client=dying, store=store, run_id=run_id, config=cfg)
    assert dying.failures == 3  # one sample's three attempts, not the streak of eight
    assert [status for _, status, _ in sample_rows(store, run_id)] == ["done"] * 3


async def test_connection_failures_with_answers_in_between_are_retried_and_the_run_finishes(tmp_path):
    store = open_store(f"sqlite:///{tmp_path / 'runs.db'}")
    flaky = Endpoint(flaky_every=3)
    run_id = store.create_run("t", "m", {})
    out = await run_episodes(SAMPLES, echo_episode, Echo, client=flaky, store=store, run_id=run_id, config=FAST)
    assert flaky.failures > 10
    assert [o.error for o in out.outcomes if o.error] == [] and len(out.outcomes) == 40


async def test_an_episode_that_catches_model_errors_cannot_keep_the_run_going(tmp_path):
    async def stubborn(sample: str, ctx: EpisodeContext) -> Echo:
        texts = []
        for _ in range(50):  # like an agent loop that reports a failed call to the model and goes on
            try:
                texts.append((await ctx.generate([Message(role="user", content=sample)])).content)
            except ModelError:
                texts.append(None)
        return Echo(text=str(texts[0]))

    store = open_store(f"sqlite:///{tmp_path / 'runs.db'}")
    dying = Endpoint(up_for=0)
    run_id = store.create_run("t", "m", {})
    with pytest.raises(EndpointDown):
        await run_episodes(SAMPLES, stubborn, Echo, client=dying, store=store, run_id=run_id, config=FAST)
    assert dying.calls == FAST.outage_streak
    assert sample_rows(store, run_id) == []


async def test_a_client_that_reports_its_server_gone_stops_the_run_at_once(tmp_path):
    class DyingServer(Endpoint):
        async def generate(self, request: ModelRequest) -> AssistantTurn:
            if self.calls == 5:
                raise EndpointDown("the local model server exited with code -9")
            return await super().generate(request)

    store = open_store(f"sqlite:///{tmp_path / 'runs.db'}")
    client = DyingServer()
    run_id = store.create_run("t", "m", {})
    with pytest.raises(EndpointDown, match="exited with code -9"):
        await run_episodes(SAMPLES, echo_episode, Echo, client=client, store=store, run_id=run_id, config=FAST)
    assert client.calls == 5
    assert [status for _, status, _ in sample_rows(store, run_id)] == ["done"] * 5


class FillingStore(Store):
    """A store whose disk fills up after ``room`` sample rows: flush raises and keeps its pending rows."""

    def __init__(self, store: Store, room: int, client: Endpoint):
        super().__init__(store.engine)
        self.room = room
        self.client = client
        self.written = 0
        self.calls_when_full: int | None = None

    def flush(self) -> None:
        pending = len(self._pending_samples)
        if self.written + pending > self.room and (pending or self._pending_calls):
            if self.calls_when_full is None:
                self.calls_when_full = self.client.calls
            raise StoreWriteError("(sqlite3.OperationalError) database or disk is full")
        super().flush()
        self.written += pending


async def test_a_failed_store_write_stops_every_worker_and_a_resume_loses_nothing(tmp_path):
    client = Endpoint()
    store = FillingStore(open_store(f"sqlite:///{tmp_path / 'runs.db'}"), room=10, client=client)
    run_id = store.create_run("t", "m", {})
    with pytest.raises(StoreWriteError, match="disk is full"):
        await run_episodes(SAMPLES, echo_episode, Echo, client=client, store=store, run_id=run_id, config=FAST)
    assert client.calls == store.calls_when_full  # no model call after the failed write
    durable = sample_rows(store, run_id)
    assert len(durable) <= 10 and {s for _, s, _ in durable} <= {"done"}

    store.room = len(SAMPLES) * 10  # space freed: the pending rows are written, then the run resumes
    store.flush()
    finished_before = len(sample_rows(store, run_id))
    again = Endpoint()
    out = await run_episodes(SAMPLES, echo_episode, Echo, client=again, store=store, run_id=run_id, config=FAST)
    assert again.calls == len(SAMPLES) - finished_before
    assert out.resumed == finished_before
    assert sample_rows(store, run_id) == [(k, "done", 1) for k, _ in SAMPLES]
