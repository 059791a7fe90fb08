"""The rows buffered for the next group commit, and the commit that writes them in one transaction.

Buffering a row (a finished sample, a model call, a cache entry, a request's blobs) stays on the caller's
thread and costs no I/O; a lock guards the buffers, and one flush runs at a time. A flush takes every buffered
row; rows buffered while it runs (on the store's thread) wait for the next.

A write that fails (disk full, read-only store, lost PostgreSQL connection) raises ``StoreWriteError`` and puts
its rows back in front of the buffer, in order: nothing is dropped. A commit that failed in COMMIT itself may have
landed; before anything is written again it is looked up by its first row (``UncertainBatch``), so nothing is
written twice.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Engine, func, insert, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import SQLAlchemyError

from toolgauge.errors import StoreWriteError
from toolgauge.store import schema
from toolgauge.store.leases import Leases
from toolgauge.store.transcripts import BlobBuffer

# Rows per ``IN (...)`` query: well under SQLite's bound-parameter limit.
CHUNK = 500


@dataclass(frozen=True)
class Batch:
    """The rows one group commit writes: sample rows, model-call rows, cache rows by key, blobs by hash."""

    samples: list[dict[str, Any]]
    calls: list[dict[str, Any]]
    cache: dict[str, dict[str, Any]]
    blobs: dict[str, bytes]


@dataclass(frozen=True)
class UncertainBatch:
    """A batch whose COMMIT failed: its first sample and call rows, and how many buffered rows it held."""

    first_sample: dict[str, Any] | None
    first_call: dict[str, Any] | None
    samples: int
    calls: int
    cache_keys: frozenset[str]


class WriteBuffer:
    """The rows waiting for the next group commit of one store.

    Args:
        engine: the store's engine.
        leases: the store's run leases (refreshed by each commit; a run taken over is never written again).
        write_error: builds the one-line error of a failed write (``what``, the database error).
    """

    def __init__(
        self,
        engine: Engine,
        leases: Leases,
        *,
        write_error: Callable[[str, BaseException], StoreWriteError],
    ):
        self._engine = engine
        self._leases = leases
        self._write_error = write_error
        self.samples: list[dict[str, Any]] = []
        self.calls: list[dict[str, Any]] = []
        self.cache: dict[str, dict[str, Any]] = {}
        self.blobs = BlobBuffer()
        # The cache entries of the flush under way: still served until they are committed.
        self._inflight_cache: dict[str, dict[str, Any]] = {}
        # Guards the buffers (rows are buffered on the loop's thread while a flush runs on the store's).
        self.lock = threading.Lock()
        # One flush at a time: a flush takes the buffered rows, and puts them back in front when it fails.
        self._flush_lock = threading.Lock()
        self.last_flush = time.monotonic()
        # After a commit that failed in COMMIT itself: the batch whose fate is unknown.
        self._uncertain: UncertainBatch | None = None

    def add_sample(self, row: dict[str, Any]) -> None:
        """Buffer one sample row."""
        with self.lock:
            self.samples.append(row)

    def add_call(self, row: dict[str, Any]) -> None:
        """Buffer one model-call row."""
        with self.lock:
            self.calls.append(row)

    def add_cache(self, row: dict[str, Any]) -> None:
        """Buffer one response-cache row (by its ``key``)."""
        with self.lock:
            self.cache[row["key"]] = row

    def cached(self, key: str) -> dict[str, Any] | None:
        """The cache row of ``key`` buffered or being committed, else None."""
        with self.lock:
            return self.cache.get(key) or self._inflight_cache.get(key)

    def due(self, rows: int, seconds: float) -> bool:
        """Whether ``rows`` rows or more wait, or the last flush was ``seconds`` ago or more."""
        pending = len(self.samples) + len(self.calls) + len(self.cache)
        return pending >= rows or time.monotonic() - self.last_flush >= seconds

    def flush(self, commit: Callable[[Batch], None]) -> None:
        """Take every buffered row and hand it to ``commit`` (the store's), putting it back in front when that fails.

        Refreshes the store's run leases when a heartbeat is due, even with nothing buffered.
        """
        with self._flush_lock:
            self.last_flush = time.monotonic()
            self._leases.check_not_taken_over()
            heartbeat_due = self._leases.heartbeat_due()
            if not (self.samples or self.calls or self.cache or self.blobs.pending or heartbeat_due):
                return
            if self._uncertain is not None:
                self._settle_uncertain_batch()
            with self.lock:  # take the rows; the buffers start again empty
                batch = Batch(self.samples, self.calls, self.cache, self.blobs.pending)
                self.samples, self.calls, self.cache, self.blobs.pending = [], [], {}, {}
                self._inflight_cache = batch.cache
            try:
                commit(batch)
            except BaseException:
                with self.lock:  # put them back in front of what was buffered meanwhile, in order
                    self.samples[:0] = batch.samples
                    self.calls[:0] = batch.calls
                    self.cache = {**batch.cache, **self.cache}
                    self.blobs.pending = {**batch.blobs, **self.blobs.pending}
                    self._inflight_cache = {}
                raise
            with self.lock:
                self._inflight_cache = {}
                if batch.blobs:
                    self.blobs.committed(list(batch.blobs))

    def commit(self, batch: Batch) -> None:
        """Write one batch of taken rows in one transaction, with the leases' heartbeat."""
        samples, calls, cache, blobs = batch.samples, batch.calls, batch.cache, batch.blobs
        committing = False
        try:
            with self._engine.begin() as conn:
                if blobs:
                    # Blobs need no uncertain-batch check: one already stored is skipped, never written twice.
                    insert_blobs(conn, blobs)
                if samples:
                    # Failed samples are deleted (forget_samples) before they are re-run, so inserts never collide.
                    conn.execute(insert(schema.samples), samples)
                if calls:
                    conn.execute(insert(schema.model_calls), calls)
                if cache:
                    existing = set(
                        conn.execute(
                            select(schema.response_cache.c.key).where(schema.response_cache.c.key.in_(list(cache)))
                        ).scalars()
                    )
                    fresh = [v for k, v in cache.items() if k not in existing]
                    if fresh:
                        conn.execute(insert(schema.response_cache), fresh)
                if self._leases.held:
                    self._leases.heartbeat(conn)
                committing = True  # leaving the block commits
        except SQLAlchemyError as exc:
            if committing and (samples or calls):
                # Failed during COMMIT: it may have been applied before the error reached us.
                self._uncertain = UncertainBatch(
                    samples[0] if samples else None, calls[0] if calls else None, len(samples), len(calls),
                    frozenset(cache),
                )  # fmt: skip
            what = (
                f"group commit of {len(samples)} samples, {len(calls)} model calls "
                f"and {len(cache)} cache entries (kept for the next attempt)"
            )
            raise self._write_error(what, exc) from exc

    def _settle_uncertain_batch(self) -> None:
        """After a failed COMMIT, find out whether it landed after all, and if so drop its rows from the buffer.

        A transaction lands whole, so its first sample (or model call) row tells: it is found with
        every field it was written with. Cache entries need no check; they are never inserted twice.
        """
        batch = self._uncertain
        assert batch is not None
        first = batch.first_sample if batch.first_sample is not None else batch.first_call
        table = schema.samples if batch.first_sample is not None else schema.model_calls
        assert first is not None
        match = [table.c[name] == value for name, value in first.items() if value is not None]
        try:
            with self._engine.connect() as conn:
                landed = conn.execute(select(func.count()).select_from(table).where(*match)).scalar_one() > 0
        except SQLAlchemyError as exc:
            raise self._write_error("checking whether the last failed group commit was applied", exc) from exc
        if landed:
            with self.lock:
                del self.samples[: batch.samples]
                del self.calls[: batch.calls]
                for key in batch.cache_keys:
                    self.cache.pop(key, None)
        self._uncertain = None


def insert_blobs(conn: Connection, blobs: Mapping[str, bytes]) -> None:
    """Insert the blobs the database does not have yet, in hash order (so concurrent writers never deadlock)."""
    rows = [{"hash": key, "data": blobs[key]} for key in sorted(blobs)]
    if conn.dialect.name == "postgresql":
        conn.execute(postgresql.insert(schema.blobs).on_conflict_do_nothing(index_elements=["hash"]), rows)
    elif conn.dialect.name == "sqlite":
        conn.execute(sqlite.insert(schema.blobs).on_conflict_do_nothing(index_elements=["hash"]), rows)
    else:
        b = schema.blobs.c
        have: set[str] = set()
        for start in range(0, len(rows), CHUNK):
            chunk = [r["hash"] for r in rows[start : start + CHUNK]]
            have.update(conn.execute(select(b.hash).where(b.hash.in_(chunk))).scalars())
        fresh = [r for r in rows if r["hash"] not in have]
        if fresh:
            conn.execute(insert(schema.blobs), fresh)
