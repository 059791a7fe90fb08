"""A benchmark's own panels (``BenchmarkSpec.run_panels``/``sample_panels``) as the viewer and the report show them."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Sequence
from pathlib import Path

import pytest

from helpers.cli_helpers import invoke
from helpers.view_runs import skip_or_fail_without, view_missing, view_server
from toolgauge.panels import ChartPanel, Panel, TablePanel, TextPanel
from toolgauge.results import EvalResults, SampleScore

skip_or_fail_without(view_missing(browser=False))

HOSTILE = "<script>alert(1)</script>"


def run_panels(results: EvalResults, units: Sequence[SampleScore]) -> list[Panel]:
    import altair as alt

    passed = sum(1 for u in units if u.value == 1.0)
    rows = [{"verdict": "pass", "units": passed}, {"verdict": "other", "units": len(units) - passed}]
    chart = alt.Chart(alt.Data(values=rows)).mark_bar().encode(x="verdict:N", y="units:Q")  # type: ignore[no-untyped-call]
    return [
        ChartPanel(name="verdicts", title="units by verdict", spec=chart.to_dict()),
        TablePanel(name="units", title="units", columns=["unit", "value"], rows=[[u.id, u.value] for u in units]),
        TextPanel(name="count", title="count", text=f"{len(units)} units in {results.benchmark} {HOSTILE}"),
    ]


def sample_panels(units: Sequence[SampleScore]) -> list[Panel]:
    return [TablePanel(name="ids", title="ids", columns=["id"], rows=[[u.id] for u in units])]


def broken(*_args: object) -> list[Panel]:
    raise ValueError("no such branch")


@pytest.fixture(scope="module")
def store_url(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    url = f"sqlite:///{tmp_path_factory.mktemp('panels') / 's.db'}"
    res = invoke("eval", "suite", "--model", "gold", "--store", url, "--limit", "3", "-q", "--json")
    assert res.exit_code == 0, res.output
    return url, json.loads(res.stdout)["run"]["id"]


def view_data(url: str, run_builder: object, sample_builder: object):  # type: ignore[no-untyped-def]
    from toolgauge.cli.view import registry_benchmarks
    from toolgauge.store import open_store
    from toolgauge.view.data import Benchmarks, ViewData

    given = registry_benchmarks()
    benchmarks = Benchmarks(given.verdicts, given.headline, given.leaderboard, lambda _n: (run_builder, sample_builder))
    return ViewData(open_store(url), benchmarks)


def test_run_panels_come_rendered_charts_as_svg_tables_and_text_as_data(store_url: tuple[str, str]):
    url, run = store_url
    data = view_data(url, run_panels, sample_panels)
    found = data.run_panels(run)
    assert found["note"] is None
    chart, table, text = found["panels"]
    assert chart["kind"] == "chart" and chart["svg"].startswith("<svg") and "<rect" in chart["svg"]
    assert "spec" not in chart  # the page gets the drawing, not the spec
    assert table["columns"] == ["unit", "value"] and len(table["rows"]) == data.units(run).total > 3
    assert {row[1] for row in table["rows"]} == {1.0}  # the gold model passes every turn
    assert text["text"].endswith(HOSTILE)  # text stays text: the front end sets it with textContent


def test_a_sample_page_has_its_units_panels(store_url: tuple[str, str]):
    url, run = store_url
    data = view_data(url, run_panels, sample_panels)
    page = data.sample(run, "weather-001")
    assert page["panels"] == [
        {"kind": "table", "name": "ids", "title": "ids", "columns": ["id"], "rows": [["weather-001#0"]], "note": None}
    ]
    assert page["panels_note"] is None


def test_a_broken_view_is_a_note_not_a_broken_page(store_url: tuple[str, str]):
    url, run = store_url
    data = view_data(url, broken, broken)
    found = data.run_panels(run)
    assert found["panels"] == [] and found["note"] == "panels failed: ValueError: no such branch"
    page = data.sample(run, "weather-001")
    assert page["panels"] == [] and page["panels_note"] == "panels failed: ValueError: no such branch"
    assert page["units"]  # the rest of the page is there


def test_a_benchmark_without_views_has_none(store_url: tuple[str, str]):
    url, run = store_url
    data = view_data(url, None, None)
    assert data.run_panels(run) == {"panels": [], "note": None}
    assert data.sample(run, "weather-001")["panels"] == []


def test_the_report_embeds_the_run_panels(store_url: tuple[str, str]):
    from toolgauge.store import open_store
    from toolgauge.view.html_report import report_data

    url, run = store_url
    data = view_data(url, run_panels, sample_panels)
    payload = report_data(open_store(url), run, data.benchmarks, transcripts=1)
    assert [p["name"] for p in payload["panels"]["panels"]] == ["verdicts", "units", "count"]


def test_the_server_answers_a_runs_panels(store_url: tuple[str, str], tmp_path: Path):
    url, run = store_url
    with view_server(url) as base, urllib.request.urlopen(f"{base}api/runs/{run}/panels", timeout=60) as response:
        answer = json.loads(response.read())
    # The suite registers no views of its own: an empty list, not an error.
    assert answer == {"panels": [], "note": None}
