"""Post-hoc audits of a candidate pool and the funnel (pure: typed records in, typed results out).

- Position bias of each screen: per-call accuracy by the displayed letter of the correct option, and the share
  of each displayed letter chosen (the paper's fixed-order screen chose C in 66% of calls).
- Middle-value heuristic: ``middle_value_share`` is the share of numeric candidates whose proposed answer is one
  of the two middle values; ``middle_value_accuracy`` the expected accuracy of picking one of the two middle
  values at random (half the share: the paper's 80% gave 40%).
- Agreement between screens: a 2x2 table per pair of screens over the candidates both screened.
- Exact duplicates (normalised question text) and near duplicates (token Jaccard >= 0.7, clustered).
- Topic concentration (``meta.topic``).
- The funnel: attempts -> verified -> passed each screen -> solved -> unique, with the reason counts of each
  step's rejections.

The pool audits (middle value, duplicates, topics) cover the candidates in the pool: well-formed and not
rejected by local verification (a failed verification means the proposed label is not reproduced).
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from decimal import Decimal

from pydantic import BaseModel, Field

from toolgauge.benchmarks.toolgate.answers import parse_number, to_displayed
from toolgauge.benchmarks.toolgate.records import LETTERS, Candidate, RecordedCandidate, ScreenResult
from toolgauge.results import Metric

NEAR_DUPLICATE_JACCARD = 0.7
_TOKEN = re.compile(r"\d+(?:\.\d+)?|[^\W\d_]+")
NONE_CHOSEN = "none"


# --- position bias ---------------------------------------------------------------------------------------


class LetterAccuracy(BaseModel):
    """Calls whose correct option was shown at one letter, and how many of them were right."""

    n: int
    correct: int
    accuracy: float | None


class PositionBias(BaseModel):
    """One screen's letter bias over all its calls.

    Attributes:
        screen: the screen's name.
        calls: how many calls it made.
        accuracy: the share of correct calls.
        by_correct_letter: per displayed letter L of the correct option: the calls where the correct option
            was shown as L (``n``) and the share of them answered correctly (``accuracy``, None when n = 0).
        chosen_share: the share of calls that chose each displayed letter, and ``"none"`` (unparsable).
    """

    screen: str
    calls: int
    accuracy: float | None
    by_correct_letter: dict[str, LetterAccuracy]
    chosen_share: dict[str, float | None]


def _share(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def position_bias(records: Iterable[RecordedCandidate]) -> list[PositionBias]:
    """Per screen (first-seen order), accuracy by the correct option's displayed letter and the letters chosen."""
    totals: dict[str, Counter[str]] = {}
    correct_at: dict[str, Counter[str]] = {}
    chosen: dict[str, Counter[str]] = {}
    for record in records:
        if record.candidate is None or not record.outcome.gates.screens:
            continue
        answer = record.candidate.answer
        for screen in record.outcome.gates.screens:
            totals.setdefault(screen.screen, Counter())
            correct_at.setdefault(screen.screen, Counter())
            chosen.setdefault(screen.screen, Counter())
            for call in screen.calls:
                shown = to_displayed(answer, call.permutation)
                totals[screen.screen][shown] += 1
                correct_at[screen.screen][shown] += call.correct
                chosen[screen.screen][call.displayed or NONE_CHOSEN] += 1
    out: list[PositionBias] = []
    for name, total in totals.items():
        calls = sum(total.values())
        right = sum(correct_at[name].values())
        out.append(
            PositionBias(
                screen=name,
                calls=calls,
                accuracy=_share(right, calls),
                by_correct_letter={
                    letter: LetterAccuracy(
                        n=total[letter],
                        correct=correct_at[name][letter],
                        accuracy=_share(correct_at[name][letter], total[letter]),
                    )
                    for letter in LETTERS
                },
                chosen_share={key: _share(chosen[name][key], calls) for key in (*LETTERS, NONE_CHOSEN)},
            )
        )
    return out


# --- middle value ----------------------------------------------------------------------------------------


class MiddleValue(BaseModel):
    """The middle-value heuristic over the numeric candidates of the pool.

    Attributes:
        candidates: candidates in the pool.
        numeric: those whose four options are four distinct numbers.
        middle: numeric candidates whose proposed answer is one of the two middle values.
        middle_value_share: ``middle / numeric``.
        middle_value_accuracy: expected accuracy of picking one of the two middle values at random
            (``middle_value_share / 2``).
        rank_counts: how often the proposed answer is the smallest (0) ... largest (3) value.
    """

    candidates: int
    numeric: int
    middle: int
    middle_value_share: float | None
    middle_value_accuracy: float | None
    rank_counts: dict[int, int]


