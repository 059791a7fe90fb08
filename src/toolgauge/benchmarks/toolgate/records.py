"""ToolGate's fixed formats: the candidate, the record of each gate, and a candidate's outcome.

Everything here is plain data (pydantic), serialised as issue 10 fixes it:

- :class:`Candidate` is one JSONL line of a pool and what ``gate export`` writes.
- :class:`VerifyResult`, :class:`ScreenResult` (with its :class:`ScreenCall` list) and :class:`SolveResult`
  are the gate records (:class:`GateRecord`); each carries ``reason`` as a bare name from the lists below, exactly
  when the gate did not pass, and a separate free-text ``detail``.
- :class:`CandidateOutcome` is one entry of ``--json`` (``{"id", "outcome", "rejected_by", "gates"}``) and
  :class:`GateReport` the whole document (``{"candidates": [...], "counts": {...}}``).

A letter (``selected``, ``chosen``, ``answer``) is always in the candidate's own option order unless its
name says ``displayed``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Self, get_args

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

Letter = Literal["A", "B", "C", "D"]
LETTERS: tuple[Letter, ...] = ("A", "B", "C", "D")
N_OPTIONS = len(LETTERS)

# The bare reason names. A reason is one of these; anything else goes into ``detail``.
VerifyReason = Literal[
    "timeout", "crashed", "no_answer", "several_answers", "no_matching_option", "ambiguous_option", "mismatch"
]
ScreenReason = Literal["too_easy"]
ScreenCallReason = Literal["unparsable"]
SolveReason = Literal["wrong_answer", "no_answer", "timeout"]
FormatReason = Literal["malformed"]
# A domain's semantic check after gate 1 (toolgate.semantic) failed: the candidate is rejected by ``verify``.
SemanticReason = Literal["semantic_check"]
Reason = VerifyReason | ScreenReason | SolveReason | FormatReason | SemanticReason

VERIFY_REASONS: tuple[str, ...] = get_args(VerifyReason)
SOLVE_REASONS: tuple[str, ...] = get_args(SolveReason)

Outcome = Literal["accepted", "rejected", "flagged", "passed"]
OUTCOMES: tuple[Outcome, ...] = ("accepted", "rejected", "flagged", "passed")
# Which step rejected a candidate: its format (only inside ``gate run``), local verification, or a screen.
GateName = Literal["format", "verify", "screen"]


def letter_index(letter: Letter) -> int:
    """Return the 0-based position of an option letter (``"C"`` -> 2)."""
    return LETTERS.index(letter)


class Candidate(BaseModel):
    """One proposed item: question, four options, the proposed answer and the solution script.

    ``options`` are four distinct non-empty strings (distinct after trimming, since a value selects the
    option whose trimmed text equals it); ``answer`` is the proposed option's letter; ``solution`` is
    Python source that prints ``ANSWER: <x>``; ``meta`` is free-form (``topic`` is used by the audits) and
    is shown to the solution in ``question.json``, so it must not reveal the answer.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(min_length=1)
    domain: str = Field(min_length=1)
    question: str = Field(min_length=1)
    options: list[str]
    answer: Letter
    solution: str = Field(min_length=1)
    meta: dict[str, Any] = Field(default_factory=dict)

    @field_validator("id", "domain", "question", "solution")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value

    @field_validator("options")
    @classmethod
    def _four_distinct(cls, options: list[str]) -> list[str]:
        problem = options_problem(options)
        if problem is not None:
            raise ValueError(problem)
        return options

    @property
    def answer_index(self) -> int:
        """The 0-based position of the proposed answer."""
        return letter_index(self.answer)

    @property
    def answer_value(self) -> str:
        """The text of the proposed option."""
        return self.options[self.answer_index]

    @property
    def topic(self) -> str:
        """``meta["topic"]`` when it is a non-empty string, else ``"unknown"``."""
        topic = self.meta.get("topic")
        return topic.strip() if isinstance(topic, str) and topic.strip() else "unknown"

    def public(self) -> dict[str, Any]:
        """What a solution sees as ``question.json``: the candidate without ``answer`` and ``solution``."""
        return {
            "id": self.id,
            "domain": self.domain,
            "question": self.question,
            "options": list(self.options),
            "meta": dict(self.meta),
        }


