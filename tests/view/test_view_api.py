"""``toolgauge view`` as a real server on 127.0.0.1: its JSON, its charts, its headers and its token check."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import pytest

from helpers.cli_helpers import invoke
from helpers.view_runs import (
    HOSTILE_ID,
    KNOWN_SAMPLE,
    Runs,
    SweepRuns,
    chart_sweep_report,
    make_runs,
    make_sweep,
    skip_or_fail_without,
    view_missing,
    view_server,
)
from toolgauge.cli.view import access_token

skip_or_fail_without(view_missing(browser=False))
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    from conftest import shared_data_dir

    return make_runs(tmp_path_factory.mktemp("view"), shared_data_dir() / "mtu-bench")


@pytest.fixture(scope="module")
def base(runs: Runs) -> Iterator[str]:
    with view_server(runs.url) as url:
        yield url


def fetch(url: str, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, {k.lower(): v for k, v in response.headers.items()}, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, {k.lower(): v for k, v in exc.headers.items()}, exc.read()


def api(base: str, path: str, **params: Any) -> Any:
    """The JSON of an API path; a page that is still computing its run's verdicts is asked again until ready."""
    deadline = time.monotonic() + 300
    while True:
        status, _headers, body = fetch(base + "api/" + path + ("?" + urlencode(params, doseq=True) if params else ""))
        assert status == 200, body
        answer = json.loads(body)
        if not (isinstance(answer, dict) and answer.get("pending")):
            return answer
        assert time.monotonic() < deadline, f"{path}: verdicts still pending"
        time.sleep(0.1)


def test_runs_are_listed_newest_first_and_filtered(base: str, runs: Runs):
    every = api(base, "runs")
    ids = [r["id"] for r in every["runs"]]
    assert set(ids) >= {runs.gold, runs.mixed, runs.hostile}
    started = [r["created_at"] for r in every["runs"]]
    assert started == sorted(started, reverse=True)
    assert "suite" in every["benchmarks"] and every["statuses"] == ["finished"]
    suite = api(base, "runs", benchmark="suite")["runs"]
    assert {r["benchmark"] for r in suite} == {"suite"} and len(suite) == 3
    assert [r["id"] for r in api(base, "runs", model="weather-bot")["runs"]] == [runs.mixed]
    assert api(base, "runs", status="running")["runs"] == []
    assert api(base, "runs", since="2000-01-01", until="2000-01-02")["runs"] == []
    gold = next(r for r in every["runs"] if r["id"] == runs.gold)
    assert gold["headline"] == {"tool_accuracy": 1.0, "parameter_accuracy": 1.0, "success_rate": 1.0}


def test_a_bad_date_is_one_error_not_a_crash(base: str):
    status, _h, body = fetch(base + "api/runs?since=yesterday")
    assert status == 400 and "YYYY-MM-DD" in json.loads(body)["error"]


def test_the_run_page_has_every_breakdown_and_a_chart_for_each(base: str, runs: Runs):
    if runs.mtu is None:
        pytest.skip("MTU-Bench data not found (set TOOLGAUGE_SHARED_DATA)")
    page = api(base, f"runs/{runs.mtu}")
    # by split, then the paper's analyses (issue 22): the S-M hard set, and accuracy by turns and by tools
    assert [b["by"] for b in page["breakdowns"]] == ["split", "set", "turns", "tools"]
    assert [r["group"] for r in page["breakdowns"][0]["rows"]] == ["S-S", "S-M", "M-S", "M-M", "OOD"]
    assert page["overall"][0]["headline"] and page["overall"][0]["name"] == "tool_accuracy"
    assert [c["name"] for c in page["charts"]] == ["by-split", "by-set", "by-turns", "by-tools"]
    assert page["charts"][0] == {"name": "by-split", "title": "by split"}
    status, headers, svg = fetch(base + f"api/runs/{runs.mtu}/charts/by-split.svg")
    assert status == 200 and headers["content-type"].startswith("image/svg+xml")
    assert svg.startswith(b"<svg") and b"S-S" in svg and b"tool_accuracy" in svg
    assert fetch(base + f"api/runs/{runs.mtu}/charts/nope.svg")[0] == 404


