"""A model's response-cache entries read into memory (store/prefetch.py): a hit answered from them is what a
look-up on the store's thread returns, counted and stored alike; only that model's entries are read; a
budget bounds them; and the engine starts it after enough hits.

Every look-up that goes to the store's thread passes ``Store.cache_get``: the tests count those calls to
tell a hit served from memory from one that made the trip.
"""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from sqlalchemy import create_engine, select

from helpers.episode_helpers import ClientWithoutLifecycle, Echo, echo_episode
from toolgauge.engine import EngineConfig, run_episodes
from toolgauge.engine.cache import request_hash
from toolgauge.records import AssistantTurn, Message, ModelRequest, Usage
from toolgauge.store import Store, open_store, schema
from toolgauge.store.prefetch import CachePrefetch
from toolgauge.store.reader import CacheReader

GIVE_UP_S = 60.0  # only so that a broken prefetch fails the test instead of hanging it


class Endpoint(ClientWithoutLifecycle):
    """A cacheable client answering the prompt reversed, with token counts that differ per prompt."""

    name = "endpoint"
    cacheable = True

    def __init__(self, cache_id: str = "endpoint-v1") -> None:
        self.cache_id = cache_id
        self.calls = 0

    async def generate(self, request: ModelRequest) -> AssistantTurn:
        self.calls += 1
        text = request.messages[-1].content or ""
        return AssistantTurn(content=text[::-1], usage=Usage(input_tokens=len(text), output_tokens=len(text) + 1))


class TripCountingStore(Store):
    """Counts the look-ups made on the store's thread (``cache_get``)."""

    def __init__(self, store: Store) -> None:
        super().__init__(store.engine)
        self.trips = 0

    def cache_get(self, key: str) -> dict | None:
        self.trips += 1
        return super().cache_get(key)


SAMPLES = [(f"s{i}", f"prompt number {i}") for i in range(12)]
NO_PREFETCH = EngineConfig(concurrency=1, show_progress=False, cache_prefetch_after=None)


def calls_of(store: Store, run_id: str) -> list[tuple]:
    c = schema.model_calls.c
    with store.engine.connect() as conn:
        rows = conn.execute(
            select(c.sample_key, c.response, c.input_tokens, c.output_tokens, c.cached, c.request_hash)
            .where(c.run_id == run_id)
            .order_by(c.sample_key)
        )
        return [tuple(r) for r in rows]


async def run(store: Store, client: Endpoint, config: EngineConfig) -> tuple[str, list[str | None]]:
    run_id = store.create_run("t", "m", {})
    out = await run_episodes(SAMPLES, echo_episode, Echo, client=client, store=store, run_id=run_id, config=config)
    store.flush()
    return run_id, [o.result.text if o.result else None for o in out.outcomes]


async def test_a_prefetched_hit_is_what_a_look_up_returns_counted_and_stored_alike(tmp_path):
    url = f"sqlite:///{tmp_path / 's.db'}"
    filling = open_store(url)
    _, answers = await run(filling, Endpoint(), NO_PREFETCH)
    filling.close()

    # Served by look-ups on the store's thread (as before the prefetch existed).
    looked_up = TripCountingStore(open_store(url))
    client = Endpoint()
    by_trip, by_trip_answers = await run(looked_up, client, NO_PREFETCH)
    assert (client.calls, looked_up.trips) == (0, len(SAMPLES))

    # Served from memory: the model's entries read first, then not one trip.
    prefetched = TripCountingStore(open_store(url))
    loaded = prefetched.prefetch_cache("endpoint-v1")
    assert loaded is not None and await asyncio.to_thread(loaded.wait, GIVE_UP_S)
    client = Endpoint()
    by_memory, by_memory_answers = await run(prefetched, client, NO_PREFETCH)
    assert (client.calls, prefetched.trips) == (0, 0)

    assert by_memory_answers == by_trip_answers == answers == [p[::-1] for _, p in SAMPLES]
    # Same stored calls: the same responses, the tokens counted, flagged cached, under the same keys.
    assert calls_of(prefetched, by_memory) == calls_of(looked_up, by_trip)
    assert all(row[4] for row in calls_of(prefetched, by_memory))
    stats = prefetched.call_stats(by_memory)
    assert stats == looked_up.call_stats(by_trip)
    assert stats["cached_calls"] == len(SAMPLES)
    assert stats["cached_input_tokens"] == sum(len(p) for _, p in SAMPLES) > 0
    looked_up.close()
    prefetched.close()


async def test_the_engine_reads_the_entries_ahead_after_enough_hits_on_the_store_thread(tmp_path):
    url = f"sqlite:///{tmp_path / 's.db'}"
    filling = open_store(url)
    await run(filling, Endpoint(), NO_PREFETCH)
    filling.close()
    store = TripCountingStore(open_store(url))
    client = Endpoint()
    config = EngineConfig(concurrency=1, show_progress=False, cache_prefetch_after=2)
    _, answers = await run(store, client, config)
    assert answers == [p[::-1] for _, p in SAMPLES]
    assert client.calls == 0
    # Two hits by look-up start the prefetch; the store's thread runs its page before any later look-up,
    # so at most one more look-up (asked before the page was read) makes the trip.
    assert 2 <= store.trips <= 3
    store.close()


