"""The viewer and the HTML report in headless Chromium (Debian's ``chromium``, driven by Playwright).

Every page is loaded with the network cut off: a route aborts every request that is not to 127.0.0.1 (or the
report's own file) and records it, and a test fails on any such request, on any dialog (``alert``), on any
uncaught page error and on any console error. Screenshots of the main pages go to a temporary directory, and
into ``$TOOLGAUGE_SCREENSHOTS`` when set (``make screenshots`` sets it to docs/img).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlparse

import pytest

from helpers.view_runs import skip_or_fail_without, view_missing

skip_or_fail_without(view_missing(browser=True))

from playwright.sync_api import Browser, ConsoleMessage, Page, Route, sync_playwright  # noqa: E402

from helpers.chat_stub import ChatStub, completion, is_probe  # noqa: E402
from helpers.cli_helpers import invoke  # noqa: E402
from helpers.paths import SRC  # noqa: E402
from helpers.view_runs import (  # noqa: E402
    CHROMIUM,
    ENTITIES,
    HOSTILE_ID,
    HOSTILE_TOOL,
    IMG,
    JS_URL,
    KNOWN_SAMPLE,
    LONG_LINE,
    SCRIPT,
    Runs,
    SweepRuns,
    chart_sweep_report,
    make_runs,
    make_sweep,
    view_server,
)
from toolgauge.errors import UsageError  # noqa: E402
from toolgauge.store import open_store  # noqa: E402

pytestmark = pytest.mark.slow
WIDTH = 1280
WAIT_MS = 60_000


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    from conftest import shared_data_dir

    return make_runs(tmp_path_factory.mktemp("view"), shared_data_dir() / "mtu-bench")


@pytest.fixture(scope="module")
def base(runs: Runs) -> Iterator[str]:
    with view_server(runs.url) as url:
        yield url


@pytest.fixture(scope="module")
def browser(runs: Runs) -> Iterator[Browser]:
    # After the runs: they are made in this thread, which Playwright's event loop then occupies.
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield chromium
        chromium.close()


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Where screenshots are written; copied into ``$TOOLGAUGE_SCREENSHOTS`` at the end when set."""
    folder = tmp_path_factory.mktemp("shots")
    yield folder
    target = os.environ.get("TOOLGAUGE_SCREENSHOTS")
    if target:
        Path(target).mkdir(parents=True, exist_ok=True)
        for shot in folder.glob("*.png"):
            shutil.copy2(shot, Path(target) / shot.name)


class Watched:
    """A page with the network cut off and every dialog, page error, console error and outside request kept."""

    def __init__(self, page: Page):
        self.page = page
        self.outside: list[str] = []
        self.dialogs: list[str] = []
        self.errors: list[str] = []
        page.route("**/*", self._route)
        page.on("dialog", self._dialog)
        page.on("pageerror", lambda exc: self.errors.append(f"page error: {exc}"))
        page.on("console", self._console)

    def _route(self, route: Route) -> None:
        url = urlparse(route.request.url)
        if url.scheme == "file" or (url.scheme == "http" and url.hostname == "127.0.0.1"):
            route.continue_()
        else:
            self.outside.append(route.request.url)
            route.abort()

    def _dialog(self, dialog: Any) -> None:
        self.dialogs.append(f"{dialog.type}: {dialog.message}")
        dialog.dismiss()

    def _console(self, message: ConsoleMessage) -> None:
        if message.type == "error":
            self.errors.append(f"console: {message.text}")

    def open(self, url: str) -> None:
        """Go to ``url`` and wait until the viewer has shown that page completely."""
        self.page.goto(url)
        self.ready()

    def ready(self) -> None:
        self.page.wait_for_function("() => document.querySelector('main').dataset.ready === location.hash",
                                    timeout=WAIT_MS)  # fmt: skip

    def main_text(self) -> str:
        return str(self.page.locator("main").text_content())

    def check_clean(self) -> None:
        assert self.outside == [], f"requests beyond 127.0.0.1: {self.outside}"
        assert self.dialogs == [], f"a script ran: {self.dialogs}"
        assert self.errors == []


@pytest.fixture()
def watched(browser: Browser) -> Iterator[Watched]:
    context = browser.new_context(viewport={"width": WIDTH, "height": 900})
    page = Watched(context.new_page())
    yield page
    context.close()
    page.check_clean()


def link(base: str, hash_path: str) -> str:
    return base + "#" + hash_path


# -- pages, filters and links --------------------------------------------------------------------------------


