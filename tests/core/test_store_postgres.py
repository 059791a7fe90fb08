"""The store on a real PostgreSQL server (tests/helpers/pg_server.py) as on SQLite, and a server lost mid-run."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from helpers.full_disk_run import assert_nothing_lost, scenario
from toolgauge.errors import RunLocked
from toolgauge.results import EvalResults, Metric
from toolgauge.store import open_store, schema


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
        "calls": 3.0, "cached_calls": 0.0, "input_tokens": 6.0, "output_tokens": 9.0, "cached_input_tokens": 0.0,
        "cached_output_tokens": 0.0, "model_latency_s": 1.5
    }  # fmt: skip
    store.forget_samples(run_id, ["s2"])
    results = EvalResults(benchmark="t", metrics=[Metric(name="acc", value=0.5, n=2)])
    store.save_results(run_id, results)
    store.set_run_status(run_id, "finished", n_samples=2)
    store.close()
    other.acquire_run_lock(run_id)  # free once the holder closed
    other.close()
    reader = open_store(store_url, create=False)
    assert reader.resolve_run_id("latest") == run_id == reader.resolve_run_id(run_id[:-2])
    run = reader.get_run(run_id)
    assert (run.status, run.n_samples, run.results) == ("finished", 2, results)
    assert set(reader.finished_samples(run_id)) == {"s0", "s1"}
    reader.close()


@pytest.mark.parametrize("mode", ["retry", "resume"])
async def test_a_lost_postgresql_server_stops_the_run_and_nothing_finished_is_lost(pg_server, pg_url, mode):
    server_down = False

    def cut_at_call_40(k: int) -> None:
        nonlocal server_down
        if k == 40:
            pg_server.stop()  # every connection is cut mid-run
            server_down = True

    def restart() -> None:
        nonlocal server_down
        pg_server.start()
        server_down = False

    try:
        found = await scenario(pg_url, mode, 120, give_back=restart, on_model_call=cut_at_call_40)
    finally:
        if server_down:
            pg_server.start()
    message = found["run_raised"]
    database = pg_url.rsplit("/", 1)[1]
    shown = f"postgresql://toolgauge:***@127.0.0.1:{pg_server.port}/{database}"
    assert message.startswith(f"cannot write to the store {shown}: ")
    assert pg_server.password not in message and "\n" not in message
    assert_nothing_lost(found, mode)