def options_problem(options: Sequence[object]) -> str | None:
    """Say what is wrong with an option list (None when it is four distinct non-empty strings).

    The messages name the option by its letter (``option C is empty``) or by position past D.
    """
    if len(options) != N_OPTIONS:
        return f"expected exactly {N_OPTIONS} options, got {len(options)}"
    seen: dict[str, str] = {}
    for letter, option in zip(LETTERS, options, strict=True):
        if not isinstance(option, str):
            return f"option {letter} must be a string"
        if not option.strip():
            return f"option {letter} is empty"
        key = option.strip()
        if key in seen:
            return f"options {seen[key]} and {letter} are the same ({key[:60]!r})"
        seen[key] = letter
    return None


# --- gate records ----------------------------------------------------------------------------------------


class GateRecord(BaseModel):
    """What every gate record holds to: a ``reason`` exactly when the gate did not pass.

    A record says whether it passed by its field :attr:`passed_field` (``solved`` for the solve).
    """

    record_name: ClassVar[str]
    passed_field: ClassVar[str] = "passed"
    if TYPE_CHECKING:  # each record declares its own reasons (a field of the subclass, in its place)
        reason: str | None

    @model_validator(mode="after")
    def _reason_iff_failed(self) -> Self:
        if getattr(self, self.passed_field) == (self.reason is not None):
            failed = "was not solved" if self.passed_field == "solved" else "did not pass"
            raise ValueError(f"a {self.record_name} has a reason exactly when it {failed}")
        return self


class VerifyResult(GateRecord):
    """Gate 1: the solution run in the sandbox.

    Attributes:
        passed: it exited 0 within the time limit and its one ``ANSWER:`` selected the proposed option.
        reason: why it failed (a bare name); None when it passed.
        detail: free text: the exit code and last stderr lines of a crash, which option a mismatch selected...
        selected: the option its answer selected, in the candidate's own order (None when none was selected).
        answer: the text after ``ANSWER:`` of its one answer line (trimmed), when there was exactly one.
        exit_code: the script's exit code (None: killed by the wall clock or never collected).
        seconds: wall time of the run, sandbox start-up and interpreter start included.
        time_limit: the wall-clock limit it ran under.
        stdout_tail: the end of its standard output (at most a few kilobytes).
        stderr_tail: the end of its standard error.
    """

    record_name: ClassVar[str] = "verify result"
    passed: bool
    reason: VerifyReason | None = None
    detail: str | None = None
    selected: Letter | None = None
    answer: str | None = None
    exit_code: int | None = None
    seconds: float | None = None
    time_limit: float | None = None
    stdout_tail: str = ""
    stderr_tail: str = ""


class ScreenCall(BaseModel):
    """One call of a no-tool screen: the presented order, the reply and how it was graded.

    Attributes:
        seed: the seed the permutation was drawn from (None: the fixed original order).
        permutation: ``permutation[i]`` is the original letter of the option shown as the i-th letter
            (``["C", "A", "D", "B"]`` shows original C first, as "A").
        reply: the model's reply text.
        displayed: the single letter the reply named, in the displayed order (None: unparsable).
        chosen: that letter mapped back to the candidate's own order (None: unparsable).
        correct: ``chosen`` is the proposed answer.
        reason: ``"unparsable"`` when the reply named no single letter (then it counts as wrong).
        detail: free text (what the reply named instead).
    """

    seed: int | None = None
    permutation: list[Letter]
    reply: str
    displayed: Letter | None = None
    chosen: Letter | None = None
    correct: bool
    reason: ScreenCallReason | None = None
    detail: str | None = None

    @field_validator("permutation")
    @classmethod
    def _is_permutation(cls, permutation: list[Letter]) -> list[Letter]:
        if sorted(permutation) != list(LETTERS):
            raise ValueError(f"not a permutation of A-D: {permutation}")
        return permutation


