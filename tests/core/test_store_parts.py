"""The store's parts that have logic of their own, each on its own (``Store`` is their facade; see store/store.py)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, update

from toolgauge.errors import StoreWriteError, UsageError
from toolgauge.store import migrations, schema
from toolgauge.store.access import write_error
from toolgauge.store.executor import StoreThread
from toolgauge.store.leases import Leases
from toolgauge.store.write_buffer import Batch, WriteBuffer


def engine_at(tmp_path: Path) -> Any:
    return create_engine(f"sqlite:///{tmp_path / 'parts.db'}")


def errors(what: str, exc: BaseException) -> StoreWriteError:
    return write_error("sqlite:///parts.db", what, exc)


def test_the_store_thread_runs_calls_in_order_off_the_caller_and_in_place_when_not_threaded():
    threaded = StoreThread(threaded=True)
    order: list[int] = []
    futures = [threaded.start(lambda n=n: (order.append(n), threading.current_thread().name)[1]) for n in range(20)]
    names = {f.result(timeout=30) for f in futures}
    threaded.shutdown()
    assert order == list(range(20)) and all(name.startswith("toolgauge-store") for name in names)

    in_place = StoreThread(threaded=False)
    done = in_place.start(threading.current_thread)
    assert done.done() and done.result() is threading.current_thread()
    failed = in_place.start(lambda: 1 / 0)
    assert isinstance(failed.exception(), ZeroDivisionError)  # kept on the future, not raised at the caller


def test_a_failed_commit_puts_its_rows_back_in_front_of_those_buffered_meanwhile(tmp_path: Path):
    engine = engine_at(tmp_path)
    buffer = WriteBuffer(engine, Leases(engine, write_error=errors), write_error=errors)
    buffer.add_sample({"sample_key": "first"})
    buffer.add_cache({"key": "k", "response": "{}"})

    def commit_failing(batch: Batch) -> None:
        assert buffer.cached("k") is not None  # an entry being committed is still served
        buffer.add_sample({"sample_key": "meanwhile"})
        raise StoreWriteError("disk full")

    with pytest.raises(StoreWriteError, match="disk full"):
        buffer.flush(commit_failing)
    assert [row["sample_key"] for row in buffer.samples] == ["first", "meanwhile"]
    assert buffer.cached("k") == {"key": "k", "response": "{}"}

    taken: list[list[Any]] = []
    buffer.flush(lambda batch: taken.append(batch.samples))
    assert [row["sample_key"] for row in taken[0]] == ["first", "meanwhile"]
    assert buffer.samples == [] and buffer.cached("k") is None


def test_a_buffer_is_due_by_rows_or_by_age(tmp_path: Path):
    engine = engine_at(tmp_path)
    buffer = WriteBuffer(engine, Leases(engine, write_error=errors), write_error=errors)
    assert not buffer.due(2, float("inf"))
    buffer.add_call({"step": 0})
    assert not buffer.due(2, float("inf"))
    buffer.add_call({"step": 1})
    assert buffer.due(2, float("inf"))
    assert WriteBuffer(engine, Leases(engine, write_error=errors), write_error=errors).due(100, 0.0)


def test_a_lease_heartbeat_is_due_only_while_a_lease_is_held_and_a_taken_over_run_is_never_written(tmp_path: Path):
    engine = engine_at(tmp_path)
    schema.metadata.create_all(engine)
    leases = Leases(engine, write_error=errors)
    leases.last_heartbeat = 0.0
    assert not leases.heartbeat_due()
    leases.acquire("r1")
    assert not leases.heartbeat_due()  # just refreshed by taking it
    leases.last_heartbeat = 0.0
    assert leases.heartbeat_due()
    with engine.begin() as conn:  # another process took the run over
        conn.execute(update(schema.run_locks).values(owner="someone else"))
    with pytest.raises(StoreWriteError, match="took over"), engine.begin() as conn:
        leases.heartbeat(conn)
    with pytest.raises(StoreWriteError, match="run r1: another process took over"):
        leases.check_not_taken_over()


def test_the_schema_version_of_a_missing_or_newer_store_is_one_clear_line(tmp_path: Path):
    engine = engine_at(tmp_path)
    with pytest.raises(UsageError, match="no toolgauge store at the-url"):
        migrations.check_schema(engine, "the-url")
    assert migrations.init_schema(engine) == schema.SCHEMA_VERSION
    assert migrations.check_schema(engine, "the-url") == schema.SCHEMA_VERSION
    with engine.begin() as conn:
        conn.execute(update(schema.meta).values(value=str(schema.SCHEMA_VERSION + 1)))
    with pytest.raises(UsageError, match="is newer than this toolgauge"):
        migrations.check_schema(engine, "the-url")
    with pytest.raises(UsageError, match="is newer than this toolgauge"):
        migrations.init_schema(engine)


def test_a_write_error_is_one_line_naming_the_store_and_what_failed():
    error = write_error("sqlite:///s.db", "creating run r", RuntimeError("disk I/O error\nmore detail"))
    assert str(error) == "cannot write to the store sqlite:///s.db: creating run r: disk I/O error"
