"""ToolGate's gate records in the run's store, written as each gate finishes (what makes a resume repeat no gate).

One table of its own, ``toolgate_gates``, in the run's database (SQLite or PostgreSQL, through the store's
SQLAlchemy engine), created when missing. The store's own tables are not changed.

=============  ===============================================================================
column         content
=============  ===============================================================================
``run_id``     the run (``runs.id``)
``round_key``  the round (``round-0001``), the engine's sample key
``gate``       ``proposal`` (the generator's candidate, or why it is malformed), ``verify``,
               ``screen:<name>`` (one per screen) or ``solve``
``record``     the gate's record as JSON (:class:`~toolgauge.benchmarks.toolgate.generator.Proposal`,
               :class:`~toolgauge.benchmarks.toolgate.records.VerifyResult`, ``ScreenResult``, ``SolveResult``)
``created_at`` when it was written (seconds since the epoch)
=============  ===============================================================================

The primary key is (run, round, gate). A record is committed in its own transaction the moment its gate
finishes, before the next gate starts (and after the store has committed the model calls the gate made), so a
round stopped by Ctrl-C or ``kill -9`` after gate 1 resumes at the screens. A finished round is the engine's
``samples`` row (its result holds every record again); the gate rows of a round that never finished are what its
resume starts from.

**The calls of a reused gate.** Before a resume runs anything, the engine deletes the model calls of every
unfinished sample (``Store.forget_calls``: an abandoned attempt's calls are not kept beside the new ones). A round
resumed from its gate records does not ask those gates again, so their calls must stay in the call log. Hence a
second table, ``toolgate_parked_calls``: :func:`park_calls` (called before the run resumes) copies there the
``model_calls`` rows of each gate that has a record in an unfinished round (the generator's for ``proposal``, a
screen's for ``screen:<name>``, the solver's for ``solve``), and :meth:`GateLog.restore_calls` puts them back into
``model_calls`` when the round reuses that gate, deleting the copies in the same transaction. The calls of work
that is redone (a gate with no record: it was running when the process stopped) are not parked, so they stay
forgotten. A call is always in one of the two tables (or both, between parking and the engine's delete), so a
resume that is itself interrupted loses nothing.

=================  ==========================================================================================
column             content
=================  ==========================================================================================
``run_id``         the run
``round_key``      the round
``gate``           the gate whose call it is
``call_id``        the call's ``model_calls.id`` when it was parked (the primary key is all four)
``row``            the whole ``model_calls`` row as JSON (restored under a new id, in ``call_id`` order)
=================  ==========================================================================================
"""

from __future__ import annotations

import json
import time
from collections.abc import Collection
from typing import Any

from sqlalchemy import Column, Float, Integer, MetaData, String, Table, Text, delete, insert, select
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import IntegrityError, OperationalError, ProgrammingError, SQLAlchemyError

from toolgauge.errors import StoreWriteError
from toolgauge.redact import redact
from toolgauge.store import schema as store_schema

TABLE = "toolgate_gates"
PARKED_TABLE = "toolgate_parked_calls"

metadata = MetaData()

gates = Table(
    TABLE,
    metadata,
    Column("run_id", String(64), primary_key=True),
    Column("round_key", String(255), primary_key=True),
    Column("gate", String(255), primary_key=True),
    Column("record", Text, nullable=False),
    Column("created_at", Float, nullable=False),
)

parked = Table(
    PARKED_TABLE,
    metadata,
    Column("run_id", String(64), primary_key=True),
    Column("round_key", String(255), primary_key=True),
    Column("gate", String(255), primary_key=True),
    Column("call_id", Integer, primary_key=True, autoincrement=False),
    Column("row", Text, nullable=False),
)

# The role whose model calls a gate makes (gate 1 runs a script and makes none).
GATE_ROLES = {"proposal": "generator", "solve": "solver"}


def gate_role(gate: str) -> str | None:
    """The engine role of a gate's model calls: ``generator``, ``screen:<name>``, ``solver``; None for ``verify``."""
    if gate.startswith("screen:"):
        return gate
    return GATE_ROLES.get(gate)


def _call_key(round_key: str, role: str) -> str:
    return f"{round_key}#{role}"  # the engine logs an extra role's calls under "<sample>#<role>"


def ensure_table(engine: Engine) -> None:
    """Create ``toolgate_gates`` when it is missing (two processes racing to create it both succeed)."""
    for attempt in range(5):
        try:
            metadata.create_all(engine, checkfirst=True)
            return
        except (OperationalError, IntegrityError, ProgrammingError):
            if attempt == 4:
                raise
            time.sleep(0.05 * (attempt + 1))