def test_bfcl_gets_a_per_category_chart(base: str, runs: Runs):
    if runs.bfcl is None:
        pytest.skip("BFCL data not found (set TOOLGAUGE_SHARED_DATA)")
    page = api(base, f"runs/{runs.bfcl}")
    category = next(b for b in page["breakdowns"] if b["by"] == "category")
    assert [r["group"] for r in category["rows"]] == ["simple_python", "multiple", "parallel", "irrelevance"]
    assert {"name": "by-category", "title": "by category"} in page["charts"]
    status, _h, svg = fetch(base + f"api/runs/{runs.bfcl}/charts/by-category.svg")
    assert status == 200 and svg.count(b'aria-roledescription="bar"') == 4 and b"simple_python" in svg


def test_the_unit_list_pages_and_filters_by_verdict_and_error_class(base: str, runs: Runs):
    first = api(base, f"runs/{runs.mixed}/units", per_page=5)
    assert first["page"] == 1 and len(first["rows"]) == 5 and first["total"] == sum(first["verdicts"].values())
    assert first["verdicts"]["pass"] >= 1 and first["verdicts"]["fail"] >= 1
    second = api(base, f"runs/{runs.mixed}/units", per_page=5, page=2)
    assert {r["id"] for r in first["rows"]}.isdisjoint(r["id"] for r in second["rows"])
    failed = api(base, f"runs/{runs.mixed}/units", verdict="fail", per_page=500)
    assert failed["total"] == first["verdicts"]["fail"] and {r["verdict"] for r in failed["rows"]} == {"fail"}
    classes = first["error_classes"]
    assert "wrong_tool" in classes
    wrong = api(base, f"runs/{runs.mixed}/units", error_class="wrong_tool", per_page=500)
    assert wrong["total"] == classes["wrong_tool"] and {r["error_class"] for r in wrong["rows"]} == {"wrong_tool"}
    assert api(base, f"runs/{runs.mixed}/units", q="weather-001")["rows"][0]["id"] == "weather-001#0"
    status, _h, svg = fetch(base + f"api/runs/{runs.mixed}/charts/error-classes.svg")
    assert status == 200 and svg.startswith(b"<svg")
    assert all(name.encode() in svg for name in classes)
    assert svg.count(b'aria-roledescription="bar"') == len(classes)


def test_the_sample_shows_its_transcript_gold_beside_the_models_calls_and_each_verdict(base: str, runs: Runs):
    sample = api(base, f"runs/{runs.mixed}/samples/{KNOWN_SAMPLE}")
    assert sample["state"]["status"] == "done"
    [call] = sample["calls"]
    assert [m["role"] for m in call["messages"]] == ["system", "user"]
    assert call["messages"][1]["content"] == "What's the weather in Lisbon right now?"
    assert call["response"]["tool_calls"][0]["name"] == "get_current_weather"
    [unit] = sample["units"]
    assert unit["verdict"] == "pass"
    assert unit["metadata"]["expected"][0]["arguments"] == {"city": "Lisbon"}
    assert unit["metadata"]["predicted"][0]["name"] == "get_current_weather"
    other = api(base, f"runs/{runs.mixed}/samples/weather-002")
    assert any(u["verdict"] == "fail" and u["explanation"] for u in other["units"])


def test_a_hostile_sample_key_is_an_ordinary_path(base: str, runs: Runs):
    sample = api(base, f"runs/{runs.hostile}/samples/{quote(HOSTILE_ID, safe='')}")
    assert sample["sample"] == HOSTILE_ID and len(sample["calls"]) == 2


def test_a_page_that_waits_has_the_verdicts_at_once(runs: Runs):
    with view_server(runs.url) as fresh:  # a new server: nothing computed yet
        status, _h, body = fetch(fresh + f"api/runs/{runs.mixed}/units?wait=1")
        page = json.loads(body)
        assert status == 200 and not page["pending"] and page["total"] == sum(page["verdicts"].values()) > 0


@pytest.mark.parametrize("query", ["page=abc", "page=0", "per_page=-3", "page=1.5"])
def test_a_malformed_page_number_is_400_with_a_reason(base: str, runs: Runs, query: str):
    status, _h, body = fetch(base + f"api/runs/{runs.gold}/units?{query}")
    name, value = query.split("=")
    assert status == 400 and json.loads(body)["error"].startswith(f"{name} '{value}': expected a "), body
    # An unknown run stays 404, whatever its parameters.
    assert fetch(base + f"api/runs/no-such-run/units?{query.replace(value, '2')}")[0] == 404


