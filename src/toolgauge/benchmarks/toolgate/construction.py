"""The construction loop (``gate run``) as a benchmark: one sample per round, one round per episode.

A round: the generator (:mod:`.generator`) proposes a candidate; a malformed one is rejected (``format``,
``malformed``); then the gates run cheapest first and the first rejection stops the round:

1. local verification (``verify``: :func:`toolgauge.benchmarks.toolgate.verify.verify_candidate`);
2. each no-tool screen in the order given (``screen:<name>``: ``screens.screen_candidate``), three calls each
   with permutation seeds derived from (run, candidate, screen, call);
3. the tool-enabled solve (``solve``: ``solve.solve_candidate``).

The engine runs the rounds (concurrency, retries, the response cache, resume: a finished round is never run
again) and logs every model call with its role (``generator``, ``screen:<name>``, ``solver``). Each gate's record
is committed to the store the moment it finishes, as a named step of the round's sample
(``EpisodeContext.save_step``), so a round interrupted after gate 1 resumes at the screens: no finished gate runs
twice, and the calls of the gates it reuses stay in its transcript. The round's result (:class:`RoundResult`)
holds the candidate, every gate record and the outcome with its reason.

The generator's prompt sees the records of the rounds finished before it starts: those of this process (in
completion order) after those of earlier sessions of the same run (``history``, read from the store on
``--resume``). Nothing post hoc (rescreens, audits) ever enters it.

``score`` is pure: the funnel (attempts -> verified -> passed each screen -> solved -> unique) with the
reason counts of each step, and the outcome counts.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, ValidationError, model_serializer

from toolgauge.benchmark import lazy
from toolgauge.benchmarks.toolgate.answers import CALLS_PER_SCREEN, derive_seed
from toolgauge.benchmarks.toolgate.audit import audit, funnel_metrics, rejection_metrics
from toolgauge.benchmarks.toolgate.generator import ROLE as GENERATOR_ROLE
from toolgauge.benchmarks.toolgate.generator import (
    GeneratorReport,
    Proposal,
    generator_messages,
    run_generator,
)
from toolgauge.benchmarks.toolgate.options import GateRunOptions
from toolgauge.benchmarks.toolgate.protocol import DEFAULT_SOLVER_STEPS
from toolgauge.benchmarks.toolgate.records import (
    Candidate,
    CandidateOutcome,
    RecordedCandidate,
    ScreenResult,
    SolveResult,
    VerifyResult,
    decide,
    outcome_counts,
)
from toolgauge.benchmarks.toolgate.verify import verify_candidate
from toolgauge.errors import UsageError
from toolgauge.records import AssistantTurn, GenerateOptions
from toolgauge.results import EvalResults, Metric, SampleScore, ScoredRun

if TYPE_CHECKING:
    from toolgauge.benchmarks.toolgate.domains import Domain
    from toolgauge.engine import EpisodeContext, SampleOutcome
    from toolgauge.store import Store

RUN_NAME = "toolgate-run"
KIND = "construction"  # config["kind"]; the pool commands' runs have "pool"
SOLVER_ROLE = "solver"
PROPOSAL = "proposal"
VERIFY = "verify"
SOLVE = "solve"
DEFAULT_MAX_TOKENS = 4096
COUNTED = ("accepted", "flagged", "rejected", "rejected_by_format", "rejected_by_verify", "rejected_by_screen")

M = TypeVar("M", bound=BaseModel)


def round_key(index: int) -> str:
    """The sample key of round ``index`` (1-based): ``round-0001``."""
    return f"round-{index:04d}"


def screen_role(name: str) -> str:
    """The engine role (and gate name) of the screen called ``name``: ``screen:<name>``."""
    return f"screen:{name}"


# --- the gates, injectable --------------------------------------------------------------------------------


class ScreenLike(Protocol):
    """What the loop needs of a screen (``screens.ScreenSpec``): its name (the rest goes to ``screen_candidate``)."""

    @property
    def name(self) -> str:
        """The screen's name: its role is ``screen:<name>``."""
        ...


