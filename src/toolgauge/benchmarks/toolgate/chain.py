"""The post-generation flow of the paper's Table 4 across stored runs: one record per candidate, and the release.

The paper builds its reported pool in steps, each a run on the survivors of the one before: the construction run
(local verification), two randomized no-tool screens, a stronger no-tool screen on what survived both, the tool
agent on what survived that, then exact deduplication before release. Each step here is a stored run
(``gate run`` / ``gate check``, then ``gate rescreen RUN --pool survivors``, then ``gate solve --run RUN --pool
survivors``); :func:`chained_records` joins their records into one per candidate, so that ``gate audit RUN...``
shows the whole funnel, and :func:`release_duplicates` is the deduplication ``gate export`` applies.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from toolgauge.benchmarks.toolgate.audit import normalise_question
from toolgauge.benchmarks.toolgate.records import RecordedCandidate, ScreenResult, decide


def chained_records(runs: Sequence[Iterable[RecordedCandidate]]) -> list[RecordedCandidate]:
    """Join the records of chained runs (in chain order) into one record per candidate id, outcome decided again.

    A candidate's verification (with its domain check) and solve are those of the last run that ran them; its
    screens are every run's, in chain order (a screen name run again replaces the earlier record of that name).
    Candidates come in the order they first appear; a malformed proposal (no candidate) is kept as it is. The
    outcome is :func:`~toolgauge.benchmarks.toolgate.records.decide` over the joined gates, so a candidate that a
    later screen rejects is rejected by ``screen`` whatever an earlier run decided.
    """
    order: list[str] = []
    joined: dict[str, RecordedCandidate] = {}
    malformed: list[RecordedCandidate] = []
    for records in runs:
        for record in records:
            if record.candidate is None:
                malformed.append(record)
                continue
            key = record.outcome.id
            earlier = joined.get(key)
            if earlier is None:
                order.append(key)
                joined[key] = record
                continue
            joined[key] = _joined(earlier, record)
    return [*(joined[key] for key in order), *malformed]


def _joined(earlier: RecordedCandidate, later: RecordedCandidate) -> RecordedCandidate:
    first, second = earlier.outcome.gates, later.outcome.gates
    screens: dict[str, ScreenResult] = {s.screen: s for s in first.screens or ()}
    screens.update({s.screen: s for s in second.screens or ()})
    outcome = decide(
        later.outcome.id,
        verify=second.verify or first.verify,
        screens=list(screens.values()) if screens else None,
        solve=second.solve or first.solve,
        semantic=second.semantic or first.semantic,
    )
    return RecordedCandidate(candidate=later.candidate or earlier.candidate, outcome=outcome)


def release_duplicates(keyed: Sequence[tuple[str, RecordedCandidate]]) -> dict[str, str]:
    """Exact duplicates among candidates to release: each later copy's key -> the key of the first copy kept.

    Questions are compared after :func:`~toolgauge.benchmarks.toolgate.audit.normalise_question` (NFKC, case-folded,
    whitespace collapsed), the audit's exact-duplicate rule; the first copy in key order is kept.
    """
    first: dict[str, str] = {}
    dropped: dict[str, str] = {}
    for key, record in keyed:
        if record.candidate is None:
            continue
        text = normalise_question(record.candidate.question)
        if text in first:
            dropped[key] = first[text]
        else:
            first[text] = key
    return dropped