def test_the_runs_page_lists_every_run_and_its_filters_narrow_it(base: str, runs: Runs, watched: Watched, shots: Path):
    page = watched.page
    watched.open(base)
    ids = page.locator("a.run-link").all_text_contents()
    assert {runs.gold, runs.mixed, runs.hostile} <= set(ids)
    page.screenshot(path=str(shots / "runs.png"))
    page.select_option("#f-benchmark", "suite")
    watched.ready()
    assert set(page.locator("a.run-link").all_text_contents()) == {runs.gold, runs.mixed, runs.hostile}
    page.fill("#f-model", "weather")
    page.press("#f-model", "Enter")
    page.wait_for_function("() => location.hash.includes('model=weather')")
    watched.ready()
    assert page.locator("a.run-link").all_text_contents() == [runs.mixed]
    page.fill("#f-since", "2000-01-01")
    page.fill("#f-until", "2000-01-02")
    page.press("#f-until", "Enter")
    page.wait_for_function("() => location.hash.includes('until=2000-01-02')")
    watched.ready()
    assert page.locator("a.run-link").count() == 0 and "no run matches" in watched.main_text()
    watched.open(base + "#/?model=weather")
    page.locator("a.run-link", has_text=runs.mixed).click()
    page.wait_for_function(f"() => location.hash === '#/run/{runs.mixed}'")
    watched.ready()
    assert "weather-bot" in page.locator("h1").text_content()


def test_the_run_page_shows_metrics_and_draws_a_chart_per_breakdown(
    base: str, runs: Runs, watched: Watched, shots: Path
):
    if runs.mtu is None:
        pytest.skip("MTU-Bench data not found (set TOOLGAUGE_SHARED_DATA)")
    page = watched.page
    watched.open(link(base, f"/run/{runs.mtu}"))
    assert page.locator("table.metrics tr.headline").count() >= 3
    chart = page.locator('figure.chart[data-chart="by-split"] > svg')
    assert chart.count() == 1
    box = chart.bounding_box()
    assert box is not None and box["width"] > 100 and box["height"] > 100
    assert chart.locator("path[aria-roledescription='bar']").count() >= 5
    assert "S-S" in str(chart.text_content()) and "by split" in str(chart.text_content())
    assert page.locator("details.breakdown").first.locator("table tbody tr").count() == 5  # by split
    page.screenshot(path=str(shots / "run.png"), full_page=True)


def test_the_sample_list_filters_by_verdict_and_error_class_pages_and_links(
    base: str, runs: Runs, watched: Watched, shots: Path
):
    page = watched.page
    watched.open(link(base, f"/run/{runs.mixed}"))
    page.locator("a.samples-link").click()
    page.wait_for_function("() => location.hash.endsWith('/samples')")
    watched.ready()
    everything = page.locator("a.unit-link").count()
    assert everything > 1
    page.select_option("#f-verdict", "fail")
    page.wait_for_function("() => location.hash.includes('verdict=fail')")
    watched.ready()
    badges = page.locator("table.units .badge").all_text_contents()
    assert badges and set(badges) == {"fail"}
    error_chart = page.locator('figure.chart[data-chart="error-classes"] > svg')
    assert error_chart.locator("path[aria-roledescription='bar']").count() >= 2
    assert "wrong_tool" in str(error_chart.text_content())
    page.screenshot(path=str(shots / "samples.png"), full_page=True)
    page.select_option("#f-error-class", "wrong_tool")
    page.wait_for_function("() => location.hash.includes('error_class=wrong_tool')")
    watched.ready()
    classes = page.locator("table.units tbody tr td:nth-child(3)").all_text_contents()
    assert classes and set(classes) == {"wrong_tool"}
    # Pages of 50: the 4 runs' units fit one page, so the pager says so and offers no next page.
    assert "page 1 of 1" in str(page.locator(".pager").text_content()) and page.locator("#next").count() == 0
    watched.open(link(base, f"/run/{runs.mixed}/samples?q=weather-002"))
    page.locator("a.unit-link").first.click()
    page.wait_for_function("() => location.hash.includes('/sample/weather-002')")
    watched.ready()
    assert page.locator(".unit").count() >= 1


