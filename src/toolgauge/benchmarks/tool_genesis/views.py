"""Tool-Genesis's viewer panels: how far each server got (L1–L4) and its unit tests per reference tool.

Pure functions of each server unit's ``scores`` and ``metadata`` (``server_sample_score``): ``reached`` (the
levels the server got to), ``failures`` (per level not passed, why), ``L2`` (the schema matches), ``L3.tools``
(the unit tests per reference tool, :func:`~toolgauge.benchmarks.tool_genesis.protocol.unit_tests_by_tool`) and
``L4`` (``skipped``, ``tasks``). A level's status for a server:

- ``passed``: reached and not failed;
- ``stopped``: the level where the server stopped (reached, failed), with the reason;
- ``not run``: L4 when its tasks did not run (the run skipped L4, or the server has no task examples);
- ``not reached``: after the level where the server stopped.

The highest level passed is the last level passed, ``L0`` when the server did not pass L1.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from toolgauge.panels import Cell, ChartPanel, Panel, TablePanel
from toolgauge.results import EvalResults, SampleScore

LEVELS = ("L1", "L2", "L3", "L4")
LevelStatus = Literal["passed", "stopped", "not run", "not reached"]
STATUS_COLORS: dict[str, str] = {
    "passed": "#2da44e",
    "stopped": "#cf222e",
    "not run": "#afb8c1",
    "not reached": "#eaeef2",
}
# The per-server scores shown beside the levels (the headline metrics and SR_hard), where the unit has them.
SERVER_SCORES = ("compliance", "server_execution", "schema_f1", "ut_soft", "ut_hard", "sr_soft", "sr_hard")
# How a unit test ended, from its per-tool counts: the order stacked in the chart.
TEST_OUTCOMES = ("hard pass", "called, not hard-passed", "not built", "not run")
TEST_COLORS = ("#2da44e", "#cf222e", "#bf8700", "#afb8c1")
ROW_STEP = 14


def _levels(unit: SampleScore) -> tuple[list[str], dict[str, str]]:
    reached = [str(level) for level in unit.metadata.get("reached") or []]
    failures = {str(k): str(v) for k, v in (unit.metadata.get("failures") or {}).items()}
    return reached, failures


def _l4_not_run(unit: SampleScore) -> bool:
    l4 = unit.metadata.get("L4") or {}
    return bool(l4.get("skipped")) or l4.get("tasks") is None


def level_status(unit: SampleScore, level: str) -> LevelStatus:
    """What became of ``level`` for the server of ``unit`` (see the module docstring)."""
    reached, failures = _levels(unit)
    if level not in reached:
        return "not reached"
    if level not in failures:
        return "passed"
    return "not run" if level == "L4" and _l4_not_run(unit) else "stopped"


def highest_passed(unit: SampleScore) -> str:
    """The last level the server passed (``L0``: none)."""
    reached, failures = _levels(unit)
    passed = [level for level in reached if level not in failures]
    return passed[-1] if passed else "L0"


def stop_of(unit: SampleScore) -> tuple[str | None, str | None]:
    """Where the server stopped (the first level it reached and did not pass) and why; (None, None) if nowhere."""
    reached, failures = _levels(unit)
    stop = next((level for level in reached if level in failures), None)
    return stop, (failures[stop] if stop is not None else None)


def tools_of(unit: SampleScore) -> dict[str, dict[str, Any]]:
    """The unit's unit tests per reference tool (``metadata["L3"]["tools"]``), empty when it has none."""
    tools = (unit.metadata.get("L3") or {}).get("tools") or {}
    return {str(name): found for name, found in tools.items() if isinstance(found, dict)}


def _num(value: Any) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


def tool_row(name: str, tool: dict[str, Any]) -> list[Cell]:
    """One reference tool's unit-test figures: the generated tool, the counts, and the rates over called tests."""
    called = int(_num(tool.get("called")))
    hard, soft = int(_num(tool.get("hard_passed"))), _num(tool.get("soft_sum"))
    return [
        name,
        tool.get("pred_tool"),
        int(_num(tool.get("tests"))),
        called,
        int(_num(tool.get("not_built"))),
        int(_num(tool.get("not_run"))),
        hard,
        round(hard / called, 4) if called else None,
        round(soft / called, 4) if called else None,
    ]


