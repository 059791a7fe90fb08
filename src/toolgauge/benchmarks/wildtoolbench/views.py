"""WildToolBench's views in the viewer: each task's path through its gold call graph, and where tasks leave it.

A sample is a session and its units are its tasks. Per task the sample page draws the gold DAG (nodes placed
by dependency depth, edges as rules) with the nodes the model matched and the step where it left the graph,
and lists its steps (model call, gold nodes matched, verdict and why). The run page adds where failed tasks
left the graph (failing step by task type) and how (off the graph, wrong arguments, no log) per task type:
accuracy by task type, order and transitions and the error taxonomy are breakdown charts already.
Everything is read from the units' metadata ``gold_graph`` and ``path`` (:mod:`.path`).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Any

from toolgauge.benchmarks.wildtoolbench.path import node_steps
from toolgauge.benchmarks.wildtoolbench.records import TASK_TYPES
from toolgauge.panels import Cell, ChartPanel, Panel, TablePanel
from toolgauge.results import EvalResults, SampleScore

# Node status -> colour, in legend order.
STATUS_COLOURS = {
    "taken": "#1a7f37",
    "taken, wrong arguments": "#bf8700",
    "expected where it left": "#0969da",
    "model's step off the graph": "#cf222e",
    "not reached": "#8c959f",
}
# Pixels per dependency layer (x) and per node in a layer (y); characters of a node's label.
LAYER_WIDTH = 190
ROW_HEIGHT = 64
LABEL_CHARS = 28
NO_LOG = "no log"


def _short(text: str, limit: int = LABEL_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _layers(nodes: Sequence[dict[str, Any]]) -> list[int]:
    """Each node's depth: 0 without dependencies, else one more than its deepest dependency (the graph is a DAG)."""
    depth: dict[int, int] = {}

    def of(i: int) -> int:
        if i not in depth:
            after = nodes[i]["after"]
            depth[i] = 1 + max(of(int(d)) for d in after) if after else 0
        return depth[i]

    return [of(i) for i in range(len(nodes))]


def _unit_title(unit: SampleScore, epochs: bool) -> str:
    task = unit.metadata.get("task")
    kind = unit.metadata.get("task_type")
    return f"task {task}" + (f" (epoch {unit.epoch})" if epochs else "") + (f", {kind}" if kind else "")


