"""The runs table: a run's row (benchmark, model, config, status, results) and how a run is named on the CLI."""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import insert, select, update
from sqlalchemy.exc import SQLAlchemyError

from toolgauge.errors import StoreWriteError, UsageError
from toolgauge.redact import redact, redact_tree
from toolgauge.results import EvalResults
from toolgauge.store import schema
from toolgauge.store.access import StorePart


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


def new_run_id() -> str:
    """Return a sortable, unique run id such as ``20261130-214501-3fa2c1``."""
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(3)


class Runs(StorePart):
    """Reads and writes the runs table (and each run's ``scores`` rows)."""

    def create(self, benchmark: str, model: str, config: Mapping[str, Any], *, run_id: str | None = None) -> str:
        """Insert a new run in status ``running`` and return its id."""
        rid = run_id or new_run_id()
        try:
            with self._engine.begin() as conn:
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

    def set_status(self, run_id: str, status: str, *, n_samples: int | None = None) -> None:
        """Update a run's status; see ``Store.set_run_status``."""
        flush_error: StoreWriteError | None = None
        try:
            self._flush()
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
            with self._engine.begin() as conn:
                conn.execute(update(schema.runs).where(schema.runs.c.id == run_id).values(**values))
        except SQLAlchemyError as exc:
            raise flush_error or self._write_error(f"marking run {run_id} {status}", exc) from exc
        if flush_error is not None:
            raise flush_error

    def save_results(self, run_id: str, results: EvalResults) -> None:
        """Store the run's typed results (secrets masked) and one ``scores`` row per metric value."""
        self._flush()
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
            with self._engine.begin() as conn:
                conn.execute(update(schema.runs).where(schema.runs.c.id == run_id).values(summary=payload))
                conn.execute(schema.scores.delete().where(schema.scores.c.run_id == run_id))
                if rows:
                    conn.execute(insert(schema.scores), rows)
        except SQLAlchemyError as exc:
            raise self._write_error(f"saving the results of run {run_id}", exc) from exc

    def get(self, run_id: str) -> RunInfo | None:
        """Return one run, or None."""
        with self._engine.connect() as conn:
            row = conn.execute(select(schema.runs).where(schema.runs.c.id == run_id)).mappings().first()
        return run_info(row) if row else None

    def newest(self, limit: int) -> list[RunInfo]:
        """Return the most recent runs first."""
        with self._engine.connect() as conn:
            rows = conn.execute(select(schema.runs).order_by(schema.runs.c.created_at.desc()).limit(limit)).mappings()
            return [run_info(r) for r in rows]

    def resolve(self, ref: str) -> str:
        """Return the run id ``ref`` names; see ``Store.resolve_run_id``."""
        ids = schema.runs.c.id
        newest_first = schema.runs.c.created_at.desc()
        with self._engine.connect() as conn:
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


def run_info(row: Any) -> RunInfo:
    """A runs-table row as a ``RunInfo``."""
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
