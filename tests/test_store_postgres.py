"""The store on a real PostgreSQL server (tests/pg_server.py) as on SQLite, and a server lost mid-run."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from full_disk_run import Answer, AuditedStore, answer_for, episode
from toolgauge.engine import EngineConfig, run_episodes
from toolgauge.errors import RunLocked, StoreWriteError
from toolgauge.models.offline import ScriptedClient
from toolgauge.records import AssistantTurn, ModelRequest
from toolgauge.store import open_store, schema

CONFIG = EngineConfig(concurrency=4, show_progress=False)


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request, tmp_path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 's.db'}"
    return str(request.getfixturevalue("pg_url"))


def call_row(run_id: str, key: str) -> dict:
    return {"run_id": run_id, "sample_key": key, "step": 0, "response": key, "input_tokens": 2, "output_tokens": 3,
            "latency_s": 0.5, "attempts": 1, "cached": False}  # fmt: skip


def test_runs_samples_calls_cache_and_leases_round_trip(store_url):
    store, other = open_store(store_url), open_store(store_url)
    run_id = store.create_run("t", "m", {"k": 1})
    store.acquire_run_lock(run_id)
    with pytest.raises(RunLocked, match=f"run {run_id} is being run by pid"):
        other.acquire_run_lock(run_id)
    for i in range(3):
        store.record_call(call_row(run_id, f"s{i}"))
        failed = i == 2
        store.record_sample(run_id, f"s{i}", result=None if failed else {"i": i}, error="boom" if failed else None,
                            latency_s=0.1)  # fmt: skip
    store.cache_put("k1", "m", {"content": "cached"})
    store.flush()
    other.cache_put("k1", "m", {"content": "cached"})  # the same answer from a second writer is kept once
    other.flush()
    done = other.finished_samples(run_id)
    assert {k: (r.status, r.result) for k, r in done.items()} == {
        "s0": ("done", {"i": 0}), "s1": ("done", {"i": 1}), "s2": ("error", None)
    }  # fmt: skip
    assert other.cache_get("k1") == {"content": "cached"}
    with other.engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(schema.response_cache)).scalar_one() == 1
    assert store.call_stats(run_id) == {
        "calls": 3.0, "cached_calls": 0.0, "input_tokens": 6.0, "output_tokens": 9.0, "model_latency_s": 1.5
    }  # fmt: skip
    store.forget_samples(run_id, ["s2"])
    store.save_summary(run_id, {"scores": {"acc": 0.5}})
    store.set_run_status(run_id, "finished", n_samples=2)
    store.close()
    other.acquire_run_lock(run_id)  # free once the holder closed
    other.close()
    reader = open_store(store_url, create=False)
    assert reader.resolve_run_id("latest") == run_id == reader.resolve_run_id(run_id[:-2])
    run = reader.get_run(run_id)
    assert (run.status, run.n_samples, run.summary) == ("finished", 2, {"scores": {"acc": 0.5}})
    assert set(reader.finished_samples(run_id)) == {"s0", "s1"}
    reader.close()


@pytest.mark.parametrize("mode", ["retry", "resume"])
async def test_a_lost_postgresql_server_stops_the_run_and_nothing_finished_is_lost(pg_server, pg_url, mode):
    n = 120
    items = [(f"s{i:03d}", f"question {i}") for i in range(n)]
    store = AuditedStore(open_store(pg_url))
    run_id = store.create_run("pg-outage", "scripted", {})
    server_down = False

    def policy(request: ModelRequest) -> AssistantTurn:
        nonlocal server_down
        store.model_calls += 1
        if store.model_calls == 40:
            pg_server.stop()  # every connection is cut mid-run
            server_down = True
        return AssistantTurn(content=answer_for(request.messages[-1].content or ""))

    try:
        with pytest.raises(StoreWriteError) as caught:
            await run_episodes(
                items, episode, Answer, client=ScriptedClient(policy=policy, delay=0.002), store=store,
                run_id=run_id, config=CONFIG,
            )  # fmt: skip
    finally:
        if server_down:
            pg_server.start()
    message = str(caught.value)
    database = pg_url.rsplit("/", 1)[1]
    shown = f"postgresql://toolgauge:***@127.0.0.1:{pg_server.port}/{database}"
    assert message.startswith(f"cannot write to the store {shown}: ")
    assert pg_server.password not in message and "\n" not in message
    acked = set(store.acked)
    assert 0 < len(acked) < n
    if mode == "retry":
        store.flush()  # the kept rows, once the server is back
        assert set(store.recorded) <= set(store.finished_samples(run_id))
        store.close()
    else:
        store.engine.dispose()  # the process "exits" with rows still buffered

    resumer = open_store(pg_url)
    present = resumer.finished_samples(run_id)
    assert acked <= set(present)
    done_before = {k for k, r in present.items() if r.status == "done"}
    asked: list[str] = []

    def resume_policy(request: ModelRequest) -> AssistantTurn:
        asked.append(request.sample_key)
        return AssistantTurn(content=answer_for(request.messages[-1].content or ""))

    out = await run_episodes(
        items, episode, Answer, client=ScriptedClient(policy=resume_policy), store=resumer, run_id=run_id,
        config=CONFIG,
    )  # fmt: skip
    assert set(asked).isdisjoint(done_before) and len(asked) == n - len(done_before)
    assert out.resumed == len(done_before)
    final = resumer.finished_samples(run_id)
    assert len(final) == n and all(r.result == {"text": answer_for(q)} for (k, q) in items for r in [final[k]])
    c = schema.model_calls.c
    with resumer.engine.connect() as conn:
        doubled = conn.execute(
            select(func.count()).select_from(
                select(c.sample_key).group_by(c.sample_key, c.step, c.created_at).having(func.count() > 1).subquery()
            )
        ).scalar_one()
    assert doubled == 0
    resumer.close()