def test_unknown_runs_and_samples_are_404_with_a_reason(base: str, runs: Runs):
    status, _h, body = fetch(base + "api/runs/no-such-run")
    assert status == 404 and "no run" in json.loads(body)["error"]
    status, _h, body = fetch(base + f"api/runs/{runs.gold}/samples/no-such-sample")
    assert status == 404 and "no sample" in json.loads(body)["error"]


def test_every_answer_has_a_strict_csp_and_the_front_end_has_no_inline_code(base: str, runs: Runs):
    for path in ("", "static/app.js", "api/runs", f"api/runs/{runs.gold}", "api/runs/none"):
        _status, headers, _body = fetch(base + path)
        csp = headers["content-security-policy"]
        assert "default-src 'self'" in csp and "script-src 'self'" in csp and "unsafe" not in csp
        assert headers["x-content-type-options"] == "nosniff"
    _s, _h, index = fetch(base)
    assert b"<script src=" in index and b"<script>" not in index and b" on" not in index.split(b"<body>")[1]


def test_a_foreign_host_header_is_refused(base: str):
    status, _h, _body = fetch(base + "api/runs", headers={"Host": "evil.example"})
    assert status == 400


def test_with_a_token_every_request_needs_it(runs: Runs):
    with view_server(runs.url, "--token", "s3cret-token") as url:
        assert url.endswith("/?token=s3cret-token")
        root = url.split("?")[0]
        for path in ("", "static/app.js", "api/runs", f"api/runs/{runs.gold}/units"):
            assert fetch(root + path)[0] == 401
            assert fetch(root + path + "?token=wrong")[0] == 401
            assert fetch(root + path, headers={"Authorization": "Bearer s3cret-token"})[0] == 200
        status, headers, _ = fetch(root + "?token=s3cret-token")
        assert status == 200 and "toolgauge_token=s3cret-token" in headers["set-cookie"]
        assert "HttpOnly" in headers["set-cookie"] and "SameSite=Strict" in headers["set-cookie"]
        assert fetch(root + "api/runs", headers={"Cookie": "toolgauge_token=s3cret-token"})[0] == 200


def test_binding_beyond_loopback_requires_a_token():
    assert access_token("127.0.0.1", None) is None and access_token("::1", None) is None
    assert access_token("localhost", None) is None
    made = access_token("0.0.0.0", None)
    assert made is not None and len(made) >= 32 and made != access_token("192.168.1.5", None)
    assert access_token("0.0.0.0", "mine") == "mine"


def test_report_html_is_one_file_with_the_data_inlined(runs: Runs, tmp_path: Path):
    out = tmp_path / "r.html"
    res = invoke("report", runs.mixed, "--store", runs.url, "--html", out)
    assert res.exit_code == 0, res.output
    text = out.read_text()
    assert "<script src" not in text and "<link" not in text and "@import" not in text
    assert "Content-Security-Policy" in text and "default-src 'none'" in text
    data = text.split('<script type="application/json" id="toolgauge-data">')[1].split("</script>")[0]
    payload = json.loads(data)
    assert payload["run"]["run"]["id"] == runs.mixed
    assert len(payload["units"]["rows"]) == sum(payload["units"]["verdicts"].values())
    assert payload["samples"] and all(s["calls"] for s in payload["samples"].values())


def test_report_html_of_a_hostile_run_cannot_close_its_data_block(runs: Runs, tmp_path: Path):
    out = tmp_path / "h.html"
    assert invoke("report", runs.hostile, "--store", runs.url, "--html", out).exit_code == 0
    text = out.read_text()
    data = text.split('<script type="application/json" id="toolgauge-data">')[1]
    # The only "</script>" after the data block's start are the two the page itself closes with.
    assert data.count("</script>") == 2 and "<script>alert" not in data.split("</script>")[0]


def test_the_viewer_reads_a_postgresql_store(pg_url: str):
    res = invoke("eval", "suite", "--model", "gold", "--store", pg_url, "--limit", "3", "-q")
    assert res.exit_code == 0, res.output
    with view_server(pg_url) as base:
        [run] = api(base, "runs")["runs"]
        assert run["benchmark"] == "suite" and run["samples"] == 3
        units = api(base, f"runs/{run['id']}/units")
        assert units["verdicts"] == {"pass": units["total"]} and units["total"] >= 3
        sample = api(base, f"runs/{run['id']}/samples/{KNOWN_SAMPLE}")
        assert sample["calls"][0]["messages"][1]["content"] == "What's the weather in Lisbon right now?"


