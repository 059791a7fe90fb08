"""The store loses nothing: failed writes keep their rows and say so, retries write them once; read-only opens."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, event, func, select

from helpers.cli_helpers import invoke, results_of
from helpers.full_disk_run import assert_nothing_lost
from helpers.paths import HELPERS
from toolgauge.errors import StoreWriteError, UsageError
from toolgauge.results import EvalResults, Metric
from toolgauge.store import Store, open_store, schema
from toolgauge.store.store import _sqlite_pragmas

HERE = HELPERS  # the scripts its children run


def call_row(run_id: str, key: str, step: int = 0) -> dict:
    return {
        "run_id": run_id, "sample_key": key, "step": step, "request_hash": None, "response": f"{key}/{step}",
        "error": None, "input_tokens": 1, "output_tokens": 1, "latency_s": 0.0, "attempts": 1, "cached": False,
    }  # fmt: skip


def stored(url: str, run_id: str) -> tuple[list[str], list[str], int]:
    """(sample keys, model-call responses in insertion order, cache rows) as a fresh reader sees them."""
    reader = open_store(url)
    try:
        with reader.engine.connect() as conn:
            keys = sorted(
                conn.execute(select(schema.samples.c.sample_key).where(schema.samples.c.run_id == run_id)).scalars()
            )
            calls = list(
                conn.execute(select(schema.model_calls.c.response).order_by(schema.model_calls.c.id)).scalars()
            )
            cache = conn.execute(select(func.count()).select_from(schema.response_cache)).scalar_one()
    finally:
        reader.close()
    return keys, calls, int(cache)


# These tests flush by hand: a store that also flushed when 0.25 s had passed would flush early on a slow machine.
NEVER_BY_TIME = float("inf")


def impatient_store(url: str) -> Store:
    """A store on ``url`` that gives up on a locked database after 50 ms instead of 5 s."""
    open_store(url).close()  # create the schema (and WAL mode) first
    engine = create_engine(url, connect_args={"timeout": 0.05})
    event.listen(engine, "connect", _sqlite_pragmas)
    return Store(engine, url=url, flush_seconds=NEVER_BY_TIME)


def test_a_failed_group_commit_keeps_its_rows_in_order_and_a_later_one_writes_them_once(tmp_path):
    path = tmp_path / "s.db"
    url = f"sqlite:///{path}"
    store = impatient_store(url)
    run_id = store.create_run("t", "m", {})
    # Another process holds the write lock: a real "database is locked" on commit.
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    for i in range(3):
        store.record_call(call_row(run_id, f"s{i}"))
        store.record_sample(run_id, f"s{i}", result={"i": i}, error=None, latency_s=0.1)
    store.cache_put("k1", "m", {"content": "cached"})
    with pytest.raises(StoreWriteError) as caught:
        store.flush()
    message = str(caught.value)
    assert message.startswith(f"cannot write to the store {url}: group commit of 3 samples, 3 model calls and 1 cache")
    assert message.endswith("database is locked") and "\n" not in message
    store.record_call(call_row(run_id, "s3"))  # rows buffered after the failure queue up behind the kept ones
    with pytest.raises(StoreWriteError):
        store.flush()
    blocker.execute("ROLLBACK")
    assert stored(url, run_id) == ([], [], 0)
    assert store.cache_get("k1") == {"content": "cached"}  # still served from the buffer
    store.flush()
    store.flush()
    assert stored(url, run_id) == (["s0", "s1", "s2"], ["s0/0", "s1/0", "s2/0", "s3/0"], 1)
    blocker.close()
    store.close()


@pytest.mark.parametrize("with_samples", [True, False], ids=["samples-and-calls", "calls-only"])
def test_a_commit_that_landed_but_reported_failure_is_not_written_twice(tmp_path, with_samples):
    url = f"sqlite:///{tmp_path / 's.db'}"
    store = open_store(url)
    store.flush_seconds = NEVER_BY_TIME
    run_id = store.create_run("t", "m", {})
    dialect = store.engine.dialect
    real_commit = dialect.do_commit
    lost = []

    def commit_then_lose_the_answer(dbapi_connection):
        # What a connection dropped during COMMIT looks like to the client: applied, but an error comes back.
        real_commit(dbapi_connection)
        if not lost:
            lost.append(True)
            raise sqlite3.OperationalError("server closed the connection unexpectedly")

    dialect.do_commit = commit_then_lose_the_answer  # type: ignore[method-assign]
    for i in range(2):
        store.record_call(call_row(run_id, f"s{i}"))
        if with_samples:
            store.record_sample(run_id, f"s{i}", result={"i": i}, error=None, latency_s=0.1)
    store.cache_put("k1", "m", {"content": "x"})
    with pytest.raises(StoreWriteError, match="server closed the connection unexpectedly"):
        store.flush()
    landed = ["s0", "s1"] if with_samples else []
    assert stored(url, run_id) == (landed, ["s0/0", "s1/0"], 1)  # it did land
    store.record_call(call_row(run_id, "s2"))
    store.record_sample(run_id, "s2", result={"i": 2}, error=None, latency_s=0.1)
    store.flush()  # finds the landed batch by its first row and writes only what is new
    assert stored(url, run_id) == ([*landed, "s2"], ["s0/0", "s1/0", "s2/0"], 1)
    store.close()


def test_a_read_only_store_refuses_writes_with_one_line_and_keeps_the_rows(tmp_path):
    path = tmp_path / "s.db"
    writable = open_store(f"sqlite:///{path}")
    run_id = writable.create_run("t", "m", {})
    writable.close()
    url = f"sqlite:///file:{path}?mode=ro&uri=true"
    store = open_store(url)
    store.flush_seconds = NEVER_BY_TIME
    with pytest.raises(StoreWriteError, match=r"creating run .*: attempt to write a readonly database$"):
        store.create_run("t", "m", {})
    store.record_sample(run_id, "s0", result={"i": 0}, error=None, latency_s=0.1)
    with pytest.raises(StoreWriteError, match="readonly"):
        store.flush()
    with pytest.raises(StoreWriteError, match="readonly"):
        store.set_run_status(run_id, "failed")
    with pytest.raises(StoreWriteError):
        store.close()  # the last flush fails too; the connections are released all the same
    writable = open_store(f"sqlite:///{path}")
    assert writable.finished_samples(run_id) == {}
    writable.close()


def test_a_stopping_run_is_marked_failed_even_when_its_rows_cannot_be_written(tmp_path):
    url = f"sqlite:///{tmp_path / 's.db'}"
    store = open_store(url)
    store.flush_seconds = NEVER_BY_TIME  # the row stays buffered until set_run_status flushes it
    run_id = store.create_run("t", "m", {})
    store.record_sample("no-such-run", "s0", result=None, error="x", latency_s=0.0)  # violates the foreign key
    with pytest.raises(StoreWriteError, match="FOREIGN KEY constraint failed"):
        store.set_run_status(run_id, "failed")
    assert open_store(url).get_run(run_id).status == "failed"
    with pytest.raises(StoreWriteError, match="FOREIGN KEY"):
        store.set_run_status(run_id, "finished")  # never "finished" with rows missing
    assert open_store(url).get_run(run_id).status == "failed"


def test_a_commit_that_fails_while_the_run_drains_is_reported_once_and_never_logged(tmp_path, monkeypatch, caplog):
    """The last group commit fails while the run waits for it (by state: the commit waits for the drain to start).

    Its error stops the run as a StoreWriteError; no copy of it is left unretrieved on a future, which asyncio
    would log with three chained tracebacks ("Future exception was never retrieved") when collected.
    """
    import asyncio
    import gc
    import threading

    import toolgauge.engine.runner as runner_module
    from helpers.full_disk_run import Answer, episode
    from toolgauge.engine import EngineConfig, run_episodes
    from toolgauge.models.offline import ScriptedClient
    from toolgauge.store.group_commit import GroupCommit

    draining = threading.Event()

    class DrainSeen(GroupCommit):
        async def drain(self) -> None:
            draining.set()
            await super().drain()

    class FailsOnceDraining(Store):
        samples = 0

        def record_sample(self, run_id: str, sample_key: str, **kwargs: Any) -> None:
            self.samples += 1
            super().record_sample(run_id, sample_key, **kwargs)

        def flush(self) -> None:
            # A group commit (on the store's thread, once a sample finished) waits for the drain, then fails.
            if self.samples and threading.current_thread() is not threading.main_thread():
                assert draining.wait(60), "the run never drained"
                raise StoreWriteError("database or disk is full (test)")
            super().flush()

    monkeypatch.setattr(runner_module, "GroupCommit", DrainSeen)
    url = f"sqlite:///{tmp_path / 's.db'}"
    base = open_store(url)
    store = FailsOnceDraining(base.engine, url=url, flush_seconds=NEVER_BY_TIME)
    run_id = store.create_run("t", "m", {})
    items = [(f"s{i}", f"question {i}") for i in range(6)]

    async def run() -> None:
        await run_episodes(
            items, episode, Answer, client=ScriptedClient(["ok"], cycle=True), store=store, run_id=run_id,
            # No cache: a look-up would queue on the store's thread behind the held commit.
            config=EngineConfig(concurrency=2, show_progress=False, use_cache=False),
        )  # fmt: skip

    with caplog.at_level("ERROR", logger="asyncio"), pytest.raises(StoreWriteError, match="disk is full"):
        asyncio.run(run())
    assert draining.is_set()
    gc.collect()  # an unretrieved future's error is logged when it is collected
    assert [r.getMessage() for r in caplog.records if r.name == "asyncio"] == []


def test_the_error_never_shows_the_store_password():
    store = Store(
        create_engine("sqlite://"), url="postgresql://tg:hunter2secret@db.example/tg", flush_seconds=NEVER_BY_TIME
    )
    store.record_sample("r", "s", result=None, error="x", latency_s=0.0)
    with pytest.raises(StoreWriteError) as caught:
        store.flush()  # no tables in this in-memory database
    assert "postgresql://tg:***@db.example/tg" in str(caught.value)
    assert "hunter2secret" not in str(caught.value)


# -- a real full disk ------------------------------------------------------------------------------


def full_disk_findings(tmp_path: Path, mode: str) -> dict:
    if shutil.which("unshare") is None:
        pytest.skip("unshare (util-linux) is not installed: no private tmpfs to fill")
    probe = subprocess.run(["unshare", "-m", "--propagation", "private", "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"cannot make a private mount namespace for a small tmpfs: {probe.stderr.strip()}")
    disk = tmp_path / "disk"
    disk.mkdir()
    proc = subprocess.run(
        ["unshare", "-m", "--propagation", "private", sys.executable, str(HERE / "full_disk_run.py"), str(disk), mode],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    if proc.returncode == 77:
        pytest.skip(proc.stderr.strip())
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.splitlines()[-1])


@pytest.mark.parametrize("mode", ["retry", "resume"])
def test_a_full_disk_stops_the_run_and_loses_no_finished_row(tmp_path, mode):
    found = full_disk_findings(tmp_path, mode)
    assert found["run_raised"] and found["run_raised"].endswith("database or disk is full")
    assert "cannot write to the store sqlite:///" in found["run_raised"]
    assert_nothing_lost(found, mode)


@pytest.mark.slow
def test_a_full_disk_under_the_cli_prints_one_line_marks_the_run_failed_and_resumes_exactly(tmp_path):
    found = full_disk_findings(tmp_path, "cli")
    run_id, stderr = found["run_id"], found["stderr"]
    assert found["code"] == 75, stderr
    # One line, nothing else: no "Future exception was never retrieved", no traceback.
    assert stderr.count("\n") == 1 and stderr.endswith("\n"), stderr
    disk = tmp_path / "disk"
    assert stderr.startswith(f"error: store write failed: cannot write to the store sqlite:///{disk / 'store.db'}: ")
    assert stderr.endswith(
        f": database or disk is full; the run is resumable: toolgauge eval suite"
        f" --model scripted:{tmp_path / 'bulky.json'} --store sqlite:///{disk / 'store.db'} -q -c 8 --epochs 4"
        f" --resume {run_id}\n"
    ), stderr
    assert found["status_after"] == "failed"  # never left "running"
    assert found["resume_code"] == 0, found["resume_stderr"]
    assert found["final_status"] == "finished"
    assert len(found["done_rows"]) == 24 * 4 and set(found["done_rows"].values()) == {1}  # every try, once


# -- read-only commands ----------------------------------------------------------------------------


def test_runs_and_report_never_create_a_store(tmp_path):
    missing = tmp_path / "nowhere" / "s.db"
    for args in (["runs"], ["report", "latest"]):
        res = invoke(*args, "--store", f"sqlite:///{missing}")
        assert res.exit_code == 2
        assert res.stderr.strip().splitlines() == [f"error: no store at {missing}; run an eval first"]
    assert not (tmp_path / "nowhere").exists()
    with pytest.raises(UsageError, match="no store at"):
        open_store(f"sqlite:///{missing}", create=False)
    empty = tmp_path / "empty.db"
    sqlite3.connect(empty).close()
    with pytest.raises(UsageError, match="no runs table"):
        open_store(f"sqlite:///{empty}", create=False)
    with sqlite3.connect(empty) as conn:
        assert conn.execute("select count(*) from sqlite_master").fetchone() == (0,)


def test_runs_reads_a_store_from_before_run_leases_without_changing_it(tmp_path):
    path = tmp_path / "old.db"
    store = open_store(f"sqlite:///{path}")
    run_id = store.create_run("suite", "gold", {})
    store.close()
    with sqlite3.connect(path) as conn:
        conn.execute("DROP TABLE run_locks")
    res = invoke("runs", "--store", f"sqlite:///{path}", "--json")
    assert res.exit_code == 0, res.output
    assert [(r["id"], r["held_by"]) for r in json.loads(res.stdout)] == [(run_id, None)]
    with sqlite3.connect(path) as conn:
        tables = {name for (name,) in conn.execute("select name from sqlite_master where type = 'table'")}
    assert "run_locks" not in tables and "runs" in tables


def test_report_takes_latest_and_a_unique_prefix(tmp_path):
    url = f"sqlite:///{tmp_path / 's.db'}"
    store = open_store(url)
    for run_id, score in (("20261201-100000-aaaa01", 0.25), ("20261201-100000-aabb02", 0.75)):
        store.create_run("suite", "gold", {}, run_id=run_id)
        store.save_results(run_id, EvalResults(benchmark="suite", metrics=[Metric(name="tool_accuracy", value=score)]))
    store.close()

    def report(ref: str):
        return invoke("report", ref, "--store", url, "--json")

    assert results_of(report("latest")).value("tool_accuracy") == 0.75
    assert results_of(report("20261201-100000-aaa")).value("tool_accuracy") == 0.25
    assert results_of(report("20261201-100000-aabb02")).value("tool_accuracy") == 0.75
    ambiguous = report("20261201-100000-aa")
    assert ambiguous.exit_code == 2
    assert ambiguous.stderr.strip().splitlines() == [
        "error: run id prefix '20261201-100000-aa' is ambiguous: 20261201-100000-aabb02, 20261201-100000-aaaa01; "
        "give more of the id"
    ]
    wildcard = report("2026120_")  # LIKE wildcards in the prefix are taken literally
    assert wildcard.exit_code == 2 and "no run '2026120_'" in wildcard.stderr
