"""ToolGate's paper tables from stored runs (``toolgauge paper toolgate``; docs/paper.md).

The runs are a chain (the construction run or a ``gate check``, then rescreens and solves on survivors), given in
chain order. Pure functions over their stored verdicts: each run's per-candidate units carry the candidate and its
gate records (pool runs: :func:`~toolgauge.benchmarks.toolgate.protocol.score_records`'s rows; ``gate run``:
:func:`~toolgauge.benchmarks.toolgate.construction.round_score`'s), read back by :func:`unit_records`.

- Table 2: resource use per role (:mod:`.resources`);
- Table 3: cross-family transfer: tool agents (which solver solves what another solved) and no-tool screens
  (agreement of each pair over the candidates both screened);
- Table 4: the post-generation funnel over the chain (:func:`~toolgauge.benchmarks.toolgate.chain.chained_records`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from toolgauge.benchmarks.toolgate.audit import funnel, screen_agreement
from toolgauge.benchmarks.toolgate.chain import chained_records
from toolgauge.benchmarks.toolgate.records import Candidate, CandidateOutcome, RecordedCandidate
from toolgauge.benchmarks.toolgate.resources import role_resources, role_usage
from toolgauge.report.paper_tables import PaperBlock, PaperCell, PaperRow, PaperRun
from toolgauge.results import SampleScore
from toolgauge.store import RoleCalls

if TYPE_CHECKING:
    from toolgauge.store import Store

PAPER = "toolgate"
# Table 4's step names, as the paper words them.
STEP_TITLES = {"verified": "local verification", "solved": "tool-enabled solve", "unique": "exact deduplication"}
RoleCallsOf = Callable[[str], Mapping[str, RoleCalls]]


def paper_blocks(
    runs: Sequence[PaperRun], *, store: Store | None = None, usage: RoleCallsOf | None = None
) -> list[PaperBlock]:
    """Every ToolGate block for ``runs`` (a chain, in chain order).

    Args:
        runs: stored ToolGate runs.
        store: the runs' store (the ``paper`` command passes it): Table 2's tokens come from its call log.
        usage: a run id's model calls per role, in place of ``store``'s; with neither, Table 2 has wall time only.
    """
    if usage is None and store is not None:
        usage = functools.partial(role_usage, store)
    records = {run.id: unit_records(run.scores()) for run in runs}
    return [table4(runs, records), table2(runs, records, usage), table3_tools(runs, records),
            table3_no_tool(runs, records)]  # fmt: skip


def unit_records(units: Sequence[SampleScore]) -> list[RecordedCandidate]:
    """The recorded candidates of a stored run's units (pool runs and ``gate run`` rounds; others skipped)."""
    out: list[RecordedCandidate] = []
    for unit in units:
        meta = unit.metadata
        outcome = meta.get("outcome")
        data = outcome if isinstance(outcome, dict) else meta  # a round nests it; a pool unit is the outcome
        candidate = meta.get("candidate")
        try:
            out.append(
                RecordedCandidate(
                    candidate=Candidate.model_validate(candidate) if isinstance(candidate, dict) else None,
                    outcome=CandidateOutcome.model_validate({k: data[k] for k in CandidateOutcome.model_fields
                                                             if k in data}),
                )
            )  # fmt: skip
        except (ValidationError, KeyError):
            continue
    return out


def _generator_seconds(run: PaperRun) -> list[float]:
    out = []
    for unit in run.scores():
        report = unit.metadata.get("generator")
        if isinstance(report, dict) and isinstance(report.get("seconds"), int | float):
            out.append(float(report["seconds"]))
    return out


# -- Table 4 -----------------------------------------------------------------------------------------------
def table4(runs: Sequence[PaperRun], records: Mapping[str, list[RecordedCandidate]]) -> PaperBlock:
    """Table 4: the post-generation flow over the chain: each step's entered, excluded and remaining counts."""
    joined = chained_records([records[run.id] for run in runs])
    if not joined:
        return PaperBlock(
            paper=PAPER,
            ref="Table 4",
            title="Post-generation audit and final reported pool",
            columns=["Step"],
            missing="no recorded candidate: gate run or gate check ... first",
        )
    found = funnel(joined)
    rows = [PaperRow(label="generated", cells=[PaperCell(value=found.attempts, unit="count"),
                                               PaperCell(value=None, unit="count"),
                                               PaperCell(value=found.attempts, unit="count")])]  # fmt: skip
    for step in found.steps:
        excluded = step.entered - step.passed - step.not_run
        cells = [
            PaperCell(value=step.entered, unit="count"),
            PaperCell(value=excluded, unit="count"),
            PaperCell(value=step.passed + step.not_run, unit="count"),
            PaperCell(value=", ".join(f"{k} {v}" for k, v in step.rejected.items() if v) or None, unit="text"),
        ]
        rows.append(PaperRow(label=STEP_TITLES.get(step.name, step.name), cells=cells))
    rows[0].cells.append(PaperCell(value=None, unit="text"))
    not_run = [STEP_TITLES.get(s.name, s.name) for s in found.steps if s.not_run]
    notes = [
        "Runs joined in the order given: a candidate's screens are every run's, its verification and solve the "
        "last run's that ran them; excluded = the step ran and did not pass (no-tool rows: solved; tool row: "
        "failed); unique = exact duplicate questions removed, as gate export does before release.",
        "Chain: " + " -> ".join(run.id for run in runs),
    ]
    if not_run:
        notes.append("Steps that did not run on every candidate (those go on): " + ", ".join(not_run))
    return PaperBlock(
        paper=PAPER,
        ref="Table 4",
        title="Post-generation audit and final reported pool",
        columns=["Step", "entered", "excluded", "remaining", "why excluded"],
        rows=rows,
        notes=notes,
        chart="funnel",
        data={"steps": {" -> ".join(r.label for r in runs): [("generated", found.attempts)]
                        + [(s.name, s.passed + s.not_run) for s in found.steps]}},
    )  # fmt: skip