def test_without_its_data_file_a_run_lists_its_samples_and_says_why_there_are_no_verdicts(tmp_path: Path):
    from toolgauge.benchmarks.suite.loader import builtin_suite_path

    data = tmp_path / "suite.jsonl"
    data.write_text("".join(builtin_suite_path().read_text().splitlines(keepends=True)[:3]))
    url = f"sqlite:///{tmp_path / 's.db'}"
    assert invoke("eval", "suite", "--data", data, "--model", "gold", "--store", url, "-q").exit_code == 0
    data.unlink()
    with view_server(url) as base:
        [run] = api(base, "runs")["runs"]
        units = api(base, f"runs/{run['id']}/units")
        assert units["note"].startswith("verdicts not available: ") and str(data) in units["note"]
        assert [r["id"] for r in units["rows"]] == ["weather-001", "weather-002", "weather-003"]
        assert {r["verdict"] for r in units["rows"]} == {"unscored"}
        sample = api(base, f"runs/{run['id']}/samples/weather-001")
        assert sample["units"][0]["verdict"] == "unscored" and sample["calls"]  # the transcript is still there


def test_intervals_from_the_runs_summary_are_shown_with_its_headline(tmp_path: Path):
    from toolgauge.results import MetricSummary
    from toolgauge.store import open_store

    url = f"sqlite:///{tmp_path / 's.db'}"
    assert invoke("eval", "suite", "--model", "gold", "--store", url, "--limit", "2", "-q").exit_code == 0
    st = open_store(url, create=False)
    try:  # the summary a run with repeats (--epochs) stores beside its metrics
        run = st.list_runs(1)[0]
        assert run.results is not None
        summary = {"success_rate": MetricSummary(mean=1.0, stderr=0.0, ci_low=0.8, ci_high=1.0, n=2, epochs=3)}
        st.save_results(run.id, run.results.model_copy(update={"summary": summary}))
    finally:
        st.close()
    with view_server(url) as base:
        rows = {r["name"]: r for r in api(base, f"runs/{run.id}")["overall"]}
        assert (rows["success_rate"]["ci_low"], rows["success_rate"]["ci_high"]) == (0.8, 1.0)
        assert rows["success_rate"]["epochs"] == 3 and rows["tool_accuracy"]["ci_low"] is None


# --- compare and sweeps: a store with one sweep, gold and a replay that fails known turns on the whole suite ---


@pytest.fixture(scope="module")
def swept(tmp_path_factory: pytest.TempPathFactory) -> SweepRuns:
    return make_sweep(tmp_path_factory.mktemp("view-sweep"))


@pytest.fixture(scope="module")
def sweep_base(swept: SweepRuns) -> Iterator[str]:
    with view_server(swept.url) as url:
        yield url


def test_compare_lists_the_flipped_units_and_matches_toolgauge_compare(sweep_base: str, swept: SweepRuns):
    from toolgauge.api import compare

    got = api(sweep_base, "compare", a=swept.gold, b=swept.replay)
    assert (got["a"], got["b"], got["benchmark"]) == (swept.gold, swept.replay, "suite")
    assert got["flipped"] == {"to_pass": [], "to_fail": swept.failing}
    assert (got["only_in_a"], got["only_in_b"]) == (0, 0)
    # Each flipped unit (a turn) links to its sample: the dialogue.
    assert got["samples"] == {unit: unit.split("#")[0] for unit in swept.failing}
    assert (got["runs"]["a"]["model"], got["runs"]["b"]["id"]) == ("gold", swept.replay)
    # The same numbers as `toolgauge compare` (the same statistics, on the same verdicts).
    cli = compare(swept.gold, swept.replay, store=swept.url)
    assert got["metrics"] == {name: m.model_dump(mode="json") for name, m in cli.metrics.items()}
    success = got["metrics"]["success_rate"]
    assert success["a"] == 1.0 and success["diff"] < 0 and success["test"] == "mcnemar_exact"
    assert success["p_value"] == 2 * 0.5 ** len(swept.failing) and success["significant"] is True
    # B against A the other way round: the same units flip the other way.
    back = api(sweep_base, "compare", a=swept.replay, b=swept.gold)
    assert back["flipped"] == {"to_pass": swept.failing, "to_fail": []}
    assert back["metrics"]["success_rate"]["diff"] == -success["diff"]