def _left_step(path: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """The step where the task failed (left the graph or had wrong arguments), if any."""
    return next((e for e in path if e["verdict"] in ("left the graph", "wrong arguments")), None)


def _model_step_text(entry: dict[str, Any]) -> str:
    if entry["calls"]:
        return "; ".join(entry["calls"])
    if entry["text"] is not None and entry["text"] != "":
        return f"text: {entry['text']}"
    return "(empty reply)"


def _model_step_names(entry: dict[str, Any]) -> str:
    """The step's call names (a ``name(arguments)`` preview cut at its first parenthesis), or what it was instead."""
    if entry["calls"]:
        return ", ".join(str(c).split("(", 1)[0] for c in entry["calls"])
    return "text reply" if entry["text"] else "empty reply"


def graph_rows(unit: SampleScore) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The drawing's data: one row per node (position, label, status, step) and one per edge.

    Nodes matched by a step of the path are ``taken`` (``taken, wrong arguments`` at the step that failed on
    its arguments); where the model left the graph the nodes it could have taken are ``expected where it
    left`` and its own step is drawn as an extra red node in the column of the first of them.
    """
    graph = unit.metadata["gold_graph"]
    path: list[dict[str, Any]] = unit.metadata.get("path") or []
    nodes: list[dict[str, Any]] = graph["nodes"]
    layers = _layers(nodes)
    rows_in: Counter[int] = Counter()
    position: dict[int, tuple[int, int]] = {}
    for i, layer in enumerate(layers):
        position[i] = (layer, rows_in[layer])
        rows_in[layer] += 1
    taken = {n: s for n, s in node_steps(path).items()}
    scored_taken = {int(n): int(e["step"]) for e in path if e["verdict"] != "not scored" for n in e.get("nodes") or []}
    left = _left_step(path)
    wrong_args = set(left.get("nodes") or []) if left is not None and left["verdict"] == "wrong arguments" else set()
    expected = set(left.get("expected") or []) if left is not None else set()
    node_rows: list[dict[str, Any]] = []
    for i, node in enumerate(nodes):
        if i in wrong_args:
            status = "taken, wrong arguments"
        elif i in scored_taken:
            status = "taken"
        elif i in expected:
            status = "expected where it left"
        else:
            status = "not reached"
        step = taken.get(i)
        x, y = position[i]
        node_rows.append(
            {
                "x": x,
                "y": y,
                "label": _short(f"{i}: {node['name']}"),
                "status": status,
                "step": "" if step is None else f"step {step}" + ("" if i in scored_taken else " (not scored)"),
                "name": node["name"],
                "args": node["args"],
            }
        )
    if left is not None and left["verdict"] == "left the graph":
        column = min((position[int(n)][0] for n in expected), default=max(layers) + 1)
        node_rows.append(
            {
                "x": column,
                "y": max(rows_in.values()),
                "label": _short("model: " + _model_step_names(left)),
                "status": "model's step off the graph",
                "step": f"step {left['step']}",
                "name": _model_step_text(left),
                "args": left["reason"] or "",
            }
        )
    edge_rows = []
    for i, node in enumerate(nodes):
        for dep in node["after"]:
            (x, y), (x2, y2) = position[int(dep)], position[i]
            both = int(dep) in scored_taken and i in scored_taken
            edge_rows.append({"x": x, "y": y, "x2": x2, "y2": y2, "taken": "taken" if both else "not taken"})
    return node_rows, edge_rows


def graph_chart(unit: SampleScore, title: str) -> dict[str, Any]:
    """The task's gold DAG as a Vega-Lite spec: rules for edges, points and text for nodes, coloured by status."""
    import altair as alt

    node_rows, edge_rows = graph_rows(unit)
    columns = max(r["x"] for r in node_rows) + 1
    rows = max(r["y"] for r in node_rows) + 1
    x_scale = alt.Scale(domain=[-0.5, columns - 0.5])
    y_scale = alt.Scale(domain=[-0.6, rows - 0.4], reverse=True)
    nodes = alt.Chart(alt.Data(values=node_rows))  # type: ignore[no-untyped-call]
    x = alt.X("x:Q", scale=x_scale, axis=None)
    y = alt.Y("y:Q", scale=y_scale, axis=None)
    colour = alt.Color(
        "status:N",
        scale=alt.Scale(domain=list(STATUS_COLOURS), range=list(STATUS_COLOURS.values())),
        legend=alt.Legend(title=None, orient="bottom", columns=3),
    )
    layers: list[Any] = []
    if edge_rows:
        layers.append(
            alt.Chart(alt.Data(values=edge_rows))  # type: ignore[no-untyped-call]
            .mark_rule()
            .encode(
                alt.X("x:Q", scale=x_scale, axis=None),
                alt.Y("y:Q", scale=y_scale, axis=None),
                x2="x2:Q",
                y2="y2:Q",
                color=alt.Color(
                    "taken:N", scale=alt.Scale(domain=["taken", "not taken"], range=["#1a7f37", "#d0d7de"]), legend=None
                ),
                strokeWidth=alt.StrokeWidth(
                    "taken:N", scale=alt.Scale(domain=["taken", "not taken"], range=[3, 1.5]), legend=None
                ),
            )
        )
    tooltip = ["label:N", "status:N", "step:N", "name:N", "args:N"]
    layers.append(nodes.mark_point(filled=True, size=260, opacity=1).encode(x, y, colour, tooltip=tooltip))
    layers.append(nodes.mark_text(dy=-17, fontSize=11).encode(x, y, text="label:N"))
    layers.append(nodes.mark_text(dy=19, fontSize=10, color="#57606a").encode(x, y, text="step:N"))
    chart = (
        alt.layer(*layers, title=title)
        .resolve_scale(color="independent", strokeWidth="independent")
        .properties(width=max(220, LAYER_WIDTH * columns), height=ROW_HEIGHT * rows)
    )
    return chart.to_dict()  # type: ignore[no-any-return]


def step_rows(unit: SampleScore) -> list[list[Cell]]:
    """The task's steps as table rows: step, model call, gold node(s) matched, optimal so far, verdict, reason."""
    nodes = unit.metadata["gold_graph"]["nodes"]

    def named(ids: Sequence[int]) -> str:
        return ", ".join(f"{i} {nodes[int(i)]['name']}" for i in ids)

    out: list[list[Cell]] = []
    for entry in unit.metadata.get("path") or []:
        if entry["nodes"] is not None:
            gold = named(entry["nodes"])
        else:
            gold = "none" + (f" (expected: {named(entry['expected'])})" if entry.get("expected") else "")
        optimal = None if entry["optimal"] is None else ("yes" if entry["optimal"] else "no")
        out.append([entry["step"], _model_step_text(entry), gold, optimal, entry["verdict"], entry["reason"]])
    return out


STEP_COLUMNS = ["step", "model call", "gold node(s) matched", "still optimal", "verdict", "reason"]


def sample_panels(units: Sequence[SampleScore]) -> list[Panel]:
    """Per task of the session: its gold DAG with the path taken, and its steps as a table."""
    epochs = len({u.epoch for u in units}) > 1
    panels: list[Panel] = []
    ordered = sorted(units, key=lambda u: (int(u.metadata.get("task", 0)), u.epoch))
    for unit in ordered:
        if "gold_graph" not in unit.metadata:
            continue  # a verdict made before the path was recorded
        title = _unit_title(unit, epochs)
        slug = f"task-{unit.metadata.get('task')}" + (f"-e{unit.epoch}" if epochs else "")
        min_steps = unit.metadata["gold_graph"]["min_steps"]
        count = len(unit.metadata.get("path") or [])
        steps = f"{count} step" + ("" if count == 1 else "s")
        panels.append(
            ChartPanel(
                name=f"{slug}-graph",
                title=f"{title}: path through the gold call graph",
                spec=graph_chart(unit, f"{title}: {unit.scores.get('label', '')} in {steps} (fewest {min_steps})"),
                note=f"fewest steps {min_steps}; nodes placed by dependency depth, left to right",
            )
        )
        rows = step_rows(unit)
        panels.append(
            TablePanel(
                name=f"{slug}-steps",
                title=f"{title}: steps",
                columns=STEP_COLUMNS,
                rows=rows,
                note=None if rows else "no step logged (the session has no log for this task)",
            )
        )
    return panels


def how_it_failed(unit: SampleScore) -> str | None:
    """How a failed task left the gold graph: ``left the graph``, ``wrong arguments`` or ``no log``; None if correct."""
    if unit.value == 1.0:
        return None
    path = unit.metadata.get("path") or []
    left = _left_step(path)
    if left is not None:
        return str(left["verdict"])
    return NO_LOG if not path else "left the graph"


def _reached(unit: SampleScore) -> float | None:
    """Share of the task's gold nodes matched before the step where it failed."""
    nodes = unit.metadata["gold_graph"]["nodes"]
    path = unit.metadata.get("path") or []
    left = _left_step(path)
    stop = left["step"] if left is not None else len(path)
    matched = {int(n) for e in path if e["step"] < stop for n in e.get("nodes") or []}
    return len(matched) / len(nodes) if nodes else None


def run_panels(results: EvalResults, units: Sequence[SampleScore]) -> list[Panel]:
    """Where failed tasks left the gold graph (failing step by task type) and how, per task type."""
    import altair as alt

    failed = [u for u in units if u.value != 1.0 and "gold_graph" in u.metadata]
    if not failed:
        return []
    types: list[str] = [t for t in TASK_TYPES if any(u.metadata.get("task_type") == t for u in failed)]
    types += sorted({str(u.metadata.get("task_type")) for u in failed} - set(types))
    at: Counter[tuple[str, str]] = Counter()
    for unit in failed:
        step = unit.scores.get("failing_step")
        at[(str(unit.metadata.get("task_type")), NO_LOG if step is None else f"step {step}")] += 1
    columns = sorted({c for _, c in at}, key=lambda c: (c == NO_LOG, int(c.split()[1]) if c != NO_LOG else 0))
    cells = [{"task_type": t, "where": c, "tasks": n} for (t, c), n in at.items()]
    base = alt.Chart(alt.Data(values=cells), title="failed tasks by the step where they failed")  # type: ignore[no-untyped-call]
    heat = base.mark_rect().encode(
        alt.X("where:N", sort=columns, title="failing step", axis=alt.Axis(labelAngle=0)),
        alt.Y("task_type:N", sort=types, title=None, axis=alt.Axis(labelLimit=220)),
        alt.Color("tasks:Q", title="tasks", scale=alt.Scale(scheme="blues")),
        tooltip=["task_type:N", "where:N", "tasks:Q"],
    )
    top = max(at.values())
    text = base.mark_text(fontSize=11).encode(
        alt.X("where:N", sort=columns),
        alt.Y("task_type:N", sort=types),
        alt.Text("tasks:Q"),
        color=alt.condition(f"datum.tasks > {top / 2}", alt.value("white"), alt.value("black")),
    )
    chart = (heat + text).properties(width=alt.Step(56), height=alt.Step(30))
    hows = ("left the graph", "wrong arguments", NO_LOG)
    by_type: dict[str, list[SampleScore]] = defaultdict(list)
    for unit in failed:
        by_type[str(unit.metadata.get("task_type"))].append(unit)
    table: list[list[Cell]] = []
    for task_type in types:
        group = by_type[task_type]
        counts = Counter(how_it_failed(u) for u in group)
        reached = [r for u in group if (r := _reached(u)) is not None]
        share = round(sum(reached) / len(reached), 3) if reached else None
        table.append([task_type, len(group), *(counts.get(h, 0) for h in hows), share])
    return [
        ChartPanel(
            name="failing-steps",
            title="where failed tasks left the gold graph",
            spec=chart.to_dict(),
            note="failed tasks (every epoch) by task type and the 0-based step where they failed; "
            "'no log': the session has no log for the task",
        ),
        TablePanel(
            name="how-tasks-failed",
            title="how failed tasks left the gold graph, by task type",
            columns=["task type", "failed", *hows, "gold nodes reached (mean share)"],
            rows=table,
            note="left the graph: no live candidate step had the step's action names (or an empty or unparsable "
            "reply); wrong arguments: the names matched, the argument check failed; gold nodes reached: matched "
            "before the failing step",
        ),
    ]