TOOL_COLUMNS = ["tool", "generated tool", "tests", "called", "not built", "not run", "hard passed",
                "hard pass rate (of called)", "mean soft (of called)"]  # fmt: skip
TOOL_NOTE = (
    "Per reference tool: its unit tests, routed to the generated tool matched to it at L2 (none: not built). "
    "hard pass rate = hard passed / called; mean soft = sum of the called tests' soft scores / called. "
    "The server's UT figures divide by the variant's total (docs/metrics/tool-genesis.md), not per tool."
)


def _ordered(units: Sequence[SampleScore]) -> list[SampleScore]:
    """Servers by highest level passed (best first), then by id."""
    return sorted(units, key=lambda u: (-int(highest_passed(u)[1:]), u.id, u.epoch))


def _label(unit: SampleScore, epochs: bool) -> str:
    return f"{unit.id} (try {unit.epoch})" if epochs else unit.id


def run_panels(results: EvalResults, units: Sequence[SampleScore]) -> list[Panel]:
    """Each server's levels (a grid and a table with the stop reason) and its unit tests (a chart and a table)."""
    del results  # the panels are made from the units alone
    servers = _ordered([u for u in units if "reached" in u.metadata])
    if not servers:
        return []
    # A registry's tries are samples of their own (``<slug>@e<e>``); tries that share an id are told apart by epoch.
    epochs = len({u.id for u in servers}) < len(servers)
    panels: list[Panel] = [level_chart(servers, epochs), level_table(servers, epochs)]
    tested = [u for u in servers if tools_of(u)]
    if tested:
        panels.append(unit_test_chart(tested, epochs))
    panels.append(
        TablePanel(
            name="unit-tests-by-tool",
            title="unit tests per reference tool",
            columns=["server", *TOOL_COLUMNS],
            rows=[[_label(u, epochs), *tool_row(name, tool)] for u in tested for name, tool in tools_of(u).items()],
            note=TOOL_NOTE if tested else "No server reached its unit tests (L3).",
        )
    )
    return panels


def level_chart(servers: Sequence[SampleScore], epochs: bool) -> ChartPanel:
    """A grid: one row per server, one cell per level, coloured by what became of the level."""
    import altair as alt

    rows = []
    for unit in servers:
        stop, reason = stop_of(unit)
        for level in LEVELS:
            status = level_status(unit, level)
            rows.append({"server": _label(unit, epochs), "level": level, "status": status,
                         "why": reason if level == stop else None, "highest": highest_passed(unit)})  # fmt: skip
    order = list(dict.fromkeys(str(r["server"]) for r in rows))
    chart = (
        alt.Chart(alt.Data(values=rows), title="levels per server")  # type: ignore[no-untyped-call]
        .mark_rect(stroke="white", strokeWidth=1)
        .encode(
            alt.X("level:O", sort=list(LEVELS), title=None, axis=alt.Axis(orient="top", labelAngle=0)),
            alt.Y("server:N", sort=order, title=None, axis=alt.Axis(labelLimit=260)),
            alt.Color(
                "status:N",
                scale=alt.Scale(domain=list(STATUS_COLORS), range=list(STATUS_COLORS.values())),
                title="status",
            ),
            tooltip=["server:N", "level:N", "status:N", "why:N", alt.Tooltip("highest:N", title="highest passed")],
        )
        .properties(width=alt.Step(48), height=alt.Step(ROW_STEP))
    )
    return ChartPanel(
        name="levels",
        title="levels reached per server",
        spec=chart.to_dict(),
        note="passed; stopped (the level where the server stopped, reason in the tooltip and the table); "
        "not run (L4 tasks not run); not reached. Best servers first.",
    )


def level_table(servers: Sequence[SampleScore], epochs: bool) -> TablePanel:
    """One row per server: its highest level passed, where and why it stopped, and its per-server scores."""
    shown = [name for name in SERVER_SCORES if any(name in u.scores for u in servers)]
    rows: list[list[Cell]] = []
    for unit in servers:
        stop, reason = stop_of(unit)
        scores: list[Cell] = []
        for name in shown:
            value = unit.scores.get(name)
            scores.append(round(value, 4) if isinstance(value, float) else value)
        rows.append([_label(unit, epochs), highest_passed(unit), stop, reason, *scores])
    return TablePanel(
        name="levels-table",
        title="levels per server: where each stopped and why",
        columns=["server", "highest level passed", "stopped at", "reason", *shown],
        rows=rows,
    )


