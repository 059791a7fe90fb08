"""A candidate pool through the gates: the ``Benchmark`` behind ``gate verify|screen|solve|check|rescreen``.

Samples are the candidates of a pool (a ``--candidates`` file, or the candidates of a stored run for
``gate rescreen``), keyed by id. The episode runs the gates asked for, cheapest first (verify, then each screen
in order, then the solve) and stops at the first rejection (``all_screens`` runs every screen even after one
rejected, for agreement audits). Its result is a :class:`~toolgauge.benchmarks.toolgate.records.RecordedCandidate`:
the candidate with its gate records and outcome, so a stored pool needs no file to be audited, exported or
rescreened.

:func:`score_records` is the pure scoring: the ``--json`` document (``details["candidates"]`` and
``details["counts"]``), the audit (``details["audit"]``), and the funnel, outcome counts, rejection reasons and
audit figures as metrics. Any stored run whose results carry top-level ``candidate`` and ``outcome`` fields
(``gate run``'s rounds too) is read back by :func:`stored_records`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, get_args

from pydantic import ValidationError

from toolgauge.benchmarks.toolgate.answers import CALLS_PER_SCREEN, derive_seed
from toolgauge.benchmarks.toolgate.audit import AuditReport, audit, audit_metrics
from toolgauge.benchmarks.toolgate.records import (
    OUTCOMES,
    Candidate,
    CandidateOutcome,
    GateReport,
    RecordedCandidate,
    ScreenResult,
    SemanticResult,
    SolveResult,
    VerifyResult,
    decide,
)
from toolgauge.benchmarks.toolgate.screens import ScreenSpec, screen_candidate
from toolgauge.benchmarks.toolgate.verify import DEFAULT_TIME_LIMIT
from toolgauge.records import AssistantTurn
from toolgauge.results import EvalResults, Metric, SampleScore, ScoredRun

if TYPE_CHECKING:
    from toolgauge.benchmarks.toolgate.options import ToolgateOptions
    from toolgauge.engine import EpisodeContext, SampleOutcome
    from toolgauge.store import Store

Gate = Literal["verify", "screens", "solve"]
GATES: tuple[Gate, ...] = get_args(Gate)
PoolCommand = Literal["verify", "screen", "solve", "check", "rescreen"]
SOLVER_ROLE = "solver"
DEFAULT_SOLVER_STEPS = 50
RUN_NAME = "toolgate"


@dataclass(frozen=True)
class PoolSettings:
    """What defines a pool run besides its candidates.

    Attributes:
        command: the ``gate`` command that made it.
        gates: the gates to run, in the fixed order verify, screens, solve.
        screens: the screens, in the order they run.
        solver: the solver's model and options (its ``name`` is not used).
        time_limit: seconds of one solution script (gate 1) and of one whole solve (gate 3).
        fixed_order: screens show the original order (the paper's biased protocol, for audits).
        all_screens: run every screen even after one rejected the candidate.
        seed: the base of reproducible screen seeds (None: fresh seeds, recorded per call).
        solver_steps: the most model calls of one solve.
        domain_checks: after gate 1 passed, run the candidate's domain semantic check when it declares one
            (:mod:`toolgate.semantic`; ``fem``: mesh refinement).
    """

    command: PoolCommand
    gates: tuple[Gate, ...]
    screens: tuple[ScreenSpec, ...] = ()
    solver: ScreenSpec | None = None
    time_limit: float = DEFAULT_TIME_LIMIT
    fixed_order: bool = False
    all_screens: bool = False
    seed: int | None = None
    solver_steps: int = DEFAULT_SOLVER_STEPS
    domain_checks: bool = False

    def __post_init__(self) -> None:
        unknown = [g for g in self.gates if g not in GATES]
        if unknown or not self.gates:
            raise ValueError(f"gates must be some of {', '.join(GATES)}, got {list(self.gates)}")
        if "screens" in self.gates and not self.screens:
            raise ValueError("the screen gate needs at least one screen")
        if "solve" in self.gates and self.solver is None:
            raise ValueError("the solve gate needs a solver")

    def config(self) -> dict[str, Any]:
        """The settings as the run's results show them (models with passwords masked)."""
        return {
            "command": self.command,
            "gates": [g for g in GATES if g in self.gates],
            "screens": [s.record() for s in self.screens] if "screens" in self.gates else [],
            "solver": self.solver.settings() if self.solver is not None and "solve" in self.gates else None,
            "time_limit": self.time_limit,
            "fixed_order": self.fixed_order,
            "all_screens": self.all_screens,
            "seed": self.seed,
            "solver_steps": self.solver_steps,
            # Only when on: runs without domain checks keep the results they always had.
            **({"domain_checks": True} if self.domain_checks and "verify" in self.gates else {}),
        }


@dataclass
class PoolBenchmark:
    """Runs the asked gates on each candidate of a pool (see the module docstring).

    ``pairs`` are (sample key, candidate): the candidate's id for a file; ``id~2``... for a repeated id of a
    stored run; a None candidate in a benchmark rebuilt only to score stored results (its episode must not run).
    ``options``: the options it was built from (:mod:`.build`; ``settings`` are made from them), stored as its
    config.
    """

    settings: PoolSettings
    source: str
    pairs: Sequence[tuple[str, Candidate | None]]
    options: ToolgateOptions
    domain: str | None = None
    source_run: str | None = None
    name: str = RUN_NAME
    result_type: type[RecordedCandidate] = field(default=RecordedCandidate)

    @classmethod
    def of(cls, candidates: Iterable[Candidate], settings: PoolSettings, **kwargs: Any) -> PoolBenchmark:
        """A pool keyed by candidate id (ids are unique in a loaded file)."""
        return cls(settings=settings, pairs=[(c.id, c) for c in candidates], **kwargs)

    def samples(self) -> list[tuple[str, Candidate | None]]:
        """The (key, candidate) pairs in pool order."""
        return list(self.pairs)

    async def episode(self, sample: Candidate | None, ctx: EpisodeContext) -> RecordedCandidate:
        """Run the gates asked for on one candidate, cheapest first, stopping at the first rejection."""
        from toolgauge.benchmarks.toolgate.solve import solve_candidate
        from toolgauge.benchmarks.toolgate.verify import verify_candidate

        if sample is None:
            raise RuntimeError("this pool benchmark was rebuilt for scoring only; it has no candidates to run")
        s = self.settings
        verify: VerifyResult | None = None
        semantic: SemanticResult | None = None
        screens: list[ScreenResult] | None = None
        solve: SolveResult | None = None

        def recorded() -> RecordedCandidate:
            outcome = decide(sample.id, verify=verify, screens=screens, solve=solve, semantic=semantic)
            return RecordedCandidate(candidate=sample, outcome=outcome)

        if "verify" in s.gates:
            verify = await verify_candidate(sample, time_limit=s.time_limit)
            if not verify.passed:
                return recorded()
            if s.domain_checks:
                semantic = await _domain_check(sample, verify, s.time_limit)
                if semantic is not None and not semantic.passed:
                    return recorded()
        if "screens" in s.gates:
            screens = []
            for screen in s.screens:
                seeds = None
                if s.seed is not None:
                    seeds = [derive_seed(s.seed, sample.id, screen.name, i) for i in range(CALLS_PER_SCREEN)]
                result = await screen_candidate(
                    ctx, sample, screen, role=screen.role, seeds=seeds, fixed_order=s.fixed_order
                )
                screens.append(result)
                if not result.passed and not s.all_screens:
                    return recorded()
            if not all(r.passed for r in screens):
                return recorded()
        if "solve" in s.gates:
            assert s.solver is not None  # PoolSettings checks it
            solve = await solve_candidate(
                ctx,
                sample,
                time_limit=s.time_limit,
                role=SOLVER_ROLE,
                options=s.solver.options(),
                max_steps=s.solver_steps,
            )
        return recorded()

    def score(
        self,
        samples: Sequence[tuple[str, Candidate | None]],
        outcomes: Sequence[SampleOutcome[RecordedCandidate]],
    ) -> ScoredRun:
        """The funnel, counts, reasons and audits of the pool (pure; see :func:`score_records`).

        A sample that never ran (a run stopped early) counts as one without a verdict (``not run``).
        """
        from toolgauge.engine import in_step

        settings = {"candidates": self.source, **self.settings.config()}
        if self.source_run is not None:
            settings["source_run"] = self.source_run
        rows: list[StoredOutcome] = [
            (key, o.result, o.error) if o is not None else (key, None, "not run")
            for key, _, o in in_step(samples, outcomes)
        ]
        return score_records(self.name, settings, rows)

    def replay_table(self, path: Path) -> Mapping[str, Sequence[AssistantTurn]]:
        """A pool run has no recorded outputs to replay (its screens and solver are roles)."""
        return {}


async def _domain_check(candidate: Candidate, verify: VerifyResult, time_limit: float) -> SemanticResult | None:
    """The candidate's domain semantic check, when its domain has a folder that declares one."""
    from toolgauge.benchmarks.toolgate.domains import domain_names, get_domain
    from toolgauge.benchmarks.toolgate.semantic import semantic_check_candidate

    if candidate.domain not in domain_names():
        return None
    return await semantic_check_candidate(candidate, verify, get_domain(candidate.domain), time_limit=time_limit)


# --- scoring ---------------------------------------------------------------------------------------------

StoredOutcome = tuple[str, RecordedCandidate | None, str | None]  # key, result, error


def gate_document(candidates: Iterable[CandidateOutcome], errors: int = 0) -> dict[str, Any]:
    """The ``--json`` document of a gate command: ``{"candidates": [...], "counts": {...}}``.

    ``counts`` has ``total`` (candidates with a verdict), one count per outcome, ``rejected_by_<gate>``, and
    ``errors``: candidates whose episode failed (a model or the sandbox failed for good), which have no verdict
    and are not listed.
    """
    report = GateReport.of(candidates)
    return {**report.to_json(), "counts": {**report.counts, "errors": errors}}


def document_of(results: EvalResults) -> dict[str, Any]:
    """The ``--json`` document from a pool run's results (empty when the run kept no scores)."""
    counts = results.details.get("counts")
    if counts is None:
        errors = results.run.sample_errors if results.run is not None else 0
        return gate_document([], errors)
    return {"candidates": list(results.details.get("candidates", [])), "counts": dict(counts)}


def _sample_score(
    key: str, record: RecordedCandidate | None, error: str | None, solve_gate: bool = False
) -> SampleScore:
    if record is None:
        return SampleScore(id=key, sample=key, error=error or "no result", explanation="no verdict")
    outcome = record.outcome
    gates = outcome.gates
    scores: dict[str, float | int | bool | str | None] = {
        "outcome": outcome.outcome,
        "rejected_by": outcome.rejected_by,
        "reason": outcome.reason,
    }
    if gates.verify is not None:
        scores["verified"] = gates.verify.passed
    for screen in gates.screens or ():
        scores[f"screen:{screen.screen}"] = screen.correct
    if gates.solve is not None:
        scores["solved"] = gates.solve.solved
    # The overall rates as means over the candidates with a verdict (acceptance only when the solve gate ran).
    scores["survival_rate"] = 0.0 if outcome.outcome == "rejected" else 1.0
    if solve_gate:
        scores["acceptance_rate"] = 1.0 if outcome.outcome == "accepted" else 0.0
    explanation = outcome.outcome if outcome.reason is None else f"{outcome.outcome}: {outcome.reason}"
    metadata = outcome.to_json()
    metadata["topic"] = record.candidate.topic if record.candidate is not None else None
    # The candidate itself: the viewer's audit tables (toolgate.views) are computed from the units.
    metadata["candidate"] = record.candidate.model_dump(mode="json") if record.candidate is not None else None
    return SampleScore(
        id=key,
        sample=key,
        value=1.0 if outcome.outcome in ("accepted", "passed") else 0.0,
        scores=scores,
        explanation=explanation,
        error=error,
        metadata=metadata,
    )


def score_records(benchmark: str, settings: dict[str, Any], outcomes: Sequence[StoredOutcome]) -> ScoredRun:
    """Score recorded candidates (pure): the ``--json`` document, the audit, and the metrics.

    Metrics (overall, counts): ``attempts`` (candidates with a verdict), ``accepted``, ``rejected``, ``flagged``,
    ``passed``, ``errors`` (no verdict); rates over ``attempts``: ``survival_rate`` (not rejected) and, when the
    solve gate ran, ``acceptance_rate``. ``rejected`` by ``reason`` (group ``"<funnel step> <reason>"``, count,
    ``n`` = candidates that entered the step). Then :func:`~toolgauge.benchmarks.toolgate.audit.audit_metrics`:
    the funnel (``funnel_passed`` by ``funnel``), middle value, duplicates, topics and each screen's letter bias.

    Args:
        benchmark: the run name the results carry.
        settings: the settings the results carry.
        outcomes: (key, recorded candidate or None, error) per sample, in sample order.
    """
    records = [record for _, record, _ in outcomes if record is not None]
    errors = [(key, error or "no result") for key, record, error in outcomes if record is None]
    report = audit(records)
    document = gate_document((r.outcome for r in records), len(errors))
    counts = document["counts"]
    total = counts["total"]
    metrics = [Metric(name="attempts", value=total, n=total, kind="count")]
    metrics += [Metric(name=name, value=counts[name], n=total, kind="count") for name in OUTCOMES]
    metrics.append(Metric(name="errors", value=len(errors), n=total + len(errors), kind="count"))
    metrics.append(Metric(name="survival_rate", value=(total - counts["rejected"]) / total if total else None, n=total))
    if "solve" in settings.get("gates", ()):
        metrics.append(Metric(name="acceptance_rate", value=counts["accepted"] / total if total else None, n=total))
    for step in report.funnel.steps:
        for reason, count in step.rejected.items():
            metrics.append(
                Metric(name="rejected", value=count, group=f"{step.name} {reason}", by="reason", n=step.entered,
                       kind="count")
            )  # fmt: skip
    metrics += audit_metrics(report)
    warnings = []
    if errors:
        warnings.append(
            f"{len(errors)} candidates have no verdict (their episode failed; resume the run to try them again); "
            f"first ({errors[0][0]}): {errors[0][1]}"
        )
    results = EvalResults(
        benchmark=benchmark,
        settings=settings,
        metrics=metrics,
        details={
            "candidates": document["candidates"],
            "counts": counts,
            "audit": report.model_dump(mode="json"),
            "errors": [{"id": key, "error": error} for key, error in errors],
        },
        warnings=warnings,
    )
    rows = list(outcomes)
    solve_gate = "solve" in settings.get("gates", ())
    return ScoredRun(results, lambda: (_sample_score(key, record, error, solve_gate) for key, record, error in rows))


def audit_of(results: EvalResults) -> AuditReport | None:
    """The audit a pool run's results carry (None when they carry none)."""
    data = results.details.get("audit")
    if not isinstance(data, dict):
        return None
    try:
        return AuditReport.model_validate(data)
    except ValidationError:
        return None


# --- stored runs ---------------------------------------------------------------------------------------------

_DIGITS = re.compile(r"(\d+)")


def natural_key(text: str) -> list[Any]:
    """Sort key that orders ``round-2`` before ``round-10``."""
    return [(0, int(part), "") if part.isdigit() else (1, 0, part) for part in _DIGITS.split(text)]


@dataclass
class StoredPool:
    """The recorded candidates of a stored run, in key order, and the samples without a record."""

    run_id: str
    benchmark: str
    records: list[tuple[str, RecordedCandidate]]
    errors: list[tuple[str, str]]
    domain: str | None = None  # the run's own domain (``gate run``; a pool run's --domain), None when mixed

    def domain_of(self, record: RecordedCandidate) -> str | None:
        """A record's domain: its candidate's; for a malformed proposal, the run's (else what it claimed)."""
        if record.candidate is not None:
            return record.candidate.domain
        if self.domain is not None:
            return self.domain
        claimed = record.raw.get("domain") if isinstance(record.raw, dict) else None
        return claimed if isinstance(claimed, str) else None

    def of_domain(self, domain: str | None) -> StoredPool:
        """Only the records of ``domain`` (all when None).

        Samples without a record stay only when the whole run is of that domain (their candidate is unknown).
        """
        if domain is None:
            return self
        return StoredPool(
            run_id=self.run_id,
            benchmark=self.benchmark,
            records=[(key, r) for key, r in self.records if self.domain_of(r) == domain],
            errors=self.errors if self.domain == domain else [],
            domain=domain,
        )

    def outcomes(self) -> list[StoredOutcome]:
        """Every sample as (key, record or None, error), in key order."""
        found: dict[str, StoredOutcome] = {key: (key, record, None) for key, record in self.records}
        found.update({key: (key, None, error) for key, error in self.errors})
        return [found[key] for key in sorted(found, key=natural_key)]


def stored_records(store: Store, run_id: str) -> StoredPool:
    """Read a stored run's recorded candidates (results with top-level ``candidate`` and ``outcome``).

    Samples that finished with an error are listed in ``errors``; results of another shape (a ``gate run`` round
    that recorded no candidate) are skipped.
    """
    run = store.get_run(run_id)
    benchmark = run.benchmark if run is not None else ""
    states = store.sample_states(run_id)
    keys = sorted(states, key=natural_key)
    done = [key for key in keys if states[key].status == "done"]
    records: list[tuple[str, RecordedCandidate]] = []
    for key, text in store.sample_results(run_id, done):
        if text is None:
            continue
        data = json.loads(text)
        if not isinstance(data, dict) or "outcome" not in data or "candidate" not in data:
            continue
        records.append((key, RecordedCandidate.model_validate(data)))
    errors = [(key, states[key].error or "not finished") for key in keys if states[key].status != "done"]
    domain = run.config.get("domain") if run is not None else None
    return StoredPool(
        run_id=run_id,
        benchmark=benchmark,
        records=records,
        errors=errors,
        domain=domain if isinstance(domain, str) else None,
    )


def unique_keys(records: Iterable[RecordedCandidate]) -> Iterator[tuple[str, RecordedCandidate]]:
    """Key each record by its candidate's id (``id~2``, ``id~3``... for an id seen before)."""
    seen: dict[str, int] = {}
    for record in records:
        base = record.outcome.id
        seen[base] = seen.get(base, 0) + 1
        yield (base if seen[base] == 1 else f"{base}~{seen[base]}"), record
