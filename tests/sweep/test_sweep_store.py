"""Sweeps in the store: schema 3 and the migration from 2, and several worker processes writing one sweep at
once (on SQLite and on a real PostgreSQL server) with no lost or duplicated row."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import create_engine, func, inspect, select, text

from helpers.cli_helpers import invoke
from helpers.paths import HELPERS
from toolgauge.store import open_store, schema
from toolgauge.store.schema import SCHEMA_VERSION
from toolgauge.store.sweeps import create_sweep, get_sweep, list_sweeps, resolve_sweep_id, set_cell
from toolgauge.sweep.cells import ensure_run, shards_of
from toolgauge.sweep.file import parse_sweep
from toolgauge.sweep.plan import plan_cells

HERE = HELPERS  # the scripts its children run


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 's.db'}"
    return str(request.getfixturevalue("pg_url"))


def make_v2_store(url: str) -> None:
    """A store as toolgauge wrote it at schema 2: today's tables minus the sweeps ones, version row 2, one run."""
    st = open_store(url)
    run_id = st.create_run("suite", "gold", {"n": 1})
    st.set_run_status(run_id, "finished", n_samples=1)
    st.close()
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text("DROP TABLE sweep_cells"))
        conn.execute(text("DROP TABLE sweeps"))
        conn.execute(schema.meta.update().values(value="2"))
    engine.dispose()


def test_a_schema_2_store_is_read_as_it_is_and_migrated_to_3_by_the_first_write(tmp_path: Path):
    url = f"sqlite:///{tmp_path / 'old.db'}"
    make_v2_store(url)
    reader = open_store(url, create=False)
    assert reader.schema_version == 2
    assert list_sweeps(reader) == [] and resolve_sweep_id(reader, "sweep-x") is None
    reader.close()
    listed = invoke("sweeps", "--store", url, "--json")
    assert listed.exit_code == 0 and listed.stdout.strip() == "[]"
    assert invoke("runs", "--store", url).exit_code == 0

    store = open_store(url)  # a command that writes migrates
    assert store.schema_version == SCHEMA_VERSION == 3
    with store.engine.connect() as conn:
        tables = set(inspect(conn).get_table_names())
        version = conn.execute(select(schema.meta.c.value).where(schema.meta.c.key == "schema_version")).scalar_one()
        runs = conn.execute(select(func.count()).select_from(schema.runs)).scalar_one()
    assert {"sweeps", "sweep_cells"} <= tables and version == "3" and runs == 1
    record = create_sweep(store, "file text", [("gold", "suite"), ("gold", "bfcl")])
    store.close()
    again = open_store(url, create=False)
    found = get_sweep(again, record.id)
    assert found is not None and [(c.cell, c.model, c.benchmark, c.status) for c in found.cells] == [
        (0, "gold", "suite", "pending"), (1, "gold", "bfcl", "pending")
    ]  # fmt: skip
    assert resolve_sweep_id(again, record.id[:-2]) == record.id
    again.close()


def test_worker_processes_write_one_sweep_at_once_and_lose_or_duplicate_no_row(store_url: str):
    [cell] = plan_cells(parse_sweep('[[model]]\nspec = "gold"\n[[benchmark]]\nname = "suite"\n', "s"), "s")
    keys = cell.sample_keys
    shards = shards_of(keys, 8)
    st = open_store(store_url)
    # One cell per worker process, each marking its own; every cell's run is the same run (its shards).
    workers = [(i, shard) for i, shard in enumerate(shards)] + [(0, shards[0]), (1, shards[1])]
    record = create_sweep(st, "text", [("gold", "suite")] * len(workers))
    run_id = record.cells[0].run_id
    st.close()
    ensure_run(store_url, run_id, cell.bench, "gold")
    procs = [
        subprocess.Popen(
            [sys.executable, str(HERE / "sweep_worker.py"), store_url, record.id, str(n), run_id, str(shard),
             ",".join(chunk)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for n, (shard, chunk) in enumerate(workers)
    ]  # fmt: skip
    outputs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0] * len(procs), [err[-2000:] for _, err in outputs]

    st = open_store(store_url, create=False)
    try:
        with st.engine.connect() as conn:
            s, c = schema.samples.c, schema.model_calls.c
            stored = conn.execute(select(s.sample_key).where(s.run_id == run_id)).scalars().all()
            calls = conn.execute(select(c.sample_key, c.step, c.role).where(c.run_id == run_id)).all()
            leases = conn.execute(select(func.count()).select_from(schema.run_locks)).scalar_one()
        final = get_sweep(st, record.id)
    finally:
        st.close()
    assert sorted(stored) == sorted(keys)  # every sample once: two workers on one shard ran it once
    assert len(calls) == len(set(calls)) and {k for k, _, _ in calls} == set(keys)
    assert leases == 0
    assert final is not None
    statuses = [c.status for c in final.cells]
    # Each worker saw its whole shard done: the first of two on a shard ran it, the second found it done.
    assert statuses == [f"done-{len(chunk)}" for _, chunk in workers]


def test_a_sweep_cell_status_update_touches_its_row_only(store_url: str):
    st = open_store(store_url)
    a = create_sweep(st, "a", [("m1", "suite"), ("m2", "suite")])
    b = create_sweep(st, "b", [("m1", "suite")])
    set_cell(st, a.id, 1, "failed", error="model 'm2' does not answer")
    found_a, found_b = get_sweep(st, a.id), get_sweep(st, b.id)
    st.close()
    assert found_a is not None and found_b is not None
    assert [(c.status, c.error) for c in found_a.cells] == [("pending", None), ("failed", "model 'm2' does not answer")]
    assert [c.status for c in found_b.cells] == ["pending"]
    assert len({c.run_id for c in [*found_a.cells, *found_b.cells]}) == 3


def _foreign_lease(url: str, key: str, host: str) -> None:
    """A live-looking lease of ``key`` held from another host (fresh heartbeat)."""
    import time

    st = open_store(url)
    with st.engine.begin() as conn:
        now = time.time()
        conn.execute(schema.run_locks.insert().values(run_id=key, owner="other", hostname=host, pid=1,
                                                      pid_started=None, acquired_at=now, heartbeat_at=now))  # fmt: skip
    st.close()


async def test_a_lease_held_from_a_lost_host_is_taken_over_at_once_and_only_then(tmp_path: Path):
    from toolgauge.errors import RunLocked
    from toolgauge.sweep.cells import take_lease

    url = f"sqlite:///{tmp_path / 's.db'}"
    _foreign_lease(url, "run/shard-0", "lost-host")
    _foreign_lease(url, "run/shard-1", "live-host")
    st = open_store(url)
    try:
        gone = {"lost-host"}.__contains__
        with pytest.raises(RunLocked, match="run/shard-1 is being run by pid 1 on live-host"):
            await take_lease(st, "run/shard-1", 0.0, gone)  # its host is alive: its heartbeat is fresh
        with pytest.raises(RunLocked):
            await take_lease(st, "run/shard-0", 0.0, None)  # nobody says its host is lost
        await take_lease(st, "run/shard-0", 0.0, gone)
        holder = st.run_lock_holder("run/shard-0")
        assert holder is not None and holder.owner == st.owner
    finally:
        st.close()
