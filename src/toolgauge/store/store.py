"""SQLAlchemy-backed store.

Rows are buffered and committed in groups: the engine flushes as soon as the samples that
finished in the same event-loop tick are buffered (group commit), so a sample counts as
finished only once it is durable, and a resume after ``kill -9`` never repeats one. Other
callers get a time/size-based flush as a safety net.
"""

from __future__ import annotations

import json
import os
import secrets
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event, func, insert, select, update
from sqlalchemy.exc import IntegrityError, OperationalError, ProgrammingError, SQLAlchemyError

from toolgauge.errors import UsageError
from toolgauge.store import schema
from toolgauge.store.schema import SCHEMA_VERSION

STORE_ENV = "TOOLGAUGE_STORE"


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
    summary: dict[str, Any] | None


@dataclass(frozen=True)
class SampleRecord:
    """One finished (or failed) sample of a run."""

    sample_key: str
    status: str
    result: dict[str, Any] | None
    error: str | None
    latency_s: float | None


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

    def __init__(self, engine: Engine, *, flush_rows: int = 256, flush_seconds: float = 0.25):
        self.engine = engine
        self.flush_rows = flush_rows
        self.flush_seconds = flush_seconds
        self._pending_samples: list[dict[str, Any]] = []
        self._pending_calls: list[dict[str, Any]] = []
        self._pending_cache: dict[str, dict[str, Any]] = {}
        self._last_flush = time.monotonic()

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

    def _create_schema(self) -> None:
        schema.metadata.create_all(self.engine)
        with self.engine.begin() as conn:
            row = conn.execute(select(schema.meta.c.value).where(schema.meta.c.key == "schema_version")).first()
            if row is None:
                conn.execute(insert(schema.meta).values(key="schema_version", value=str(SCHEMA_VERSION)))
            elif int(row[0]) > SCHEMA_VERSION:
                raise UsageError(
                    f"store schema version {row[0]} is newer than this toolgauge ({SCHEMA_VERSION}); upgrade"
                )

    def close(self) -> None:
        """Flush pending writes and release connections."""
        self.flush()
        self.engine.dispose()

    # -- runs ------------------------------------------------------------------------------
    def create_run(self, benchmark: str, model: str, config: Mapping[str, Any], *, run_id: str | None = None) -> str:
        """Insert a new run in status ``running`` and return its id."""
        rid = run_id or new_run_id()
        with self.engine.begin() as conn:
            conn.execute(
                insert(schema.runs).values(
                    id=rid,
                    benchmark=benchmark,
                    model=model,
                    status="running",
                    config=json.dumps(dict(config), sort_keys=True, default=str),
                    n_samples=0,
                    created_at=time.time(),
                )
            )
        return rid

    def set_run_status(self, run_id: str, status: str, *, n_samples: int | None = None) -> None:
        """Update a run's status (running, finished, interrupted, failed)."""
        self.flush()
        values: dict[str, Any] = {"status": status}
        if status != "running":
            values["finished_at"] = time.time()
        if n_samples is not None:
            values["n_samples"] = n_samples
        with self.engine.begin() as conn:
            conn.execute(update(schema.runs).where(schema.runs.c.id == run_id).values(**values))

    def save_summary(self, run_id: str, summary: Mapping[str, Any]) -> None:
        """Store the run's summary JSON and its flattened numeric scores."""
        self.flush()
        rows = [
            {"run_id": run_id, "scope": scope, "metric": metric, "value": value}
            for scope, metric, value in _flatten_scores(summary)
        ]
        with self.engine.begin() as conn:
            conn.execute(
                update(schema.runs)
                .where(schema.runs.c.id == run_id)
                .values(summary=json.dumps(dict(summary), sort_keys=True))
            )
            conn.execute(schema.scores.delete().where(schema.scores.c.run_id == run_id))
            if rows:
                conn.execute(insert(schema.scores), rows)

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
        self._pending_samples.append(
            {
                "run_id": run_id,
                "sample_key": sample_key,
                "status": "error" if error else "done",
                "result": json.dumps(result) if result is not None else None,
                "error": error,
                "latency_s": latency_s,
                "finished_at": time.time(),
            }
        )
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

    def forget_samples(self, run_id: str, keys: list[str]) -> None:
        """Delete stored samples (failed ones about to be re-run on resume)."""
        if not keys:
            return
        self.flush()
        with self.engine.begin() as conn:
            for start in range(0, len(keys), 500):
                chunk = keys[start : start + 500]
                conn.execute(
                    schema.samples.delete().where(
                        (schema.samples.c.run_id == run_id) & (schema.samples.c.sample_key.in_(chunk))
                    )
                )

    # -- model calls and cache -------------------------------------------------------------
    def record_call(self, row: Mapping[str, Any]) -> None:
        """Buffer one model call (see ``schema.model_calls`` for the fields)."""
        self._pending_calls.append({"created_at": time.time(), **row})
        self._maybe_flush()

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
            cached = conn.execute(select(func.count()).where((c.run_id == run_id) & (c.cached.is_(True)))).scalar_one()
        return {
            "calls": float(row[0]),
            "cached_calls": float(cached),
            "input_tokens": float(row[1]),
            "output_tokens": float(row[2]),
            "model_latency_s": float(row[3]),
        }

    def cache_get(self, key: str) -> dict[str, Any] | None:
        """Return a cached response by request hash."""
        pending = self._pending_cache.get(key)
        if pending is not None:
            return json.loads(pending["response"])  # type: ignore[no-any-return]
        with self.engine.connect() as conn:
            row = conn.execute(
                select(schema.response_cache.c.response).where(schema.response_cache.c.key == key)
            ).first()
        return json.loads(row[0]) if row else None

    def cache_put(self, key: str, model: str, response: Mapping[str, Any]) -> None:
        """Buffer a response for the cache."""
        self._pending_cache[key] = {
            "key": key,
            "model": model,
            "response": json.dumps(dict(response)),
            "created_at": time.time(),
        }
        self._maybe_flush()

    # -- flushing --------------------------------------------------------------------------
    def _maybe_flush(self) -> None:
        pending = len(self._pending_samples) + len(self._pending_calls) + len(self._pending_cache)
        if pending >= self.flush_rows or time.monotonic() - self._last_flush >= self.flush_seconds:
            self.flush()

    def flush(self) -> None:
        """Write every buffered row in one transaction."""
        self._last_flush = time.monotonic()
        if not (self._pending_samples or self._pending_calls or self._pending_cache):
            return
        samples, calls, cache = self._pending_samples, self._pending_calls, self._pending_cache
        self._pending_samples, self._pending_calls, self._pending_cache = [], [], {}
        with self.engine.begin() as conn:
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
        summary=json.loads(row["summary"]) if row["summary"] else None,
    )