class ScreenResult(GateRecord):
    """Gate 2 under one screen (one model at one setting): three calls, rejected when at least two are correct.

    Attributes:
        screen: the screen's name (its model spec and setting, as the caller labels it).
        passed: fewer than two calls were correct (the candidate is not too easy for this screen).
        correct: how many calls were correct.
        calls: the calls in order.
        reason: ``"too_easy"`` when it did not pass.
        detail: free text.
        fixed_order: the calls used the original order (the paper's biased protocol, for audits).
        settings: the screen's recorded settings (model, temperature, reasoning effort...).
    """

    record_name: ClassVar[str] = "screen result"
    screen: str
    passed: bool
    correct: int
    calls: list[ScreenCall]
    reason: ScreenReason | None = None
    detail: str | None = None
    fixed_order: bool = False
    settings: dict[str, Any] = Field(default_factory=dict)


class SolveResult(GateRecord):
    """Gate 3: the tool-enabled solver's episode.

    Attributes:
        solved: it submitted the proposed answer within the time limit.
        answer: the letter it submitted (candidate's own order), None when it submitted none.
        reason: why it did not solve it (a bare name); None when solved.
        detail: free text.
        seconds: wall time of the episode.
        time_limit: the limit of the whole solve.
        transcript: the solver's conversation and tool calls (a ``toolgauge.tools.ToolTranscript`` as JSON),
            kept for review; stored and exported, left out of ``--json``.
    """

    record_name: ClassVar[str] = "solve result"
    passed_field: ClassVar[str] = "solved"
    solved: bool
    answer: Letter | None = None
    reason: SolveReason | None = None
    detail: str | None = None
    seconds: float | None = None
    time_limit: float | None = None
    transcript: dict[str, Any] | None = None


class SemanticResult(GateRecord):
    """A domain's executable semantic check, run after gate 1 passed (:mod:`toolgate.semantic`).

    Attributes:
        check: the check's name (``mesh_refinement`` for ``fem``).
        passed: the check did not find the candidate wrong (it may still carry ``flags``).
        reason: ``"semantic_check"`` when it failed; None when it passed.
        detail: free text: what the check measured.
        flags: audit flags: what the check could not decide (bare names, e.g. ``no_mesh_refined``); they travel
            with the candidate into the export.
        answer: the text of the check run's one ``ANSWER:`` line, when it had one.
        seconds: wall time of the check run.
    """

    record_name: ClassVar[str] = "semantic check result"
    check: str
    passed: bool
    reason: SemanticReason | None = None
    detail: str | None = None
    flags: list[str] = Field(default_factory=list)
    answer: str | None = None
    seconds: float | None = None


class Gates(BaseModel):
    """The records of the gates that ran on one candidate; a gate that did not run is None (absent in JSON)."""

    verify: VerifyResult | None = None
    screens: list[ScreenResult] | None = None
    solve: SolveResult | None = None
    semantic: SemanticResult | None = None

    @property
    def audit_flags(self) -> list[str]:
        """The audit flags the candidate carries (from its domain's semantic check), prefixed by the check."""
        return [f"{self.semantic.check}:{flag}" for flag in self.semantic.flags] if self.semantic else []


class CandidateOutcome(BaseModel):
    """One candidate's verdict: what the gates that ran decided (one entry of ``--json``'s ``candidates``).

    ``reason``/``detail`` repeat the deciding record's (the rejection or flag reason); ``malformed`` records a
    candidate that was rejected before any gate (``gate run`` only).
    """

    id: str
    outcome: Outcome
    rejected_by: GateName | None = None
    gates: Gates = Field(default_factory=Gates)
    reason: Reason | None = None
    detail: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The ``--json`` form: gates that did not run are absent, and so is the solver's transcript."""
        data = self.model_dump(mode="json", exclude={"gates": {"solve": {"transcript"}}})
        data["gates"] = {gate: record for gate, record in data["gates"].items() if record is not None}
        return data