class VerifyGate(Protocol):
    """Gate 1: ``verify_candidate(candidate, *, time_limit)``."""

    def __call__(self, candidate: Candidate, *, time_limit: float) -> Awaitable[VerifyResult]:
        """Run the candidate's solution and judge its answer."""
        ...


class ScreenGate(Protocol):
    """Gate 2 under one screen: ``screen_candidate(ctx, candidate, screen, *, role, seeds=None, fixed_order=False)``."""

    def __call__(
        self, ctx: EpisodeContext, candidate: Candidate, screen: Any, *, role: str, seeds: Sequence[int] | None = None
    ) -> Awaitable[ScreenResult]:
        """Make the screen's three calls and decide."""
        ...


class SolveGate(Protocol):
    """Gate 3: ``solve_candidate(ctx, candidate, *, time_limit, role="solver", max_steps)``."""

    def __call__(
        self, ctx: EpisodeContext, candidate: Candidate, *, time_limit: float, role: str, max_steps: int
    ) -> Awaitable[SolveResult]:
        """Let the tool-enabled solver work on the candidate."""
        ...


@dataclass(frozen=True)
class GateFunctions:
    """The three gates a round calls (tests inject fakes; :func:`real_gates` gives the real ones)."""

    verify: VerifyGate
    screen: ScreenGate
    solve: SolveGate


def real_gates() -> GateFunctions:
    """Gate 1 in the sandbox, ``screens.screen_candidate`` and ``solve.solve_candidate`` (imported when called)."""
    return GateFunctions(
        verify=verify_candidate,
        screen=lazy("toolgauge.benchmarks.toolgate.screens", "screen_candidate"),
        solve=lazy("toolgauge.benchmarks.toolgate.solve", "solve_candidate"),
    )


def _no_gate(*args: Any, **kwargs: Any) -> Any:
    raise UsageError("this construction run was rebuilt to be scored again: it runs no gate")


NO_GATES = GateFunctions(verify=_no_gate, screen=_no_gate, solve=_no_gate)


class StoredScreen(BaseModel):
    """A screen as a stored run's config holds it (name, spec and options), for scoring it again."""

    model_config = ConfigDict(extra="allow", frozen=True)

    name: str


# --- a round's record -------------------------------------------------------------------------------------


class RoundResult(BaseModel):
    """One round of the loop: the proposal, every gate record, and the outcome with its reason.

    Attributes:
        round: the round's key (``round-0003``).
        candidate_id: the id the harness gave the candidate (``<domain>-<run id>-<round number>``).
        candidate: the candidate, None when the proposal was malformed.
        outcome: what the gates decided (``outcome.gates`` holds every record; ``reason``/``detail`` why).
        raw: for a malformed proposal, the files the generator left.
        generator: how the generator's episode went.
        reused: gates whose record was read back from the store (they had finished before an interruption)
            instead of being run again; ``proposal`` when the generator was not asked again.
    """

    round: str
    candidate_id: str
    candidate: Candidate | None = None
    outcome: CandidateOutcome
    raw: dict[str, Any] | None = None
    generator: GeneratorReport = Field(default_factory=GeneratorReport)
    reused: list[str] = Field(default_factory=list)

    def recorded(self) -> RecordedCandidate:
        """The input of the audits and the funnel."""
        return RecordedCandidate(candidate=self.candidate, outcome=self.outcome, raw=self.raw)


def prepare_resume(store: Store, run_id: str) -> list[RoundResult]:
    """Get a stored ``gate run`` ready to resume; returns its finished rounds (the ``history`` the benchmark takes).

    The unfinished rounds' finished gates need nothing here: they are the rounds' saved steps, which the engine
    keeps with their model calls (``EpisodeContext.checkpoint``). Call it before resuming, with the store of the
    run (``gate run --resume`` does).
    """
    return stored_rounds(store, run_id)