def test_three_runs_compare_each_against_the_first_as_compare_scores_does(sweep_base: str, swept: SweepRuns):
    from toolgauge.api import stored_units
    from toolgauge.compare import compare_scores
    from toolgauge.store import open_store

    order = [swept.gold, swept.replay, swept.replay2]
    got = api(sweep_base, "compare", run=order)
    assert (got["benchmark"], got["baseline"]) == ("suite", swept.gold)
    assert [r["id"] for r in got["runs"]] == order
    assert got["headline"] == ["tool_accuracy", "parameter_accuracy", "success_rate"]
    # Each other run against the baseline: compare_scores itself on the runs' stored units.
    st = open_store(swept.url, create=False)
    try:
        units = {run: stored_units(st, st.get_run(run))[1] for run in order}  # type: ignore[arg-type]
    finally:
        st.close()
    expected = [
        compare_scores(swept.gold, run, "suite", units[swept.gold], units[run], got["headline"], required=False)
        for run in order[1:]
    ]
    assert got["comparisons"] == [c.model_dump(mode="json") for c in expected]
    assert got["comparisons"][1]["flipped"] == {"to_pass": [], "to_fail": swept.failing2}
    # The units whose verdict differs: failed by either replay, each with its verdict in every run.
    n_units = len(units[swept.gold])
    assert (got["units"], got["only_in_some"]) == (n_units, 0)
    differing = got["differing"]
    wrong = set(swept.failing) | set(swept.failing2)
    assert differing["total"] == len(wrong) and {r["id"] for r in differing["rows"]} == wrong
    for row in differing["rows"]:
        assert row["verdicts"] == ["pass", "fail" if row["id"] in swept.failing else "pass",
                                   "fail" if row["id"] in swept.failing2 else "pass"]  # fmt: skip
        assert row["samples"] == [row["id"].split("#")[0]] * 3
    # Paged: a page of 5, the rest on the next pages, in the same order.
    pages = [api(sweep_base, "compare", run=order, per_page=5, page=p)["differing"] for p in (1, 2, 3)]
    assert [len(p["rows"]) for p in pages] == [5, 5, len(wrong) - 10]
    assert [r["id"] for p in pages for r in p["rows"]] == [r["id"] for r in differing["rows"]]
    # Another baseline: the same runs, each against the replay.
    again = api(sweep_base, "compare", run=[swept.replay, swept.gold, swept.replay2])
    assert again["comparisons"][0]["flipped"] == {"to_pass": swept.failing, "to_fail": []}
    assert again["differing"]["total"] == len(wrong)
    # Two runs with ?run= are the ?a=&b= comparison, in the N-run shape.
    pair = api(sweep_base, "compare", run=[swept.gold, swept.replay])
    old = api(sweep_base, "compare", a=swept.gold, b=swept.replay)
    assert pair["comparisons"] == [{k: old[k] for k in pair["comparisons"][0]}]
    assert pair["differing"]["total"] == len(swept.failing)


def test_units_only_some_runs_have_are_counted(swept: SweepRuns, tmp_path: Path):
    """A run of the first 20 dialogues beside the whole suite: its missing units are counted, not compared."""
    import sqlite3

    from helpers.cli_helpers import results_of
    from toolgauge.benchmarks.suite.loader import builtin_suite_path, load_suite

    # On a copy of the sweep's store: the other tests see the sweep's runs only.
    copy = tmp_path / "copy.db"
    with sqlite3.connect(swept.url.removeprefix("sqlite:///")) as source, sqlite3.connect(copy) as target:
        source.backup(target)
    url = f"sqlite:///{copy}"
    res = invoke("eval", "suite", "--model", "gold", "--limit", "20", "--store", url, "--json", "-q")
    assert res.exit_code == 0, res.output
    run = results_of(res).run
    assert run is not None
    short = run.id
    dialogues = load_suite(builtin_suite_path())
    missing = sum(len(d.turns) for d in dialogues[20:])
    with view_server(url) as base:
        got = api(base, "compare", run=[swept.gold, short, swept.replay2])
    assert got["only_in_some"] == missing and got["comparisons"][0]["only_in_a"] == missing
    # The second replay fails units past the 20th dialogue too: shown with no verdict in the short run.
    late = [r for r in got["differing"]["rows"] if r["verdicts"][1] is None]
    assert late and all(r["verdicts"] == ["pass", None, "fail"] for r in late)
    assert {r["id"] for r in got["differing"]["rows"]} == set(swept.failing2)