def _flatten_scores(summary: Mapping[str, Any], scope: str = "") -> Iterator[tuple[str, str, float]]:
    """Yield (scope, metric, value) for every numeric leaf of a summary."""
    for key, value in summary.items():
        if isinstance(value, bool):
            continue
        if isinstance(value, int | float):
            yield (scope or "overall", key, float(value))
        elif isinstance(value, Mapping):
            yield from _flatten_scores(value, f"{scope}/{key}" if scope else key)


def open_store(url: str | None = None) -> Store:
    """Open (and create if needed) the store at ``url`` or the default location."""
    url = url or default_store_url()
    if url.startswith(("postgresql://", "postgres://")):
        # SQLAlchemy's default PostgreSQL driver is psycopg2; toolgauge's extra installs psycopg 3.
        url = "postgresql+psycopg://" + url.split("://", 1)[1]
    if url.startswith("sqlite:///"):
        path = Path(url.removeprefix("sqlite:///"))
        if str(path) not in ("", ":memory:"):
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise UsageError(f"cannot create the store folder {path.parent}: {exc}") from exc
    try:
        engine = create_engine(url)
    except ImportError as exc:
        hint = " (pip install 'toolgauge[postgres]')" if url.startswith("postgresql") else ""
        raise UsageError(f"cannot open store {url!r}: {exc}{hint}") from exc
    except (SQLAlchemyError, ValueError) as exc:
        raise UsageError(f"cannot open store {url!r}: {exc}") from exc
    if engine.dialect.name == "sqlite":
        event.listen(engine, "connect", _sqlite_pragmas)
    store = Store(engine)
    try:
        store.init_schema()
    except SQLAlchemyError as exc:
        raise UsageError(f"cannot open store {url!r}: {exc.__class__.__name__}: {exc}") from exc
    return store
