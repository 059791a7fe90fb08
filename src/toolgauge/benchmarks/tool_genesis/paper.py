"""Tool-Genesis's paper tables from stored runs (``toolgauge paper tool-genesis``; docs/paper.md).

Pure functions over stored verdicts: each run's results (the overall metrics, their intervals, the cascade)
and its per-server scores (:func:`~toolgauge.benchmarks.tool_genesis.protocol.server_sample_score` rows:
``scores`` and the per-level ``metadata``), with the data's servers for the unit tests' kinds and domains.
No model is called and no server is launched.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from toolgauge.benchmarks.tool_genesis.metrics.schema import GenesisVariant
from toolgauge.benchmarks.tool_genesis.metrics.task_success import oracle_normalized
from toolgauge.benchmarks.tool_genesis.paper_kinds import KINDS, UnitTestKind, server_test_kinds
from toolgauge.benchmarks.tool_genesis.records import GenesisServer
from toolgauge.errors import UsageError
from toolgauge.report.paper_tables import PaperBlock, PaperCell, PaperRow, PaperRun
from toolgauge.results import SampleScore

PAPER = "tool-genesis"
# Table 2's metrics, in its column order: metric key -> column header.
TABLE2 = {
    "compliance": "Compliance",
    "server_execution": "Exec.",
    "schema_f1": "Schema-F1",
    "ut_soft": "UT_soft",
    "ut_hard": "UT_hard",
    "sr_soft": "SR",
}
# The verification signals of App. D.1 and the downstream value they are aligned with.
SIGNALS = {"schema_f1": "Schema-F1", "ut_soft": "UT_soft", "ut_hard": "UT_hard"}
TARGET = "sr_soft"
CASCADE = ("Start", "L1", "L2", "L3", "L4")
STRATEGY_ORDER = {"Direct": 0, "Code-Agent": 1}
L4_HINT = "eval tool-genesis ... --agent-model MODEL --judge-model MODEL (without --skip-l4)"


def paper_blocks(runs: Sequence[PaperRun], *, oracle: PaperRun | None = None) -> list[PaperBlock]:
    """Every Tool-Genesis block for ``runs`` (one row per run), in the paper's order.

    Args:
        runs: Stored Tool-Genesis evaluations (``UsageError`` for a ``genesis generate`` run: it has no verdicts).
        oracle: A run whose per-task scores normalise SR instead of the reference-server replay (the
            official ``eval_oracle_sr.py``'s "GT proxy": the best model's run).
    """
    for run in [*runs, *([oracle] if oracle is not None else [])]:
        if run.benchmark != PAPER:
            raise UsageError(
                f"run {run.id} only generated servers ({run.benchmark}): evaluate them first "
                "(genesis evaluate --pred ITS_OUT_FOLDER), or use an eval tool-genesis run"
            )
    ordered = sorted(runs, key=lambda r: (STRATEGY_ORDER.get(strategy(r), 2), runs.index(r)))
    return [
        table2(ordered),
        signal_alignment(ordered),
        cascade(ordered),
        unit_tests_by_kind(ordered),
        *by_domain(ordered),
        dataset_statistics(ordered),
        oracle_sr(ordered, oracle),
    ]


# -- run identity -----------------------------------------------------------------------------------------
def strategy(run: PaperRun) -> str:
    """How the run's servers were made: ``Direct`` or ``Code-Agent`` (generated), else ``gold`` / ``registry``."""
    source = _facts(run)[0]
    if source == "generate":
        return {"direct": "Direct", "code-agent": "Code-Agent"}.get(str(run.option("strategy", "direct")), "Direct")
    return str(source)


def row_label(run: PaperRun) -> str:
    """``model · strategy``: a Table 2 row."""
    return f"{run.label} · {strategy(run)}"


