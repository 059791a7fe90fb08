"""Response-cache look-ups on one long-lived read connection, with the query compiled once.

A look-up through SQLAlchemy's ``engine.connect()`` and ``select(...)`` per request cost about 0.35 ms of
CPU (a pool checkout, a transaction, the statement's cache key, a result object); this costs a DB-API
``execute`` and ``fetchone``. The connection is in autocommit mode, so it never holds a transaction open:
each look-up sees every committed row (SQLite in WAL mode lets it read beside the writer; PostgreSQL
reads committed data per statement). One lock serialises its use, so any thread may call ``get``. An
in-memory SQLite store (one connection per thread) looks up through a checkout, as before.
"""

from __future__ import annotations

import threading
from typing import Any

from sqlalchemy import Connection, Engine, bindparam, select
from sqlalchemy.pool import SingletonThreadPool, StaticPool

from toolgauge.store import schema


class CacheReader:
    """Reads ``response_cache.response`` by key; reconnects on the next call after a failed one."""

    def __init__(self, engine: Engine):
        self._engine = engine
        self._lock = threading.Lock()
        self._conn: Connection | None = None
        self._cursor: Any = None
        cache = schema.response_cache.c
        self._query = select(cache.response).where(cache.key == bindparam("key"))
        # One model's entries in key order, a page after a key (``page``): the primary key's order.
        self._page_query = (
            select(cache.key, cache.response)
            .where((cache.model == bindparam("model")) & (cache.key > bindparam("after")))
            .order_by(cache.key)
            .limit(bindparam("rows"))
        )
        # One connection per thread (in-memory SQLite): a connection of our own would be the writers' own,
        # and autocommit on it would break their transactions; look up through a checkout as writers do.
        self._shared = isinstance(engine.pool, SingletonThreadPool | StaticPool)
        compiled = self._query.compile(dialect=engine.dialect)
        self._sql = compiled.string
        self._positional = compiled.positional
        self._paged = self._page_query.compile(dialect=engine.dialect)
        #: What a failed look-up raises besides SQLAlchemy's errors: the DB-API's own.
        self.error: type[Exception] = engine.dialect.loaded_dbapi.Error

    def get(self, key: str) -> str | None:
        """The stored response text for ``key``, or None."""
        if self._shared:
            with self._engine.connect() as conn:
                found = conn.execute(self._query, {"key": key}).first()
            return None if found is None else str(found[0])
        params: Any = (key,) if self._positional else {"key": key}
        with self._lock:
            cursor = self._cursor if self._cursor is not None else self._open()
            try:
                cursor.execute(self._sql, params)
                row = cursor.fetchone()
            except BaseException:
                self._drop()  # a lost connection: the next look-up opens a new one
                raise
        return None if row is None else str(row[0])

    def page(self, model: str, after: str, rows: int) -> list[tuple[str, str]]:
        """Up to ``rows`` (key, response text) of ``model``'s entries whose key sorts after ``after``, in key order."""
        values = {"model": model, "after": after, "rows": rows}
        if self._shared:
            with self._engine.connect() as conn:
                return [(str(k), str(r)) for k, r in conn.execute(self._page_query, values)]
        # Every parameter the dialect added (SQLite's OFFSET), in the DB-API's form.
        named = self._paged.construct_params(values)
        params: Any = tuple(named[name] for name in self._paged.positiontup or []) if self._positional else named
        with self._lock:
            cursor = self._cursor if self._cursor is not None else self._open()
            try:
                cursor.execute(self._paged.string, params)
                found = cursor.fetchall()
            except BaseException:
                self._drop()
                raise
        return [(str(k), str(r)) for k, r in found]

    def close(self) -> None:
        """Give the connection back to the engine's pool."""
        with self._lock:
            if self._conn is not None:
                if self._cursor is not None:
                    self._cursor.close()
                self._conn.close()
            self._conn = self._cursor = None

    def _open(self) -> Any:
        conn = self._engine.connect().execution_options(isolation_level="AUTOCOMMIT")
        dbapi_connection = conn.connection.dbapi_connection
        assert dbapi_connection is not None
        self._conn, self._cursor = conn, dbapi_connection.cursor()
        return self._cursor

    def _drop(self) -> None:
        conn, self._conn, self._cursor = self._conn, None, None
        if conn is not None:
            try:
                conn.invalidate()  # never back into the pool: it may be broken
            finally:
                conn.close()