async def test_misses_still_go_to_the_store_and_no_cache_reads_nothing(tmp_path):
    store = TripCountingStore(open_store(f"sqlite:///{tmp_path / 's.db'}"))
    client = Endpoint()
    await run(store, client, EngineConfig(concurrency=2, show_progress=False, cache_prefetch_after=1))
    assert client.calls == store.trips == len(SAMPLES)  # a cold run: every miss was looked up, then called
    again = Endpoint()
    await run(store, again, EngineConfig(concurrency=2, show_progress=False, use_cache=False, cache_prefetch_after=1))
    assert again.calls == len(SAMPLES)
    assert store.trips == len(SAMPLES)  # --no-cache: no look-up
    store.close()


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request, tmp_path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 's.db'}"
    return str(request.getfixturevalue("pg_url"))


def test_a_prefetch_reads_its_own_models_entries_and_never_another_models(store_url):
    store = open_store(store_url)
    request = ModelRequest(messages=[Message(role="user", content="hi")], sample_key="s", step=0)
    mine, theirs = request_hash("mine", request), request_hash("theirs", request)
    store.cache_put(mine, "mine", {"content": "from mine"})
    store.cache_put(theirs, "theirs", {"content": "from theirs"})
    store.flush()
    loaded = store.prefetch_cache("mine")
    assert loaded is not None and loaded.wait(GIVE_UP_S)
    assert store.cache_known(mine) == {"content": "from mine"}
    assert store.cache_known(theirs) is None  # not read ahead: only a look-up finds it
    assert store.cache_get(theirs) == {"content": "from theirs"}
    assert store.prefetch_cache("mine") is loaded  # asked again: nothing read twice
    # Page by page (one row a query) on this database too: every row of the model, none of the other's.
    for i in range(3):
        store.cache_put(f"{i:064x}", "mine", {"content": f"mine {i}"})
    store.flush()
    reader = CacheReader(store.engine)
    with ThreadPoolExecutor(max_workers=1) as thread:
        paged = CachePrefetch(reader, page_rows=1)
        assert paged.start("mine", thread.submit).wait(GIVE_UP_S)
    assert [paged.get(f"{i:064x}") for i in range(3)] == [f'{{"content": "mine {i}"}}' for i in range(3)]
    assert paged.get(mine) == '{"content": "from mine"}' and paged.get(theirs) is None
    reader.close()
    store.close()


def test_entries_are_read_page_by_page_up_to_the_budget(tmp_path):
    url = f"sqlite:///{tmp_path / 's.db'}"
    store = open_store(url)
    keys = [f"{i:064x}" for i in range(7)]
    for key in keys:
        store.cache_put(key, "m", {"content": "x" * 10})
    store.cache_put("f" * 64, "other", {"content": "y"})
    store.flush()
    store.close()
    text_size = len('{"content": "xxxxxxxxxx"}')
    reader = CacheReader(create_engine(url))
    pages: list[str] = []
    page = reader.page

    def counted(model: str, after: str, rows: int) -> list[tuple[str, str]]:
        pages.append(after)
        return page(model, after, rows)

    reader.page = counted  # type: ignore[method-assign]
    with ThreadPoolExecutor(max_workers=1) as thread:
        whole = CachePrefetch(reader, page_rows=2)
        assert whole.start("m", thread.submit).wait(GIVE_UP_S)
        assert [whole.get(k) for k in keys] == ['{"content": "xxxxxxxxxx"}'] * 7
        assert pages == ["", keys[1], keys[3], keys[5]]  # 2 + 2 + 2 + 1 rows: the short page is the last
        assert whole.get("f" * 64) is None
        # Room for 5 entries: the first 5 in key order are read, and no page after the one that filled it.
        pages.clear()
        bounded = CachePrefetch(reader, page_rows=2, budget=5 * (64 + text_size) + 10)
        assert bounded.start("m", thread.submit).wait(GIVE_UP_S)
        assert [bounded.get(k) is not None for k in keys] == [True] * 5 + [False] * 2
        assert pages == ["", keys[1], keys[3]]
        # Stopped (the store closing): nothing is read.
        stopped = CachePrefetch(reader)
        stopped.stop()
        assert stopped.start("m", thread.submit).is_set()
        assert stopped.get(keys[0]) is None
    reader.close()


def test_a_page_that_fails_ends_the_prefetch_and_look_ups_still_answer(tmp_path):
    store = open_store(f"sqlite:///{tmp_path / 's.db'}")
    store.cache_put("k" * 64, "m", {"content": "x"})
    store.flush()
    failed = threading.Event()

    def broken(model: str, after: str, rows: int) -> list[tuple[str, str]]:
        failed.set()
        raise OSError("disk went away")

    store._reader.page = broken  # type: ignore[method-assign]
    loaded = store.prefetch_cache("m")
    assert loaded is not None and loaded.wait(GIVE_UP_S)
    assert failed.is_set()
    assert store.cache_known("k" * 64) is None
    assert store.cache_get("k" * 64) == {"content": "x"}
    store.close()