def _facts(run: PaperRun) -> tuple[str, bool]:
    """Where the run's servers came from, and whether L4 ran (a config stored before issue 23 says them itself)."""
    from toolgauge.benchmarks.tool_genesis.options import GenesisOptions
    from toolgauge.benchmarks.tool_genesis.plan import l4_plan, source_of

    if run.option("source") is not None:
        return str(run.option("source")), bool(run.option("l4", False))
    options = GenesisOptions.model_validate({k: v for k, v in run.config.items() if k in GenesisOptions.model_fields})
    return source_of(options), l4_plan(options).settings.skip_reason is None


def _l4_run(run: PaperRun) -> bool:
    return _facts(run)[1] and run.results is not None and run.results.value(TARGET) is not None


def _cell(run: PaperRun, key: str) -> PaperCell:
    """An overall metric of the run with its 95% interval (the run's summary, where it has one)."""
    if run.results is None:
        return PaperCell(value=None)
    metric = run.results.metric(key)
    summary = run.results.summary.get(key)
    return PaperCell(
        value=None if metric is None else metric.value,
        ci_low=summary.ci_low if summary is not None else None,
        ci_high=summary.ci_high if summary is not None else None,
        n=None if metric is None else metric.n,
    )


# -- Table 2 ----------------------------------------------------------------------------------------------
def table2(runs: Sequence[PaperRun]) -> PaperBlock:
    """Table 2: Direct vs Code-Agent per model, L1–L4 (fractions over all servers attempted, as the paper)."""
    rows = [
        PaperRow(
            label=run.label,
            cells=[PaperCell(value=strategy(run), unit="text"), *(_cell(run, key) for key in TABLE2)],
            run_ids=[run.id],
        )
        for run in runs
    ]
    notes = ["Rates in percent over all servers attempted (a server that failed scores 0), 95% intervals by server."]
    found = {strategy(r) for r in runs}
    for wanted, flag in (("Direct", "direct"), ("Code-Agent", "code-agent")):
        if wanted not in found:
            notes.append(f"no {wanted} run: eval tool-genesis --strategy {flag} would fill its rows")
    if not any(_l4_run(r) for r in runs):
        notes.append(f"SR needs a run with L4: {L4_HINT}")
    return PaperBlock(
        paper=PAPER,
        ref="Table 2",
        title="Direct vs Code-Agent: L1 compliance and execution, L2 Schema-F1, L3 unit tests, L4 SR",
        columns=["Model", "Strategy", *TABLE2.values()],
        rows=rows,
        notes=notes,
        chart="bar",
    )


# -- per-server values --------------------------------------------------------------------------------------
def per_server(scores: Iterable[SampleScore], key: str) -> dict[str, float]:
    """A per-server score averaged over the server's units (its tries and epochs); servers without it left out."""
    sums: dict[str, list[float]] = defaultdict(list)
    for score in scores:
        value = score.scores.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            sums[score.cluster or score.sample].append(float(value))
    return {server: sum(values) / len(values) for server, values in sums.items()}


def pearson(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """The Pearson correlation of paired values; None with fewer than 2 pairs or a constant side."""
    n = len(xs)
    if n < 2 or n != len(ys):
        return None
    mx, my = sum(xs) / n, sum(ys) / n
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True))
    sxx = sum((x - mx) ** 2 for x in xs)
    syy = sum((y - my) ** 2 for y in ys)
    if sxx <= 0 or syy <= 0:
        return None
    return sxy / math.sqrt(sxx * syy)