def stored_rounds(store: Store, run_id: str) -> list[RoundResult]:
    """The finished rounds of a stored ``gate run``, in round order (what ``--resume`` feeds the generator)."""
    rounds: list[RoundResult] = []
    for _key, record in sorted(store.finished_samples(run_id).items(), key=lambda item: (len(item[0]), item[0])):
        if record.status != "done" or record.result is None:
            continue
        try:
            rounds.append(RoundResult.model_validate(record.result))
        except ValidationError:
            continue  # not a round this toolgauge can read: the engine runs it again
    return rounds


# --- the benchmark ----------------------------------------------------------------------------------------


def _screen_config(screen: ScreenLike) -> dict[str, Any]:
    if isinstance(screen, BaseModel):
        return dict(screen.model_dump(mode="json"))
    return {"name": screen.name}


class StoredGateRun(GateRunOptions):
    """A gate run's options as its config stores them (kept from before the options model, so older runs resume).

    ``kind`` and ``command`` mark it a gate run (``build.migrate_toolgate_config`` reads it into ``ToolgateOptions``
    under ``run``); ``solver_steps`` is kept only when it is not the default.
    """

    kind: Literal["construction"] = "construction"
    command: Literal["run"] = "run"

    @model_serializer(mode="wrap")
    def _stored_shape(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        steps = data.pop("solver_steps")
        return {"kind": data.pop("kind"), "command": data.pop("command"), **data,
                **({"solver_steps": steps} if steps != DEFAULT_SOLVER_STEPS else {})}  # fmt: skip


class ConstructionBenchmark:
    """``gate run``: ``options.rounds`` rounds of generator -> candidate -> gate 1 -> each screen -> solve.

    Args:
        options: what defines the run (its model specs are shown and stored with any password masked; the
            generator's ``max_tokens`` is :data:`DEFAULT_MAX_TOKENS` when not given).
        domain: the domain of ``options.domain`` (its guide and seed items go into the generator's prompt).
        screens: the screens of ``options.screens``, in the order they run (names must be distinct).
        history: rounds of this run finished in earlier sessions (``--resume``), oldest first.
        gates: the gate functions (default :func:`real_gates`).
    """

    name = RUN_NAME
    result_type = RoundResult

    def __init__(
        self,
        options: GateRunOptions,
        *,
        domain: Domain,
        screens: Sequence[ScreenLike],
        history: Sequence[RoundResult] = (),
        gates: GateFunctions | None = None,
    ):
        from toolgauge.models.spec import display_spec

        names = [s.name for s in screens]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise UsageError(f"two screens are called {repeated[0]!r}: give each screen its own name")
        self.domain = domain
        self.rounds = options.rounds
        self.generator = display_spec(options.generator)
        self.screens = list(screens)
        self.solver = display_spec(options.solver)
        self.time_limit = float(options.time_limit)
        self.generator_steps = options.generator_steps
        self.solver_steps = options.solver_steps
        self.prompt_seeds = options.prompt_seeds
        max_tokens = DEFAULT_MAX_TOKENS if options.max_tokens is None else options.max_tokens
        self.generator_options = GenerateOptions(temperature=options.temperature, max_tokens=max_tokens)
        self.gates = gates or real_gates()
        self.guide = domain.guide()
        seeds = domain.seeds()
        self.seeds = seeds if options.prompt_seeds is None else seeds[: options.prompt_seeds]
        self.versions = domain.versions()
        # What later prompts see: earlier sessions' rounds, then this session's in completion order.
        self.history: list[RecordedCandidate] = [r.recorded() for r in history]

    def samples(self) -> list[tuple[str, int]]:
        """``round-0001`` .. ``round-<rounds>``."""
        return [(round_key(i), i) for i in range(1, self.rounds + 1)]

    @property
    def options(self) -> StoredGateRun:
        """What defines the run, as stored (a ``--resume`` must give the same); checked when the run was made."""
        return StoredGateRun.model_construct(
            domain=self.domain.name, rounds=self.rounds, generator=self.generator,
            screens=tuple(_screen_config(s) for s in self.screens), solver=self.solver, time_limit=self.time_limit,
            generator_steps=self.generator_steps, solver_steps=self.solver_steps, prompt_seeds=self.prompt_seeds,
            temperature=self.generator_options.temperature or 0.0, max_tokens=self.generator_options.max_tokens,
        )  # fmt: skip

    def replay_table(self, path: Path) -> Mapping[str, Sequence[AssistantTurn]]:
        """``gate run`` has no recorded-output mode."""
        raise UsageError("gate run cannot replay recorded outputs")

    # -- one round ---------------------------------------------------------------------------------------

    async def episode(self, index: int, ctx: EpisodeContext) -> RoundResult:
        """Run one round: propose, then verify, screen and solve, each gate's record committed as it finishes."""
        key = ctx.sample_key
        candidate_id = f"{self.domain.name}-{ctx.run_id}-{index:04d}"
        reused: list[str] = []

        async def run_gate(gate: str, model: type[M], run: Callable[[], Awaitable[M]]) -> M:
            # A gate this round finished in an earlier session is reused, with its model calls (the engine keeps
            # them); one saved by another version (its record does not validate) runs again.
            record = await ctx.checkpoint(gate, model.model_validate)
            if record is not None:
                reused.append(gate)
                return record
            record = await run()
            # Committed now, after the gate's calls (kill -9 keeps both), before the next gate starts.
            await ctx.save_step(gate, record.model_dump(mode="json"))
            return record

        async def propose() -> Proposal:
            messages = generator_messages(
                self.domain,
                self.guide,
                self.seeds,
                list(self.history),
                candidate_id=candidate_id,
                max_steps=self.generator_steps,
                time_limit=self.time_limit,
            )
            return await run_generator(
                ctx,
                messages,
                domain=self.domain.name,
                candidate_id=candidate_id,
                time_limit=self.time_limit,
                max_steps=self.generator_steps,
                options=self.generator_options,
                role=GENERATOR_ROLE,
            )

        proposal = await run_gate(PROPOSAL, Proposal, propose)

        def finish(outcome: CandidateOutcome) -> RoundResult:
            result = RoundResult(
                round=key,
                candidate_id=candidate_id,
                candidate=proposal.candidate,
                outcome=outcome,
                raw=proposal.raw,
                generator=proposal.generator,
                reused=reused,
            )
            self.history.append(result.recorded())
            return result

        candidate = proposal.candidate
        if candidate is None:
            return finish(decide(candidate_id, malformed=proposal.problem))
        gates = self.gates
        verify = await run_gate(VERIFY, VerifyResult, lambda: gates.verify(candidate, time_limit=self.time_limit))
        if not verify.passed:
            return finish(decide(candidate_id, verify=verify))
        screens: list[ScreenResult] = []
        for screen in self.screens:
            role = screen_role(screen.name)
            seeds = [derive_seed(ctx.run_id, candidate_id, screen.name, call) for call in range(CALLS_PER_SCREEN)]

            def call_screen(
                screen: ScreenLike = screen, role: str = role, seeds: list[int] = seeds
            ) -> Awaitable[ScreenResult]:
                return gates.screen(ctx, candidate, screen, role=role, seeds=seeds)

            result = await run_gate(role, ScreenResult, call_screen)
            screens.append(result)
            if not result.passed:
                return finish(decide(candidate_id, verify=verify, screens=screens))
        solve = await run_gate(
            SOLVE,
            SolveResult,
            lambda: gates.solve(
                ctx, candidate, time_limit=self.time_limit, role=SOLVER_ROLE, max_steps=self.solver_steps
            ),
        )
        return finish(decide(candidate_id, verify=verify, screens=screens, solve=solve))

    # -- scoring (pure) ----------------------------------------------------------------------------------

    def score(self, samples: Sequence[tuple[str, int]], outcomes: Sequence[SampleOutcome[RoundResult]]) -> ScoredRun:
        """The funnel and the outcome counts over the finished rounds, and the audit of the pool (pure).

        ``details`` holds ``funnel``, ``counts`` and ``audit`` (the whole ``audit.AuditReport``: position bias of
        each screen, middle value, agreement, duplicates, topics, funnel), which the terminal view reads.
        """
        rounds = [o.result for o in outcomes if o.result is not None]
        errors = sum(1 for o in outcomes if o.result is None)
        records = [r.recorded() for r in rounds]
        report = audit(records)
        steps = report.funnel
        counts = outcome_counts(r.outcome for r in rounds)
        attempts = len(rounds)
        metrics = [
            Metric(name="attempts", value=attempts, n=len(samples), kind="count"),
            Metric(name="acceptance_rate", value=counts["accepted"] / attempts if attempts else None, n=attempts),
        ]
        for name in COUNTED:
            metrics.append(Metric(name=name, value=counts[name], n=attempts, kind="count"))
        unique = steps.count("unique")
        metrics.append(Metric(name="unique", value=unique, n=attempts, kind="count"))
        metrics.append(Metric(name="round_errors", value=errors, n=len(samples), kind="count"))
        metrics += funnel_metrics(steps)
        metrics += rejection_metrics(steps, name="funnel_rejected", by="funnel_reason")
        results = EvalResults(
            benchmark=RUN_NAME,
            settings={**self.options.model_dump(mode="json"), "libraries": dict(self.versions)},
            metrics=metrics,
            details={
                "funnel": steps.model_dump(mode="json"),
                "counts": counts,
                "audit": report.model_dump(mode="json"),
            },
        )
        keys = [k for k, _ in samples]

        def rows() -> Iterator[SampleScore]:
            for key, outcome in zip(keys, outcomes, strict=False):
                yield round_score(key, outcome.result, outcome.error)

        return ScoredRun(results, rows)


def round_score(key: str, result: RoundResult | None, error: str | None) -> SampleScore:
    """One round as a ``--samples`` line: ``value`` 1 when accepted; the whole record in ``metadata``."""
    if result is None:
        return SampleScore(id=key, sample=key, value=None, error=error or "not finished")
    outcome = result.outcome
    why = f"{outcome.outcome}" + (f" by {outcome.rejected_by}" if outcome.rejected_by else "")
    if outcome.reason:
        why += f": {outcome.reason}"
    if outcome.detail:
        why += f" ({outcome.detail})"
    return SampleScore(
        id=key,
        sample=result.candidate_id,
        value=1.0 if outcome.outcome == "accepted" else 0.0,
        scores={
            "outcome": outcome.outcome,
            "rejected_by": outcome.rejected_by,
            "reason": outcome.reason,
            "acceptance_rate": 1.0 if outcome.outcome == "accepted" else 0.0,  # the run's rate over its rounds
        },
        explanation=why,
        metadata={
            "candidate": result.candidate.model_dump(mode="json") if result.candidate is not None else None,
            "outcome": outcome.to_json(),
            "raw": result.raw,
            "generator": result.generator.model_dump(mode="json"),
            "reused": list(result.reused),
        },
    )


def rescore_run(options: GateRunOptions) -> ConstructionBenchmark:
    """Rebuild a stored ``gate run`` from its options (its stored config), to score its stored rounds again.

    The rebuilt run runs no gate (``rescore`` through ``toolgate.build.restore``).
    """
    from toolgauge.benchmarks.toolgate.domains import get_domain

    screens = [StoredScreen.model_validate(s) for s in options.screens]
    return ConstructionBenchmark(options, domain=get_domain(options.domain), screens=screens, gates=NO_GATES)