def answer_rank(candidate: Candidate) -> int | None:
    """The rank (0 = smallest) of the proposed answer among the four values; None unless all are distinct numbers."""
    values: list[Decimal] = []
    for option in candidate.options:
        number = parse_number(option)
        if number is None:
            return None
        values.append(number)
    if len(set(values)) != len(values):
        return None
    return sorted(values).index(values[candidate.answer_index])


def middle_value(candidates: Iterable[Candidate]) -> MiddleValue:
    """Compute the middle-value figures (see :class:`MiddleValue`)."""
    items = list(candidates)
    ranks = [rank for rank in (answer_rank(c) for c in items) if rank is not None]
    middle = sum(1 for rank in ranks if rank in (1, 2))
    share = _share(middle, len(ranks))
    return MiddleValue(
        candidates=len(items),
        numeric=len(ranks),
        middle=middle,
        middle_value_share=share,
        middle_value_accuracy=None if share is None else share / 2,
        rank_counts={rank: ranks.count(rank) for rank in range(len(LETTERS))},
    )


# --- agreement between screens ---------------------------------------------------------------------------


class Agreement(BaseModel):
    """A 2x2 table of two screens over the candidates both screened; "solved" = rejected as too easy."""

    first: str
    second: str
    both_solved: int
    only_first: int
    only_second: int
    neither: int
    n: int
    agreement: float | None


def screen_agreement(records: Iterable[RecordedCandidate]) -> list[Agreement]:
    """One table per pair of screens (in first-seen order)."""
    solved: dict[str, dict[str, bool]] = {}
    for record in records:
        for screen in record.outcome.gates.screens or ():
            solved.setdefault(screen.screen, {})[record.outcome.id] = not screen.passed
    tables: list[Agreement] = []
    for first, second in itertools.combinations(solved, 2):
        common = [cid for cid in solved[first] if cid in solved[second]]
        cells = Counter((solved[first][cid], solved[second][cid]) for cid in common)
        both, neither = cells[(True, True)], cells[(False, False)]
        tables.append(
            Agreement(
                first=first,
                second=second,
                both_solved=both,
                only_first=cells[(True, False)],
                only_second=cells[(False, True)],
                neither=neither,
                n=len(common),
                agreement=_share(both + neither, len(common)),
            )
        )
    return tables


# --- duplicates and topics -------------------------------------------------------------------------------


def normalise_question(text: str) -> str:
    """The question text compared for exact duplicates: NFKC, case-folded, whitespace collapsed."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def question_tokens(text: str) -> frozenset[str]:
    """The set of word and number tokens of the normalised question (for the Jaccard similarity)."""
    return frozenset(_TOKEN.findall(normalise_question(text)))


def jaccard(first: frozenset[str], second: frozenset[str]) -> float:
    """Token-set Jaccard similarity (1.0 for two empty sets)."""
    union = len(first | second)
    return len(first & second) / union if union else 1.0


class Duplicates(BaseModel):
    """Exact and near duplicates among the pool's questions.

    Attributes:
        candidates: candidates compared.
        exact_groups: ids of each group of questions equal after normalisation (groups of two or more).
        exact_duplicates: candidates beyond the first of each exact group (what exact deduplication removes).
        unique: candidates left after exact deduplication.
        near_pairs: pairs with token Jaccard >= the threshold.
        clusters: the connected groups of near pairs (two or more ids each), largest first.
        largest_cluster_share: the largest cluster's share of the candidates (a lone item counts as 1).
        threshold: the Jaccard threshold.
    """

    candidates: int
    exact_groups: list[list[str]]
    exact_duplicates: int
    unique: int
    near_pairs: int
    clusters: list[list[str]]
    largest_cluster_share: float | None
    threshold: float = NEAR_DUPLICATE_JACCARD


def duplicates(candidates: Sequence[Candidate], *, threshold: float = NEAR_DUPLICATE_JACCARD) -> Duplicates:
    """Find exact duplicates and single-linkage clusters of near duplicates (Jaccard >= ``threshold``)."""
    groups: dict[str, list[str]] = {}
    for candidate in candidates:
        groups.setdefault(normalise_question(candidate.question), []).append(candidate.id)
    exact = [ids for ids in groups.values() if len(ids) > 1]
    tokens = [question_tokens(c.question) for c in candidates]
    parent = list(range(len(candidates)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    # Jaccard >= t needs |small| >= t * |large|: compare in size order and stop early.
    order = sorted(range(len(candidates)), key=lambda i: len(tokens[i]))
    pairs = 0
    for a_pos, a in enumerate(order):
        for b in order[a_pos + 1 :]:
            if len(tokens[a]) < threshold * len(tokens[b]):
                break
            if jaccard(tokens[a], tokens[b]) >= threshold:
                pairs += 1
                parent[root(a)] = root(b)
    members: dict[int, list[str]] = {}
    for i, candidate in enumerate(candidates):
        members.setdefault(root(i), []).append(candidate.id)
    clusters = sorted((ids for ids in members.values() if len(ids) > 1), key=lambda ids: (-len(ids), ids))
    largest = max((len(ids) for ids in members.values()), default=0)
    return Duplicates(
        candidates=len(candidates),
        exact_groups=exact,
        exact_duplicates=sum(len(ids) - 1 for ids in exact),
        unique=len(groups),
        near_pairs=pairs,
        clusters=clusters,
        largest_cluster_share=_share(largest, len(candidates)),
        threshold=threshold,
    )


class Topics(BaseModel):
    """Topic concentration: counts per ``meta.topic`` (``unknown`` when unset), largest first.

    ``herfindahl`` is the sum of squared shares (1.0: one topic; 1/k: k equal topics).
    """

    candidates: int
    counts: dict[str, int]
    top_topic: str | None
    top_share: float | None
    herfindahl: float | None


def topics(candidates: Iterable[Candidate]) -> Topics:
    """Count the pool's topics."""
    tally = Counter(c.topic for c in candidates)
    total = sum(tally.values())
    ordered = dict(sorted(tally.items(), key=lambda kv: (-kv[1], kv[0])))
    top = next(iter(ordered), None)
    return Topics(
        candidates=total,
        counts=ordered,
        top_topic=top,
        top_share=_share(ordered[top], total) if top is not None else None,
        herfindahl=sum((n / total) ** 2 for n in ordered.values()) if total else None,
    )