def test_the_sample_page_shows_the_known_transcript_and_gold_beside_the_model(
    base: str, runs: Runs, watched: Watched, shots: Path
):
    page = watched.page
    watched.open(link(base, f"/run/{runs.mixed}/sample/{KNOWN_SAMPLE}"))
    transcript = str(page.locator(".transcript").text_content())
    assert "What's the weather in Lisbon right now?" in transcript
    assert "get_current_weather" in transcript and '"city": "Lisbon"' in transcript
    assert page.locator(".unit .badge").all_text_contents() == ["pass"]
    assert '"city": "Lisbon"' in str(page.locator(".versus .gold").text_content())
    assert "get_current_weather" in str(page.locator(".versus .model").text_content())
    watched.open(link(base, f"/run/{runs.mixed}/sample/weather-002"))
    assert "fail" in page.locator(".unit .badge").all_text_contents()
    assert page.locator(".unit .explanation").count() >= 1
    assert page.locator(".transcript .role-tool").count() >= 1  # a tool result in the history of its 2nd turn
    page.screenshot(path=str(shots / "sample.png"), full_page=True)


def test_previous_and_next_sample_walk_the_filtered_sample_list(base: str, runs: Runs, watched: Watched):
    import json
    import urllib.request

    page = watched.page
    with urllib.request.urlopen(
        f"{base}api/runs/{runs.mixed}/units?verdict=fail&per_page=500&wait=1", timeout=120
    ) as answer:
        failing = list(dict.fromkeys(r["sample"] for r in json.loads(answer.read())["rows"]))
    assert len(failing) >= 3
    watched.open(link(base, f"/run/{runs.mixed}/samples?verdict=fail"))
    page.locator("a.unit-link").first.click()
    page.wait_for_function(f"() => location.hash.includes('/sample/{failing[0]}')")
    watched.ready()
    assert page.locator("#prev-sample").count() == 0 and "first sample" in str(
        page.locator(".sample-nav").text_content()
    )
    assert "filtered by verdict fail" in str(page.locator(".sample-nav").text_content())
    for key in failing[1:3]:  # next goes through the failing samples only, in the list's order
        page.locator("#next-sample").click()
        page.wait_for_function(
            f"() => location.hash.includes('/sample/{key}') && location.hash.includes('verdict=fail')"
        )
        watched.ready()
        assert str(page.locator("h1 .key").text_content()) == key
    page.locator("#prev-sample").click()
    page.wait_for_function(f"() => location.hash.includes('/sample/{failing[1]}')")
    watched.ready()
    page.locator(".sample-nav a", has_text="the sample list").click()
    page.wait_for_function("() => location.hash.endsWith('/samples?verdict=fail')")
    watched.ready()


