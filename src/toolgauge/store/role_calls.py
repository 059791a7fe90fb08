"""One role's model-call totals in a run (``Store.call_stats_by_role``), kept free of SQLAlchemy to import."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RoleCalls:
    """One role's model calls in a run: how many, their tokens and their summed latency (seconds).

    Cached calls count, with their tokens.
    """

    calls: int
    input_tokens: int
    output_tokens: int
    model_seconds: float


NO_CALLS = RoleCalls(calls=0, input_tokens=0, output_tokens=0, model_seconds=0.0)