# --- funnel ----------------------------------------------------------------------------------------------


class FunnelStep(BaseModel):
    """One step of the funnel: how many candidates reached it and passed, and why the others were stopped.

    ``rejected`` counts, by reason, the candidates that entered the step and did not pass it (``flagged`` ones
    at the solve step included). Candidates on which the step's gate did not run (a ``gate screen`` pool has no
    verification records) are ``not_run``: they go on to the next step, which ``entered`` counts.
    """

    name: str
    entered: int
    passed: int
    rejected: dict[str, int] = Field(default_factory=dict)
    not_run: int = 0


class Funnel(BaseModel):
    """attempts -> verified -> passed each screen -> solved -> unique."""

    attempts: int
    steps: list[FunnelStep]

    def count(self, name: str) -> int | None:
        """How many passed the step ``name`` (``attempts`` for the start), or None when there is no such step."""
        if name == "attempts":
            return self.attempts
        return next((s.passed for s in self.steps if s.name == name), None)


def _screen_names(records: Sequence[RecordedCandidate]) -> list[str]:
    seen: dict[str, None] = {}
    for record in records:
        for screen in record.outcome.gates.screens or ():
            seen.setdefault(screen.screen, None)
    return list(seen)


def funnel(records: Sequence[RecordedCandidate]) -> Funnel:
    """The funnel over every attempt, malformed ones included.

    Steps: ``verified`` (well-formed, local verification and the domain check passed; ``malformed`` is a reason
    there), one ``screen:<name>`` step per screen in first-seen order (a candidate enters it after passing the earlier
    screens), ``solved`` and ``unique`` (exact deduplication of the candidates that come out of the solve step).
    A candidate on which a step's gate did not run counts in that step's ``not_run`` and goes on to the next
    step, so a pool that only some gates saw (``gate screen``) still flows through the funnel; ``passed``
    counts only the candidates the gate ran on and passed.
    """
    alive: list[RecordedCandidate] = []
    verified = FunnelStep(name="verified", entered=len(records), passed=0)
    rejected: Counter[str] = Counter()
    for record in records:
        verify = record.outcome.gates.verify
        if record.candidate is None or record.outcome.reason == "malformed":
            rejected["malformed"] += 1
        elif verify is None:
            verified.not_run += 1
            alive.append(record)
        elif not verify.passed:
            rejected[verify.reason or "unknown"] += 1
        elif record.outcome.gates.semantic is not None and not record.outcome.gates.semantic.passed:
            rejected[record.outcome.gates.semantic.reason or "semantic_check"] += 1  # the domain's check after gate 1
        else:
            verified.passed += 1
            alive.append(record)
    verified.rejected = dict(rejected)
    steps = [verified]
    for name in _screen_names(records):
        step = FunnelStep(name=f"screen:{name}", entered=len(alive), passed=0)
        survivors: list[RecordedCandidate] = []
        reasons: Counter[str] = Counter()
        for record in alive:
            result: ScreenResult | None = next(
                (s for s in record.outcome.gates.screens or () if s.screen == name), None
            )
            if result is None:
                step.not_run += 1
                survivors.append(record)
            elif result.passed:
                step.passed += 1
                survivors.append(record)
            else:
                reasons[result.reason or "unknown"] += 1
        step.rejected = dict(reasons)
        steps.append(step)
        alive = survivors
    solved_step = FunnelStep(name="solved", entered=len(alive), passed=0)
    out: list[Candidate] = []
    reasons = Counter()
    for record in alive:
        solve = record.outcome.gates.solve
        assert record.candidate is not None  # malformed ones stopped at the first step
        if solve is None:
            solved_step.not_run += 1
            out.append(record.candidate)
        elif solve.solved:
            solved_step.passed += 1
            out.append(record.candidate)
        else:
            reasons[solve.reason or "unknown"] += 1
    solved_step.rejected = dict(reasons)
    steps.append(solved_step)
    unique = len({normalise_question(c.question) for c in out})
    steps.append(
        FunnelStep(name="unique", entered=len(out), passed=unique, rejected={"exact_duplicate": len(out) - unique})
    )
    return Funnel(attempts=len(records), steps=steps)


