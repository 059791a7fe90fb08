"""Tool-Genesis per-server record, level gating, aggregates and the verification cascade.

A server's four levels (paper §3): L1 surface compliance (compliance, server execution), L2 Schema-F1,
L3 unit tests (UT_soft, UT_hard), L4 task success (SR). :func:`genesis_server_score` applies the gating
of the official pipeline (``reference``: L1 fails unless the schema file is compliant *and* the server
launched, and a failed L1 zeroes every later metric even when the server runs) and records which levels
the server reached and passed. :func:`genesis_metrics` averages in two ways: over all servers
attempted (the paper divides by all 86 servers, a failed server scoring 0) and over the servers that
reached each level; and counts the cumulative pass-through Start → L1 → L2 → L3 → L4 (paper Fig. 5b).
The results are typed :class:`~toolgauge.results.Metric` values.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, Field

from toolgauge.benchmarks.tool_genesis.metrics.compliance import Verdict
from toolgauge.benchmarks.tool_genesis.metrics.schema import GenesisVariant, SchemaMatch
from toolgauge.benchmarks.tool_genesis.metrics.task_success import oracle_normalized, task_scores
from toolgauge.benchmarks.tool_genesis.metrics.unit_tests import UnitTestSummary
from toolgauge.results import Metric

GenesisLevel = Literal["L1", "L2", "L3", "L4"]
LEVELS: tuple[GenesisLevel, ...] = ("L1", "L2", "L3", "L4")
# Each per-server metric and the level it belongs to (the JSON keys of the issue, in its order).
METRIC_LEVELS: dict[str, GenesisLevel] = {
    "compliance": "L1",
    "compliance_mcp_valid": "L1",
    "server_execution": "L1",
    "schema_f1": "L2",
    "schema_f1_live": "L2",
    "ut_soft": "L3",
    "ut_hard": "L3",
    "sr_soft": "L4",
    "sr_hard": "L4",
    "sr_oracle_normalized": "L4",
}


class GenesisServerScore(BaseModel):
    """The scores of one generated server, with the levels it reached and why it stopped.

    Metric fields are fractions in [0, 1]; a level the server did not reach scores 0 (as in the paper's
    tables). ``sr_oracle_normalized`` is None when no reference-server run exists for the server.
    ``reached`` lists the levels the server got to (it passed every earlier one); ``failures`` gives,
    per level it did not pass, the reason.
    """

    slug: str
    variant: GenesisVariant = "reference"
    compliance: float = 0.0
    compliance_mcp_valid: float = 0.0
    server_execution: float = 0.0
    schema_f1: float = 0.0
    schema_f1_live: float = 0.0
    ut_soft: float = 0.0
    ut_hard: float = 0.0
    sr_soft: float = 0.0
    sr_hard: float = 0.0
    sr_oracle_normalized: float | None = None
    launches: int = 0
    launch_attempts: int = 0
    unit_tests_counted: int = 0
    tasks: int = 0
    reached: list[GenesisLevel] = Field(default_factory=list)
    failures: dict[str, str] = Field(default_factory=dict)

    def passed(self, level: GenesisLevel) -> bool:
        """Whether the server passed ``level`` (and so every level before it)."""
        return level in self.reached and level not in self.failures

    def metrics(self) -> dict[str, float | None]:
        """The per-server metric keys and values."""
        return {key: getattr(self, key) for key in METRIC_LEVELS}

    def explanation(self) -> str:
        """Where the server stopped and why: ``passed L1, L2; stopped at L3: no unit test passed``."""
        passed = [level for level in self.reached if level not in self.failures]
        done = "passed " + ", ".join(passed) if passed else "passed no level"
        stop = next((level for level in self.reached if level in self.failures), None)
        return done if stop is None else f"{done}; stopped at {stop}: {self.failures[stop]}"


def genesis_server_score(
    slug: str,
    *,
    variant: GenesisVariant,
    compliance: Verdict,
    mcp_valid: Verdict,
    launches: int,
    launch_attempts: int,
    launch_failure: str | None = None,
    schema: SchemaMatch | None = None,
    schema_live: SchemaMatch | None = None,
    unit_tests: UnitTestSummary | None = None,
    task_ratings: Sequence[int | None] | None = None,
    reference_task_scores: Sequence[float] | None = None,
) -> GenesisServerScore:
    """Build a server's record from its raw per-level results, applying the level gating.

    Passing a level (what the cascade counts):

    - L1: ``reference`` — the schema file passes the official compliance check and at least one launch
      succeeded; ``strict`` — the schema file is a valid MCP tool list and at least one launch succeeded.
    - L2: Schema-F1 > 0 (at least one reference tool matched: the paper's "coverage").
    - L3: UT_hard > 0 (at least one unit test hard-passed).
    - L4: SR_hard > 0 (at least one task rated 3 or more by the judge).

    A server reaches a level when it passed every earlier one. When L1 fails, L2–L4 metrics are 0 (the
    official pipeline computes none of them); otherwise they are taken as given, even when an earlier
    level L2/L3 was not passed (the official code computes unit tests and SR whenever L1 passed).

    Args:
        slug: The server's slug.
        variant: ``reference`` or ``strict``.
        compliance: :func:`~toolgauge.benchmarks.tool_genesis.metrics.compliance.check_compliance` of the schema file.
        mcp_valid: :func:`~toolgauge.benchmarks.tool_genesis.metrics.compliance.check_mcp_valid` of the schema file.
        launches: Successful launches (initialize + list_tools with at least one tool).
        launch_attempts: Launches tried.
        launch_failure: Why the last failed launch failed, if any.
        schema: Schema match computed from the schema file (None when it could not be read).
        schema_live: Schema match computed from the live ``tools/list``.
        unit_tests: UT summary (None when not run).
        task_ratings: Judge rating per task example (0 or None where none was obtained); None when L4
            was not run.
        reference_task_scores: Per-task score/5 of the reference server on the same tasks, for oracle
            normalisation; None when there is no reference run (then ``sr_oracle_normalized`` is None).

    Returns:
        The record.
    """
    record = GenesisServerScore(
        slug=slug,
        variant=variant,
        compliance=1.0 if compliance.ok else 0.0,
        compliance_mcp_valid=1.0 if mcp_valid.ok else 0.0,
        server_execution=1.0 if launches > 0 else 0.0,
        launches=launches,
        launch_attempts=launch_attempts,
        reached=["L1"],
    )
    schema_ok = compliance if variant == "reference" else mcp_valid
    l1_failure = None
    if not schema_ok.ok:
        label = "not compliant" if variant == "reference" else "not a valid MCP tool list"
        l1_failure = f"schema file {label}: {schema_ok.reason}"
    elif launches <= 0:
        l1_failure = f"server did not start in {launch_attempts} attempt(s)" + (
            f": {launch_failure}" if launch_failure else ""
        )
    ratings = list(task_ratings or [])
    if l1_failure is not None:
        record.failures["L1"] = l1_failure
        if reference_task_scores is not None:
            record.sr_oracle_normalized = 0.0  # nothing ran, so every task scores 0 against the reference
        return record

    record.schema_f1 = schema.schema_f1 if schema else 0.0
    record.schema_f1_live = schema_live.schema_f1 if schema_live else 0.0
    if unit_tests is not None:
        record.ut_soft, record.ut_hard = unit_tests.ut_soft, unit_tests.ut_hard
        record.unit_tests_counted = unit_tests.total
    if task_ratings is not None:
        record.sr_soft, record.sr_hard = task_scores(ratings)
        record.tasks = len(ratings)
    if reference_task_scores is not None:
        gen = [max(0, min(5, r or 0)) / 5 for r in ratings] if task_ratings is not None else []
        gen += [0.0] * max(0, len(reference_task_scores) - len(gen))
        record.sr_oracle_normalized = oracle_normalized(gen, list(reference_task_scores), variant)

    checks: list[tuple[GenesisLevel, bool, str]] = [
        ("L2", record.schema_f1 > 0, "no reference tool matched (Schema-F1 = 0)"),
        (
            "L3",
            record.ut_hard > 0,
            "no unit test run" if unit_tests is None or unit_tests.total == 0 else "no unit test passed",
        ),
        ("L4", record.sr_hard > 0, "tasks not run" if task_ratings is None else "no task rated 3 or more"),
    ]
    for level, ok, why in checks:
        record.reached.append(level)
        if not ok:
            record.failures[level] = why
            break
    return record


def genesis_metrics(
    scores: Sequence[GenesisServerScore],
    *,
    total_servers: int | None = None,
    l4_run: bool = True,
) -> list[Metric]:
    """Aggregate server records into the Tool-Genesis metrics: the levels, over-reached means and the cascade.

    Args:
        scores: One record per server evaluated.
        total_servers: The denominator of the "over all servers attempted" figures; defaults to
            ``len(scores)``. Pass the dataset size to score servers with no record as 0, as the paper
            (which divides by 86) does.
        l4_run: False when L4 was skipped for the whole run: then no task was rated, and the L4 rates
            (``sr_soft``, ``sr_hard``, ``sr_oracle_normalized``) are None (unknown), not 0.

    Returns:
        In order:

        - overall (``group`` None): every metric key of :data:`METRIC_LEVELS` averaged over all servers
          attempted (the paper's figure; ``n`` the servers it is over), then the counts
          ``servers_attempted`` and ``servers_scored``;
        - ``by="reached"``: each metric averaged over the servers that reached its level (``group`` the
          level, ``n`` how many reached it);
        - ``by="cascade"``: for Start, L1, L2, L3 and L4, ``servers`` (a count: the servers that passed
          that level and every earlier one) and ``fraction`` (that count over the servers attempted).

        ``sr_oracle_normalized`` is averaged over the servers that have a reference run in both views
        (None when none has).
    """
    n = max(total_servers if total_servers is not None else len(scores), len(scores))
    overall: list[Metric] = []
    reached_view: list[Metric] = []
    for key, level in METRIC_LEVELS.items():
        if level == "L4" and not l4_run:
            overall.append(Metric(name=key, value=None, n=0))
            reached_view.append(Metric(name=key, value=None, group=level, by="reached", n=0))
            continue
        values = [getattr(s, key) for s in scores]
        reached = [getattr(s, key) for s in scores if level in s.reached]
        if key == "sr_oracle_normalized":
            present = [v for v in values if v is not None]
            overall.append(Metric(name=key, value=sum(present) / len(present) if present else None, n=len(present)))
            reached = [v for v in reached if v is not None]
        else:
            overall.append(Metric(name=key, value=sum(values) / n if n else 0.0, n=n))
        mean = sum(reached) / len(reached) if reached else None
        reached_view.append(Metric(name=key, value=mean, group=level, by="reached", n=len(reached)))
    overall.append(Metric(name="servers_attempted", value=n, kind="count"))
    overall.append(Metric(name="servers_scored", value=len(scores), kind="count"))
    steps: list[tuple[str, int, float]] = [("Start", n, 1.0 if n else 0.0)]
    for level in LEVELS:
        count = sum(1 for s in scores if s.passed(level))
        steps.append((level, count, count / n if n else 0.0))
    cascade: list[Metric] = []
    for step, count, fraction in steps:
        cascade.append(Metric(name="servers", value=count, group=step, by="cascade", n=n, kind="count"))
        cascade.append(Metric(name="fraction", value=fraction, group=step, by="cascade", n=n))
    return overall + reached_view + cascade
