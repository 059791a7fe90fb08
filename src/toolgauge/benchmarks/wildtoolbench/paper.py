"""WildToolBench's paper tables from stored runs and data (``toolgauge paper wildtoolbench``; docs/paper.md).

Tables 2–4 read each run's stored metrics (the breakdowns ``summarise_wild`` computes: task type, task order,
OP and AP per type, the error taxonomy), one row per model, grouped into the paper's model categories by the
runs' tags. The dataset statistics of §3.6 / Figure 5 come from the sessions alone (``--data FILE``, or the
data of the first run). Pure: no model is called.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from toolgauge.benchmarks.wildtoolbench.graph import PSEUDO_TOOLS
from toolgauge.benchmarks.wildtoolbench.metrics import (
    BY_ERROR_CLASS,
    BY_TASK_ORDER,
    BY_TASK_TYPE,
    FAILURE_CLASSES,
    MULTI_TOOL,
)
from toolgauge.benchmarks.wildtoolbench.records import FIRST_TURN, TASK_TYPES, TURN_SUBTYPES, WildSession, WildTask
from toolgauge.report.paper_tables import PaperBlock, PaperCell, PaperRow, PaperRun

PAPER = "wildtoolbench"
# The paper's model categories (Tables 2–4 group their rows so), as a run's tags name them.
CATEGORIES = {
    "proprietary": "Proprietary General Models",
    "open-source": "Open-Source General Models",
    "open-source-general": "Open-Source General Models",
    "specialized": "Open-Source Specialized Models",
    "open-source-specialized": "Open-Source Specialized Models",
}
CATEGORY_ORDER = ("Proprietary General Models", "Open-Source General Models", "Open-Source Specialized Models")
UNGROUPED = "Models"
# Table 2: (breakdown, group, header) in the paper's column order; (None, None, name) is an overall metric.
TABLE2 = (
    (BY_TASK_TYPE, "Single-Tool", "g_single"),
    (BY_TASK_TYPE, MULTI_TOOL, "g_multi"),
    (BY_TASK_TYPE, "Clarify", "g_clarify"),
    (BY_TASK_TYPE, "Chat", "g_chat"),
    (BY_TASK_ORDER, "1", "1"),
    (BY_TASK_ORDER, "2", "2"),
    (BY_TASK_ORDER, "3", "3"),
    (BY_TASK_ORDER, "4", "4"),
)
P, S, SP = "Parallel Multi-Tool", "Sequential Multi-Tool", "Mixed Multi-Tool"
# Table 3: (metric, group or None for overall/multi-tool, header).
TABLE3 = (
    ("task_accuracy", P, "Acc. P"),
    ("task_accuracy", S, "Acc. S"),
    ("task_accuracy", SP, "Acc. S+P"),
    ("task_accuracy", MULTI_TOOL, "Acc. overall"),
    ("accomplish_progress_rate", S, "AP S"),
    ("accomplish_progress_rate", SP, "AP S+P"),
    ("accomplish_progress_rate", None, "AP overall"),
    ("optimal_path_rate", P, "OP P"),
    ("optimal_path_rate", SP, "OP S+P"),
    ("optimal_path_rate", None, "OP overall"),
)
CLASS_HEADERS = {
    "refusal": "Refusal", "wrong_name": "Wrong Name", "missing_info": "Missing Info",
    "wrong_refusal": "Wrong Refusal", "redundant_call": "Redundant Call", "call_error": "Call Error",
    "early_termination": "Early Termination", "param_type_error": "Param Type Error",
    "param_hallucination": "Param Hallucination", "param_value_error": "Param Value Error",
}  # fmt: skip


def paper_blocks(runs: Sequence[PaperRun], *, data: Path | None = None) -> list[PaperBlock]:
    """Every WildToolBench block: the dataset statistics, then Tables 2, 3 and 4 when runs are given.

    Args:
        runs: Stored WildToolBench runs (none: the statistics of ``data`` only).
        data: A session file (either format) to take the statistics from; default: the first run's data.
    """
    sessions = _sessions(runs, data)
    blocks = dataset_statistics(sessions, source=str(data) if data is not None else _source(runs))
    if runs:
        ordered = sorted(runs, key=lambda r: ((*CATEGORY_ORDER, UNGROUPED)).index(category(r)))
        blocks += [table2(ordered), table3(ordered), table4(ordered)]
    return blocks


def category(run: PaperRun) -> str:
    """The paper's model category of a run, from its tags (``category=NAME``, or a known name); else one group."""
    for tag in run.tags:
        key, _, value = tag.partition("=")
        if key.strip().lower() in ("category", "group") and value.strip():
            return CATEGORIES.get(value.strip().lower(), value.strip())
        if tag.strip().lower() in CATEGORIES:
            return CATEGORIES[tag.strip().lower()]
    return UNGROUPED


