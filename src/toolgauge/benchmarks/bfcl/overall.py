"""BFCL v4's summary scores (overall, non-live, live, irrelevance, multi-turn, agentic) from per-category accuracies.

The formulas are bfcl-eval 2026.3.23's ``eval_checker/eval_runner_helper.py::generate_leaderboard_csv``:

* non-live = unweighted mean of (simple = mean of simple_python, simple_java, simple_javascript), multiple,
  parallel, parallel_multiple;
* live = the entry-weighted mean of live_simple, live_multiple, live_parallel, live_parallel_multiple;
* irrelevance = mean of irrelevance and live_irrelevance (relevance = live_relevance, shown, not weighed);
* multi-turn = mean of the four multi-turn categories;
* agentic = mean of (web search = mean of its two categories) and (memory = mean of its three);
* overall = 10% non-live + 10% live + 10% irrelevance + 30% multi-turn + 40% agentic.

A category not run counts as accuracy 0 with BFCL's full entry count (its weight in the entry-weighted live
mean), exactly as BFCL does; BFCL then shows the sub-summaries that include it as "N/A" but still prints the
group and overall numbers. :class:`BfclSummary` keeps both: the official-style numbers and, for each, whether
every category under it was run (``complete``), so tables can say "not run" and how much the overall covers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel

BFCL_V4_ENTRIES: dict[str, int] = {
    "simple_python": 400, "simple_java": 100, "simple_javascript": 50, "multiple": 200, "parallel": 200,
    "parallel_multiple": 200, "irrelevance": 240, "live_simple": 258, "live_multiple": 1053, "live_parallel": 16,
    "live_parallel_multiple": 24, "live_irrelevance": 884, "live_relevance": 16, "multi_turn_base": 200,
    "multi_turn_miss_func": 200, "multi_turn_miss_param": 200, "multi_turn_long_context": 200,
    "web_search_base": 100, "web_search_no_snippet": 100, "memory_kv": 155, "memory_vector": 155,
    "memory_rec_sum": 155,
}  # fmt: skip
"""Entries per scored category in BFCL v4 (what a category not run weighs in BFCL's entry-weighted means)."""

OVERALL_WEIGHTS: dict[str, int] = {"non_live": 10, "live": 10, "irrelevance": 10, "multi_turn": 30, "agentic": 40}
"""BFCL's weights of its five groups in the overall score (normalised to sum 1)."""

GROUP_CATEGORIES: dict[str, tuple[str, ...]] = {
    "non_live": ("simple_python", "simple_java", "simple_javascript", "multiple", "parallel", "parallel_multiple"),
    "live": ("live_simple", "live_multiple", "live_parallel", "live_parallel_multiple"),
    "irrelevance": ("irrelevance", "live_irrelevance"),
    "multi_turn": ("multi_turn_base", "multi_turn_miss_func", "multi_turn_miss_param", "multi_turn_long_context"),
    "agentic": ("web_search_base", "web_search_no_snippet", "memory_kv", "memory_vector", "memory_rec_sum"),
}
"""The categories under each weighed group (live_relevance is shown by BFCL but weighs nothing)."""

NOT_RUN = "not run"


class Part(BaseModel):
    """One BFCL score: its accuracy (categories not run counted 0), entry count, and whether all were run."""

    accuracy: float
    total_count: int
    complete: bool

    @property
    def shown(self) -> float | str:
        """The accuracy, or "not run" when a category under it was not run (BFCL's "N/A")."""
        return self.accuracy if self.complete else NOT_RUN


class BfclSummary(BaseModel):
    """BFCL's summary of one model: every category and aggregate, as ``generate_leaderboard_csv`` computes them.

    ``groups`` are the five weighed groups (``non_live``, ``live``, ``irrelevance``, ``multi_turn``,
    ``agentic``), ``subtotals`` the shown sub-summaries (``simple``, ``non_live_ast`` (BFCL's "AST Summary"),
    ``live_ast``, ``web_search``, ``memory``, ``relevance``), ``categories`` the 22 scored categories.
    ``covered`` / ``of`` count the categories run among those the overall weighs.
    """

    overall: Part
    groups: dict[str, Part]
    subtotals: dict[str, Part]
    categories: dict[str, Part]
    covered: int
    of: int


def _category(table: Mapping[str, tuple[float, int]], name: str) -> Part:
    if name in table:
        accuracy, n = table[name]
        return Part(accuracy=accuracy, total_count=n, complete=True)
    return Part(accuracy=0.0, total_count=BFCL_V4_ENTRIES[name], complete=False)


def _unweighted(parts: Sequence[Part]) -> Part:
    return Part(
        accuracy=sum(p.accuracy for p in parts) / len(parts),
        total_count=sum(p.total_count for p in parts),
        complete=all(p.complete for p in parts),
    )


def _weighted(parts: Sequence[Part]) -> Part:
    total = sum(p.total_count for p in parts)
    return Part(
        accuracy=sum(p.accuracy * p.total_count for p in parts) / total,
        total_count=total,
        complete=all(p.complete for p in parts),
    )


def _percentage_weighted(parts: Sequence[Part], weights: Sequence[float]) -> Part:
    norm = [w / sum(weights) for w in weights]
    return Part(
        accuracy=sum(p.accuracy * w for p, w in zip(parts, norm, strict=True)),
        total_count=sum(p.total_count for p in parts),
        complete=all(p.complete for p in parts),
    )


def bfcl_summary(table: Mapping[str, tuple[float, int]]) -> BfclSummary:
    """BFCL's summary from ``category -> (accuracy, entries scored)``; categories BFCL does not score are ignored."""
    c = {name: _category(table, name) for name in BFCL_V4_ENTRIES}
    simple = _unweighted([c["simple_python"], c["simple_java"], c["simple_javascript"]])
    non_live = _unweighted([simple, c["multiple"], c["parallel"], c["parallel_multiple"]])
    live = _weighted([c["live_simple"], c["live_multiple"], c["live_parallel"], c["live_parallel_multiple"]])
    multi_turn = _unweighted(
        [c["multi_turn_base"], c["multi_turn_miss_func"], c["multi_turn_miss_param"], c["multi_turn_long_context"]]
    )
    web_search = _unweighted([c["web_search_base"], c["web_search_no_snippet"]])
    memory = _unweighted([c["memory_kv"], c["memory_vector"], c["memory_rec_sum"]])
    agentic = _unweighted([web_search, memory])
    irrelevance = _unweighted([c["irrelevance"], c["live_irrelevance"]])
    groups = {"non_live": non_live, "live": live, "irrelevance": irrelevance, "multi_turn": multi_turn,
              "agentic": agentic}  # fmt: skip
    overall = _percentage_weighted([groups[g] for g in OVERALL_WEIGHTS], list(OVERALL_WEIGHTS.values()))
    weighed = [name for names in GROUP_CATEGORIES.values() for name in names]
    subtotals = {"simple": simple, "non_live_ast": non_live, "live_ast": live, "web_search": web_search,
                 "memory": memory, "relevance": c["live_relevance"]}  # fmt: skip
    return BfclSummary(
        overall=overall,
        groups=groups,
        subtotals=subtotals,
        categories=c,
        covered=sum(name in table for name in weighed),
        of=len(weighed),
    )


def summary_details(summary: BfclSummary, table: Mapping[str, tuple[float, int]]) -> dict[str, Any]:
    """What a results table needs to say how much of BFCL a run covers: categories run per group, those not run."""
    return {
        "covered": summary.covered,
        "of": summary.of,
        "groups": {g: [c for c in names if c in table] for g, names in GROUP_CATEGORIES.items()},
        "not_run": [c for names in GROUP_CATEGORIES.values() for c in names if c not in table],
    }
