"""A run's model-call totals: calls, cached calls, tokens and model latency (``toolgauge runs``, the results)."""

from __future__ import annotations

from sqlalchemy import Engine, func, select

from toolgauge.store import schema
from toolgauge.store.role_calls import RoleCalls


def call_stats(engine: Engine, run_id: str) -> dict[str, float]:
    """Return call count, cached count, tokens and latency totals for a run (the caller flushes first)."""
    c = schema.model_calls.c
    with engine.connect() as conn:
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


def call_stats_by_role(engine: Engine, run_id: str) -> dict[str, RoleCalls]:
    """Per role (model, agent, judge, screen, solver...): call count, tokens in and out, latency total.

    Cached calls count, with their tokens (the caller flushes first).
    """
    c = schema.model_calls.c
    query = (
        select(
            c.role,
            func.count(),
            func.coalesce(func.sum(c.input_tokens), 0),
            func.coalesce(func.sum(c.output_tokens), 0),
            func.coalesce(func.sum(c.latency_s), 0.0),
        )
        .where(c.run_id == run_id)
        .group_by(c.role)
    )
    with engine.connect() as conn:
        rows = conn.execute(query).all()
    return {str(role): RoleCalls(int(n), int(i), int(o), float(s)) for role, n, i, o, s in rows}