def _source(runs: Sequence[PaperRun]) -> str | None:
    return f"the data of run {runs[0].id}" if runs else None


def _sessions(runs: Sequence[PaperRun], data: Path | None) -> list[WildSession]:
    if data is not None:
        from toolgauge.benchmarks.wildtoolbench.loader import load_wild

        return load_wild(data)
    if not runs:
        return []
    return [s for _, s in runs[0].samples() if isinstance(s, WildSession)]


def _cell(run: PaperRun, name: str, group: str | None, by: str | None) -> PaperCell:
    if run.results is None:
        return PaperCell(value=None)
    metric = run.results.metric(name, group, by=by)
    if metric is None:
        return PaperCell(value=None)
    summary = run.results.summary.get(name) if group is None else None
    return PaperCell(
        value=metric.value,
        n=metric.n,
        ci_low=summary.ci_low if summary is not None else None,
        ci_high=summary.ci_high if summary is not None else None,
    )


def _row(run: PaperRun, cells: list[PaperCell]) -> PaperRow:
    return PaperRow(label=run.label, cells=[PaperCell(value=category(run), unit="text"), *cells], run_ids=[run.id])


def table2(runs: Sequence[PaperRun]) -> PaperBlock:
    """Table 2: task accuracy by task type and by task order, then overall task and session accuracy."""
    rows = [
        _row(
            run,
            [
                *(_cell(run, "task_accuracy", group, by) for by, group, _ in TABLE2),
                _cell(run, "task_accuracy", None, None),
                _cell(run, "session_accuracy", None, None),
            ],
        )
        for run in runs
    ]
    return PaperBlock(
        paper=PAPER,
        ref="Table 2",
        title="Accuracy by task type and by task order; overall task and session accuracy",
        columns=["Model", "Category", *(header for _, _, header in TABLE2), "Task", "Session"],
        rows=rows,
        notes=[*_category_notes(runs), "g_multi pools the parallel, sequential and mixed multi-tool tasks."],
        chart="bar",
    )


def table3(runs: Sequence[PaperRun]) -> PaperBlock:
    """Table 3: tool orchestration, accuracy, AP and OP on parallel (P), sequential (S) and mixed (S+P) tasks."""
    rows = [
        _row(run, [_cell(run, name, group, BY_TASK_TYPE if group else None) for name, group, _ in TABLE3])
        for run in runs
    ]
    return PaperBlock(
        paper=PAPER,
        ref="Table 3",
        title="Tool orchestration: task accuracy, Accomplish Progress (AP) and Optimal Path (OP) by topology",
        columns=["Model", "Category", *(header for _, _, header in TABLE3)],
        rows=rows,
        notes=["AP over sequential and mixed tasks, OP over parallel and mixed tasks (docs/metrics/wildtoolbench.md)."],
        chart="bar",
    )


def table4(runs: Sequence[PaperRun]) -> PaperBlock:
    """Table 4: the error taxonomy, each class's share of the model's failed tasks."""
    rows = [
        _row(
            run,
            [_cell(run, "failure_share", name, BY_ERROR_CLASS) for name in FAILURE_CLASSES]
            + [_cell(run, "failed_tasks", None, None)],
        )
        for run in runs
    ]
    for row in rows:
        row.cells[-1].unit = "count"
    return PaperBlock(
        paper=PAPER,
        ref="Table 4",
        title="Error analysis: share of the failed tasks per class (action errors, then parameter errors)",
        columns=["Model", "Category", *(CLASS_HEADERS[name] for name in FAILURE_CLASSES), "failed tasks"],
        rows=rows,
        notes=[
            "The paper prints Wrong Name and Missing Info as one column: add the two to compare.",
            "Each failed task has one class, by the rules of docs/metrics/wildtoolbench.md section 7.",
        ],
        chart="bar",
    )


