"""The viewer's charts (altair specs rendered to SVG by vl-convert) and its verdict labels, on typed results."""

from __future__ import annotations

import re

import pytest

from helpers.view_runs import skip_or_fail_without, view_missing
from toolgauge.results import EvalResults, Metric, MetricSummary, SampleScore
from toolgauge.view.data import breakdown_tables, error_class_of, overall_rows, verdict_of

skip_or_fail_without(view_missing(browser=False))
pytestmark = pytest.mark.slow  # vl-convert renders each chart in a second or so

from toolgauge.view.charts import render_svg, run_charts  # noqa: E402


def bars(svg: str) -> int:
    return len(re.findall(r'aria-roledescription="bar"', svg))


def test_a_breakdown_of_rates_is_one_bar_per_group_and_headline_metric():
    results = EvalResults(
        benchmark="bfcl",
        metrics=[
            Metric(name="accuracy", value=0.5, n=10),
            *(
                Metric(name="accuracy", value=v, group=g, by="category", n=5)
                for g, v in (("simple", 0.8), ("multiple", 0.2))
            ),
            *(Metric(name="other", value=0.1, group=g, by="category", n=5) for g in ("simple", "multiple")),
            Metric(name="count", value=3, group="simple", by="category", kind="count"),
        ],
    )
    [chart] = run_charts(results, headline=("accuracy",))
    assert chart.name == "by-category"
    svg = render_svg(chart.spec)
    assert svg.startswith("<svg") and bars(svg) == 2 and "simple" in svg and "multiple" in svg
    assert "other" not in svg  # the headline metric only, when the breakdown has it
    [without_headline] = run_charts(results)
    assert bars(render_svg(without_headline.spec)) == 4


def test_a_breakdown_of_counts_only_draws_its_counts_and_many_groups_go_horizontal():
    groups = [f"class-{i}" for i in range(20)]
    results = EvalResults(
        benchmark="wildtoolbench",
        metrics=[
            Metric(name="failed_tasks", value=i, group=g, by="error_class", kind="count") for i, g in enumerate(groups)
        ],
    )
    [chart] = run_charts(results)
    assert chart.spec["encoding"]["y"]["field"] == "group"  # 20 groups: labels on the y axis
    svg = render_svg(chart.spec)
    assert bars(svg) == 20 and "class-19" in svg


def test_the_funnels_are_counts_per_step_in_their_order():
    cascade = [("Start", 10), ("L1", 8), ("L2", 5), ("L3", 2), ("L4", 1)]
    results = EvalResults(
        benchmark="tool-genesis",
        metrics=[
            *(Metric(name="servers", value=n, group=s, by="cascade", kind="count") for s, n in cascade),
            *(Metric(name="fraction", value=n / 10, group=s, by="cascade") for s, n in cascade),
            Metric(name="funnel_passed", value=4, group="verified", by="funnel", n=6, kind="count"),
        ],
    )
    charts = {c.name: c for c in run_charts(results)}
    assert set(charts) == {"funnel-cascade", "funnel-funnel"}
    spec = charts["funnel-cascade"].spec
    assert spec["layer"][0]["encoding"]["y"]["sort"] == ["Start", "L1", "L2", "L3", "L4"]
    svg = render_svg(spec)
    assert bars(svg) == 5 and all(step in svg for step, _ in cascade)


def test_a_run_without_breakdowns_has_no_chart():
    assert run_charts(EvalResults(benchmark="suite", metrics=[Metric(name="success_rate", value=1.0)])) == []


def test_chart_text_from_the_data_is_escaped_in_the_svg():
    results = EvalResults(
        benchmark="x", metrics=[Metric(name="acc", value=0.5, group="<script>alert(1)</script>", by="category")]
    )
    svg = render_svg(run_charts(results)[0].spec)
    assert "<script>" not in svg and "&lt;script&gt;" in svg


def test_intervals_come_from_the_summary_over_repeats_or_the_metric():
    results = EvalResults(
        benchmark="suite",
        metrics=[Metric(name="a", value=0.5), Metric(name="b", value=0.7, ci_low=0.6, ci_high=0.8)],
        summary={"a": MetricSummary(mean=0.5, stderr=0.1, ci_low=0.3, ci_high=0.7, n=20, epochs=3)},
    )
    rows = {r["name"]: r for r in overall_rows(results, ("b",))}
    assert list(rows) == ["b", "a"]  # headline first
    assert (rows["a"]["ci_low"], rows["a"]["ci_high"], rows["a"]["epochs"]) == (0.3, 0.7, 3)
    assert (rows["b"]["ci_low"], rows["b"]["ci_high"], rows["b"]["headline"]) == (0.6, 0.8, True)


def test_breakdown_tables_have_a_row_per_group_and_a_column_per_metric():
    results = EvalResults(
        benchmark="mtu",
        metrics=[
            Metric(name="tool_accuracy", value=1.0, group="S-S", by="split", n=4),
            Metric(name="success_rate", value=0.5, group="M-S", by="split", n=2),
        ],
    )
    [table] = breakdown_tables(results)
    assert [m["name"] for m in table["metrics"]] == ["tool_accuracy", "success_rate"]
    assert [(r["group"], r["n"], r["values"]) for r in table["rows"]] == [
        ("S-S", 4, {"tool_accuracy": 1.0}),
        ("M-S", 2, {"success_rate": 0.5}),
    ]


@pytest.mark.parametrize(
    ("score", "verdict", "error_class"),
    [
        (SampleScore(id="a", sample="a", value=1.0), "pass", None),
        (SampleScore(id="a", sample="a", value=0.0, scores={"error_type": "wrong_tool"}), "fail", "wrong_tool"),
        (SampleScore(id="a", sample="a", value=0.5, scores={"failure_class": "args"}), "partial", "args"),
        (SampleScore(id="a", sample="a", value=0.0, explanation="L2: schema mismatch"), "fail", "L2"),
        (SampleScore(id="a", sample="a", value=0.0, error="boom"), "error", "run error"),
        (SampleScore(id="a", sample="a"), "unscored", None),
    ],
)
def test_verdicts_and_error_classes(score: SampleScore, verdict: str, error_class: str | None):
    assert verdict_of(score) == verdict
    assert error_class_of(score, verdict_of(score)) == error_class


def test_an_interval_chart_draws_a_point_and_an_interval_per_model_and_metric():
    from toolgauge.view.charts import IntervalPoint, interval_chart

    points = [
        IntervalPoint(f"{i + 1}. model-{i}", metric, 0.9 - i / 10, 0.8 - i / 10, 0.95 - i / 10)
        for i in range(3)
        for metric in ("success_rate", "turn_accuracy")
    ]
    chart = interval_chart(points, "suite: mean and 95% interval per model")
    assert chart is not None and chart.name == "intervals"
    svg = render_svg(chart.spec)
    assert len(re.findall(r'aria-roledescription="point"', svg)) == 6
    assert len(re.findall(r'aria-roledescription="rule mark"', svg)) == 6  # each interval's line
    assert len(re.findall(r'class="mark-rule role-mark', svg)) == 2  # in a panel per metric
    assert "1. model-0" in svg and "turn_accuracy" in svg and "success_rate" in svg
    # Rates on [0, 1]: the axis ends at 1.0, however narrow the intervals.
    assert ">1.0<" in svg
    # No value, no chart; a point without an interval is drawn as a point on a zero-length line.
    assert interval_chart([], "empty") is None
    lone = interval_chart([IntervalPoint("a", "m", 0.5)], "lone")
    assert lone is not None and len(re.findall(r'aria-roledescription="point"', render_svg(lone.spec))) == 1