# -- Table 2 -----------------------------------------------------------------------------------------------
def table2(
    runs: Sequence[PaperRun], records: Mapping[str, list[RecordedCandidate]], usage: RoleCallsOf | None
) -> PaperBlock:
    """Table 2: per run and role, episodes, wall time, agent-hours, model calls and tokens."""
    rows = []
    for run in runs:
        calls = usage(run.id) if usage is not None else None
        for role in role_resources(records[run.id], _generator_seconds(run), calls):
            used = role.usage
            cells = [
                PaperCell(value=role.episodes, unit="count"),
                PaperCell(value=role.wall_seconds, unit="seconds"),
                PaperCell(value=role.agent_hours, unit="hours"),
                PaperCell(value=used.calls if used else None, unit="count"),
                PaperCell(value=used.input_tokens if used else None, unit="tokens"),
                PaperCell(value=used.output_tokens if used else None, unit="tokens"),
            ]
            rows.append(PaperRow(label=f"{run.label} · {role.role}", cells=cells, run_ids=[run.id]))
    notes = [
        "Wall time: the recorded episodes' totals (generator, each verification, each solve); agent-hours: the "
        "generator's and solver's wall time in hours, as the paper; local verification uses local compute only.",
    ]
    if usage is None:
        notes.append("Calls and tokens come from the store's call log: gate audit RUN... prints them per role.")
    return PaperBlock(
        paper=PAPER,
        ref="Table 2",
        title="Measured resource use per role",
        columns=[
            "Run · role",
            "episodes",
            "wall time",
            "agent-hours",
            "model calls",
            "input tokens",
            "output tokens",
        ],
        rows=rows,
        missing=None if rows else "no gate record: gate run or gate check ... first",
        notes=notes,
    )


# -- Table 3 -----------------------------------------------------------------------------------------------
def solver_label(run: PaperRun) -> str:
    """The tool agent of a run: its solver's model.

    A pool run's ``solver.spec`` (``solver.model`` in a config stored before the options model); a ``gate run``'s
    ``solver``.
    """
    config: Any = run.config
    solver: Any = config.get("solver")
    if isinstance(solver, dict):
        solver = solver.get("spec") or solver.get("model")
    return str(solver) if solver else run.label


def table3_tools(runs: Sequence[PaperRun], records: Mapping[str, list[RecordedCandidate]]) -> PaperBlock:
    """Table 3, tool agents: of the candidates agent A solved and agent B attempted, the share B solved too."""
    solved: dict[str, dict[str, bool]] = {}
    for run in runs:
        mine = solved.setdefault(solver_label(run), {})
        for record in records[run.id]:
            if record.outcome.gates.solve is not None:
                mine[record.outcome.id] = record.outcome.gates.solve.solved
    agents = [name for name, seen in solved.items() if seen]
    rows = []
    for first in agents:
        cells = []
        for second in agents:
            cohort = [cid for cid, ok in solved[first].items() if ok and cid in solved[second]]
            also = sum(1 for cid in cohort if solved[second][cid])
            cells.append(PaperCell(value=also / len(cohort) if cohort else None, n=len(cohort)))
        rows.append(PaperRow(label=first, cells=cells))
    return PaperBlock(
        paper=PAPER,
        ref="Table 3",
        title="Cross-family transfer, tool-enabled: solved by the row's agent, share also solved by the column's",
        columns=["solved by \\ also solved by", *agents],
        rows=rows if len(agents) > 1 else [],
        missing=None if len(agents) > 1 else
        "needs two tool agents on shared candidates: gate solve --run RUN --pool accepted --solver OTHER",
        notes=["n: candidates the row's agent solved that the column's agent attempted; one-way transfer, as the "
               "paper's cohort is selected by the first agent's success."],
        chart="heatmap",
    )  # fmt: skip


def table3_no_tool(runs: Sequence[PaperRun], records: Mapping[str, list[RecordedCandidate]]) -> PaperBlock:
    """Table 3, no-tool: for each pair of screens, how often they agree (both solve or both fail) and the 2x2 counts."""
    joined = chained_records([records[run.id] for run in runs])
    tables = screen_agreement(joined)
    rows = [
        PaperRow(
            label=f"{t.first} / {t.second}",
            cells=[
                PaperCell(value=t.agreement, n=t.n),
                PaperCell(value=t.both_solved, unit="count"),
                PaperCell(value=t.only_first, unit="count"),
                PaperCell(value=t.only_second, unit="count"),
                PaperCell(value=t.neither, unit="count"),
            ],
        )
        for t in tables
    ]
    return PaperBlock(
        paper=PAPER,
        ref="Table 3",
        title="Cross-family transfer, no-tool: agreement of each pair of screens",
        columns=["screens", "agreement", "both solve", "only first solves", "only second solves", "neither"],
        rows=rows,
        missing=None if rows else "needs two screens on shared candidates: gate rescreen RUN --pool verified "
        "--screen OTHER (or --all-screens)",
        notes=["Over the candidates both screens screened; a screen solves a candidate when 2 of its 3 calls are "
               "right (the candidate is then rejected as too easy)."],
        chart="bar",
    )  # fmt: skip
