"""Store calls never block the event loop (issue 11): the engine's cache look-ups and group commits run on the
store's own thread, while the loop goes on.

Each test holds one store call (a cache read, a commit) until a coroutine on the event loop lets it go. Were the
call made on the loop's thread, that coroutine could never run: the call would give up waiting (after a minute,
a bound so a broken engine fails instead of hanging) and the test fails. No test measures a duration.

The rest of the store's contract under the new threading: what a look-up sees of rows buffered or being
committed, rows buffered during a commit, and a failed commit whose rows go back in front, in order.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import threading
import time
from pathlib import Path

import pytest
from sqlalchemy import select

from helpers.episode_helpers import CachedEndpoint, ClientWithoutLifecycle, Echo, echo_episode
from toolgauge.engine import EngineConfig, EpisodeContext, run_episodes
from toolgauge.errors import StoreWriteError
from toolgauge.records import AssistantTurn, Message, ModelRequest
from toolgauge.store import Store, open_store, schema

GIVE_UP_S = 60.0  # only so that a blocked loop fails the test instead of hanging it


class HeldStore(Store):
    """Holds the first cache read (``hold="read"``), the first page of cache entries read ahead
    (``hold="prefetch"``) or the first commit of a sample (``hold="commit"``) on the calling thread until
    ``release`` is set."""

    def __init__(self, store: Store, hold: str):
        super().__init__(store.engine)
        self.hold = hold
        self.holding = threading.Event()
        self.release = threading.Event()
        self.released: bool | None = None  # whether the held call was let go (None: never held)
        self.held_on: threading.Thread | None = None
        if hold == "prefetch":
            page = self._reader.page

            def held_page(model: str, after: str, rows: int) -> list[tuple[str, str]]:
                self._wait()
                return page(model, after, rows)

            self._reader.page = held_page  # type: ignore[method-assign]

    def _wait(self) -> None:
        if self.released is None:
            self.held_on = threading.current_thread()
            self.holding.set()
            self.released = self.release.wait(GIVE_UP_S)

    def cache_get(self, key: str) -> dict | None:
        if self.hold == "read":
            self._wait()
        return super().cache_get(key)

    def flush(self) -> None:
        if self.hold == "commit" and self._pending_samples:
            self._wait()
        super().flush()


async def let_go_when_held(store: HeldStore) -> int:
    """On the event loop: wait until the store holds a call, then release it; return the loop turns it took."""
    turns = 0
    while not store.holding.is_set():
        await asyncio.sleep(0)  # every turn here is the loop making progress while the store call waits
        turns += 1
    store.release.set()
    return turns


@pytest.mark.parametrize("hold", ["read", "commit", "prefetch"])
async def test_a_held_store_call_does_not_stop_the_event_loop(tmp_path, hold):
    samples = [(f"s{i}", f"text {i}") for i in range(6)]
    if hold == "prefetch":  # answers in the cache, read ahead after the first hit
        filled = open_store(f"sqlite:///{tmp_path / 's.db'}")
        config = EngineConfig(concurrency=2, show_progress=False)
        await run_episodes(samples, echo_episode, Echo, client=CachedEndpoint(), store=filled,
                           run_id=filled.create_run("t", "m", {}), config=config)  # fmt: skip
        filled.close()
    store = HeldStore(open_store(f"sqlite:///{tmp_path / 's.db'}"), hold)
    run_id = store.create_run("t", "m", {})
    client = CachedEndpoint()
    config = EngineConfig(concurrency=2, show_progress=False, cache_prefetch_after=1)
    run = asyncio.ensure_future(
        run_episodes(samples, echo_episode, Echo, client=client, store=store, run_id=run_id, config=config)
    )
    turns = await let_go_when_held(store)
    out = await run
    assert store.released is True  # released by the coroutine above, not given up on
    assert turns > 0
    assert store.held_on is not threading.current_thread()
    assert [o.result.text for o in out.outcomes] == [t[::-1] for _, t in samples]
    assert client.calls == (0 if hold == "prefetch" else len(samples))
    store.close()


async def test_a_look_up_sees_answers_buffered_committing_and_committed(tmp_path):
    store = open_store(f"sqlite:///{tmp_path / 's.db'}")
    store.flush_seconds = float("inf")
    store.cache_put("buffered", "m", {"content": "b"})
    assert await store.cache_get_async("buffered") == {"content": "b"}
    store.flush()
    assert await store.cache_get_async("buffered") == {"content": "b"}  # now from the database
    assert await store.cache_get_async("never") is None
    # Many look-ups in one tick of the loop: each gets its own answer.
    keys = ["buffered", "never", "buffered", "never"]
    assert await asyncio.gather(*(store.cache_get_async(k) for k in keys)) == [{"content": "b"}, None] * 2
    # Another process's committed answer is seen by the long-lived read connection.
    other = open_store(f"sqlite:///{tmp_path / 's.db'}")
    other.cache_put("elsewhere", "m", {"content": "e"})
    other.close()
    assert await store.cache_get_async("elsewhere") == {"content": "e"}
    store.close()


class CommitHeldStore(Store):
    """Holds the DB transaction of the next commit until ``release``; lets a test act while it is under way."""

    def __init__(self, store: Store):
        super().__init__(store.engine, flush_seconds=float("inf"))
        self.committing = threading.Event()
        self.release = threading.Event()
        self.fail = False

    def _commit(self, *batch: object) -> None:
        self.committing.set()
        assert self.release.wait(GIVE_UP_S)
        if self.fail:
            raise StoreWriteError("cannot write to the store: injected")
        super()._commit(*batch)  # type: ignore[arg-type]


def stored_keys(store: Store, run_id: str) -> tuple[list[str], list[str]]:
    """(sample keys in key order, model-call sample keys in the order they were written)."""
    s, c = schema.samples.c, schema.model_calls.c
    with store.engine.connect() as conn:
        samples = conn.execute(select(s.sample_key).where(s.run_id == run_id).order_by(s.sample_key)).scalars()
        calls = conn.execute(select(c.sample_key).where(c.run_id == run_id).order_by(c.id)).scalars()
        return list(samples), list(calls)


def record(store: Store, run_id: str, key: str) -> None:
    store.record_call({"run_id": run_id, "sample_key": key, "step": 0, "response": None})
    store.record_sample(run_id, key, result={}, error=None, latency_s=0.0)


@pytest.mark.parametrize("fail", [False, True], ids=["commit-lands", "commit-fails"])
async def test_rows_buffered_during_a_commit_wait_for_the_next_and_a_failed_one_keeps_its_rows_in_front(tmp_path, fail):
    store = CommitHeldStore(open_store(f"sqlite:///{tmp_path / 's.db'}"))
    run_id = store.create_run("t", "m", {})
    record(store, run_id, "a-first")
    store.cache_put("k", "m", {"content": "x"})
    store.fail = fail
    commit = asyncio.ensure_future(store.flush_async())
    while not store.committing.is_set():
        await asyncio.sleep(0)
    # While the commit is under way: its cache entry is still served, new rows are buffered.
    assert store.cache_get("k") == {"content": "x"}
    record(store, run_id, "b-second")
    store.release.set()
    if fail:
        with pytest.raises(StoreWriteError, match="injected"):
            await commit
        assert stored_keys(store, run_id) == ([], [])
        assert store.cache_get("k") == {"content": "x"}  # back in the buffer
        store.fail = False
    else:
        await commit
        assert stored_keys(store, run_id) == (["a-first"], ["a-first"])
    store.flush()
    assert stored_keys(store, run_id) == (["a-first", "b-second"], ["a-first", "b-second"])
    assert store.cache_get("k") == {"content": "x"}
    store.close()


class Instant(ClientWithoutLifecycle):
    """A client that answers without ever suspending (as gold and scripted models do); not cached."""

    name = "instant"
    cacheable = False
    cache_id = "instant"

    async def generate(self, request: ModelRequest) -> AssistantTurn:
        return AssistantTurn(content=request.messages[-1].content)


def committed_samples(path: Path) -> int:
    """How many sample rows a fresh reader of the database sees."""
    with contextlib.closing(sqlite3.connect(path)) as conn:
        return int(conn.execute("SELECT COUNT(*) FROM samples").fetchone()[0])


async def test_rows_are_committed_while_episodes_that_never_wait_keep_the_loop_busy(tmp_path):
    """The size threshold starts a commit at once: no loop tick is needed, and the loop may never get one."""
    path = tmp_path / "s.db"
    store = open_store(f"sqlite:///{path}")
    store.flush_rows, store.flush_seconds = 8, float("inf")
    run_id = store.create_run("t", "m", {})
    seen: list[int] = []

    async def busy(sample: str, ctx: EpisodeContext) -> Echo:
        turn = await ctx.generate([Message(role="user", content=sample)])  # never suspends
        if sample == "last":
            # Still in the same loop tick as every sample before: wait (blocking) for a commit to land.
            for _ in range(int(GIVE_UP_S / 0.01)):
                if committed_samples(path):
                    break
                time.sleep(0.01)
            seen.append(committed_samples(path))
        return Echo(text=turn.content)

    samples = [(f"s{i:02d}", f"s{i:02d}") for i in range(30)] + [("last", "last")]
    config = EngineConfig(concurrency=1, show_progress=False)
    await run_episodes(samples, busy, Echo, client=Instant(), store=store, run_id=run_id, config=config)
    assert seen and seen[0] > 0  # committed before the loop got a single tick
    assert committed_samples(path) == len(samples)
    store.close()
