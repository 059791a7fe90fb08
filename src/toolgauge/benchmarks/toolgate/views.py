"""ToolGate in the viewer: the audit tables of ``gate audit`` as run-page panels (``BenchmarkSpec.run_panels``).

The tables are computed from the run's per-candidate units (their ``metadata``: a pool run's unit holds the
candidate and its outcome, a ``gate run`` round's the candidate, the outcome and the raw proposal) with the
same :func:`~toolgauge.benchmarks.toolgate.audit.audit` ``gate audit RUN`` runs on the stored records, in the
same order (sample keys in natural order), so the numbers are the command's: each screen's letter bias, the
middle-value cue, the agreement of each pair of screens, exact and near duplicates, and the topics. The gate
funnel is not repeated here: it is the run page's ``funnel`` chart and breakdown table. Units without a
recorded candidate (their episode failed) are left out, as ``gate audit`` leaves them out.
"""

from __future__ import annotations

from collections.abc import Sequence

from toolgauge.benchmarks.toolgate.audit import AuditReport, audit
from toolgauge.benchmarks.toolgate.protocol import natural_key
from toolgauge.benchmarks.toolgate.records import LETTERS, RecordedCandidate
from toolgauge.panels import Cell, Panel, TablePanel
from toolgauge.results import EvalResults, SampleScore

# Duplicate groups and near-duplicate clusters listed (largest first); the counts cover them all.
LISTED_GROUPS = 50


def recorded_candidate(unit: SampleScore) -> RecordedCandidate | None:
    """The candidate and outcome a unit's ``metadata`` holds; None for a unit without a record (a failed episode)."""
    meta = unit.metadata
    outcome = meta.get("outcome")
    if isinstance(outcome, dict):  # a ``gate run`` round (construction.round_score)
        return RecordedCandidate.model_validate(
            {"candidate": meta.get("candidate"), "outcome": outcome, "raw": meta.get("raw")}
        )
    if isinstance(outcome, str) and "gates" in meta:  # a pool run's candidate (protocol._sample_score)
        fields = {k: v for k, v in meta.items() if k not in ("candidate", "topic")}
        return RecordedCandidate.model_validate({"candidate": meta.get("candidate"), "outcome": fields})
    return None


def units_audit(units: Sequence[SampleScore]) -> AuditReport | None:
    """``gate audit``'s report over the units' recorded candidates (sample keys in natural order); None without any."""
    records = [r for r in (recorded_candidate(u) for u in sorted(units, key=lambda u: natural_key(u.id))) if r]
    return audit(records) if records else None


def audit_tables(report: AuditReport) -> list[TablePanel]:
    """The audit as tables: letter bias, middle value, agreement, duplicates, topics (shares from 0 to 1)."""
    tables: list[TablePanel] = []
    if report.position_bias:
        rows: list[list[Cell]] = [
            [
                b.screen,
                b.calls,
                b.accuracy,
                *(b.by_correct_letter[letter].accuracy for letter in LETTERS),
                *(b.by_correct_letter[letter].n for letter in LETTERS),
                *(b.chosen_share.get(letter) for letter in LETTERS),
                b.chosen_share.get("none"),
            ]
            for b in report.position_bias
        ]
        tables.append(
            TablePanel(
                name="letter-bias",
                title="screens: letter bias (accuracy by the correct option's displayed letter, letters chosen)",
                columns=[
                    "screen",
                    "calls",
                    "accuracy",
                    *(f"acc@{x}" for x in LETTERS),
                    *(f"n@{x}" for x in LETTERS),
                    *(f"chose {x}" for x in LETTERS),
                    "unparsable",
                ],
                rows=rows,
            )
        )
    mv = report.middle_value
    tables.append(
        TablePanel(
            name="middle-value",
            title=f"middle value (pool of {report.pool})",
            columns=[
                "candidates",
                "numeric",
                "middle",
                "middle_value_share",
                "middle_value_accuracy",
                *(f"answer rank {rank}" for rank in mv.rank_counts),
            ],
            rows=[
                [
                    mv.candidates,
                    mv.numeric,
                    mv.middle,
                    mv.middle_value_share,
                    mv.middle_value_accuracy,
                    *mv.rank_counts.values(),
                ]
            ],
            note="answer rank: the proposed answer's place among the four values (0 = smallest)",
        )
    )
    if report.agreement:
        tables.append(
            TablePanel(
                name="agreement",
                title="agreement between screens (too easy = the screen rejected the candidate)",
                columns=[
                    "first",
                    "second",
                    "both too easy",
                    "only first too easy",
                    "only second too easy",
                    "both passed",
                    "n",
                    "agreement",
                ],
                rows=[
                    [a.first, a.second, a.both_solved, a.only_first, a.only_second, a.neither, a.n, a.agreement]
                    for a in report.agreement
                ],
            )
        )
    dup = report.duplicates
    groups: list[list[Cell]] = [["exact", len(ids), ", ".join(ids)] for ids in dup.exact_groups]
    groups += [["near", len(ids), ", ".join(ids)] for ids in dup.clusters]
    listed = sorted(groups, key=lambda row: -int(row[1] or 0))[:LISTED_GROUPS]
    tables.append(
        TablePanel(
            name="duplicates",
            title=f"duplicates: {dup.exact_duplicates} exact ({len(dup.exact_groups)} groups), {dup.near_pairs} "
            f"near pairs (Jaccard >= {dup.threshold}) in {len(dup.clusters)} clusters",
            columns=["kind", "candidates", "ids"],
            rows=listed,
            note=_duplicates_note(report, len(groups)),
        )
    )
    top = report.topics
    tables.append(
        TablePanel(
            name="topics",
            title=f"topics: {len(top.counts)} over {top.candidates} candidates",
            columns=["topic", "candidates", "share"],
            rows=[[name, count, count / top.candidates] for name, count in top.counts.items()],
            note=None if top.herfindahl is None else f"Herfindahl {top.herfindahl:.4f} (1: one topic)",
        )
    )
    return tables


def _duplicates_note(report: AuditReport, groups: int) -> str:
    dup = report.duplicates
    share = "–" if dup.largest_cluster_share is None else f"{dup.largest_cluster_share:.4f}"
    note = f"unique after exact deduplication: {dup.unique} of {dup.candidates}; largest cluster share {share}"
    if groups > LISTED_GROUPS:
        note += f"; the {LISTED_GROUPS} largest of {groups} groups listed"
    return note


def run_panels(results: EvalResults, units: Sequence[SampleScore]) -> list[Panel]:
    """The run page's views: the audit tables of its recorded candidates (none when it recorded none)."""
    report = units_audit(units)
    return list(audit_tables(report)) if report is not None else []