class GateLog:
    """The gate records of one round of one run.

    Args:
        engine: the store's SQLAlchemy engine (``Store.engine``).
        run_id: the run.
        round_key: the round (the engine's sample key).
    """

    def __init__(self, engine: Engine, run_id: str, round_key: str):
        self.engine = engine
        self.run_id = run_id
        self.round_key = round_key
        ensure_table(engine)

    def load(self) -> dict[str, dict[str, Any]]:
        """Every stored record of this round, by gate name (decoded JSON)."""
        c = gates.c
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(c.gate, c.record).where((c.run_id == self.run_id) & (c.round_key == self.round_key))
            )
            return {gate: json.loads(record) for gate, record in rows}

    def put(self, gate: str, record: dict[str, Any]) -> None:
        """Commit one gate's record now. A record already stored for this gate is kept (never written twice).

        Raises:
            StoreWriteError: the database refused the write (the round then fails and runs again on resume).
        """
        row = {
            "run_id": self.run_id,
            "round_key": self.round_key,
            "gate": gate,
            "record": json.dumps(record, ensure_ascii=False),
            "created_at": time.time(),
        }
        try:
            with self.engine.begin() as conn:
                conn.execute(insert(gates), [row])
        except IntegrityError:
            return  # the same (run, round, gate) was committed before: the first record stands
        except SQLAlchemyError as exc:
            orig = getattr(exc, "orig", None) or exc
            first = (str(orig).strip().splitlines() or [orig.__class__.__name__])[0]
            raise StoreWriteError(
                f"cannot write the {gate} record of {self.round_key} (run {self.run_id}): {redact(first)}"
            ) from exc

    def restore_calls(self, gate: str) -> int:
        """Put the parked model calls of ``gate`` back into the call log (the round reuses its record).

        Returns how many were restored. They get new ids, in their old order, and their parked copies go in the same
        transaction. A parked call still in the log (parked, then the process stopped before the engine forgot it)
        is not written twice.

        Raises:
            StoreWriteError: the database refused the write (the round then fails and runs again on resume).
        """
        p = parked.c
        m = store_schema.model_calls.c
        mine = (p.run_id == self.run_id) & (p.round_key == self.round_key) & (p.gate == gate)
        try:
            with self.engine.begin() as conn:
                rows = conn.execute(select(p.call_id, p.row).where(mine).order_by(p.call_id)).all()
                if not rows:
                    return 0
                role = gate_role(gate)
                present = set(
                    conn.execute(
                        select(m.id).where(
                            (m.run_id == self.run_id)
                            & (m.role == role)
                            & (m.sample_key == _call_key(self.round_key, str(role)))
                            & m.id.in_([call_id for call_id, _ in rows])
                        )
                    ).scalars()
                )
                calls = [json.loads(row) for call_id, row in rows if call_id not in present]
                for call in calls:
                    call.pop("id", None)
                if calls:
                    conn.execute(insert(store_schema.model_calls), calls)
                conn.execute(delete(parked).where(mine))
        except SQLAlchemyError as exc:
            orig = getattr(exc, "orig", None) or exc
            first = (str(orig).strip().splitlines() or [orig.__class__.__name__])[0]
            raise StoreWriteError(
                f"cannot restore the model calls of the {gate} record of {self.round_key} (run {self.run_id}): "
                f"{redact(first)}"
            ) from exc
        return len(calls)


def park_calls(engine: Engine, run_id: str, finished: Collection[str]) -> int:
    """Copy the model calls of each recorded gate of the run's unfinished rounds aside, before a resume.

    Args:
        engine: the store's SQLAlchemy engine.
        run_id: the run about to be resumed.
        finished: the rounds stored as done (their calls stay in the log; their parked copies, if any, go).

    Returns how many calls were newly parked. Call it before the engine forgets the unfinished rounds' calls
    (``construction.prepare_resume`` does); :meth:`GateLog.restore_calls` puts them back.
    """
    ensure_table(engine)
    done = set(finished)
    m = store_schema.model_calls.c
    p = parked.c
    count = 0
    with engine.begin() as conn:
        _drop_parked(conn, run_id, done)
        kept = {tuple(row) for row in conn.execute(select(p.round_key, p.gate, p.call_id).where(p.run_id == run_id))}
        for round_key, gate in conn.execute(select(gates.c.round_key, gates.c.gate).where(gates.c.run_id == run_id)):
            role = gate_role(gate)
            if round_key in done or role is None:
                continue
            rows = conn.execute(
                select(store_schema.model_calls)
                .where((m.run_id == run_id) & (m.role == role) & (m.sample_key == _call_key(round_key, role)))
                .order_by(m.id)
            ).mappings()
            fresh = [
                {
                    "run_id": run_id,
                    "call_id": row["id"],
                    "round_key": round_key,
                    "gate": gate,
                    "row": json.dumps(dict(row), ensure_ascii=False),
                }
                for row in rows
                if (round_key, gate, row["id"]) not in kept
            ]
            if fresh:
                conn.execute(insert(parked), fresh)
                count += len(fresh)
    return count


def _drop_parked(conn: Connection, run_id: str, finished: set[str]) -> None:
    """Delete the parked copies of finished rounds (their calls are in the log; they never run again)."""
    p = parked.c
    rounds = set(conn.execute(select(p.round_key).where(p.run_id == run_id).distinct()).scalars())
    stale = sorted(rounds & finished)
    if stale:
        conn.execute(delete(parked).where((p.run_id == run_id) & p.round_key.in_(stale)))


def parked_calls(engine: Engine, run_id: str) -> dict[str, dict[str, int]]:
    """How many calls are parked per round and gate (for tests and inspection)."""
    ensure_table(engine)
    p = parked.c
    found: dict[str, dict[str, int]] = {}
    with engine.connect() as conn:
        for round_key, gate in conn.execute(select(p.round_key, p.gate).where(p.run_id == run_id)):
            by_gate = found.setdefault(round_key, {})
            by_gate[gate] = by_gate.get(gate, 0) + 1
    return found


def run_gate_records(engine: Engine, run_id: str) -> dict[str, dict[str, dict[str, Any]]]:
    """Every gate record of a run: round -> gate -> record (finished and unfinished rounds alike)."""
    ensure_table(engine)
    c = gates.c
    found: dict[str, dict[str, dict[str, Any]]] = {}
    with engine.connect() as conn:
        for round_key, gate, record in conn.execute(
            select(c.round_key, c.gate, c.record).where(c.run_id == run_id).order_by(c.round_key, c.created_at)
        ):
            found.setdefault(round_key, {})[gate] = json.loads(record)
    return found
