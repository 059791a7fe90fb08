"""The store's schema version: create the tables of a new store, bring an older one up to date, read its version.

Each migration step checks what is there first, so a migration stopped halfway (SQLite commits each ALTER TABLE
on its own) or raced by a second process is finished by the next open.
"""

from __future__ import annotations

import time

from sqlalchemy import Connection, Engine, insert, inspect, select, text, update
from sqlalchemy.exc import IntegrityError, OperationalError, ProgrammingError

from toolgauge.errors import UsageError
from toolgauge.store import schema
from toolgauge.store.schema import SCHEMA_VERSION

# Columns a store of schema 1 lacks in model_calls, added by the migration to 2.
V2_CALL_COLUMNS = ("role", "messages_hash", "tools_hash", "options_hash")
# Rows per ``IN (...)`` query: well under SQLite's bound-parameter limit.
CHUNK = 500


def too_new(version: int) -> str:
    """The message for a store written by a newer toolgauge."""
    return f"store schema version {version} is newer than this toolgauge ({SCHEMA_VERSION}); upgrade"


def init_schema(engine: Engine) -> int:
    """Create missing tables, migrate an older store, and return the schema version (``SCHEMA_VERSION``).

    Two processes opening a new store at once race between "table missing" and "create table"; the loser
    sees an error about an existing table or row and simply tries again.
    """
    for attempt in range(5):
        try:
            return _create_schema(engine)
        except (OperationalError, IntegrityError, ProgrammingError):
            if attempt == 4:
                raise
            time.sleep(0.05 * (attempt + 1))
    raise AssertionError("unreachable")  # the last attempt returns or raises


def check_schema(engine: Engine, store_url: str) -> int:
    """The schema version of an existing store, read without changing it (for read-only commands).

    A store of an older schema is read as it is; the first command that writes to it migrates it.

    Raises:
        UsageError: no toolgauge store there, or one written by a newer toolgauge.
    """
    if "runs" not in inspect(engine).get_table_names():
        raise UsageError(f"no toolgauge store at {store_url} (no runs table); run an eval first")
    with engine.connect() as conn:
        row = conn.execute(select(schema.meta.c.value).where(schema.meta.c.key == "schema_version")).first()
        if row is not None:
            version = int(row[0])
        else:  # tables made, version row not yet written: what the tables say
            calls = {col["name"] for col in inspect(conn).get_columns(schema.model_calls.name)}
            has_sweeps = schema.sweeps.name in inspect(conn).get_table_names()
            version = (3 if has_sweeps else 2) if set(V2_CALL_COLUMNS) <= calls else 1
    if version > SCHEMA_VERSION:
        raise UsageError(too_new(version))
    return version


def _create_schema(engine: Engine) -> int:
    schema.metadata.create_all(engine)
    with engine.begin() as conn:
        # FOR UPDATE (PostgreSQL): a second process opening an old store waits for the first one's migration.
        row = conn.execute(
            select(schema.meta.c.value).where(schema.meta.c.key == "schema_version").with_for_update()
        ).first()
        found = int(row[0]) if row is not None else None
        if found is not None and found > SCHEMA_VERSION:
            raise UsageError(too_new(found))
        if found is None or found < SCHEMA_VERSION:
            migrate(conn, found)
        if row is None:
            conn.execute(insert(schema.meta).values(key="schema_version", value=str(SCHEMA_VERSION)))
        elif found != SCHEMA_VERSION:
            conn.execute(
                update(schema.meta).where(schema.meta.c.key == "schema_version").values(value=str(SCHEMA_VERSION))
            )
    return SCHEMA_VERSION


def migrate(conn: Connection, found: int | None) -> None:
    """Bring a store of an older schema (``found``; None: no version row yet) to ``SCHEMA_VERSION``.

    1 -> 2: model_calls gets ``role`` (recovered from the ``<sample>#<role>`` keys of old rows) and
    the request's blob hashes (NULL for old rows: their requests were never stored), and one index
    on (run_id, sample_key) instead of the one on run_id; the blobs table is created by ``create_all``.

    2 -> 3: the ``sweeps`` and ``sweep_cells`` tables, new and empty, are created by ``create_all``; no
    existing table changes.
    """
    table = schema.model_calls
    inspector = inspect(conn)
    columns = {col["name"] for col in inspector.get_columns(table.name)}
    for name in V2_CALL_COLUMNS:
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
            for start in range(0, len(ids), CHUNK):
                conn.execute(update(table).where(c.id.in_(ids[start : start + CHUNK])).values(role=role))
    indexes = {ix["name"] for ix in inspector.get_indexes(table.name)}
    for index in table.indexes:
        if index.name not in indexes:
            index.create(conn)
    if "ix_model_calls_run_id" in indexes:
        conn.execute(text("DROP INDEX ix_model_calls_run_id"))
