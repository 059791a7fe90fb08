"""A run's charts: Vega-Lite specs made with altair, rendered to SVG here and offline with vl-convert.

Every breakdown (``Metric.by``) gets a bar chart of its rates per group (the headline metrics when the
breakdown has them; its counts when it has no rate, as an error taxonomy); the funnels (Tool-Genesis's
cascade, ToolGate's gate funnel) are drawn as counts per step, in order. The SVG text is made by
vl-convert, which escapes the data's text; the front end still parses it as an XML document and drops
scripts and event attributes before showing it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from toolgauge.results import EvalResults, Metric

# Breakdowns that are a funnel: the count metric drawn per step, in the order the steps are stored.
FUNNELS = {"cascade": "servers", "funnel": "funnel_passed"}
# Rates drawn per breakdown when it has no headline metric among them.
MAX_SERIES = 6
# More groups than this: horizontal bars (labels stay readable).
HORIZONTAL_AFTER = 12
BAR_STEP = 18
SHORT_LABEL = 10
# An interval chart's panel per metric: its width, and panels per row (six metrics fit 1,400 px in two rows).
INTERVAL_WIDTH = 240
INTERVAL_COLUMNS = 3


@dataclass(frozen=True)
class ChartSpec:
    """One chart of a run: a name unique in the run (for URLs), a title and its Vega-Lite spec."""

    name: str
    title: str
    spec: dict[str, Any]


def run_charts(results: EvalResults, headline: tuple[str, ...] = ()) -> list[ChartSpec]:
    """The run's charts: one per breakdown that has something to draw."""
    charts = []
    for by in results.breakdowns():
        metrics = [m for m in results.metrics if m.by == by and m.group is not None and m.value is not None]
        chart = _funnel(by, metrics) if by in FUNNELS else _bars(by, metrics, headline)
        if chart is not None:
            charts.append(chart)
    return charts


def breakdown_chart(by: str, metrics: list[Metric]) -> ChartSpec | None:
    """One breakdown's grouped bars (a group per ``Metric.group``, a bar per metric), as a run page draws it."""
    return _bars(by, metrics, ())


def funnel_chart(metrics: list[Metric]) -> ChartSpec | None:
    """Tool-Genesis's cascade (``servers`` per step, ``by="cascade"``), as a run page draws it."""
    return _funnel("cascade", metrics)


def _whole_axis() -> Any:
    import altair as alt

    return alt.Axis(tickMinStep=1, format="d")


def _bars(by: str, metrics: list[Metric], headline: tuple[str, ...]) -> ChartSpec | None:
    import altair as alt

    drawn = [m for m in metrics if m.kind == "rate" and isinstance(m.value, int | float) and 0 <= m.value <= 1]
    is_rate = bool(drawn)
    if not is_rate:  # a breakdown of counts only (an error taxonomy): its counts
        drawn = [m for m in metrics if m.kind == "count" and isinstance(m.value, int | float)]
    if not drawn:
        return None
    names = list(dict.fromkeys(m.name for m in drawn))
    shown = [n for n in headline if n in names] or names[:MAX_SERIES]
    rows = [{"group": m.group, "metric": m.name, "value": m.value, "n": m.n} for m in drawn if m.name in shown]
    groups = list(dict.fromkeys(str(r["group"]) for r in rows))
    horizontal = len(groups) > HORIZONTAL_AFTER
    # Short labels read level under their bars; longer ones slanted.
    angle = 0 if horizontal or max(map(len, groups)) <= SHORT_LABEL else -40
    group = alt.X if not horizontal else alt.Y
    value = alt.Y if not horizontal else alt.X
    offset = alt.XOffset if not horizontal else alt.YOffset
    whole = {} if is_rate else {"axis": _whole_axis()}
    chart = (
        alt.Chart(_inline(rows), title=f"by {by}")
        .mark_bar()
        .encode(
            group("group:N", sort=groups, title=by, axis=alt.Axis(labelLimit=220, labelAngle=angle)),
            value(
                "value:Q",
                **whole,
                scale=alt.Scale(domain=[0, 1]) if is_rate else alt.Undefined,
                title="rate" if is_rate else "count",
            ),
            offset("metric:N", sort=shown),
            alt.Color("metric:N", sort=shown, title="metric"),
            tooltip=["group:N", "metric:N", alt.Tooltip("value:Q", format=".3f"), "n:Q"],
        )
    )
    # With an offset channel the step is the width of one bar: a group is as wide as its metrics.
    bar = alt.Step(BAR_STEP)
    chart = chart.properties(height=bar) if horizontal else chart.properties(width=bar, height=220)
    return ChartSpec(name=f"by-{by}", title=f"by {by}", spec=chart.to_dict())


