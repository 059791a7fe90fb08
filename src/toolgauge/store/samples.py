"""The samples table: one row per finished (or failed) sample of a run, read back for resume and scoring."""

from __future__ import annotations

import json
import time
from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import SQLAlchemyError

from toolgauge.store import schema
from toolgauge.store.access import StorePart

# Sample keys per ``IN (...)`` query: well under SQLite's bound-parameter limit.
READ_CHUNK = 500


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


def sample_row(
    run_id: str, sample_key: str, *, result: Mapping[str, Any] | None, error: str | None, latency_s: float
) -> dict[str, Any]:
    """The samples-table row of one finished sample (status ``done``, or ``error`` when it has an error)."""
    return {
        "run_id": run_id,
        "sample_key": sample_key,
        "status": "error" if error else "done",
        "result": json.dumps(result) if result is not None else None,
        "error": error,  # this and the result are masked on their way to the database (the store's masker)
        "latency_s": latency_s,
        "finished_at": time.time(),
    }


class Samples(StorePart):
    """Reads a run's stored samples and deletes failed ones; every read comes after the store's flush."""

    def finished(self, run_id: str) -> dict[str, SampleRecord]:
        """Every stored sample of a run, keyed by sample key."""
        self._flush()
        with self._engine.connect() as conn:
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

    def states(self, run_id: str) -> dict[str, SampleState]:
        """Every stored sample of a run, keyed by sample key, without the results."""
        self._flush()
        c = schema.samples.c
        with self._engine.connect() as conn:
            rows = conn.execute(select(c.sample_key, c.status, c.error, c.latency_s).where(c.run_id == run_id))
            return {key: SampleState(key, status, error, latency) for key, status, error, latency in rows}

    def state(self, run_id: str, sample_key: str) -> SampleState | None:
        """One stored sample of a run without its result, or None."""
        self._flush()
        c = schema.samples.c
        with self._engine.connect() as conn:
            row = conn.execute(
                select(c.status, c.error, c.latency_s).where((c.run_id == run_id) & (c.sample_key == sample_key))
            ).first()
        return None if row is None else SampleState(sample_key, row[0], row[1], row[2])

    def results(
        self, run_id: str, keys: Sequence[str], *, chunk: int = READ_CHUNK
    ) -> Generator[tuple[str, str | None], None, None]:
        """Yield ``(key, stored result as JSON text)`` for each of ``keys``; see ``Store.sample_results``."""
        self._flush()
        c = schema.samples.c
        with self._engine.connect() as conn:
            for start in range(0, len(keys), chunk):
                part = list(keys[start : start + chunk])
                rows = conn.execute(select(c.sample_key, c.result).where((c.run_id == run_id) & c.sample_key.in_(part)))
                found: dict[str, str | None] = {key: text for key, text in rows}
                for key in part:
                    yield key, found.get(key) or None

    def forget(self, run_id: str, keys: list[str]) -> None:
        """Delete stored samples (failed ones about to be re-run on resume)."""
        if not keys:
            return
        self._flush()
        try:
            with self._engine.begin() as conn:
                for start in range(0, len(keys), READ_CHUNK):
                    chunk = keys[start : start + READ_CHUNK]
                    conn.execute(
                        schema.samples.delete().where(
                            (schema.samples.c.run_id == run_id) & (schema.samples.c.sample_key.in_(chunk))
                        )
                    )
        except SQLAlchemyError as exc:
            raise self._write_error(f"forgetting {len(keys)} failed samples of run {run_id}", exc) from exc
