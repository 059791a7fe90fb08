"""The run store (SQLAlchemy; SQLite or PostgreSQL): ``Store``, one facade over objects with one job each.

=======================  =============================================================================
module                   its job
=======================  =============================================================================
``executor``             the store's own thread (``run_io``, ``start_io``)
``migrations``           creating the tables, migrating an older store, reading its schema version
``runs``                 the runs table (and each run's scores)
``leases``               run leases (``run_locks``): one process at a time runs a run
``write_buffer``         the rows buffered for the next group commit, and the commit itself
``samples``              the samples table
``model_calls``          model calls with their requests (transcripts)
``response_cache``       the response cache (buffer, memory, database)
``steps``                a sample's named steps, reused on resume
``run_stats``            a run's model-call totals
=======================  =============================================================================

Rows are buffered and committed in groups: the engine flushes as soon as the samples that
finished in the same event-loop tick are buffered (group commit), so a sample counts as
finished only once it is durable, and a resume after ``kill -9`` never repeats one. Other
callers get a time/size-based flush as a safety net.

A write that fails (disk full, read-only store, lost PostgreSQL connection) raises
``StoreWriteError`` and keeps every buffered row, in order, for the next flush; nothing is
dropped and nothing is written twice. A run is run by one process at a time: the process
holds a lease row in ``run_locks`` (see ``acquire_run_lock``).

**Secrets.** Every parameter of every statement this store sends (every column of every table, the
sample steps and sweeps included) passes through one :class:`~toolgauge.redact.SecretMasker` first, so
the database never receives a known secret, in any of its encoded forms (see :mod:`toolgauge.redact`).

Each model call's request and response are kept (``put_request``, ``transcript``): the request
as content-addressed blobs committed with the call's row (see :mod:`toolgauge.store.transcripts`).

Off the event loop: ``flush_async``, ``cache_get_async`` and ``run_io`` run a store call on the
store's own thread (one per store, so its calls keep their order) while the loop goes on.
``prefetch_cache`` reads a model's cache entries into memory there, and ``cache_known`` answers from
memory alone (rows buffered, being committed or read ahead), so a hit it knows needs no trip. Buffering
a row stays on the caller's thread and costs no I/O. While an engine sets ``flush_soon``, a buffer that
is due for a flush asks it for one instead of writing on the caller's thread. An in-memory SQLite store
(one connection per thread) runs every call on the caller's thread.

The methods a subclass may override to watch or hold the store (tests do) are the ones the parts call back:
``flush``, ``_commit``, ``cache_get``, ``record_sample``, ``record_call``.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Collection, Generator, Mapping, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from sqlalchemy import Engine, create_engine, event, make_url
from sqlalchemy.exc import ArgumentError, SQLAlchemyError
from sqlalchemy.pool import SingletonThreadPool, StaticPool

from toolgauge.errors import StoreWriteError, UsageError
from toolgauge.records import ModelRequest
from toolgauge.redact import SecretMasker, learn_url_credentials, redact_url
from toolgauge.results import EvalResults
from toolgauge.store import migrations
from toolgauge.store.access import StoreAccess, write_error
from toolgauge.store.executor import StoreThread
from toolgauge.store.lease import LockHolder
from toolgauge.store.leases import Leases
from toolgauge.store.model_calls import ModelCalls, sample_of
from toolgauge.store.reader import CacheReader
from toolgauge.store.response_cache import ResponseCache
from toolgauge.store.role_calls import RoleCalls
from toolgauge.store.run_stats import call_stats, call_stats_by_role
from toolgauge.store.runs import RunInfo, Runs, new_run_id
from toolgauge.store.samples import READ_CHUNK, SampleRecord, Samples, SampleState, sample_row
from toolgauge.store.steps import SampleSteps
from toolgauge.store.transcripts import MessageChain, ModelCallRecord
from toolgauge.store.write_buffer import Batch, WriteBuffer

STORE_ENV = "TOOLGAUGE_STORE"
P = ParamSpec("P")
T = TypeVar("T")

# Imported from here by callers and tests; each is defined in the module that owns it.
__all__ = [
    "READ_CHUNK",
    "STORE_ENV",
    "RunInfo",
    "SampleRecord",
    "SampleState",
    "Store",
    "default_store_url",
    "new_run_id",
    "open_store",
]
_sample_of = sample_of


def default_store_url() -> str:
    """Return the store URL: ``$TOOLGAUGE_STORE`` or ``.toolgauge/toolgauge.db`` in the working directory."""
    env = os.environ.get(STORE_ENV)
    if env:
        return env
    return f"sqlite:///{Path('.toolgauge') / 'toolgauge.db'}"


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.close()


class Store:
    """Runs, samples, model calls, sample steps, scores and the response cache (a facade; see the module)."""

    def __init__(self, engine: Engine, *, url: str | None = None, flush_rows: int = 256, flush_seconds: float = 0.25):
        self.engine = engine
        # Shown in errors, password masked; the URL as the user gave it (not the driver-qualified one).
        self.url = redact_url(url or engine.url.render_as_string(hide_password=False))
        self.flush_rows = flush_rows
        self.flush_seconds = flush_seconds
        # Masks every parameter of every statement sent on this engine (the environment is read once, here).
        self._masker = SecretMasker()
        event.listen(engine, "before_cursor_execute", self._mask_statement, retval=True)
        # The schema version of the database, once opened (init_schema or check_schema).
        self.schema_version: int | None = None
        # Called instead of a flush on the caller's thread when the buffers are due (set by the engine's
        # group commit, which starts the flush on the store's thread).
        self.flush_soon: Callable[[], None] | None = None
        # The parts call the store's own flush back (late-bound: a subclass's flush is the one they get).
        access = StoreAccess(engine, self._flush_for_parts, self._write_error)
        self._thread = StoreThread(threaded=not isinstance(engine.pool, SingletonThreadPool | StaticPool))
        self._leases = Leases(engine, write_error=self._write_error)
        self._buffer = WriteBuffer(engine, self._leases, write_error=self._write_error)
        self._runs = Runs(access)
        self._samples = Samples(access)
        self._calls = ModelCalls(access, self._buffer, self._masker)
        self._steps = SampleSteps(access)
        self._reader = CacheReader(engine)
        self._cache = ResponseCache(
            self._reader, self._buffer, self._thread, self._masker, write_error=self._write_error
        )

    def _flush_for_parts(self) -> None:
        self.flush()

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

    def _write_error(self, what: str, exc: BaseException) -> StoreWriteError:
        """Return the one-line error for a failed write: what failed, the store, the database's first line."""
        return write_error(self.url, what, exc)

    # -- what subclasses and tests look at -------------------------------------------------
    @property
    def owner(self) -> str:
        """This store's lease owner id (``run_locks.owner``)."""
        return self._leases.owner

    @property
    def _pending_samples(self) -> list[dict[str, Any]]:
        return self._buffer.samples

    @property
    def _pending_calls(self) -> list[dict[str, Any]]:
        return self._buffer.calls

    @property
    def _last_heartbeat(self) -> float:
        return self._leases.last_heartbeat

    @_last_heartbeat.setter
    def _last_heartbeat(self, value: float) -> None:
        self._leases.last_heartbeat = value

    # -- off the event loop ----------------------------------------------------------------
    async def run_io(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """Run a blocking store call on the store's thread and wait for it without blocking the event loop.

        Calls run one at a time in the order they were made. Cancelling the wait does not stop a call
        that has started; it finishes on the store's thread.
        """
        return await self._thread.run(fn, *args, **kwargs)

    def start_io(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        """Start a blocking store call on the store's thread and return its future at once.

        It runs after the calls started before it. An in-memory SQLite store runs it here and returns it done.
        """
        return self._thread.start(fn, *args, **kwargs)

    async def flush_async(self) -> None:
        """``flush`` on the store's thread."""
        await self.run_io(self.flush)

    async def cache_get_async(self, key: str) -> dict[str, Any] | None:
        """``cache_get`` on the store's thread.

        The look-ups asked for in one tick of the event loop make one trip to the store's thread
        together: a trip costs more CPU (two thread wake-ups) than a look-up.
        """
        return await self._cache.get_async(key, self.cache_get)

    def cache_known(self, key: str) -> dict[str, Any] | None:
        """A cached response known without I/O: buffered, being committed, or read by ``prefetch_cache``.

        None says nothing: the entry may still be in the database (``cache_get_async`` finds it).
        """
        return self._cache.known(key)

    def prefetch_cache(self, model: str) -> threading.Event | None:
        """Start reading ``model``'s cache entries (its ``cache_id``) into memory on the store's thread.

        Returns at once, with an event set once every page is read (or reading stopped); ``cache_known``
        serves each entry once its page is read (see :mod:`toolgauge.store.prefetch`). Asking again for a
        model returns the same event. Nothing to do (None) for an in-memory SQLite store, whose look-ups
        never leave the caller's thread.
        """
        return self._cache.prefetch(model)

    # -- lifecycle -------------------------------------------------------------------------
    def init_schema(self) -> None:
        """Create missing tables and check the schema version (migrating an older store)."""
        self.schema_version = migrations.init_schema(self.engine)

    def check_schema(self) -> None:
        """Check an existing store without changing it (for read-only commands).

        A store of an older schema is read as it is (``schema_version`` says which); the first command
        that writes to it migrates it.
        """
        self.schema_version = migrations.check_schema(self.engine, self.url)

    def close(self) -> None:
        """Flush pending writes, release the run leases this store holds and the connections.

        Raises ``StoreWriteError`` when the last flush fails; the leases and connections are
        released all the same (a lease that cannot be deleted goes stale with this process).
        """
        try:
            self.flush()
        finally:
            for run_id in sorted(self._leases.held):
                with contextlib.suppress(StoreWriteError):
                    self.release_run_lock(run_id)
            self._cache.close()
            self._thread.shutdown()
            self._reader.close()
            self.engine.dispose()

    # -- runs ------------------------------------------------------------------------------
    def create_run(self, benchmark: str, model: str, config: Mapping[str, Any], *, run_id: str | None = None) -> str:
        """Insert a new run in status ``running`` and return its id."""
        return self._runs.create(benchmark, model, config, run_id=run_id)

    def set_run_status(self, run_id: str, status: str, *, n_samples: int | None = None) -> None:
        """Update a run's status (running, finished, interrupted, failed).

        The buffered rows are flushed first. When that fails, a run that is stopping (failed,
        interrupted) is still marked so if the store takes the update, then the flush error is raised.
        """
        self._runs.set_status(run_id, status, n_samples=n_samples)

    def save_results(self, run_id: str, results: EvalResults) -> None:
        """Store the run's typed results (secrets masked) and one ``scores`` row per metric value."""
        self._runs.save_results(run_id, results)

    def get_run(self, run_id: str) -> RunInfo | None:
        """Return one run, or None."""
        return self._runs.get(run_id)

    def list_runs(self, limit: int = 50) -> list[RunInfo]:
        """Return the most recent runs first."""
        return self._runs.newest(limit)

    def resolve_run_id(self, ref: str) -> str:
        """Return the run id ``ref`` names: an exact id, ``latest`` (the newest run) or a unique id prefix.

        Raises ``UsageError`` for no match, or for an ambiguous prefix (listing the candidates).
        """
        return self._runs.resolve(ref)

    # -- run leases ------------------------------------------------------------------------
    def acquire_run_lock(self, run_id: str) -> None:
        """Take the lease on ``run_id`` for this process, or raise ``RunLocked`` naming the holder.

        The lease is a row in ``run_locks``; inserting it is atomic on SQLite and PostgreSQL (the
        primary key), so of two processes only one gets it. A lease whose process is gone (same
        host: the pid is dead, e.g. after ``kill -9``; other host: no heartbeat for 10 minutes) is
        taken over. ``close`` and ``release_run_lock`` give it back.
        """
        self._leases.acquire(run_id)

    def release_run_lock(self, run_id: str) -> None:
        """Give back the lease on ``run_id`` (a no-op when this store does not hold it)."""
        self._leases.release(run_id)

    def live_lock_holders(self) -> dict[str, LockHolder]:
        """Return the holders of every lease that is not stale, by run id."""
        return self._leases.live_holders()

    def run_lock_holder(self, run_id: str) -> LockHolder | None:
        """Return who holds the lease on ``run_id``, or None."""
        return self._leases.holder(run_id)

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
        self._buffer.add_sample(sample_row(run_id, sample_key, result=result, error=error, latency_s=latency_s))
        self._maybe_flush()

    def finished_samples(self, run_id: str) -> dict[str, SampleRecord]:
        """Return every stored sample of a run, keyed by sample key."""
        return self._samples.finished(run_id)

    def sample_states(self, run_id: str) -> dict[str, SampleState]:
        """Return every stored sample of a run, keyed by sample key, without the results."""
        return self._samples.states(run_id)

    def sample_state(self, run_id: str, sample_key: str) -> SampleState | None:
        """One stored sample of a run without its result, or None."""
        return self._samples.state(run_id, sample_key)

    def sample_results(
        self, run_id: str, keys: Sequence[str], *, chunk: int = READ_CHUNK
    ) -> Generator[tuple[str, str | None], None, None]:
        """Yield ``(key, stored result as JSON text)`` for each of ``keys``, in that order, ``chunk`` keys per query.

        The text is None for a sample stored without a result (failed) or not stored at all. Only
        one chunk of results is in memory at a time; one connection serves every chunk.
        """
        return self._samples.results(run_id, keys, chunk=chunk)

    def forget_samples(self, run_id: str, keys: list[str]) -> None:
        """Delete stored samples (failed ones about to be re-run on resume)."""
        self._samples.forget(run_id, keys)

    # -- sample steps ----------------------------------------------------------------------
    def sample_steps(self, run_id: str, sample_key: str) -> dict[str, Any]:
        """The saved steps of one sample (``save_step``): name -> value, in the order they were saved."""
        return self._steps.load(run_id, sample_key)

    def save_step(self, run_id: str, sample_key: str, step: str, value: Any) -> None:
        """Commit one finished step of a sample now (its model calls first); a step saved before is kept.

        Its value is JSON (secrets masked). A resume keeps the model calls the sample made up to its last saved
        step (``forget_calls``) and the episode reuses the steps (``EpisodeContext.checkpoint``).
        """
        self._steps.save(run_id, sample_key, step, value)

    def drop_steps_from(self, run_id: str, sample_key: str, step: str) -> None:
        """Forget a saved step and those after it, with the model calls made since the step before it."""
        self._steps.drop_from(run_id, sample_key, step)

    def run_steps(self, run_id: str) -> dict[str, dict[str, Any]]:
        """Every saved step of a run: sample -> step -> value (finished and unfinished samples alike)."""
        return self._steps.of_run(run_id)

    # -- model calls and cache -------------------------------------------------------------
    def put_request(self, chain: MessageChain, request: ModelRequest) -> dict[str, str]:
        """Buffer the new blobs of a call's request; return the ``messages_hash``, ``tools_hash``, ``options_hash``.

        ``chain`` is the request history of one role of one sample (the messages it repeats are not
        stored again). The blobs are committed with the next group commit, so with the call's row
        when it is recorded right after (``record_call``). Secrets are masked first.
        """
        return self._calls.put_request(chain, request)

    def record_call(self, row: Mapping[str, Any]) -> None:
        """Buffer one model call (see ``schema.model_calls`` for the fields; ``response`` is the turn's JSON).

        Secrets in the error and in the response (a model may repeat what it was sent) are masked on
        their way to the database, like every column (``_mask_statement``).
        """
        self._calls.record(row)
        self._maybe_flush()

    def forget_calls(self, run_id: str, keep: Collection[str], *, only: Collection[str] | None = None) -> None:
        """Delete the model calls of every sample of a run not in ``keep`` (the samples stored as done).

        Called before a resume runs the other samples again: the calls of their abandoned attempt (an
        interruption, a failure, a store that stopped taking writes) are not kept beside the new ones. The
        calls a sample made up to its last saved step stay (the resumed sample reuses those steps).
        ``only``: look at these samples alone (one shard of a run whose other shards run elsewhere).
        """
        self._calls.forget(run_id, keep, only=only, kept_through=self._steps.kept_through(run_id))

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
        return self._calls.transcript(run_id, sample_key)

    def call_stats(self, run_id: str) -> dict[str, float]:
        """Return call count, cached count, tokens and latency totals for a run."""
        self.flush()
        return call_stats(self.engine, run_id)

    def call_stats_by_role(self, run_id: str) -> dict[str, RoleCalls]:
        """Per role of a run: call count, tokens in and out and latency total (cached calls included)."""
        self.flush()
        return call_stats_by_role(self.engine, run_id)

    def cache_get(self, key: str) -> dict[str, Any] | None:
        """Return a cached response by request hash."""
        return self._cache.get(key)

    def cache_put(self, key: str, model: str, response: Mapping[str, Any]) -> None:
        """Buffer a response for the cache, secrets masked (a hit serves what the store would: the masked answer)."""
        self._cache.put(key, model, response)
        self._maybe_flush()

    # -- flushing --------------------------------------------------------------------------
    def _maybe_flush(self) -> None:
        if self._buffer.due(self.flush_rows, self.flush_seconds):
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
        self._buffer.flush(self._commit)

    def _commit(self, batch: Batch) -> None:
        """Write one batch of taken rows in one transaction (see ``flush``)."""
        self._buffer.commit(batch)


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