# -- Figure 5(a), App. D.1 ---------------------------------------------------------------------------------
def signal_alignment(runs: Sequence[PaperRun]) -> PaperBlock:
    """Figure 5(a): Signal–Validation Alignment of Schema-F1, UT_soft and UT_hard with r_i = SR_soft per server.

    SVA(signal) is the Pearson correlation, across the run's servers, of the signal's per-server value with the
    server's trajectory-level validation rate r_i (SR_soft); servers that failed L1 count with 0 on both sides,
    as in the paper's tables. None when fewer than two servers or either side is constant.
    """
    with_l4 = [r for r in runs if _l4_run(r)]
    block = PaperBlock(
        paper=PAPER,
        ref="Figure 5(a)",
        title="Signal–Validation Alignment (App. D.1): how well each signal predicts r_i (SR_soft) across servers",
        columns=["Model · strategy", *SIGNALS.values(), "servers"],
        exact=False,
        notes=[
            "SVA = Pearson correlation across servers of the signal with r_i = SR_soft (the formula did not survive "
            "in the paper; definition and reasons: docs/metrics/tool-genesis.md#signal-validation-alignment).",
            "— : fewer than two servers, or a constant signal or r_i.",
        ],
        chart="bar",
    )
    if not with_l4:
        block.missing = f"needs r_i (SR_soft per server), which only a run with L4 has: {L4_HINT}"
        return block
    for run in with_l4:
        scores = run.scores()
        target = per_server(scores, TARGET)
        cells = []
        for key in SIGNALS:
            signal = per_server(scores, key)
            servers = [s for s in target if s in signal]
            value = pearson([signal[s] for s in servers], [target[s] for s in servers])
            cells.append(PaperCell(value=value, unit="number", n=len(servers)))
        cells.append(PaperCell(value=len(target), unit="count"))
        block.rows.append(PaperRow(label=row_label(run), cells=cells, run_ids=[run.id]))
    return block


# -- Figure 5(b) -----------------------------------------------------------------------------------------
def cascade(runs: Sequence[PaperRun]) -> PaperBlock:
    """Figure 5(b): cumulative pass-through Start → L1 → L2 → L3 → L4 per model and strategy (the run's cascade)."""
    block = PaperBlock(
        paper=PAPER,
        ref="Figure 5(b)",
        title="Cumulative pass-through: servers that passed each level and every earlier one",
        columns=["Model · strategy", *CASCADE],
        notes=["Percent of servers attempted (n: how many servers); L4 needs a run with L4."],
        chart="funnel",
    )
    steps: dict[str, list[list[Any]]] = {}
    for run in runs:
        if run.results is None:
            continue
        cells = []
        mine: list[list[Any]] = []
        for step in CASCADE:
            count = run.results.value("servers", step, by="cascade")
            fraction = run.results.value("fraction", step, by="cascade")
            cells.append(PaperCell(value=fraction, n=int(count) if count is not None else None))
            mine.append([step, count])
        block.rows.append(PaperRow(label=row_label(run), cells=cells, run_ids=[run.id]))
        steps[row_label(run)] = mine
    block.data["steps"] = steps
    return block


# -- unit tests by kind (A.3) ----------------------------------------------------------------------------
def _servers(run: PaperRun) -> dict[str, GenesisServer]:
    """The run's data servers by sample key (tries ``<slug>@e<e>`` included)."""
    found: dict[str, GenesisServer] = {}
    for key, sample in run.samples():
        server = getattr(sample, "server", None)
        if isinstance(server, GenesisServer):
            found[key] = server
    return found


def _unit_results(score: SampleScore) -> list[tuple[str, int, str, float, bool]]:
    """(reference tool, index, status, soft, hard pass) of every unit test in a server's L3 metadata."""
    tools = ((score.metadata.get("L3") or {}).get("tools")) or {}
    found = []
    for gold_tool, entry in tools.items():
        for result in entry.get("results", []):
            found.append((gold_tool, int(result["index"]), str(result["status"]),
                          float(result.get("soft") or 0.0), bool(result.get("hard_pass"))))  # fmt: skip
    return found


def kind_scores(
    score: SampleScore, kinds: dict[tuple[str, int], UnitTestKind], variant: str
) -> dict[UnitTestKind, tuple[float, float]]:
    """A server's (UT_soft, UT_hard) per kind it has tests of, as the run's variant counts them.

    ``reference`` counts the tests that were called (tests of tools not built, or never run after the server
    died, are dropped); ``strict`` counts every test of the kind. No test counted: 0 (the official convention),
    and a server that stopped at L1 scores 0 on every kind it has.
    """
    totals: dict[UnitTestKind, list[float]] = {kind: [0.0, 0.0, 0.0] for kind in set(kinds.values())}
    for gold_tool, index, status, soft, hard in _unit_results(score):
        kind = kinds.get((gold_tool, index))
        if kind is None:
            continue
        if status == "called" or variant == "strict":
            totals[kind][0] += 1
        if status == "called":
            totals[kind][1] += soft
            totals[kind][2] += 1.0 if hard else 0.0
    return {kind: ((s / n, h / n) if n else (0.0, 0.0)) for kind, (n, s, h) in totals.items()}