# --- the whole audit -------------------------------------------------------------------------------------


class AuditReport(BaseModel):
    """Everything ``gate audit`` reports."""

    pool: int
    position_bias: list[PositionBias]
    middle_value: MiddleValue
    agreement: list[Agreement]
    duplicates: Duplicates
    topics: Topics
    funnel: Funnel


def pool_candidates(records: Iterable[RecordedCandidate]) -> list[Candidate]:
    """The candidates the pool audits cover: well-formed and not rejected by local verification."""
    pool: list[Candidate] = []
    for record in records:
        verify = record.outcome.gates.verify
        if record.candidate is not None and (verify is None or verify.passed):
            pool.append(record.candidate)
    return pool


def audit(records: Sequence[RecordedCandidate]) -> AuditReport:
    """Run every audit on a set of recorded candidates."""
    pool = pool_candidates(records)
    return AuditReport(
        pool=len(pool),
        position_bias=position_bias(records),
        middle_value=middle_value(pool),
        agreement=screen_agreement(records),
        duplicates=duplicates(pool),
        topics=topics(pool),
        funnel=funnel(records),
    )


def audit_metrics(report: AuditReport) -> list[Metric]:
    """The audit's numbers as typed metrics (for ``EvalResults.metrics``); the full report goes in ``details``.

    Overall: ``middle_value_share``, ``middle_value_accuracy``, ``exact_duplicates``, ``near_duplicate_pairs``,
    ``largest_cluster_share``, ``top_topic_share``. Per screen (``by="screen"``): ``screen_call_accuracy``. Per
    screen and displayed letter (``by="screen_correct_letter"``, group ``"<screen> <letter>"``):
    ``accuracy_by_correct_letter``; (``by="screen_chosen_letter"``): ``chosen_share``. Funnel
    (``by="funnel"``, group = step): ``funnel_passed`` (counts).
    """
    mv, dup, top = report.middle_value, report.duplicates, report.topics
    metrics = [
        Metric(name="middle_value_share", value=mv.middle_value_share, n=mv.numeric),
        Metric(name="middle_value_accuracy", value=mv.middle_value_accuracy, n=mv.numeric),
        Metric(name="exact_duplicates", value=dup.exact_duplicates, n=dup.candidates, kind="count"),
        Metric(name="near_duplicate_pairs", value=dup.near_pairs, n=dup.candidates, kind="count"),
        Metric(name="largest_cluster_share", value=dup.largest_cluster_share, n=dup.candidates),
        Metric(name="top_topic_share", value=top.top_share, n=top.candidates),
    ]
    for bias in report.position_bias:
        metrics.append(
            Metric(name="screen_call_accuracy", value=bias.accuracy, group=bias.screen, by="screen", n=bias.calls)
        )
        for letter, cell in bias.by_correct_letter.items():
            metrics.append(
                Metric(
                    name="accuracy_by_correct_letter",
                    value=cell.accuracy,
                    group=f"{bias.screen} {letter}",
                    by="screen_correct_letter",
                    n=cell.n,
                )
            )
        for letter, share in bias.chosen_share.items():
            metrics.append(
                Metric(
                    name="chosen_share",
                    value=share,
                    group=f"{bias.screen} {letter}",
                    by="screen_chosen_letter",
                    n=bias.calls,
                )
            )
    return metrics + funnel_metrics(report.funnel)


def funnel_metrics(steps: Funnel) -> list[Metric]:
    """Each funnel step's count of candidates that passed it: ``funnel_passed`` by ``funnel`` (group = step)."""
    return [
        Metric(name="funnel_passed", value=step.passed, group=step.name, by="funnel", n=step.entered, kind="count")
        for step in steps.steps
    ]


def rejection_metrics(steps: Funnel, *, name: str, by: str) -> list[Metric]:
    """Each funnel step's rejections per reason: metric ``name`` by ``by``, group ``"<step> <reason>"`` (counts)."""
    return [
        Metric(name=name, value=count, group=f"{step.name} {reason}", by=by, n=step.entered, kind="count")
        for step in steps.steps
        for reason, count in step.rejected.items()
    ]