def test_compare_of_unknown_runs_or_one_run_missing_is_a_reason_not_a_crash(sweep_base: str, swept: SweepRuns):
    status, _h, body = fetch(sweep_base + f"api/compare?a={swept.gold}&b=no-such-run")
    assert status == 404 and json.loads(body)["error"] == "no run 'no-such-run' in the store"
    status, _h, body = fetch(sweep_base + f"api/compare?a={swept.gold}")
    assert status == 400 and "two runs" in json.loads(body)["error"]
    status, _h, body = fetch(sweep_base + f"api/compare?run={swept.gold}")
    assert status == 404 and "two or more runs" in json.loads(body)["error"]
    status, _h, body = fetch(sweep_base + f"api/compare?run={swept.gold}&run={swept.replay}&run=no-such-run")
    assert status == 404 and json.loads(body)["error"] == "no run 'no-such-run' in the store"
    status, _h, body = fetch(sweep_base + f"api/compare?run={swept.gold}&run={swept.replay}&run={swept.gold}")
    assert status == 404 and json.loads(body)["error"] == f"run {swept.gold} is given twice: compare distinct runs"


def test_compare_of_runs_of_different_benchmarks_says_so(base: str, runs: Runs):
    if runs.mtu is None:
        pytest.skip("MTU-Bench data not found (set TOOLGAUGE_SHARED_DATA)")
    status, _h, body = fetch(base + f"api/compare?a={runs.gold}&b={runs.mtu}")
    error = json.loads(body)["error"]
    assert status == 404 and error == (
        f"run {runs.gold} is suite and run {runs.mtu} is mtu-bench: compare runs of the same benchmark"
    )
    # Of three runs, the first of another benchmark than the baseline's is named.
    status, _h, body = fetch(base + f"api/compare?run={runs.gold}&run={runs.mixed}&run={runs.mtu}")
    assert status == 404 and json.loads(body)["error"] == (
        f"run {runs.gold} is suite and run {runs.mtu} is mtu-bench: compare runs of the same benchmark"
    )


def test_sweeps_are_listed_and_a_sweep_has_its_leaderboard_with_intervals(sweep_base: str, swept: SweepRuns):
    from toolgauge.store import open_store
    from toolgauge.sweep.report import sweep_report

    [row] = api(sweep_base, "sweeps")["sweeps"]
    assert (row["id"], row["status"], row["cells"], row["finished_cells"]) == (swept.sweep, "finished", 3, 3)
    assert row["benchmarks"] == ["suite"] and row["models"][0] == "gold"
    page = api(sweep_base, f"sweeps/{swept.sweep}")
    assert (page["sweep"], page["status"]) == (swept.sweep, "finished")
    [board] = page["boards"]
    assert board["benchmark"] == "suite" and board["metrics"] == ["tool_accuracy", "parameter_accuracy", "success_rate"]
    best, other, last = board["cells"]
    assert (best["run"], other["run"], last["run"]) == (swept.gold, swept.replay, swept.replay2)  # ranked
    assert best["significant"] is None and (other["significant"], other["test"]) == (True, "paired")
    low, mean, high = (other["metrics"]["success_rate"][k] for k in ("ci_low", "mean", "ci_high"))
    assert low < mean < high and mean == 0.75
    # The same cells as `toolgauge report SWEEP --json`.
    st = open_store(swept.url, create=False)
    try:
        report = sweep_report(st, swept.sweep)
    finally:
        st.close()
    by_run = {c.run: c.model_dump(mode="json") for c in report.cells}
    assert [by_run[c["run"]] for c in board["cells"]] == board["cells"]
    status, _h, body = fetch(sweep_base + "api/sweeps/sweep-nope")
    assert status == 404 and "no sweep" in json.loads(body)["error"]


def test_a_store_without_sweeps_lists_none(base: str):
    assert api(base, "sweeps") == {"sweeps": []}