def unit_tests_by_kind(runs: Sequence[PaperRun]) -> PaperBlock:
    """UT_soft and UT_hard on standard and on boundary/negative tests (App. A.3), per model and strategy."""
    columns = ["Model · strategy"]
    for kind in KINDS:
        columns += [f"UT_soft {kind}", f"UT_hard {kind}", f"tests {kind}"]
    block = PaperBlock(
        paper=PAPER,
        ref="App. A.3",
        title="Unit tests by kind: standard vs boundary/negative",
        columns=columns,
        exact=False,
        notes=[
            "The data does not label tests: a test is boundary/negative when its expected output is error-shaped, "
            "or its inputs miss a required argument, add an undeclared one, have a wrong type or an empty value "
            "(docs/metrics/tool-genesis.md#unit-tests-by-kind).",
            "Per kind: each server's UT over its tests of that kind, averaged over the servers that have such tests.",
        ],
        chart="bar",
    )
    for run in runs:
        servers = _servers(run)
        variant = str(run.option("variant", "reference"))
        per_kind: dict[UnitTestKind, list[tuple[float, float]]] = {kind: [] for kind in KINDS}
        tests: dict[UnitTestKind, int] = dict.fromkeys(KINDS, 0)
        for score in run.scores():
            server = servers.get(score.id)
            if server is None:
                continue
            kinds = server_test_kinds(server)
            for kind, pair in kind_scores(score, kinds, variant).items():
                per_kind[kind].append(pair)
            for kind in kinds.values():
                tests[kind] += 1
        cells: list[PaperCell] = []
        for kind in KINDS:
            pairs = per_kind[kind]
            n = len(pairs)
            cells.append(PaperCell(value=sum(p[0] for p in pairs) / n if n else None, n=n))
            cells.append(PaperCell(value=sum(p[1] for p in pairs) / n if n else None, n=n))
            cells.append(PaperCell(value=tests[kind], unit="count"))
        block.rows.append(PaperRow(label=row_label(run), cells=cells, run_ids=[run.id]))
    return block


# -- by domain (§4, Figures 3–4) ---------------------------------------------------------------------------
def by_domain(runs: Sequence[PaperRun]) -> list[PaperBlock]:
    """Per run: Table 2's metrics by the servers' ``primary_label`` (the paper's 24 domains)."""
    blocks = []
    for run in runs:
        servers = _servers(run)
        groups: dict[str, list[SampleScore]] = defaultdict(list)
        for score in run.scores():
            server = servers.get(score.id)
            groups[(server.primary_label if server is not None else "") or "(none)"].append(score)
        rows = []
        for domain in sorted(groups):
            scores = groups[domain]
            cells = [PaperCell(value=len({s.cluster or s.sample for s in scores}), unit="count")]
            for key in TABLE2:
                values = [float(v) for s in scores if isinstance(v := s.scores.get(key), int | float)]
                cells.append(PaperCell(value=sum(values) / len(values) if values else None, n=len(values)))
            rows.append(PaperRow(label=domain, cells=cells, run_ids=[run.id]))
        blocks.append(
            PaperBlock(
                paper=PAPER,
                ref="§4, Figures 3–4",
                title=f"{row_label(run)}: metrics by domain (primary_label)",
                columns=["Domain", "servers", *TABLE2.values()],
                rows=rows,
                notes=["Means over the domain's servers (a server that failed L1 scores 0)."],
                chart="bar",
            )
        )
    return blocks


