"""Sweeps in the store (schema 3): the ``sweeps`` row and one ``sweep_cells`` row per model x benchmark.

A sweep and all its cells are written in one transaction, each cell with the id of its run given out then;
afterwards only single-row updates by primary key follow (a cell's status, the sweep's status), so several
workers finishing cells of one sweep at once neither lose nor duplicate a row.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import insert, inspect, select, update
from sqlalchemy.exc import SQLAlchemyError

from toolgauge.errors import UsageError
from toolgauge.redact import redact
from toolgauge.store import schema
from toolgauge.store.store import Store, new_run_id

SWEEP_PREFIX = "sweep-"


@dataclass(frozen=True)
class CellRecord:
    """One row of ``sweep_cells``."""

    cell: int
    model: str
    benchmark: str
    run_id: str
    status: str
    error: str | None


@dataclass(frozen=True)
class SweepRecord:
    """One row of ``sweeps``, with its cells in order."""

    id: str
    file: str
    created_at: float
    status: str
    cells: list[CellRecord]


def new_sweep_id() -> str:
    """Return a sortable, unique sweep id such as ``sweep-20261201-221501-3fa2c1`` (never a run id)."""
    return SWEEP_PREFIX + time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(3)


def create_sweep(store: Store, file_text: str, cells: Sequence[tuple[str, str]]) -> SweepRecord:
    """Insert a sweep (status ``running``) and its cells (``(model, benchmark)`` in order, status ``pending``)."""
    sweep_id = new_sweep_id()
    now = time.time()
    rows = [
        {"sweep_id": sweep_id, "cell": i, "model": redact(model), "benchmark": bench, "run_id": _cell_run_id(),
         "status": "pending", "error": None}
        for i, (model, bench) in enumerate(cells)
    ]  # fmt: skip
    try:
        with store.engine.begin() as conn:
            conn.execute(insert(schema.sweeps).values(id=sweep_id, file=file_text, created_at=now, status="running"))
            if rows:
                conn.execute(insert(schema.sweep_cells), rows)
    except SQLAlchemyError as exc:
        raise store._write_error(f"creating sweep {sweep_id}", exc) from exc
    return SweepRecord(sweep_id, file_text, now, "running", [_cell(r) for r in rows])


def _cell_run_id() -> str:
    # Run ids of one sweep are made in the same second: the random part keeps them apart.
    return new_run_id()[:-6] + secrets.token_hex(4)


def set_cell(store: Store, sweep_id: str, cell: int, status: str, *, error: str | None = None) -> None:
    """Update one cell's status (and its error line: why it did not finish)."""
    c = schema.sweep_cells.c
    try:
        with store.engine.begin() as conn:
            conn.execute(
                update(schema.sweep_cells)
                .where((c.sweep_id == sweep_id) & (c.cell == cell))
                .values(status=status, error=redact(error) if error else None)
            )
    except SQLAlchemyError as exc:
        raise store._write_error(f"marking cell {cell} of sweep {sweep_id} {status}", exc) from exc


def set_sweep_status(store: Store, sweep_id: str, status: str) -> None:
    """Update a sweep's status."""
    try:
        with store.engine.begin() as conn:
            conn.execute(update(schema.sweeps).where(schema.sweeps.c.id == sweep_id).values(status=status))
    except SQLAlchemyError as exc:
        raise store._write_error(f"marking sweep {sweep_id} {status}", exc) from exc


def has_sweeps(store: Store) -> bool:
    """Whether the store has the sweeps tables (a store of schema 2, read-only, has not)."""
    return schema.sweeps.name in inspect(store.engine).get_table_names()


def get_sweep(store: Store, sweep_id: str) -> SweepRecord | None:
    """Return one sweep with its cells, or None."""
    if not has_sweeps(store):
        return None
    c = schema.sweep_cells.c
    with store.engine.connect() as conn:
        row = conn.execute(select(schema.sweeps).where(schema.sweeps.c.id == sweep_id)).mappings().first()
        if row is None:
            return None
        cells = conn.execute(select(schema.sweep_cells).where(c.sweep_id == sweep_id).order_by(c.cell)).mappings()
        return SweepRecord(row["id"], row["file"], row["created_at"], row["status"], [_cell(r) for r in cells])


def list_sweeps(store: Store, limit: int = 50) -> list[SweepRecord]:
    """The most recent sweeps first, each with its cells."""
    if not has_sweeps(store):
        return []
    with store.engine.connect() as conn:
        ids = list(
            conn.execute(select(schema.sweeps.c.id).order_by(schema.sweeps.c.created_at.desc()).limit(limit)).scalars()
        )
    found = [get_sweep(store, i) for i in ids]
    return [s for s in found if s is not None]


def resolve_sweep_id(store: Store, ref: str) -> str | None:
    """The sweep ``ref`` names (an exact id or a unique id prefix), or None when it names none.

    Raises ``UsageError`` for an ambiguous prefix.
    """
    if not has_sweeps(store):
        return None
    ids = schema.sweeps.c.id
    with store.engine.connect() as conn:
        if conn.execute(select(ids).where(ids == ref)).first() is not None:
            return ref
        if not ref.startswith(SWEEP_PREFIX):
            return None
        pattern = ref.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        found = list(conn.execute(select(ids).where(ids.like(pattern, escape="\\")).limit(11)).scalars())
    if len(found) > 1:
        raise UsageError(f"sweep id prefix {ref!r} is ambiguous: {', '.join(found[:10])}; give more of the id")
    return str(found[0]) if found else None


def _cell(row: object) -> CellRecord:
    r = dict(row)  # type: ignore[call-overload]
    return CellRecord(r["cell"], r["model"], r["benchmark"], r["run_id"], r["status"], r["error"])