def test_report_sweep_html_is_one_file_with_the_leaderboard_and_its_runs(
    sweep_base: str, swept: SweepRuns, tmp_path: Path
):
    out = tmp_path / "sweep.html"
    res = invoke("report", swept.sweep, "--store", swept.url, "--html", out)
    assert res.exit_code == 0, res.output
    text = out.read_text()
    assert "<script src" not in text and "<link" not in text and "default-src 'none'" in text
    payload = json.loads(text.split('<script type="application/json" id="toolgauge-data">')[1].split("</script>")[0])
    # The same leaderboard the viewer serves, and each cell's run page with its charts drawn and its panels.
    assert payload["sweep"] == api(sweep_base, f"sweeps/{swept.sweep}")
    assert set(payload["runs"]) == {swept.gold, swept.replay, swept.replay2}
    # Each run as its own report holds it: its page, charts, verdicts, views and its first failing transcripts.
    report = payload["runs"][swept.replay]
    assert report["run"]["run"]["headline"]["success_rate"] == 0.75
    assert report["run"] == api(sweep_base, f"runs/{swept.replay}")
    assert report["run"]["charts"] == []  # the suite has no breakdown to draw
    assert set(report["charts"]) == {"error-classes"}  # the sample list's chart of its failing units
    assert report["panels"] == api(sweep_base, f"runs/{swept.replay}/panels")
    units = api(sweep_base, f"runs/{swept.replay}/units", per_page=500)
    assert [r["id"] for r in report["units"]["rows"]] == [r["id"] for r in units["rows"]]
    failing = list(dict.fromkeys(r["sample"] for r in units["rows"] if r["verdict"] in ("fail", "partial", "error")))
    assert list(report["samples"]) == failing[:5] and len(failing) >= 1
    first = failing[0]
    assert report["samples"][first]["calls"] == api(sweep_base, f"runs/{swept.replay}/samples/{first}")["calls"]
    assert set(payload) == {"sweep", "sweep_charts", "runs"}
    # Each board's interval chart, the SVG the viewer serves for it.
    assert set(payload["sweep_charts"]) == {b["benchmark"] for b in payload["sweep"]["boards"]}
    for benchmark, svg in payload["sweep_charts"].items():
        status, _h, body = fetch(sweep_base + f"api/sweeps/{swept.sweep}/charts/{quote(benchmark)}.svg")
        assert status == 200 and body.decode() == svg and svg.startswith("<svg")
    missing = invoke("report", "sweep-nope", "--store", swept.url, "--html", tmp_path / "no.html")
    assert missing.exit_code == 2 and not (tmp_path / "no.html").exists()


def report_payload(path: Path) -> Any:
    text = path.read_text()
    return json.loads(text.split('<script type="application/json" id="toolgauge-data">')[1].split("</script>")[0])


def test_report_sweep_html_holds_each_runs_charts_as_the_viewer_draws_them(tmp_path: Path):
    swept, out = chart_sweep_report(tmp_path)
    report = report_payload(out)["runs"][swept.run]
    with view_server(swept.url) as base:
        served = api(base, f"runs/{swept.run}")
        assert report["run"] == served
        # Its per-category chart (and every other), each the same SVG the viewer serves.
        assert "by-category" in {c["name"] for c in served["charts"]}
        assert set(report["charts"]) - {"error-classes"} == {c["name"] for c in served["charts"]}
        for name, svg in report["charts"].items():
            status, _h, body = fetch(base + f"api/runs/{swept.run}/charts/{quote(name)}.svg")
            assert status == 200 and svg == body.decode() and "<svg" in svg[:200]
        assert report["panels"] == api(base, f"runs/{swept.run}/panels")


def test_a_unit_of_several_epochs_has_one_verdict_in_a_comparison():
    from toolgauge.results import SampleScore
    from toolgauge.view.data import unit_verdicts

    def tries(key: str, *values: float | None, errors: int = 0) -> list[SampleScore]:
        made = [SampleScore(id=key, sample="s", value=v, epoch=i + 1) for i, v in enumerate(values)]
        return made + [SampleScore(id=key, sample="s", error="boom", epoch=len(values) + i + 1) for i in range(errors)]

    units = [
        *tries("all-pass", 1.0, 1.0), *tries("mixed", 1.0, 0.0), *tries("all-fail", 0.0, 0.0),
        *tries("failed-runs", errors=2), *tries("one-failed-run", 1.0, errors=1), *tries("single", 0.5),
    ]  # fmt: skip
    assert unit_verdicts(units) == {
        "all-pass": ("s", "pass"), "mixed": ("s", "partial"), "all-fail": ("s", "fail"),
        "failed-runs": ("s", "error"), "one-failed-run": ("s", "pass"), "single": ("s", "partial"),
    }  # fmt: skip