def _category_notes(runs: Sequence[PaperRun]) -> list[str]:
    if all(category(r) == UNGROUPED for r in runs):
        return ["No run has a category tag: tag runs category=proprietary|open-source|specialized to group rows."]
    return []


# -- §3.6 / Figure 5: the dataset from the data alone ------------------------------------------------------
def call_layers(task: WildTask) -> list[int]:
    """The layer of each real tool call of a task's DAG (1: depends on no call); pseudo-tool nodes pass through.

    A node's layer is one more than the deepest call it waits for (directly or through a clarifying question
    or the final answer); the pseudo-tools add no layer and are not listed.
    """
    layer: dict[int, int] = {}

    def of(index: int) -> int:
        if index not in layer:
            node = task.nodes[index]
            below = max((of(d) for d in node.dependency_list), default=0)
            layer[index] = below + (0 if node.action.name in PSEUDO_TOOLS else 1)
        return layer[index]

    return [of(i) for i, node in enumerate(task.nodes) if node.action.name not in PSEUDO_TOOLS]


def dag_shape(task: WildTask) -> tuple[int, int, int]:
    """(calls, depth, width) of a task: real calls, layers, and the most calls in one layer (0s: no call)."""
    layers = call_layers(task)
    if not layers:
        return 0, 0, 0
    return len(layers), max(layers), max(Counter(layers).values())


def dataset_statistics(sessions: Sequence[WildSession], *, source: str | None) -> list[PaperBlock]:
    """§3.6 / Figure 5: sessions, tasks by type and subtype, tools, calls per task, DAG depth and width."""
    overview = PaperBlock(
        paper=PAPER,
        ref="§3.6, Figure 5",
        title="Dataset statistics: sessions, tasks, tools, calls, DAG depth and width",
        columns=["Statistic", "value"],
    )
    by_type = PaperBlock(
        paper=PAPER, ref="Figure 5", title="Tasks by type and by turn subtype", columns=["Type", "tasks", "share"],
        chart="bar",
    )  # fmt: skip
    if not sessions:
        line = "needs data: give --data FILE (a session file) or a WildToolBench run whose data file is still there"
        overview.missing = by_type.missing = line
        return [overview, by_type]
    tasks = [task for s in sessions for task in s.tasks]
    shapes = [dag_shape(task) for task in tasks]
    with_calls = [shape for shape in shapes if shape[0]]
    tools = {name for s in sessions for name in s.tool_names()}

    def mean(values: Sequence[int]) -> float | None:
        return sum(values) / len(values) if values else None

    def stat(label: str, value: float | int | None, unit: str = "number") -> PaperRow:
        return PaperRow(label=label, cells=[PaperCell(value=value, unit="count" if unit == "count" else "number")])

    overview.rows = [
        stat("sessions", len(sessions), "count"),
        stat("tasks", len(tasks), "count"),
        stat("distinct tools", len(tools), "count"),
        stat("tools per session", mean([len(s.tools) for s in sessions])),
        stat("gold calls", sum(c for c, _, _ in shapes), "count"),
        stat("calls per task", mean([c for c, _, _ in shapes])),
        stat("calls per tool-using task", mean([c for c, _, _ in with_calls])),
        stat("DAG depth (mean, tool-using tasks)", mean([d for _, d, _ in with_calls])),
        stat("DAG depth (max)", max((d for _, d, _ in shapes), default=0), "count"),
        stat("DAG width (mean, tool-using tasks)", mean([w for _, _, w in with_calls])),
        stat("DAG width (max)", max((w for _, _, w in shapes), default=0), "count"),
    ]
    overview.notes = [
        f"From {source}." if source else "From the data.",
        "Calls are real tool calls (the clarifying question and the final answer are not); depth counts the "
        "layers of the call DAG, width the most calls in one layer.",
    ]
    types = Counter(t for s in sessions for t in s.task_types)
    subtypes = Counter(s.subtype_of(i) for s in sessions for i in range(len(s.tasks)))
    n = len(tasks)
    for label, count in [
        *((t, types[t]) for t in TASK_TYPES),
        *((t, subtypes[t]) for t in (FIRST_TURN, *TURN_SUBTYPES)),
    ]:
        by_type.rows.append(
            PaperRow(
                label=label, cells=[PaperCell(value=count, unit="count"), PaperCell(value=count / n if n else None)]
            )
        )
    return [overview, by_type]