def decide(
    candidate_id: str,
    *,
    verify: VerifyResult | None = None,
    screens: Sequence[ScreenResult] | None = None,
    solve: SolveResult | None = None,
    malformed: str | None = None,
    semantic: SemanticResult | None = None,
) -> CandidateOutcome:
    """Combine the gates that ran into the outcome.

    Order: a malformed candidate is rejected by ``format``; a failed verification by ``verify``, and so is a
    failed domain semantic check (reason ``semantic_check``); the first screen that did not pass by ``screen``;
    then the solve gate decides ``accepted`` (solved) or ``flagged``; when it did not run and every gate that ran
    passed, the outcome is ``passed``.

    Args:
        candidate_id: the candidate's id.
        verify: gate 1's record, when it ran.
        screens: gate 2's records (one per screen), when it ran.
        solve: gate 3's record, when it ran.
        malformed: what is wrong with a malformed candidate (no gate runs on it).
        semantic: the domain's semantic check after gate 1, when it ran.
    """
    gates = Gates(verify=verify, screens=list(screens) if screens is not None else None, solve=solve, semantic=semantic)
    if malformed is not None:
        return CandidateOutcome(
            id=candidate_id, outcome="rejected", rejected_by="format", gates=gates, reason="malformed", detail=malformed
        )
    if verify is not None and not verify.passed:
        return CandidateOutcome(
            id=candidate_id,
            outcome="rejected",
            rejected_by="verify",
            gates=gates,
            reason=verify.reason,
            detail=verify.detail,
        )
    if semantic is not None and not semantic.passed:
        return CandidateOutcome(
            id=candidate_id,
            outcome="rejected",
            rejected_by="verify",
            gates=gates,
            reason=semantic.reason,
            detail=f"{semantic.check}: {semantic.detail}",
        )
    for screen in screens or ():
        if not screen.passed:
            detail = f"{screen.screen}: {screen.correct} of {len(screen.calls)} calls correct"
            return CandidateOutcome(
                id=candidate_id, outcome="rejected", rejected_by="screen", gates=gates, reason="too_easy", detail=detail
            )
    if solve is not None:
        if solve.solved:
            return CandidateOutcome(id=candidate_id, outcome="accepted", gates=gates)
        return CandidateOutcome(
            id=candidate_id, outcome="flagged", gates=gates, reason=solve.reason, detail=solve.detail
        )
    return CandidateOutcome(id=candidate_id, outcome="passed", gates=gates)


def outcome_counts(outcomes: Iterable[CandidateOutcome]) -> dict[str, int]:
    """Count outcomes: ``total``, each of the four outcomes, and ``rejected_by_<gate>`` for each rejecting gate."""
    items = list(outcomes)
    counts: dict[str, int] = {"total": len(items)}
    tally = Counter(o.outcome for o in items)
    for outcome in OUTCOMES:
        counts[outcome] = tally.get(outcome, 0)
    by_gate = Counter(o.rejected_by for o in items if o.rejected_by is not None)
    for gate in get_args(GateName):
        counts[f"rejected_by_{gate}"] = by_gate.get(gate, 0)
    return counts


class GateReport(BaseModel):
    """The ``--json`` document of a ``gate`` command: every candidate's outcome and the counts."""

    candidates: list[CandidateOutcome]
    counts: dict[str, int]

    @classmethod
    def of(cls, outcomes: Iterable[CandidateOutcome]) -> GateReport:
        """Build the report, counting the outcomes."""
        items = list(outcomes)
        return cls(candidates=items, counts=outcome_counts(items))

    def to_json(self) -> dict[str, Any]:
        """The ``--json`` form (absent gates dropped from each candidate)."""
        return {"candidates": [c.to_json() for c in self.candidates], "counts": dict(self.counts)}


class RecordedCandidate(BaseModel):
    """A candidate with its outcome: the input of the audits and the funnel.

    ``candidate`` is None for a malformed proposal (then ``raw`` holds what was proposed, when known).
    """

    candidate: Candidate | None
    outcome: CandidateOutcome
    raw: dict[str, Any] | None = None