def dataset_statistics(runs: Sequence[PaperRun]) -> PaperBlock:
    """§4 / Figure 4: servers, tools, unit tests (standard and boundary) and tasks per domain, from the data."""
    block = PaperBlock(
        paper=PAPER,
        ref="§4, Figure 4",
        title="Dataset statistics per domain (primary_label)",
        columns=["Domain", "servers", "tools", "unit tests", "boundary tests", "tasks"],
    )
    servers = {s.server_slug: s for run in runs[:1] for s in _servers(run).values()}
    if not servers:
        block.missing = "needs the data of a run: give a Tool-Genesis run whose data file is still there"
        return block
    totals: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0, 0])
    for server in servers.values():
        kinds = server_test_kinds(server)
        row = [1, len(server.tool_definitions), server.n_unit_tests,
               sum(1 for k in kinds.values() if k == "boundary"), len(server.task_example)]  # fmt: skip
        for label in (server.primary_label or "(none)", "all"):
            totals[label] = [a + b for a, b in zip(totals[label], row, strict=True)]
    for label in [*sorted(k for k in totals if k != "all"), "all"]:
        block.rows.append(PaperRow(label=label, cells=[PaperCell(value=v, unit="count") for v in totals[label]]))
    block.notes.append(f"From the data file of run {runs[0].id} ({len(servers)} servers).")
    return block


# -- oracle-normalised SR (A.4) ------------------------------------------------------------------------------
def _task_scores(score: SampleScore) -> list[float] | None:
    """A server's per-task scores (rating/5) from its L4 metadata; None when L4 did not run on it."""
    tasks = (score.metadata.get("L4") or {}).get("tasks")
    if tasks is None:
        return None
    return [max(0, min(5, int(t.get("rating") or 0))) / 5 for t in tasks]


def proxy_normalised(run: PaperRun, oracle: PaperRun) -> tuple[float | None, int]:
    """SR of ``run`` normalised by ``oracle``'s per-task scores (the official GT proxy); (mean, servers).

    Per server with tasks in the oracle run: the official per-task ratio (``oracle_normalized``), the run's
    tasks aligned by index; a server of the run with no task scores (it stopped at L1) scores 0 on each.
    Averaged over those servers.
    """
    reference = {s.cluster or s.sample: t for s in oracle.scores() if (t := _task_scores(s)) is not None}
    values = []
    variant: GenesisVariant = "strict" if run.option("variant") == "strict" else "reference"
    for score in run.scores():
        ref = reference.get(score.cluster or score.sample)
        if ref is None:
            continue
        values.append(oracle_normalized(_task_scores(score) or [0.0] * len(ref), ref, variant))
    return (sum(values) / len(values) if values else None), len(values)


def oracle_sr(runs: Sequence[PaperRun], oracle: PaperRun | None) -> PaperBlock:
    """App. A.4: SR_soft beside the oracle-normalised SR (replay oracle; and the GT proxy run when given)."""
    columns = ["Model · strategy", "SR_soft", "SR / replay oracle"]
    if oracle is not None:
        columns.append(f"SR / GT proxy ({oracle.label})")
    block = PaperBlock(
        paper=PAPER,
        ref="App. A.4",
        title="Oracle-normalised SR",
        columns=columns,
        exact=False,
        notes=[
            "The replay oracle answers only calls whose arguments a unit test recorded, so it fails tasks the "
            "real reference server would solve: the ratio is biased upward (docs/metrics/tool-genesis.md).",
            "GT proxy (--oracle-run): another run's per-task scores as the oracle, as the official "
            "eval_oracle_sr.py does without a GT cache (the best model's run).",
        ],
    )
    with_l4 = [r for r in runs if _l4_run(r)]
    if not with_l4:
        block.missing = f"needs a run with L4 (task ratings): {L4_HINT}"
        return block
    if oracle is not None and not _l4_run(oracle):
        block.missing = f"the oracle run {oracle.id} has no L4 task ratings: {L4_HINT}"
        return block
    for run in with_l4:
        cells = [_cell(run, "sr_soft"), _cell(run, "sr_oracle_normalized")]
        if oracle is not None:
            value, n = proxy_normalised(run, oracle)
            cells.append(PaperCell(value=value, n=n))
        block.rows.append(PaperRow(label=row_label(run), cells=cells, run_ids=[run.id]))
    return block
