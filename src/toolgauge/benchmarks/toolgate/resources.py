"""Resource use per role (the paper's Table 2): wall time, agent-hours and tokens of the generator, screens, solver.

Wall time comes from the gate records themselves (the generator's episode, each verification, each solve: their
``seconds``), so it is a pure function of a run's verdicts. Tokens and model time come from the store's call log
(``model_calls``, one row per model call with its role: ``generator``, ``screen:<name>``, ``solver``), read by
:func:`role_usage`. "Agent-hours", as in the paper, are the agents' wall-clock totals (generator and solver
episodes) in hours; local verification uses local compute only and no-tool screens are direct calls.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from toolgauge.benchmarks.toolgate.records import RecordedCandidate
from toolgauge.store import RoleCalls

if TYPE_CHECKING:
    from toolgauge.store import Store

GENERATOR = "generator"
VERIFY = "verify"
SOLVER = "solver"
# Roles whose episodes are agents (a workspace and tools): their wall time is agent time.
AGENT_ROLES = frozenset({GENERATOR, SOLVER})


@dataclass
class RoleResources:
    """One role's resource use: episodes (items it worked on), their wall time, and its model calls."""

    role: str
    episodes: int = 0
    wall_seconds: float | None = None
    usage: RoleCalls | None = None

    @property
    def agent_hours(self) -> float | None:
        """The wall time in hours, for agent roles (None for the others)."""
        if self.role not in AGENT_ROLES or self.wall_seconds is None:
            return None
        return self.wall_seconds / 3600


def role_usage(store: Store, run_id: str) -> dict[str, RoleCalls]:
    """Each role's model calls in a stored run, from the call log (a cached call counts, with its tokens)."""
    return store.call_stats_by_role(run_id)


def role_resources(
    records: Iterable[RecordedCandidate],
    generator_seconds: Iterable[float] = (),
    usage: Mapping[str, RoleCalls] | None = None,
) -> list[RoleResources]:
    """Resource use per role, in pipeline order: generator, verify, each screen (first-seen order), solver.

    Args:
        records: the run's recorded candidates (their gate records carry verification and solve seconds).
        generator_seconds: the generator episodes' wall times (a ``gate run``'s rounds), one per round.
        usage: the run's model calls per role (:func:`role_usage`), when the store is at hand.

    A role with no episode and no call is left out. A screen's wall time is not recorded (its three calls are
    direct API calls): it has its calls' summed latency in ``usage`` only.
    """
    usage = usage or {}
    generator = list(generator_seconds)
    out: list[RoleResources] = []
    if generator or GENERATOR in usage:
        out.append(RoleResources(GENERATOR, len(generator), sum(generator) if generator else None,
                                 usage.get(GENERATOR)))  # fmt: skip
    verify_seconds: list[float] = []
    screens: dict[str, int] = {}
    solve_seconds: list[float] = []
    for record in records:
        gates = record.outcome.gates
        if gates.verify is not None:
            verify_seconds.append(gates.verify.seconds or 0.0)
        for screen in gates.screens or ():
            screens[screen.screen] = screens.get(screen.screen, 0) + 1
        if gates.solve is not None:
            solve_seconds.append(gates.solve.seconds or 0.0)
    if verify_seconds:
        out.append(RoleResources(VERIFY, len(verify_seconds), sum(verify_seconds)))
    for name, count in screens.items():
        out.append(RoleResources(f"screen:{name}", count, None, usage.get(f"screen:{name}")))
    if solve_seconds or SOLVER in usage:
        out.append(RoleResources(SOLVER, len(solve_seconds), sum(solve_seconds) if solve_seconds else None,
                                 usage.get(SOLVER)))  # fmt: skip
    return out
