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
finishes, before the next gate starts, so a round stopped by Ctrl-C or ``kill -9`` after gate 1 resumes at the
screens. A finished round is the engine's ``samples`` row (its result holds every record again); the gate rows
of a round that never finished are what its resume starts from.
"""

from __future__ import annotations

import json
import time
from typing import Any

from sqlalchemy import Column, Float, MetaData, String, Table, Text, insert, select
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError, OperationalError, ProgrammingError, SQLAlchemyError

from toolgauge.errors import StoreWriteError
from toolgauge.redact import redact

TABLE = "toolgate_gates"

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
