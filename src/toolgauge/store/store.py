"""SQLAlchemy-backed store.

Rows are buffered and committed in groups: the engine flushes as soon as the samples that
finished in the same event-loop tick are buffered (group commit), so a sample counts as
finished only once it is durable, and a resume after ``kill -9`` never repeats one. Other
callers get a time/size-based flush as a safety net.

A write that fails (disk full, read-only store, lost PostgreSQL connection) raises
``StoreWriteError`` and keeps every buffered row, in order, for the next flush; nothing is
dropped and nothing is written twice. A run is run by one process at a time: the process
holds a lease row in ``run_locks`` (see ``acquire_run_lock``).

**Secrets.** Every parameter of every statement this store sends (every column of every table, the
toolgate tables and sweeps included) passes through one :class:`~toolgauge.redact.SecretMasker` first, so
the database never receives a known secret, in any of its encoded forms (see :mod:`toolgauge.redact`).

Each model call's request and response are kept (``put_request``, ``transcript``): the request
as content-addressed blobs committed with the call's row (see :mod:`toolgauge.store.transcripts`).

Off the event loop: ``flush_async``, ``cache_get_async`` and ``run_io`` run a store call on the
store's own thread (one per store, so its calls keep their order) while the loop goes on.
``prefetch_cache`` reads a model's cache entries into memory there, and ``cache_known`` answers from
memory alone (rows buffered, being committed or read ahead), so a hit it knows needs no trip. Buffering
a row stays on the caller's thread and costs no I/O; a lock guards the buffers, and one flush runs
at a time. While an engine sets ``flush_soon``, a buffer that is due for a flush asks it for one
instead of writing on the caller's thread. An in-memory SQLite store (one connection per thread)
runs every call on the caller's thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
import threading
import time
from collections.abc import Callable, Collection, Generator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from sqlalchemy import (
    Connection,
    Engine,
    create_engine,
    delete,
    event,
    func,
    insert,
    inspect,
    make_url,
    select,
    text,
    union_all,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import ArgumentError, IntegrityError, OperationalError, ProgrammingError, SQLAlchemyError
from sqlalchemy.pool import SingletonThreadPool, StaticPool
from sqlalchemy.sql.elements import ColumnElement

from toolgauge.errors import RunLocked, StoreWriteError, UsageError
from toolgauge.records import AssistantTurn, GenerateOptions, Message, ModelRequest, ToolSpec, Usage
from toolgauge.redact import SecretMasker, learn_url_credentials, redact, redact_tree, redact_url
from toolgauge.results import EvalResults
from toolgauge.store import schema
from toolgauge.store.lease import HEARTBEAT_SECONDS, LockHolder, is_stale, pid_start_time, this_host
from toolgauge.store.prefetch import CachePrefetch
from toolgauge.store.reader import CacheReader
from toolgauge.store.schema import SCHEMA_VERSION
from toolgauge.store.transcripts import (
    BlobBuffer,
    MessageChain,
    ModelCallRecord,
    RequestWriter,
    TranscriptReader,
    unpack,
)

STORE_ENV = "TOOLGAUGE_STORE"
P = ParamSpec("P")
T = TypeVar("T")


def default_store_url() -> str:
    """Return the store URL: ``$TOOLGAUGE_STORE`` or ``.toolgauge/toolgauge.db`` in the working directory."""
    env = os.environ.get(STORE_ENV)
    if env:
        return env
    return f"sqlite:///{Path('.toolgauge') / 'toolgauge.db'}"


@dataclass(frozen=True)
class RunInfo:
    """One row of the runs table."""

    id: str
    benchmark: str
    model: str
    status: str
    config: dict[str, Any]
    n_samples: int
    created_at: float
    finished_at: float | None
    results: EvalResults | None


@dataclass(frozen=True)
class SampleRecord:
    """One finished (or failed) sample of a run."""

    sample_key: str
    status: str
    result: dict[str, Any] | None
    error: str | None
    latency_s: float | None


@dataclass(frozen=True, slots=True)
class SampleState:
    """One stored sample without its result: what the engine keeps in memory for a long run."""

    sample_key: str
    status: str
    error: str | None
    latency_s: float | None


# Sample keys per ``IN (...)`` query: well under SQLite's bound-parameter limit.
READ_CHUNK = 500
# Columns a store of schema 1 lacks in model_calls, added by the migration to 2.
_V2_CALL_COLUMNS = ("role", "messages_hash", "tools_hash", "options_hash")
# What record_call stores for a field its row leaves out (every row of a group commit has the same keys).
_CALL_DEFAULTS: dict[str, Any] = {
    "role": "model", "request_hash": None, "messages_hash": None, "tools_hash": None, "options_hash": None,
    "response": None, "error": None, "input_tokens": 0, "output_tokens": 0, "latency_s": 0.0, "attempts": 1,
    "cached": False,
}  # fmt: skip


def new_run_id() -> str:
    """Return a sortable, unique run id such as ``20261130-214501-3fa2c1``."""
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(3)


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.close()


class Store:
    """Runs, samples, model calls, scores and the response cache."""

    def __init__(self, engine: Engine, *, url: str | None = None, flush_rows: int = 256, flush_seconds: float = 0.25):
        self.engine = engine
        # Shown in errors, password masked; the URL as the user gave it (not the driver-qualified one).
        self.url = redact_url(url or engine.url.render_as_string(hide_password=False))
        self.flush_rows = flush_rows
        self.flush_seconds = flush_seconds
        self._pending_samples: list[dict[str, Any]] = []
        self._pending_calls: list[dict[str, Any]] = []
        self._pending_cache: dict[str, dict[str, Any]] = {}
        self._blobs = BlobBuffer()
        # Masks every parameter of every statement sent on this engine (the environment is read once, here).
        self._masker = SecretMasker()
        event.listen(engine, "before_cursor_execute", self._mask_statement, retval=True)
        self._requests: RequestWriter | None = None
        # The schema version of the database, once opened (init_schema or check_schema).
        self.schema_version: int | None = None
        self._last_flush = time.monotonic()
        # After a commit that failed in COMMIT itself: the batch whose fate is unknown.
        self._uncertain: _UncertainBatch | None = None
        # The run leases this store holds, and when they were last refreshed.
        self.owner = secrets.token_hex(16)
        self._locks: set[str] = set()
        self._taken_over: set[str] = set()
        self._last_heartbeat = 0.0
        # Guards the buffers (rows are buffered on the loop's thread while a flush runs on the store's).
        self._buffer_lock = threading.Lock()
        # One flush at a time: a flush takes the buffered rows, and puts them back in front when it fails.
        self._flush_lock = threading.Lock()
        # The cache entries of the flush under way: still served by cache_get until they are committed.
        self._inflight_cache: dict[str, dict[str, Any]] = {}
        self._reader = CacheReader(engine)
        # Models' cache entries read into memory on the store's thread (``prefetch_cache``).
        self._prefetch = CachePrefetch(self._reader)
        # Called instead of a flush on the caller's thread when the buffers are due (set by the engine's
        # group commit, which starts the flush on the store's thread).
        self.flush_soon: Callable[[], None] | None = None
        # An in-memory SQLite database is one connection per thread: only the caller's thread sees it.
        self._threaded = not isinstance(engine.pool, SingletonThreadPool | StaticPool)
        self._io: ThreadPoolExecutor | None = None
        # Cache look-ups asked for in this tick of the event loop, sent to the store's thread together.
        self._lookups: list[tuple[str, asyncio.Future[dict[str, Any] | None]]] = []

    def _mask_statement(
        self, _conn: Any, _cursor: Any, statement: str, parameters: Any, _context: Any, executemany: bool
    ) -> tuple[str, Any]:
        """Mask secrets in a statement's parameters before the driver sees them (a ``before_cursor_execute`` hook).

        Queries are masked too, so a row is looked up by the values it was stored with.
        """
        if not parameters:
            return statement, parameters
        if executemany:
            return statement, [self._masker.parameters(p) for p in parameters]
        return statement, self._masker.parameters(parameters)

    # -- off the event loop ----------------------------------------------------------------
    async def run_io(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """Run a blocking store call on the store's thread and wait for it without blocking the event loop.

        Calls run one at a time in the order they were made. Cancelling the wait does not stop a call
        that has started; it finishes on the store's thread.
        """
        if not self._threaded:
            return fn(*args, **kwargs)
        return await asyncio.get_running_loop().run_in_executor(self._executor(), lambda: fn(*args, **kwargs))

    def start_io(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        """Start a blocking store call on the store's thread and return its future at once.

        It runs after the calls started before it. An in-memory SQLite store runs it here and returns it done.
        """
        if self._threaded:
            return self._executor().submit(fn, *args, **kwargs)
        done: Future[T] = Future()
        try:
            done.set_result(fn(*args, **kwargs))
        except Exception as exc:
            done.set_exception(exc)
        return done

    def _executor(self) -> ThreadPoolExecutor:
        if self._io is None:
            self._io = ThreadPoolExecutor(max_workers=1, thread_name_prefix="toolgauge-store")
        return self._io

    async def flush_async(self) -> None:
        """``flush`` on the store's thread."""
        await self.run_io(self.flush)

    async def cache_get_async(self, key: str) -> dict[str, Any] | None:
        """``cache_get`` on the store's thread.

        The look-ups asked for in one tick of the event loop make one trip to the store's thread
        together: a trip costs more CPU (two thread wake-ups) than a look-up.
        """
        if not self._threaded:
            return self.cache_get(key)
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[dict[str, Any] | None] = loop.create_future()
        self._lookups.append((key, waiter))
        if len(self._lookups) == 1:
            loop.call_soon(self._send_lookups, loop)
        return await waiter

    def cache_known(self, key: str) -> dict[str, Any] | None:
        """A cached response known without I/O: buffered, being committed, or read by ``prefetch_cache``.

        None says nothing: the entry may still be in the database (``cache_get_async`` finds it).
        """
        with self._buffer_lock:
            pending = self._pending_cache.get(key) or self._inflight_cache.get(key)
        if pending is not None:
            return json.loads(pending["response"])  # type: ignore[no-any-return]
        text = self._prefetch.get(key)
        return json.loads(text) if text is not None else None

    def prefetch_cache(self, model: str) -> threading.Event | None:
        """Start reading ``model``'s cache entries (its ``cache_id``) into memory on the store's thread.

        Returns at once, with an event set once every page is read (or reading stopped); ``cache_known``
        serves each entry once its page is read (see :mod:`toolgauge.store.prefetch`). Asking again for a
        model returns the same event. Nothing to do (None) for an in-memory SQLite store, whose look-ups
        never leave the caller's thread.
        """
        if not self._threaded:
            return None
        return self._prefetch.start(redact_url(model), self.start_io)

    def _send_lookups(self, loop: asyncio.AbstractEventLoop) -> None:
        batch, self._lookups = self._lookups, []
        trip = loop.run_in_executor(self._executor(), self._cache_get_many, [key for key, _ in batch])

        def deliver(done: asyncio.Future[list[Any]]) -> None:
            error = done.exception() if not done.cancelled() else asyncio.CancelledError()
            outcomes = done.result() if error is None else [error] * len(batch)
            for (_, waiter), outcome in zip(batch, outcomes, strict=True):
                if waiter.done():  # its sample was cancelled meanwhile
                    continue
                if isinstance(outcome, BaseException):
                    waiter.set_exception(outcome)
                else:
                    waiter.set_result(outcome)

        trip.add_done_callback(deliver)

    def _cache_get_many(self, keys: list[str]) -> list[dict[str, Any] | Exception | None]:
        outcomes: list[dict[str, Any] | Exception | None] = []
        for key in keys:
            try:
                outcomes.append(self.cache_get(key))
            except Exception as exc:  # handed to the one look-up that failed
                outcomes.append(exc)
        return outcomes

    # -- lifecycle -------------------------------------------------------------------------
    def init_schema(self) -> None:
        """Create missing tables and check the schema version.

        Two processes opening a new store at once race between "table missing" and "create
        table"; the loser sees an error about an existing table or row and simply tries again.
        """
        for attempt in range(5):
            try:
                self._create_schema()
                return
            except (OperationalError, IntegrityError, ProgrammingError):
                if attempt == 4:
                    raise
                time.sleep(0.05 * (attempt + 1))

    def check_schema(self) -> None:
        """Check an existing store without changing it (for read-only commands).

        A store of an older schema is read as it is (``schema_version`` says which); the first command
        that writes to it migrates it.
        """
        if "runs" not in inspect(self.engine).get_table_names():
            raise UsageError(f"no toolgauge store at {self.url} (no runs table); run an eval first")
        with self.engine.connect() as conn:
            row = conn.execute(select(schema.meta.c.value).where(schema.meta.c.key == "schema_version")).first()
            if row is not None:
                version = int(row[0])
            else:  # tables made, version row not yet written: what the tables say
                calls = {col["name"] for col in inspect(conn).get_columns(schema.model_calls.name)}
                has_sweeps = schema.sweeps.name in inspect(conn).get_table_names()
                version = (3 if has_sweeps else 2) if set(_V2_CALL_COLUMNS) <= calls else 1
        if version > SCHEMA_VERSION:
            raise UsageError(self._too_new(version))
        self.schema_version = version

    def _too_new(self, version: int) -> str:
        return f"store schema version {version} is newer than this toolgauge ({SCHEMA_VERSION}); upgrade"

    def _create_schema(self) -> None:
        schema.metadata.create_all(self.engine)
        with self.engine.begin() as conn:
            # FOR UPDATE (PostgreSQL): a second process opening an old store waits for the first one's migration.
            row = conn.execute(
                select(schema.meta.c.value).where(schema.meta.c.key == "schema_version").with_for_update()
            ).first()
            found = int(row[0]) if row is not None else None
            if found is not None and found > SCHEMA_VERSION:
                raise UsageError(self._too_new(found))
            if found is None or found < SCHEMA_VERSION:
                _migrate(conn, found)
            if row is None:
                conn.execute(insert(schema.meta).values(key="schema_version", value=str(SCHEMA_VERSION)))
            elif found != SCHEMA_VERSION:
                conn.execute(
                    update(schema.meta).where(schema.meta.c.key == "schema_version").values(value=str(SCHEMA_VERSION))
                )
        self.schema_version = SCHEMA_VERSION

    def close(self) -> None:
        """Flush pending writes, release the run leases this store holds and the connections.

        Raises ``StoreWriteError`` when the last flush fails; the leases and connections are
        released all the same (a lease that cannot be deleted goes stale with this process).
        """
        try:
            self.flush()
        finally:
            for run_id in sorted(self._locks):
                with contextlib.suppress(StoreWriteError):
                    self.release_run_lock(run_id)
            self._prefetch.stop()
            if self._io is not None:
                self._io.shutdown(wait=True)
                self._io = None
            self._reader.close()
            self.engine.dispose()

    def _write_error(self, what: str, exc: BaseException) -> StoreWriteError:
        """Return the one-line error for a failed write: what failed, the store, the database's first line."""
        orig = getattr(exc, "orig", None) or exc
        lines = str(orig).strip().splitlines() or [orig.__class__.__name__]
        return StoreWriteError(f"cannot write to the store {self.url}: {what}: {redact(lines[0].strip())}")

    # -- runs ------------------------------------------------------------------------------
    def create_run(self, benchmark: str, model: str, config: Mapping[str, Any], *, run_id: str | None = None) -> str:
        """Insert a new run in status ``running`` and return its id."""
        rid = run_id or new_run_id()
        try:
            with self.engine.begin() as conn:
                conn.execute(
                    insert(schema.runs).values(
                        id=rid,
                        benchmark=benchmark,
                        model=redact(model),
                        status="running",
                        config=json.dumps(redact_tree(dict(config)), sort_keys=True, default=str),
                        n_samples=0,
                        created_at=time.time(),
                    )
                )
        except SQLAlchemyError as exc:
            raise self._write_error(f"creating run {rid}", exc) from exc
        return rid

    def set_run_status(self, run_id: str, status: str, *, n_samples: int | None = None) -> None:
        """Update a run's status (running, finished, interrupted, failed).

        The buffered rows are flushed first. When that fails, a run that is stopping (failed,
        interrupted) is still marked so if the store takes the update, then the flush error is raised.
        """
        flush_error: StoreWriteError | None = None
        try:
            self.flush()
        except StoreWriteError as exc:
            if status not in ("failed", "interrupted"):
                raise
            flush_error = exc
        values: dict[str, Any] = {"status": status}
        if status != "running":
            values["finished_at"] = time.time()
        if n_samples is not None:
            values["n_samples"] = n_samples
        try:
            with self.engine.begin() as conn:
                conn.execute(update(schema.runs).where(schema.runs.c.id == run_id).values(**values))
        except SQLAlchemyError as exc:
            raise flush_error or self._write_error(f"marking run {run_id} {status}", exc) from exc
        if flush_error is not None:
            raise flush_error

    def save_results(self, run_id: str, results: EvalResults) -> None:
        """Store the run's typed results (secrets masked) and one ``scores`` row per metric value."""
        self.flush()
        rows = [
            {
                "run_id": run_id,
                "scope": "overall" if m.group is None else f"{m.by or 'group'}/{m.group}",
                "metric": m.name,
                "value": float(m.value),
            }
            for m in results.metrics
            if m.value is not None
        ]
        payload = json.dumps(redact_tree(results.model_dump(mode="json")), sort_keys=True)
        try:
            with self.engine.begin() as conn:
                conn.execute(update(schema.runs).where(schema.runs.c.id == run_id).values(summary=payload))
                conn.execute(schema.scores.delete().where(schema.scores.c.run_id == run_id))
                if rows:
                    conn.execute(insert(schema.scores), rows)
        except SQLAlchemyError as exc:
            raise self._write_error(f"saving the results of run {run_id}", exc) from exc

    def get_run(self, run_id: str) -> RunInfo | None:
        """Return one run, or None."""
        with self.engine.connect() as conn:
            row = conn.execute(select(schema.runs).where(schema.runs.c.id == run_id)).mappings().first()
        return _run_info(row) if row else None

    def list_runs(self, limit: int = 50) -> list[RunInfo]:
        """Return the most recent runs first."""
        with self.engine.connect() as conn:
            rows = conn.execute(select(schema.runs).order_by(schema.runs.c.created_at.desc()).limit(limit)).mappings()
            return [_run_info(r) for r in rows]

    def resolve_run_id(self, ref: str) -> str:
        """Return the run id ``ref`` names: an exact id, ``latest`` (the newest run) or a unique id prefix.

        Raises ``UsageError`` for no match, or for an ambiguous prefix (listing the candidates).
        """
        ids = schema.runs.c.id
        newest_first = schema.runs.c.created_at.desc()
        with self.engine.connect() as conn:
            if conn.execute(select(ids).where(ids == ref)).first() is not None:
                return ref
            if ref == "latest":
                latest = conn.execute(select(ids).order_by(newest_first).limit(1)).scalar()
                if latest is None:
                    raise UsageError("the store has no runs yet; run an eval first")
                return str(latest)
            pattern = ref.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            found = list(
                conn.execute(
                    select(ids).where(ids.like(pattern, escape="\\")).order_by(newest_first).limit(11)
                ).scalars()
            )
        if not found:
            raise UsageError(f"no run {ref!r} in the store (see: toolgauge runs)")
        if len(found) > 1:
            more = ", ..." if len(found) > 10 else ""
            raise UsageError(f"run id prefix {ref!r} is ambiguous: {', '.join(found[:10])}{more}; give more of the id")
        return str(found[0])

    # -- run leases ------------------------------------------------------------------------
    def acquire_run_lock(self, run_id: str) -> None:
        """Take the lease on ``run_id`` for this process, or raise ``RunLocked`` naming the holder.

        The lease is a row in ``run_locks``; inserting it is atomic on SQLite and PostgreSQL (the
        primary key), so of two processes only one gets it. A lease whose process is gone (same
        host: the pid is dead, e.g. after ``kill -9``; other host: no heartbeat for 10 minutes) is
        taken over. ``close`` and ``release_run_lock`` give it back.
        """
        if run_id in self._locks:
            return
        for _ in range(5):
            now = time.time()
            row = {
                "run_id": run_id,
                "owner": self.owner,
                "hostname": this_host(),
                "pid": os.getpid(),
                "pid_started": pid_start_time(os.getpid()),
                "acquired_at": now,
                "heartbeat_at": now,
            }
            try:
                with self.engine.begin() as conn:
                    conn.execute(insert(schema.run_locks).values(**row))
            except IntegrityError:
                holder = self.run_lock_holder(run_id)
                if holder is None:
                    continue  # released in between: try again
                if not is_stale(holder):
                    raise RunLocked(
                        f"run {run_id} is being run by {holder.describe()}; wait for it or stop it"
                    ) from None
                # Take over only the stale lease we looked at; a racing taker deletes nothing and loses the insert.
                try:
                    with self.engine.begin() as conn:
                        conn.execute(
                            delete(schema.run_locks).where(
                                (schema.run_locks.c.run_id == run_id) & (schema.run_locks.c.owner == holder.owner)
                            )
                        )
                except SQLAlchemyError as exc:
                    raise self._write_error(f"taking over the stale lease on run {run_id}", exc) from exc
                continue
            except SQLAlchemyError as exc:
                raise self._write_error(f"taking the lease on run {run_id}", exc) from exc
            self._locks.add(run_id)
            self._last_heartbeat = time.monotonic()
            return
        raise RunLocked(f"run {run_id}: could not take its lease (other processes keep taking it); try again")

    def release_run_lock(self, run_id: str) -> None:
        """Give back the lease on ``run_id`` (a no-op when this store does not hold it)."""
        if run_id not in self._locks:
            return
        self._locks.discard(run_id)
        try:
            with self.engine.begin() as conn:
                conn.execute(
                    delete(schema.run_locks).where(
                        (schema.run_locks.c.run_id == run_id) & (schema.run_locks.c.owner == self.owner)
                    )
                )
        except SQLAlchemyError as exc:
            raise self._write_error(f"releasing the lease on run {run_id}", exc) from exc

    def live_lock_holders(self) -> dict[str, LockHolder]:
        """Return the holders of every lease that is not stale, by run id."""
        if "run_locks" not in inspect(self.engine).get_table_names():
            return {}  # a store written before leases existed, opened read-only
        with self.engine.connect() as conn:
            rows = conn.execute(select(schema.run_locks)).mappings().all()
        holders = [LockHolder(**dict(r)) for r in rows]
        return {h.run_id: h for h in holders if not is_stale(h)}

    def run_lock_holder(self, run_id: str) -> LockHolder | None:
        """Return who holds the lease on ``run_id``, or None."""
        with self.engine.connect() as conn:
            row = conn.execute(select(schema.run_locks).where(schema.run_locks.c.run_id == run_id)).mappings().first()
        return LockHolder(**dict(row)) if row else None

    # -- samples ---------------------------------------------------------------------------
    def record_sample(
        self,
        run_id: str,
        sample_key: str,
        *,
        result: Mapping[str, Any] | None,
        error: str | None,
        latency_s: float,
    ) -> None:
        """Buffer one finished sample (status ``done`` or ``error``)."""
        row = {
            "run_id": run_id,
            "sample_key": sample_key,
            "status": "error" if error else "done",
            "result": json.dumps(result) if result is not None else None,
            "error": error,  # this and the result are masked on their way to the database (_mask_statement)
            "latency_s": latency_s,
            "finished_at": time.time(),
        }
        with self._buffer_lock:
            self._pending_samples.append(row)
        self._maybe_flush()

    def finished_samples(self, run_id: str) -> dict[str, SampleRecord]:
        """Return every stored sample of a run, keyed by sample key."""
        self.flush()
        with self.engine.connect() as conn:
            rows = conn.execute(select(schema.samples).where(schema.samples.c.run_id == run_id)).mappings()
            return {
                r["sample_key"]: SampleRecord(
                    sample_key=r["sample_key"],
                    status=r["status"],
                    result=json.loads(r["result"]) if r["result"] else None,
                    error=r["error"],
                    latency_s=r["latency_s"],
                )
                for r in rows
            }

    def sample_states(self, run_id: str) -> dict[str, SampleState]:
        """Return every stored sample of a run, keyed by sample key, without the results."""
        self.flush()
        c = schema.samples.c
        with self.engine.connect() as conn:
            rows = conn.execute(select(c.sample_key, c.status, c.error, c.latency_s).where(c.run_id == run_id))
            return {key: SampleState(key, status, error, latency) for key, status, error, latency in rows}

    def sample_state(self, run_id: str, sample_key: str) -> SampleState | None:
        """One stored sample of a run without its result, or None."""
        self.flush()
        c = schema.samples.c
        with self.engine.connect() as conn:
            row = conn.execute(
                select(c.status, c.error, c.latency_s).where((c.run_id == run_id) & (c.sample_key == sample_key))
            ).first()
        return None if row is None else SampleState(sample_key, row[0], row[1], row[2])

    def sample_results(
        self, run_id: str, keys: Sequence[str], *, chunk: int = READ_CHUNK
    ) -> Generator[tuple[str, str | None], None, None]:
        """Yield ``(key, stored result as JSON text)`` for each of ``keys``, in that order, ``chunk`` keys per query.

        The text is None for a sample stored without a result (failed) or not stored at all. Only
        one chunk of results is in memory at a time; one connection serves every chunk.
        """
        self.flush()
        c = schema.samples.c
        with self.engine.connect() as conn:
            for start in range(0, len(keys), chunk):
                part = list(keys[start : start + chunk])
                rows = conn.execute(select(c.sample_key, c.result).where((c.run_id == run_id) & c.sample_key.in_(part)))
                found: dict[str, str | None] = {key: text for key, text in rows}
                for key in part:
                    yield key, found.get(key) or None

    def forget_samples(self, run_id: str, keys: list[str]) -> None:
        """Delete stored samples (failed ones about to be re-run on resume)."""
        if not keys:
            return
        self.flush()
        try:
            with self.engine.begin() as conn:
                for start in range(0, len(keys), 500):
                    chunk = keys[start : start + 500]
                    conn.execute(
                        schema.samples.delete().where(
                            (schema.samples.c.run_id == run_id) & (schema.samples.c.sample_key.in_(chunk))
                        )
                    )
        except SQLAlchemyError as exc:
            raise self._write_error(f"forgetting {len(keys)} failed samples of run {run_id}", exc) from exc

    # -- model calls and cache -------------------------------------------------------------
    def put_request(self, chain: MessageChain, request: ModelRequest) -> dict[str, str]:
        """Buffer the new blobs of a call's request; return the ``messages_hash``, ``tools_hash``, ``options_hash``.

        ``chain`` is the request history of one role of one sample (the messages it repeats are not
        stored again). The blobs are committed with the next group commit, so with the call's row
        when it is recorded right after (``record_call``). Secrets are masked first.
        """
        if self._requests is None:
            self._requests = RequestWriter(self._blobs, self._masker)
        with self._buffer_lock:
            return self._requests.refs(chain, request.messages, request.tools, request.options)

    def record_call(self, row: Mapping[str, Any]) -> None:
        """Buffer one model call (see ``schema.model_calls`` for the fields; ``response`` is the turn's JSON).

        Secrets in the error and in the response (a model may repeat what it was sent) are masked on
        their way to the database, like every column (``_mask_statement``).
        """
        pending = {**_CALL_DEFAULTS, "created_at": time.time(), **row}
        with self._buffer_lock:
            self._pending_calls.append(pending)
        self._maybe_flush()

    def forget_calls(self, run_id: str, keep: Collection[str], *, only: Collection[str] | None = None) -> None:
        """Delete the model calls of every sample of a run not in ``keep`` (the samples stored as done).

        Called before a resume runs the other samples again: the calls of their abandoned attempt (an
        interruption, a failure, a store that stopped taking writes) are not kept beside the new ones.
        ``only``: look at these samples alone (one shard of a run whose other shards run elsewhere).
        """
        self.flush()
        c = schema.model_calls.c
        try:
            with self.engine.begin() as conn:
                pairs = conn.execute(select(c.sample_key, c.role).where(c.run_id == run_id).distinct()).all()
                stale: dict[str, list[str]] = {}
                for key, role in sorted(pairs):
                    sample = _sample_of(key, role)
                    if sample not in keep and (only is None or sample in only):
                        stale.setdefault(role, []).append(key)
                for role, keys in stale.items():  # by role too: sample "a"'s judge and sample "a#judge" share a key
                    for start in range(0, len(keys), READ_CHUNK):
                        chunk = keys[start : start + READ_CHUNK]
                        conn.execute(
                            delete(schema.model_calls).where(
                                (c.run_id == run_id) & (c.role == role) & c.sample_key.in_(chunk)
                            )
                        )
        except SQLAlchemyError as exc:
            raise self._write_error(f"forgetting the model calls of unfinished samples of run {run_id}", exc) from exc

    def transcript(self, run_id: str, sample_key: str) -> list[ModelCallRecord]:
        """Every stored model call of one sample of a run, of every role, in the order they were recorded.

        Rebuilt from the store alone: each call's messages, tools and options as sent (secrets
        masked), its response, usage, latency and error. Empty when the sample made no call (or the
        run has no such sample). Raises ``UsageError`` for a store of schema 1, which kept no requests.
        """
        if self.schema_version is not None and self.schema_version < 2:
            raise UsageError(
                f"the store {self.url} has schema version {self.schema_version}, from before transcripts were "
                "stored, so it keeps no model call's messages; the first command that writes to it (an eval) "
                "upgrades it, and the runs made from then on have transcripts"
            )
        self.flush()
        c = schema.model_calls.c
        columns = (c.id, c.sample_key, c.role, c.step, c.request_hash, c.messages_hash, c.tools_hash, c.options_hash,
                   c.response, c.error, c.input_tokens, c.output_tokens, c.latency_s, c.attempts, c.cached)  # fmt: skip
        # The sample's own calls, and its extra roles' ("<key>#<role>"): both found on the (run_id, sample_key)
        # index. A byte-wise range on SQLite; LIKE elsewhere (a PostgreSQL collation may not sort "#" byte-wise).
        roles: ColumnElement[bool]
        if self.engine.dialect.name == "sqlite":
            roles = (c.sample_key > sample_key + "#") & (c.sample_key < sample_key + "$")
        else:
            roles = c.sample_key.startswith(sample_key + "#", autoescape=True)
        query = union_all(
            select(*columns).where((c.run_id == run_id) & (c.sample_key == sample_key)),
            select(*columns).where((c.run_id == run_id) & roles),
        ).order_by("id")
        with self.engine.connect() as conn:
            rows = [r for r in conn.execute(query).mappings() if _sample_of(r["sample_key"], r["role"]) == sample_key]
            reader = TranscriptReader(lambda keys: self._fetch_blobs(conn, keys))
            heads = {r["messages_hash"] for r in rows if r["messages_hash"]}
            others = {r[k] for r in rows for k in ("tools_hash", "options_hash") if r[k]}
            try:
                reader.load(heads | others)
            except LookupError as exc:
                raise UsageError(f"run {run_id}, sample {sample_key}: {exc}") from exc
        return [_call_record(r, reader) for r in rows]

    def _fetch_blobs(self, conn: Connection, keys: set[str]) -> dict[str, Any]:
        b = schema.blobs.c
        found: dict[str, Any] = {}
        ordered = sorted(keys)
        for start in range(0, len(ordered), READ_CHUNK):
            chunk = ordered[start : start + READ_CHUNK]
            for key, data in conn.execute(select(b.hash, b.data).where(b.hash.in_(chunk))):
                found[key] = unpack(data)
        return found

    def call_stats(self, run_id: str) -> dict[str, float]:
        """Return call count, cached count, tokens and latency totals for a run."""
        self.flush()
        c = schema.model_calls.c
        with self.engine.connect() as conn:
            row = conn.execute(
                select(
                    func.count(),
                    func.coalesce(func.sum(c.input_tokens), 0),
                    func.coalesce(func.sum(c.output_tokens), 0),
                    func.coalesce(func.sum(c.latency_s), 0.0),
                ).where(c.run_id == run_id)
            ).one()
            cached = conn.execute(
                select(
                    func.count(),
                    func.coalesce(func.sum(c.input_tokens), 0),
                    func.coalesce(func.sum(c.output_tokens), 0),
                ).where((c.run_id == run_id) & (c.cached.is_(True)))
            ).one()
        # input_tokens / output_tokens count every call, cached ones too; cached_* count the cached ones alone.
        return {
            "calls": float(row[0]),
            "cached_calls": float(cached[0]),
            "input_tokens": float(row[1]),
            "output_tokens": float(row[2]),
            "cached_input_tokens": float(cached[1]),
            "cached_output_tokens": float(cached[2]),
            "model_latency_s": float(row[3]),
        }

    def cache_get(self, key: str) -> dict[str, Any] | None:
        """Return a cached response by request hash."""
        with self._buffer_lock:
            pending = self._pending_cache.get(key) or self._inflight_cache.get(key)
        if pending is not None:
            return json.loads(pending["response"])  # type: ignore[no-any-return]
        try:
            text = self._reader.get(key)
        except (SQLAlchemyError, self._reader.error) as exc:
            # Mid-run, an unreachable store must stop the run like a failed write, not fail one sample.
            raise self._write_error("reading the response cache", exc) from exc
        return json.loads(text) if text is not None else None

    def cache_put(self, key: str, model: str, response: Mapping[str, Any]) -> None:
        """Buffer a response for the cache, secrets masked (a hit serves what the store would: the masked answer)."""
        row = {
            "key": key,
            "model": redact_url(model),
            "response": self._masker.json_text(json.dumps(dict(response))),
            "created_at": time.time(),
        }
        with self._buffer_lock:
            self._pending_cache[key] = row
        self._maybe_flush()

    # -- flushing --------------------------------------------------------------------------
    def _maybe_flush(self) -> None:
        pending = len(self._pending_samples) + len(self._pending_calls) + len(self._pending_cache)
        if pending >= self.flush_rows or time.monotonic() - self._last_flush >= self.flush_seconds:
            if self.flush_soon is not None:
                self.flush_soon()
            else:
                self.flush()

    def flush(self) -> None:
        """Write every buffered row in one transaction (and refresh this store's run leases).

        On failure the rows stay buffered, in order, and ``StoreWriteError`` is raised; a later
        flush writes them exactly once. A transaction rolls back whole, and a commit whose outcome
        is unknown (connection lost during COMMIT) is looked up by its first row before anything is retried.
        Rows buffered while a flush runs (on another thread) wait for the next one.
        """
        with self._flush_lock:
            self._flush()

    def _flush(self) -> None:
        self._last_flush = time.monotonic()
        if self._taken_over:
            raise self._taken_over_error(min(self._taken_over))
        heartbeat_due = bool(self._locks) and time.monotonic() - self._last_heartbeat >= HEARTBEAT_SECONDS
        if not (
            self._pending_samples or self._pending_calls or self._pending_cache or self._blobs.pending or heartbeat_due
        ):
            return
        if self._uncertain is not None:
            self._settle_uncertain_batch()
        with self._buffer_lock:  # take the rows; the buffers start again empty
            samples, calls, cache, blobs = (
                self._pending_samples,
                self._pending_calls,
                self._pending_cache,
                self._blobs.pending,
            )
            self._pending_samples, self._pending_calls, self._pending_cache, self._blobs.pending = [], [], {}, {}
            self._inflight_cache = cache
        try:
            self._commit(samples, calls, cache, blobs)
        except BaseException:
            with self._buffer_lock:  # put them back in front of what was buffered meanwhile, in order
                self._pending_samples[:0] = samples
                self._pending_calls[:0] = calls
                self._pending_cache = {**cache, **self._pending_cache}
                self._blobs.pending = {**blobs, **self._blobs.pending}
                self._inflight_cache = {}
            raise
        with self._buffer_lock:
            self._inflight_cache = {}
            if blobs:
                self._blobs.committed(list(blobs))

    def _commit(
        self,
        samples: list[dict[str, Any]],
        calls: list[dict[str, Any]],
        cache: dict[str, dict[str, Any]],
        blobs: dict[str, bytes],
    ) -> None:
        """Write one batch of taken rows in one transaction (see ``flush``)."""
        committing = False
        try:
            with self.engine.begin() as conn:
                if blobs:
                    # Blobs need no uncertain-batch check: one already stored is skipped, never written twice.
                    _insert_blobs(conn, blobs)
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
                if self._locks:
                    self._heartbeat(conn)
                committing = True  # leaving the block commits
        except SQLAlchemyError as exc:
            if committing and (samples or calls):
                # Failed during COMMIT: it may have been applied before the error reached us.
                self._uncertain = _UncertainBatch(
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
            with self.engine.connect() as conn:
                landed = conn.execute(select(func.count()).select_from(table).where(*match)).scalar_one() > 0
        except SQLAlchemyError as exc:
            raise self._write_error("checking whether the last failed group commit was applied", exc) from exc
        if landed:
            with self._buffer_lock:
                del self._pending_samples[: batch.samples]
                del self._pending_calls[: batch.calls]
                for key in batch.cache_keys:
                    self._pending_cache.pop(key, None)
        self._uncertain = None

    def _heartbeat(self, conn: Any) -> None:
        """Refresh this store's leases; raise ``StoreWriteError`` when one was taken over meanwhile."""
        locks = schema.run_locks.c
        for run_id in sorted(self._locks):
            result = conn.execute(
                update(schema.run_locks)
                .where((locks.run_id == run_id) & (locks.owner == self.owner))
                .values(heartbeat_at=time.time())
            )
            if result.rowcount == 0:
                # Our lease went stale and another process took the run over: never write into it again.
                self._locks.discard(run_id)
                self._taken_over.add(run_id)
                raise self._taken_over_error(run_id)
        self._last_heartbeat = time.monotonic()

    def _taken_over_error(self, run_id: str) -> StoreWriteError:
        return StoreWriteError(
            f"run {run_id}: another process took over this run's lease (ours went stale); stopping, "
            "the rows it did not write are re-done by that process"
        )


@dataclass(frozen=True)
class _UncertainBatch:
    """A batch whose COMMIT failed: its first sample and call rows, and how many buffered rows it held."""

    first_sample: dict[str, Any] | None
    first_call: dict[str, Any] | None
    samples: int
    calls: int
    cache_keys: frozenset[str]


def _run_info(row: Any) -> RunInfo:
    return RunInfo(
        id=row["id"],
        benchmark=row["benchmark"],
        model=row["model"],
        status=row["status"],
        config=json.loads(row["config"]),
        n_samples=row["n_samples"],
        created_at=row["created_at"],
        finished_at=row["finished_at"],
        results=_results(row["summary"]),
    )


def _results(text: str | None) -> EvalResults | None:
    """The stored results, or None (not scored yet, or stored by a toolgauge before typed results)."""
    if not text:
        return None
    try:
        return EvalResults.model_validate_json(text)
    except ValueError:
        return None


def _sample_of(call_key: str, role: str) -> str:
    """The sample a model-call row belongs to (calls of an extra role are stored under ``<sample>#<role>``)."""
    suffix = "#" + role
    if role != "model" and call_key.endswith(suffix):
        return call_key[: -len(suffix)]
    return call_key


def _call_record(row: Any, reader: TranscriptReader) -> ModelCallRecord:
    try:
        response = AssistantTurn.model_validate_json(row["response"]) if row["response"] else None
    except ValueError as exc:
        raise UsageError(f"model call {row['id']}: its stored response is not a model turn: {exc}") from exc
    messages: list[Message] | None = reader.messages(row["messages_hash"]) if row["messages_hash"] else None
    tools: list[ToolSpec] | None = reader.tools(row["tools_hash"]) if row["tools_hash"] else None
    options: GenerateOptions | None = reader.options(row["options_hash"]) if row["options_hash"] else None
    return ModelCallRecord(
        step=row["step"],
        role=row["role"],
        messages=messages,
        tools=tools,
        options=options,
        response=response,
        usage=Usage(input_tokens=row["input_tokens"], output_tokens=row["output_tokens"]),
        latency_s=row["latency_s"],
        cached=bool(row["cached"]),
        attempts=row["attempts"],
        error=row["error"],
        request_hash=row["request_hash"],
    )


def _insert_blobs(conn: Connection, blobs: Mapping[str, bytes]) -> None:
    """Insert the blobs the database does not have yet, in hash order (so concurrent writers never deadlock)."""
    rows = [{"hash": key, "data": blobs[key]} for key in sorted(blobs)]
    if conn.dialect.name == "postgresql":
        conn.execute(postgresql.insert(schema.blobs).on_conflict_do_nothing(index_elements=["hash"]), rows)
    elif conn.dialect.name == "sqlite":
        conn.execute(sqlite.insert(schema.blobs).on_conflict_do_nothing(index_elements=["hash"]), rows)
    else:
        b = schema.blobs.c
        have: set[str] = set()
        for start in range(0, len(rows), READ_CHUNK):
            chunk = [r["hash"] for r in rows[start : start + READ_CHUNK]]
            have.update(conn.execute(select(b.hash).where(b.hash.in_(chunk))).scalars())
        fresh = [r for r in rows if r["hash"] not in have]
        if fresh:
            conn.execute(insert(schema.blobs), fresh)


def _migrate(conn: Connection, found: int | None) -> None:
    """Bring a store of an older schema (``found``; None: no version row yet) to ``SCHEMA_VERSION``.

    Each step checks what is there first, so a migration stopped halfway (SQLite commits each
    ALTER TABLE on its own) or raced by a second process is finished by the next open.

    1 -> 2: model_calls gets ``role`` (recovered from the ``<sample>#<role>`` keys of old rows) and
    the request's blob hashes (NULL for old rows: their requests were never stored), and one index
    on (run_id, sample_key) instead of the one on run_id; the blobs table is created by ``create_all``.

    2 -> 3: the ``sweeps`` and ``sweep_cells`` tables, new and empty, are created by ``create_all``; no
    existing table changes.
    """
    table = schema.model_calls
    inspector = inspect(conn)
    columns = {col["name"] for col in inspector.get_columns(table.name)}
    for name in _V2_CALL_COLUMNS:
        if name not in columns:
            kind = table.c[name].type.compile(dialect=conn.dialect)
            extra = " NOT NULL DEFAULT 'model'" if name == "role" else ""
            conn.execute(text(f"ALTER TABLE {table.name} ADD COLUMN {name} {kind}{extra}"))
    if found is not None and found < 2:
        c = table.c
        keyed = conn.execute(select(c.id, c.sample_key).where(c.sample_key.contains("#", autoescape=True))).all()
        by_role: dict[str, list[int]] = {}
        for call_id, key in keyed:
            by_role.setdefault(key.rsplit("#", 1)[1], []).append(call_id)
        for role, ids in by_role.items():
            for start in range(0, len(ids), READ_CHUNK):
                conn.execute(update(table).where(c.id.in_(ids[start : start + READ_CHUNK])).values(role=role))
    indexes = {ix["name"] for ix in inspector.get_indexes(table.name)}
    for index in table.indexes:
        if index.name not in indexes:
            index.create(conn)
    if "ix_model_calls_run_id" in indexes:
        conn.execute(text("DROP INDEX ix_model_calls_run_id"))


def open_store(url: str | None = None, *, create: bool = True) -> Store:
    """Open the store at ``url`` or the default location.

    With ``create`` (commands that run things) a missing store is created, and missing tables are added; the
    folder is made only for the default store (a named store's folder must exist). Without it (read-only
    commands such as ``runs`` and ``report``) nothing is created: a missing SQLite file or an empty database
    is a ``UsageError``.

    A SQLite file this creates is readable by its owner alone (mode 0600, which SQLite gives its WAL and
    shared-memory files too), and so is a folder it creates (0700): a store holds prompts and answers.
    """
    url = url or default_store_url()
    learn_url_credentials(url)  # the store's password is masked in whatever this process writes
    shown = redact_url(url)
    driver_url = url
    if url.startswith(("postgresql://", "postgres://")):
        # SQLAlchemy's default PostgreSQL driver is psycopg2; toolgauge's extra installs psycopg 3.
        driver_url = "postgresql+psycopg://" + url.split("://", 1)[1]
    path = _sqlite_path(driver_url)
    if path is not None and not create and not path.exists():
        raise UsageError(f"no store at {path}; run an eval first")
    if path is not None and create:
        if url != default_store_url() and not path.parent.is_dir():  # only the default store's folder is made
            raise UsageError(
                f"store {shown!r}: the folder {path.parent} does not exist (toolgauge creates no folder); create it"
            )
        try:
            made = [folder for folder in (path.parent, *path.parent.parents) if not folder.exists()]
            path.parent.mkdir(parents=True, exist_ok=True)
            for folder in made:
                folder.chmod(0o700)
        except OSError as exc:
            raise UsageError(f"cannot create the store folder {path.parent}: {exc}") from exc
        _create_private_file(path)
    try:
        # pre_ping: after a lost PostgreSQL connection, a later attempt reconnects instead of failing again.
        engine = create_engine(driver_url, pool_pre_ping=driver_url.startswith("postgresql"))
    except ImportError as exc:
        hint = " (pip install 'toolgauge[postgres]')" if driver_url.startswith("postgresql") else ""
        raise UsageError(f"cannot open store {shown!r}: {exc}{hint}") from exc
    except (SQLAlchemyError, ValueError) as exc:
        raise UsageError(f"cannot open store {shown!r}: {exc}") from exc
    if engine.dialect.name == "sqlite":
        event.listen(engine, "connect", _sqlite_pragmas)
    store = Store(engine, url=url)
    try:
        if create:
            store.init_schema()
        else:
            store.check_schema()
    except SQLAlchemyError as exc:
        first = str(getattr(exc, "orig", None) or exc).strip().splitlines()
        raise UsageError(f"cannot open store {shown!r}: {exc.__class__.__name__}: {first[0] if first else ''}") from exc
    return store


def _create_private_file(path: Path) -> None:
    """Create an empty SQLite file readable by its owner alone (an empty file is an empty database).

    SQLite creates its ``-wal`` and ``-shm`` files with the database file's mode. An existing file is
    left as it is (its mode is the user's choice).
    """
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        return
    except OSError as exc:
        raise UsageError(f"cannot create the store {path}: {exc.strerror or exc}") from exc
    path.chmod(0o600)  # whatever the umask (os.open's mode is only an upper bound)


def _sqlite_path(url: str) -> Path | None:
    """Return the file of a SQLite URL (plain or ``file:PATH?mode=ro&uri=true``), None for others and memory."""
    try:
        parsed = make_url(url)
    except ArgumentError:
        return None
    if parsed.get_backend_name() != "sqlite" or not parsed.database or parsed.database == ":memory:":
        return None
    database = parsed.database
    if database.startswith("file:"):
        database = database.removeprefix("file:").split("?", 1)[0]
        if not database or database == ":memory:" or "mode=memory" in parsed.database:
            return None
    return Path(database)