def outcome_counts(unit: SampleScore) -> dict[str, int]:
    """The server's unit tests by outcome (summed over its reference tools), in :data:`TEST_OUTCOMES` order."""
    totals = dict.fromkeys(TEST_OUTCOMES, 0)
    for tool in tools_of(unit).values():
        called, hard = int(_num(tool.get("called"))), int(_num(tool.get("hard_passed")))
        totals["hard pass"] += hard
        totals["called, not hard-passed"] += called - hard
        totals["not built"] += int(_num(tool.get("not_built")))
        totals["not run"] += int(_num(tool.get("not_run")))
    return totals


def unit_test_chart(servers: Sequence[SampleScore], epochs: bool) -> ChartPanel:
    """Stacked bars: each server's unit tests by outcome."""
    import altair as alt

    rows = [
        {"server": _label(u, epochs), "outcome": outcome, "tests": n, "order": TEST_OUTCOMES.index(outcome)}
        for u in servers
        for outcome, n in outcome_counts(u).items()
        if n
    ]
    order = [_label(u, epochs) for u in servers]
    chart = (
        alt.Chart(alt.Data(values=rows), title="unit tests per server")  # type: ignore[no-untyped-call]
        .mark_bar()
        .encode(
            alt.Y("server:N", sort=order, title=None, axis=alt.Axis(labelLimit=260)),
            alt.X("tests:Q", title="unit tests", stack="zero", axis=alt.Axis(tickMinStep=1, format="d")),
            alt.Color(
                "outcome:N", scale=alt.Scale(domain=list(TEST_OUTCOMES), range=list(TEST_COLORS)), title="outcome"
            ),
            alt.Order("order:Q"),
            tooltip=["server:N", "outcome:N", "tests:Q"],
        )
        .properties(width=360, height=alt.Step(ROW_STEP))
    )
    return ChartPanel(
        name="unit-tests",
        title="unit tests per server",
        spec=chart.to_dict(),
        note="Each server's unit tests (L3) by outcome: hard pass, called but not hard-passed, not built (no "
        "generated tool matched its reference tool), not run (the server had died).",
    )


# --- a server's page -----------------------------------------------------------------------------------------


def sample_panels(units: Sequence[SampleScore]) -> list[Panel]:
    """A server's cascade, its L2 schema match and tool map, its unit tests per tool and each unit test."""
    panels: list[Panel] = []
    for unit in units:
        if "reached" not in unit.metadata:
            continue
        panels.append(cascade_table(unit))
        panels.append(schema_table(unit))
        panels.append(tool_map_table(unit))
        tools = tools_of(unit)
        if tools:
            panels.append(
                TablePanel(
                    name="unit-tests-by-tool",
                    title="unit tests per reference tool",
                    columns=TOOL_COLUMNS,
                    rows=[tool_row(name, tool) for name, tool in tools.items()],
                    note=TOOL_NOTE,
                )
            )
            panels.append(unit_test_table(tools))
    return panels


def _figures(unit: SampleScore, names: Sequence[str]) -> str:
    parts = []
    for name in names:
        value = unit.scores.get(name)
        if value is not None:
            parts.append(f"{name} {round(value, 4) if isinstance(value, float) else value}")
    return ", ".join(parts)


LEVEL_FIGURES: dict[str, tuple[str, ...]] = {
    "L1": ("compliance", "compliance_mcp_valid", "server_execution", "launches", "launch_attempts"),
    "L2": ("schema_f1", "schema_f1_live"),
    "L3": ("ut_soft", "ut_hard", "unit_tests_counted"),
    "L4": ("sr_soft", "sr_hard", "sr_oracle_normalized", "tasks"),
}