def _funnel(by: str, metrics: list[Metric]) -> ChartSpec | None:
    import altair as alt

    wanted = FUNNELS[by]
    rows = [{"step": m.group, "count": m.value, "entered": m.n} for m in metrics if m.name == wanted]
    if not rows:
        return None
    steps = [str(r["step"]) for r in rows]
    chart = (
        alt.Chart(_inline(rows), title=f"{by}: {wanted} per step")
        .mark_bar()
        .encode(
            alt.Y("step:N", sort=steps, title=None, axis=alt.Axis(labelLimit=260)),
            alt.X("count:Q", title=wanted, axis=_whole_axis()),
            tooltip=["step:N", "count:Q", "entered:Q"],
        )
        .properties(height=alt.Step(BAR_STEP + 4), width=360)
    )
    text = chart.mark_text(align="left", dx=3).encode(text="count:Q")
    return ChartSpec(name=f"funnel-{by}", title=f"{by} funnel", spec=(chart + text).to_dict())


ERROR_CLASSES = "error-classes"


def error_class_chart(counts: dict[str, int]) -> ChartSpec | None:
    """The run's failing units per error class (the benchmark's error types or failure classes), most first."""
    import altair as alt

    if not counts:
        return None
    rows = [{"error_class": name, "units": n} for name, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]
    order = [str(r["error_class"]) for r in rows]
    chart = (
        alt.Chart(_inline(rows), title="failing units by error class")
        .mark_bar(color="#cf222e")
        .encode(
            alt.Y("error_class:N", sort=order, title=None, axis=alt.Axis(labelLimit=260)),
            alt.X("units:Q", title="units", axis=_whole_axis()),
            tooltip=["error_class:N", "units:Q"],
        )
        .properties(height=alt.Step(BAR_STEP + 4), width=360)
    )
    text = chart.mark_text(align="left", dx=3, color="#1d2430").encode(text="units:Q")
    return ChartSpec(name=ERROR_CLASSES, title="error classes", spec=(chart + text).to_dict())


INTERVALS = "intervals"


@dataclass(frozen=True)
class IntervalPoint:
    """One model's (or run's) value of one metric with its 95% interval (either bound None: no interval)."""

    label: str
    metric: str
    value: float
    low: float | None = None
    high: float | None = None


def interval_chart(points: list[IntervalPoint], title: str) -> ChartSpec | None:
    """Each model's value as a point with its 95% interval as a line, one row per model, one panel per metric.

    Rates are drawn on [0, 1]; the models keep the order given (a leaderboard's ranking).
    """
    import altair as alt

    drawn = [p for p in points if isinstance(p.value, int | float)]
    if not drawn:
        return None
    rows = [{"label": p.label, "metric": p.metric, "value": p.value,
             "low": p.value if p.low is None else p.low, "high": p.value if p.high is None else p.high}
            for p in drawn]  # fmt: skip
    labels = list(dict.fromkeys(p.label for p in drawn))
    metrics = list(dict.fromkeys(p.metric for p in drawn))
    unit = all(0 <= v <= 1 for p in drawn for v in (p.value, p.low, p.high) if v is not None)
    scale = alt.Scale(domain=[0, 1]) if unit else alt.Scale(zero=False)
    y = alt.Y("label:N", sort=labels, title=None, axis=alt.Axis(labelLimit=220))
    base = alt.Chart().encode(y)  # the data is the facet's
    rule = base.mark_rule(strokeWidth=2, color="#667085").encode(
        alt.X("low:Q", scale=scale, title="value and 95% interval"), alt.X2("high:Q")
    )
    point = base.mark_point(filled=True, size=60, color="#0b5cad").encode(
        alt.X("value:Q", scale=scale),
        tooltip=["label:N", "metric:N", alt.Tooltip("value:Q", format=".4f"), alt.Tooltip("low:Q", format=".4f"),
                 alt.Tooltip("high:Q", format=".4f")],
    )  # fmt: skip
    layered = (rule + point).properties(width=INTERVAL_WIDTH, height=alt.Step(BAR_STEP + 4))
    chart = layered.facet(
        facet=alt.Facet("metric:N", sort=metrics, title=None, header=alt.Header(labelFontWeight="bold")),
        columns=INTERVAL_COLUMNS,
        data=_inline(rows),
        title=title,
    )
    return ChartSpec(name=INTERVALS, title=title, spec=chart.to_dict())


def _inline(rows: list[dict[str, Any]]) -> Any:
    """The rows as Vega-Lite inline data (no pandas needed)."""
    import altair as alt

    return alt.Data(values=rows)  # type: ignore[no-untyped-call]


def render_svg(spec: dict[str, Any]) -> str:
    """The chart as SVG text, rendered in-process without any network access."""
    import vl_convert

    return str(vl_convert.vegalite_to_svg(spec))


def warm_up() -> None:
    """Make and draw a small chart before the first request: altair's import and vl-convert's engine take 2 s.

    Without it the first chart a page asks for would wait for both.
    """
    made = error_class_chart({"warm-up": 1})
    if made is not None:
        render_svg(made.spec)