def test_a_sample_of_an_epochs_run_labels_each_verdict_and_switches_the_transcript(
    watched: Watched, tmp_path: Path, shots: Path
):
    url = f"sqlite:///{tmp_path / 'epochs.db'}"
    # In a child process: Playwright's event loop holds this thread.
    args = ["eval", "suite", "-m", "gold", "--limit", "2", "--epochs", "3", "--store", url, "-q"]
    res = subprocess.run([sys.executable, "-m", "toolgauge.cli", *args], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    [run] = [r.id for r in open_store(url, create=False).list_runs()]
    page = watched.page
    with view_server(url) as base:
        watched.open(link(base, f"/run/{run}/samples"))
        assert page.locator("table.units th", has_text="epoch").count() == 1
        assert set(page.locator("table.units td.epoch").all_text_contents()) == {"1", "2", "3"}
        watched.open(link(base, f"/run/{run}/sample/{KNOWN_SAMPLE}"))
        labels = page.locator(".unit .epoch-label").all_text_contents()
        assert (
            sorted(set(labels)) == ["epoch 1 · ", "epoch 2 · ", "epoch 3 · "]
            and len(labels) == page.locator(".unit").count()
        )
        assert page.locator("#epochs b.current").text_content() == "1"
        assert "transcript of epoch 1" in str(page.locator("#transcript-title").text_content())
        page.screenshot(path=str(shots / "sample-epochs.png"), full_page=True)
        page.locator('#epochs a[data-epoch="3"]').click()
        page.wait_for_function("() => location.hash.endsWith('epoch=3')")
        watched.ready()
        assert page.locator("#epochs b.current").text_content() == "3"
        assert "transcript of epoch 3" in str(page.locator("#transcript-title").text_content())
        assert "What's the weather in Lisbon right now?" in str(page.locator(".transcript").text_content())
        # A unit of epoch 2 in the list opens its sample on epoch 2.
        watched.open(link(base, f"/run/{run}/samples"))
        page.locator("table.units tr", has=page.locator("td.epoch", has_text="2")).locator("a.unit-link").first.click()
        page.wait_for_function("() => location.hash.endsWith('epoch=2')")
        watched.ready()
        assert page.locator("#epochs b.current").text_content() == "2"


def test_the_run_page_draws_the_benchmarks_own_views(base: str, runs: Runs, watched: Watched, shots: Path):
    if runs.mtu is None:
        pytest.skip("MTU-Bench data not found (set TOOLGAUGE_SHARED_DATA)")
    page = watched.page
    watched.open(link(base, f"/run/{runs.mtu}"))
    # The views come after the page, once the run's verdicts are known.
    curves = page.locator('figure.panel[data-panel="turn-curves"] > svg')
    curves.wait_for(timeout=WAIT_MS)
    box = curves.bounding_box()
    assert box is not None and box["width"] > 100 and box["height"] > 100
    assert curves.locator("path[aria-roledescription='line mark']").count() >= 1
    assert "M-M" in str(curves.text_content())
    table = page.locator('figure.panel[data-panel="turn-table"] table tbody tr')
    assert table.count() >= 2
    assert page.locator(".run-panels h2").all_text_contents() == ["views"]
    page.screenshot(path=str(shots / "views.png"), full_page=True)


def test_a_bfcl_sample_shows_the_gold_calls_beside_the_decoded_ones(base: str, runs: Runs, watched: Watched):
    if runs.bfcl is None:
        pytest.skip("BFCL data not found (set TOOLGAUGE_SHARED_DATA)")
    page = watched.page
    watched.open(link(base, f"/run/{runs.bfcl}/sample/simple_python_0"))
    gold = page.locator(".versus .gold .call-name").all_text_contents()
    model = page.locator(".versus .model .call-name").all_text_contents()
    assert gold == model == ["calculate_triangle_area"]  # the gold model answers with the gold call
    assert '"base"' in str(page.locator(".versus .model").text_content())  # its arguments, not "{}"


# -- untrusted text ------------------------------------------------------------------------------------------


def _assert_inert(watched: Watched) -> None:
    page = watched.page
    text = watched.main_text()
    for literal in (SCRIPT, IMG, JS_URL, ENTITIES, HOSTILE_TOOL):
        assert literal in text, literal
    assert LONG_LINE in text
    # Nothing from the data became an element: no image, script, frame, event attribute or javascript: link.
    assert page.locator("main img, main script, main iframe, main object, main [onerror]").count() == 0
    assert page.locator('a[href^="javascript"]').count() == 0
    # The 100,000-character line wraps: the page is no wider than the window.
    assert page.evaluate("() => document.documentElement.scrollWidth") <= WIDTH


def test_a_hostile_transcript_runs_no_script_and_reads_literally(base: str, runs: Runs, watched: Watched, shots: Path):
    page = watched.page
    watched.open(link(base, f"/run/{runs.hostile}/sample/{quote(HOSTILE_ID, safe='')}"))
    _assert_inert(watched)
    assert HOSTILE_ID in str(page.locator("h1").text_content())
    page.screenshot(path=str(shots / "hostile.png"))
    watched.open(link(base, f"/run/{runs.hostile}/samples"))  # the hostile id as a link
    page.locator("a.unit-link").first.click()
    page.wait_for_function("() => location.hash.includes('/sample/')")
    watched.ready()
    assert HOSTILE_ID in str(page.locator("h1").text_content())
    watched.open(link(base, f"/run/{runs.hostile}"))
    watched.open(base)


# -- the HTML report -----------------------------------------------------------------------------------------


def test_the_html_report_opens_offline_with_its_charts_samples_and_transcripts(
    runs: Runs, watched: Watched, tmp_path: Path, shots: Path
):
    if runs.mtu is None:
        pytest.skip("MTU-Bench data not found (set TOOLGAUGE_SHARED_DATA)")
    out = tmp_path / "mtu.html"
    assert invoke("report", runs.mtu, "--store", runs.url, "--html", out).exit_code == 0
    page = watched.page
    watched.open(out.as_uri())
    assert page.locator('figure.chart[data-chart="by-split"] > svg path[aria-roledescription="bar"]').count() >= 5
    page.screenshot(path=str(shots / "report.png"), full_page=True)
    page.locator("a.samples-link").click()
    page.wait_for_function("() => location.hash.endsWith('/samples')")
    watched.ready()
    assert page.locator("a.unit-link").count() == 20
    mixed = tmp_path / "mixed.html"
    assert invoke("report", runs.mixed, "--store", runs.url, "--html", mixed).exit_code == 0
    watched.open(mixed.as_uri() + f"#/run/{runs.mixed}/sample/weather-002")
    assert "fail" in page.locator(".unit .badge").all_text_contents()
    assert page.locator(".transcript .call-block").count() >= 2
    watched.open(mixed.as_uri() + f"#/run/{runs.mixed}/sample/{KNOWN_SAMPLE}")  # passed: no transcript kept
    assert "failing samples only" in watched.main_text()


def test_a_report_with_all_samples_links_each_samples_own_page(runs: Runs, watched: Watched, tmp_path: Path):
    import json

    out = tmp_path / "mixed.html"
    res = invoke("report", runs.mixed, "--store", runs.url, "--html", out, "--all-samples")
    assert res.exit_code == 0, res.output
    page = watched.page
    watched.open(out.as_uri() + f"#/run/{runs.mixed}/samples")
    assert page.locator("#samples-folder").get_attribute("href") == "mixed_samples/index.html"
    # A passing sample: the report holds no transcript of it, and links its page in the folder.
    watched.open(out.as_uri() + f"#/run/{runs.mixed}/sample/{KNOWN_SAMPLE}")
    assert "failing samples only" in watched.main_text()
    page.locator("#sample-file").click()
    page.wait_for_load_state()
    assert page.url.startswith((tmp_path / "mixed_samples").as_uri())
    assert KNOWN_SAMPLE in str(page.locator("h1").text_content())
    assert "What's the weather in Lisbon right now?" in str(page.locator(".transcript").text_content())
    assert page.locator("script").count() == 0
    page.locator("a", has_text="all samples").click()
    page.wait_for_load_state()
    payload = json.loads(out.read_text().split('id="toolgauge-data">')[1].split("</script>")[0])
    assert page.locator("table.units tbody tr").count() == payload["units"]["units"] > 0  # every unit of the run


def test_the_html_report_of_a_hostile_run_runs_no_script(runs: Runs, watched: Watched, tmp_path: Path):
    out = tmp_path / "hostile.html"
    assert invoke("report", runs.hostile, "--store", runs.url, "--html", out).exit_code == 0
    watched.open(out.as_uri() + f"#/run/{runs.hostile}/sample/{quote(HOSTILE_ID, safe='')}")
    _assert_inert(watched)


# -- the token and live updates --------------------------------------------------------------------------------


def test_a_token_server_shows_nothing_without_it_and_everything_with_it(runs: Runs, watched: Watched):
    with view_server(runs.url, "--token", "browser-token") as url:
        root = url.split("?")[0]
        page = watched.page
        answer = page.goto(root)
        assert answer is not None and answer.status == 401
        assert "token" in str(page.text_content("body")) and page.locator("a.run-link").count() == 0
        assert watched.errors == ["console: Failed to load resource: the server responded with a status of 401 "
                                  "(Unauthorized)"]  # fmt: skip
        watched.errors.clear()
        watched.open(url)  # ?token= once: the cookie carries it for the API calls after
        assert runs.gold in page.locator("a.run-link").all_text_contents()
        watched.open(root + f"#/run/{runs.gold}/sample/{KNOWN_SAMPLE}")
        assert "What's the weather in Lisbon right now?" in watched.main_text()


def _wait(check: Any, what: str, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def test_the_run_page_follows_a_running_run_until_it_finishes(runs: Runs, watched: Watched, tmp_path: Path):
    url = f"sqlite:///{tmp_path / 'live.db'}"
    gate = threading.Event()
    answered: list[int] = []

    def held(request: dict[str, Any], _headers: Mapping[str, str]) -> tuple[int, bytes]:
        if is_probe(request):
            return 200, completion("ok")
        answered.append(1)
        if len(answered) > 1:
            gate.wait(120)  # the first sample finishes, the next is held until the page has seen the run
        return 200, completion("no tool")

    with ChatStub(held) as stub:
        env = {**os.environ, "PYTHONPATH": str(SRC)}
        proc = subprocess.Popen(
            [sys.executable, "-m", "toolgauge.cli", "eval", "suite", "--model", stub.model("live"), "--store", url,
             "--limit", "3", "--concurrency", "1", "--max-retries", "0", "-q"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        )  # fmt: skip
        try:

            def one_done() -> bool:
                if not Path(url.removeprefix("sqlite:///")).exists():
                    return False
                try:
                    st = open_store(url, create=False)
                except UsageError:  # the eval is still creating the store's tables
                    return False
                try:
                    runs_now = st.list_runs(1)
                    return bool(runs_now) and any(s.status == "done" for s in st.sample_states(runs_now[0].id).values())
                finally:
                    st.close()

            _wait(lambda: one_done() or proc.poll() is not None, "the first finished sample")
            assert proc.poll() is None, proc.communicate()
            with view_server(url) as base:
                st = open_store(url, create=False)
                run_id = st.list_runs(1)[0].id
                st.close()
                page = watched.page
                watched.open(link(base, f"/run/{run_id}"))
                assert page.locator("h1 .s-running").count() == 1 and page.locator("#live").is_visible()
                page.evaluate("() => { document.body.dataset.sameDocument = 'yes'; }")
                gate.set()
                page.wait_for_selector("h1 .s-finished", timeout=WAIT_MS)
                assert page.evaluate("() => document.body.dataset.sameDocument") == "yes"  # updated, not reloaded
                assert page.locator("table.metrics").count() == 1 and not page.locator("#live").is_visible()
            assert proc.wait(timeout=120) in (0, 1)
        finally:
            gate.set()
            if proc.poll() is None:
                proc.kill()
            proc.wait()


# -- compare and sweeps: a store with one sweep, gold and a replay that fails known turns on the whole suite ----


@pytest.fixture(scope="module")
def swept(tmp_path_factory: pytest.TempPathFactory) -> SweepRuns:
    return make_sweep(tmp_path_factory.mktemp("view-sweep"))


@pytest.fixture(scope="module")
def sweep_base(swept: SweepRuns) -> Iterator[str]:
    with view_server(swept.url) as url:
        yield url


def test_three_runs_picked_in_the_list_compare_against_the_first_with_the_differing_units_linked(
    sweep_base: str, swept: SweepRuns, watched: Watched, shots: Path
):
    page = watched.page
    watched.open(sweep_base)
    assert page.locator("#compare").is_disabled()
    page.locator(f'input.pick[data-run="{swept.gold}"]').check()  # the first ticked is the baseline
    assert page.locator("#compare").is_disabled()
    page.locator(f'input.pick[data-run="{swept.replay}"]').check()
    assert page.locator("#compare").is_enabled()
    page.locator(f'input.pick[data-run="{swept.replay2}"]').check()
    page.locator("#compare").click()
    page.wait_for_function("() => location.hash.startsWith('#/compare')")
    watched.ready()
    assert page.url.endswith(f"#/compare?run={swept.gold}&run={swept.replay}&run={swept.replay2}")
    runs = [swept.gold, swept.replay, swept.replay2]
    # Per headline metric a row per run: the baseline, then each run against it.
    rows = page.locator('table.compare-metrics tr[data-metric="success_rate"]')
    assert [r.get_attribute("data-run") for r in rows.all()] == runs
    assert "baseline" in str(rows.nth(0).text_content())
    replay = rows.nth(1).locator("td").all_text_contents()
    # metric, run, model, value, n, run - A, interval, test, p, significant: 6 of 24 dialogues fail.
    assert replay[0] == "success_rate" and replay[3:6] == ["75.0%", "24", "−0.250"]
    assert replay[6].startswith("[−") and replay[7] == "mcnemar_exact" and replay[9] == "significant"
    assert rows.nth(2).locator("td").all_text_contents()[5] == f"−{len(swept.failing2) / 24:.3f}"
    # The units whose verdict differs across the three runs, each verdict linked to its sample in that run.
    wrong = set(swept.failing) | set(swept.failing2)
    assert set(page.locator("table.differing .flip-id").all_text_contents()) == wrong
    assert page.locator("#only-some").text_content() == "0"
    page.screenshot(path=str(shots / "compare.png"), full_page=True)
    both = next(u for u in swept.failing if u in swept.failing2)
    one = next(u for u in swept.failing2 if u not in swept.failing)
    row = page.locator(f'table.differing tr[data-unit="{one}"]')
    assert [row.locator(f'td[data-run="{r}"] .badge').text_content() for r in runs] == ["pass", "pass", "fail"]
    assert [page.locator(f'table.differing tr[data-unit="{both}"] td[data-run="{r}"] .badge').text_content()
            for r in runs] == ["pass", "fail", "fail"]  # fmt: skip

    def follow_to_sample(run: str) -> str | None:
        """Follow the flipped unit's link into ``run``'s sample page; its verdict there, then back."""
        row.locator(f'td[data-run="{run}"] a.in-run').click()
        page.wait_for_function(f"() => location.hash === '#/run/{run}/sample/{one.split('#')[0]}'")
        watched.ready()
        verdict = page.locator(f'.unit[data-unit="{one}"] .badge').text_content()
        page.go_back()
        watched.ready()
        return verdict

    assert follow_to_sample(swept.replay2) == "fail"
    assert follow_to_sample(swept.replay) == "pass"
    # Another baseline: the second replay first, the others after it in their order.
    page.locator(f'.sides li[data-run="{swept.replay2}"] a.baseline-link').click()
    page.wait_for_function(f"() => location.hash.startsWith('#/compare?run={swept.replay2}&')")
    watched.ready()
    rows = page.locator('table.compare-metrics tr[data-metric="success_rate"]')
    assert [r.get_attribute("data-run") for r in rows.all()] == [swept.replay2, swept.gold, swept.replay]
    assert rows.nth(1).locator("td").all_text_contents()[5].startswith("+")


def test_two_runs_compare_with_a_swap_link_and_the_old_link_still_works(
    sweep_base: str, swept: SweepRuns, watched: Watched
):
    page = watched.page
    watched.open(link(sweep_base, f"/compare?a={swept.gold}&b={swept.replay}"))
    assert page.locator("h1").text_content() == "suite: B against A"
    assert page.locator(".sides .only-a").all_text_contents() == ["0"]
    assert page.locator("table.differing .flip-id").all_text_contents() == swept.failing
    page.locator("#swap").click()
    page.wait_for_function(f"() => location.hash === '#/compare?run={swept.replay}&run={swept.gold}'")
    watched.ready()
    flips = str(page.locator(f'.sides li[data-run="{swept.gold}"] .flip-counts').text_content())
    assert flips == f"{len(swept.failing)} fail → pass, 0 pass → fail"


def test_the_sweep_page_ranks_the_models_with_intervals_and_links_each_cell(
    sweep_base: str, swept: SweepRuns, watched: Watched, shots: Path
):
    page = watched.page
    watched.open(sweep_base)
    page.locator("#sweeps-link").click()
    page.wait_for_function("() => location.hash === '#/sweeps'")
    watched.ready()
    assert page.locator("a.sweep-link").all_text_contents() == [swept.sweep]
    assert "3 / 3" in str(page.locator("table.sweeps").text_content())
    page.locator("a.sweep-link").click()
    page.wait_for_function(f"() => location.hash === '#/sweep/{swept.sweep}'")
    watched.ready()
    board = page.locator("table.leaderboard")
    assert board.count() == 1
    assert [r.get_attribute("data-run") for r in board.locator("tbody tr").all()] == [
        swept.gold, swept.replay, swept.replay2
    ]  # fmt: skip
    replay = board.locator(f'tr[data-run="{swept.replay}"]')
    # success_rate of the replay: 18 of 24 with its 95% interval (from the run's summary).
    cells = replay.locator("a.cell-link").all_text_contents()
    assert len(cells) == 3 and cells[2].startswith("75.0% [") and cells[2].endswith("%]")
    assert "significant (paired)" in str(replay.text_content())
    assert "best" in str(board.locator(f'tr[data-run="{swept.gold}"]').text_content())
    # The board as a chart: a point and a 95% interval per model and metric, the models in their ranked order.
    chart = page.locator('figure.intervals[data-benchmark="suite"] > svg')
    assert chart.locator("[aria-roledescription='point']").count() == 3 * 3
    assert "1. gold" in str(chart.text_content())
    page.screenshot(path=str(shots / "sweep.png"), full_page=True)
    replay.locator("a.cell-link").nth(2).click()
    page.wait_for_function(f"() => location.hash === '#/run/{swept.replay}'")
    watched.ready()
    assert "replay:" in str(page.locator("h1").text_content())
    page.go_back()
    watched.ready()
    # Every model's run at once, the best as the baseline.
    page.locator("a.compare-all").click()
    page.wait_for_function("() => location.hash.startsWith('#/compare')")
    watched.ready()
    rows = page.locator('table.compare-metrics tr[data-metric="success_rate"]')
    assert [r.get_attribute("data-run") for r in rows.all()] == [swept.gold, swept.replay, swept.replay2]
    # Each run's headline values with their own intervals, as a chart.
    chart = page.locator("figure.intervals > svg")
    headline = page.locator("table.compare-metrics tr[data-metric]").count()
    assert chart.locator("[aria-roledescription='point']").count() == headline
    assert f"A: gold ({swept.gold})" in str(chart.text_content())


def test_a_leaderboard_of_six_metrics_and_long_names_fits_1400_px(
    sweep_base: str, swept: SweepRuns, browser: Browser, shots: Path
):
    import json
    import urllib.request

    with urllib.request.urlopen(f"{sweep_base}api/sweeps/{swept.sweep}", timeout=60) as answer:
        board = json.loads(answer.read())
    # Six headline metrics and long model names: the board that overflowed the page.
    wide = board["boards"][0]
    names = ["success_rate", "turn_accuracy", "tool_selection", "argument_accuracy", "no_call_accuracy", "abstention"]
    for i, cell in enumerate(wide["cells"]):
        cell["model"] = f"openai-compatible:http://127.0.0.1:8000/v1/some-org/a-rather-long-model-name-{i}-instruct"
        cell["metrics"] = {n: {"mean": 0.123456 + i / 10, "stderr": 0.01, "ci_low": 0.1, "ci_high": 0.9, "n": 24}
                           for n in names}  # fmt: skip
    wide["metrics"] = names
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    watched = Watched(context.new_page())
    page = watched.page
    page.route(f"**/api/sweeps/{swept.sweep}", lambda route: route.fulfill(json=board))
    try:
        watched.open(link(sweep_base, f"/sweep/{swept.sweep}"))
        table = page.locator("table.leaderboard").bounding_box()
        assert table is not None and table["x"] + table["width"] <= 1400
        assert page.evaluate("document.documentElement.scrollWidth") <= 1400  # the page never scrolls sideways
        assert page.locator("table.leaderboard tbody tr").first.locator("td.cell").count() == 6
        page.screenshot(path=str(shots / "sweep-wide.png"), full_page=True)
    finally:
        context.close()
    watched.check_clean()


def test_comparing_runs_of_two_benchmarks_says_so_on_the_page(base: str, runs: Runs, watched: Watched):
    if runs.mtu is None:
        pytest.skip("MTU-Bench data not found (set TOOLGAUGE_SHARED_DATA)")
    watched.open(link(base, f"/compare?a={runs.gold}&b={runs.mtu}"))
    assert watched.main_text() == (
        f"run {runs.gold} is suite and run {runs.mtu} is mtu-bench: compare runs of the same benchmark"
    )


def test_the_sweep_html_report_opens_offline_with_the_leaderboard_and_the_runs_metrics(
    swept: SweepRuns, watched: Watched, tmp_path: Path
):
    out = tmp_path / "sweep.html"
    assert invoke("report", swept.sweep, "--store", swept.url, "--html", out).exit_code == 0
    page = watched.page
    watched.open(out.as_uri())
    board = page.locator("table.leaderboard")
    assert [r.get_attribute("data-run") for r in board.locator("tbody tr").all()] == [
        swept.gold, swept.replay, swept.replay2
    ]  # fmt: skip
    cells = board.locator(f'tr[data-run="{swept.replay}"] a.cell-link').all_text_contents()
    assert cells[2].startswith("75.0% [") and page.locator("a.compare-link").count() == 0
    assert page.locator("a.compare-all").count() == 0
    board.locator(f'tr[data-run="{swept.replay}"] a.run-link').click()
    page.wait_for_function(f"() => location.hash === '#/run/{swept.replay}'")
    watched.ready()
    assert page.locator("table.metrics tr.headline").count() == 3
    # Its samples and verdicts, and a failing sample's transcript, are in the file too.
    page.locator("a.samples-link").click()
    page.wait_for_function(f"() => location.hash === '#/run/{swept.replay}/samples'")
    watched.ready()
    assert set(page.locator("table.units .badge").all_text_contents()) == {"pass", "fail"}
    page.select_option("#f-verdict", "fail")
    page.wait_for_function("() => location.hash.includes('verdict=fail')")
    watched.ready()
    page.locator("a.unit-link").first.click()
    page.wait_for_function("() => location.hash.includes('/sample/')")
    watched.ready()
    assert "fail" in page.locator(".unit .badge").all_text_contents()
    assert page.locator(".transcript .call-block").count() >= 1


def test_the_sweep_html_report_draws_each_runs_charts_offline(watched: Watched, tmp_path: Path):
    swept, out = chart_sweep_report(tmp_path)
    page = watched.page
    watched.open(out.as_uri())
    page.locator(f'table.leaderboard tr[data-run="{swept.run}"] a.run-link').click()
    page.wait_for_function(f"() => location.hash === '#/run/{swept.run}'")
    watched.ready()
    chart = page.locator('figure.chart[data-chart="by-category"] svg')
    assert chart.count() == 1 and chart.is_visible()
    box = chart.bounding_box()
    assert box is not None and box["width"] > 100 and box["height"] > 50
    assert chart.locator("path, rect").count() > 0  # bars drawn, not an empty frame
    assert page.locator("figure.chart p.error").count() == 0