def cascade_table(unit: SampleScore) -> TablePanel:
    """Each level: what became of it, why it stopped there, and the server's scores of that level."""
    _, failures = _levels(unit)
    l3 = unit.metadata.get("L3") or {}
    l4 = unit.metadata.get("L4") or {}
    extra = {"L3": f"aborted: {l3['abort']}" if l3.get("abort") else None,
             "L4": f"skipped: {l4['skipped']}" if l4.get("skipped") else None}  # fmt: skip
    rows: list[list[Cell]] = []
    for level in LEVELS:
        status = level_status(unit, level)
        failure = failures.get(level) if status in ("stopped", "not run") else None
        why = "; ".join(text for text in (failure, extra.get(level)) if text) or None
        rows.append([level, status, why, _figures(unit, LEVEL_FIGURES[level])])
    return TablePanel(
        name="cascade",
        title=f"cascade: {unit.explanation or highest_passed(unit)}",
        columns=["level", "status", "why", "scores"],
        rows=rows,
        note="A level's scores are 0 when L1 failed (the official pipeline computes none of them).",
    )


SCHEMA_SOURCES = (("schema file", "schema_file"), ("live tools/list", "live"))


def schema_table(unit: SampleScore) -> TablePanel:
    """L2: Schema-F1 and its parts for the schema file and for the live tool list."""
    l2 = unit.metadata.get("L2") or {}
    rows: list[list[Cell]] = []
    for source, key in SCHEMA_SOURCES:
        match = l2.get(key)
        if not isinstance(match, dict):
            rows.append([source, None, None, None, None, "not computed"])
            continue
        rows.append([source, _round(match.get("tool_f1")), _round(match.get("args_f1")),
                     _round(match.get("schema_f1")), len(match.get("tool_map") or {}), None])  # fmt: skip
    live_tools = l2.get("live_tools") or []
    return TablePanel(
        name="schema-match",
        title="L2 schema match",
        columns=["from", "tool F1", "args F1", "Schema-F1", "tools matched", "note"],
        rows=rows,
        note=f"Live tools listed: {len(live_tools)}." if live_tools else "No live tool list.",
    )


def tool_map_table(unit: SampleScore) -> TablePanel:
    """Which generated tool took each reference tool (and how many of its arguments), by schema file and live list.

    The reference tools are the matched ones and those with unit tests (an unmatched one has its tests not built).
    """
    l2 = unit.metadata.get("L2") or {}
    by_source: list[tuple[dict[str, str], dict[str, Any]]] = []
    for _, key in SCHEMA_SOURCES:
        found = l2.get(key)
        match: dict[str, Any] = found if isinstance(found, dict) else {}
        by_source.append(
            ({str(ref): str(pred) for pred, ref in (match.get("tool_map") or {}).items()}, match.get("arg_maps") or {})
        )
    references = sorted({*by_source[0][0], *by_source[1][0], *tools_of(unit)})
    rows: list[list[Cell]] = []
    for ref in references:
        row: list[Cell] = [ref]
        for taken, arg_maps in by_source:
            pred = taken.get(ref)
            row += [pred, len(arg_maps.get(ref) or {}) if pred is not None else None]
        rows.append(row)
    return TablePanel(
        name="tool-map",
        title="L2 tool map: reference tool -> generated tool",
        columns=[
            "reference tool",
            "generated (schema file)",
            "args matched (schema file)",
            "generated (live)",
            "args matched (live)",
        ],
        rows=rows,
        note="Empty: no generated tool matched the reference tool (its unit tests are not built).",
    )


def _round(value: Any) -> Cell:
    return round(value, 4) if isinstance(value, float) else value if isinstance(value, int) else None


def unit_test_table(tools: dict[str, dict[str, Any]]) -> TablePanel:
    """Each unit test of the server: its reference tool, index, status, hard pass, soft score and why it failed."""
    rows: list[list[Cell]] = []
    for name, tool in tools.items():
        for test in tool.get("results") or []:
            if isinstance(test, dict):
                rows.append([name, test.get("index"), test.get("status"), test.get("hard_pass"),
                             _round(test.get("soft")), test.get("reason")])  # fmt: skip
    return TablePanel(
        name="unit-tests",
        title="unit tests",
        columns=["tool", "test", "status", "hard pass", "soft", "why"],
        rows=rows,
    )
