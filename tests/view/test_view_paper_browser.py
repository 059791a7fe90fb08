"""The viewer's paper tab in headless Chromium: a run page links to it, and it shows the tables and figures."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers.paths import FIXTURE_ROOT
from helpers.view_runs import skip_or_fail_without, view_missing

skip_or_fail_without(view_missing(browser=True))

from playwright.sync_api import sync_playwright  # noqa: E402
from test_view_browser import Watched  # noqa: E402

from helpers.cli_helpers import invoke  # noqa: E402
from helpers.view_runs import CHROMIUM, view_server  # noqa: E402

pytestmark = pytest.mark.slow
SESSIONS = FIXTURE_ROOT / "wildtoolbench" / "sessions.jsonl"


@pytest.fixture()
def stored(tmp_path: Path) -> tuple[str, str]:
    """A gold WildToolBench run: (store URL, run id). Made before Playwright takes this thread's event loop."""
    store = f"sqlite:///{tmp_path / 's.db'}"
    res = invoke("eval", "wildtoolbench", "--model", "gold", "--data", SESSIONS, "--store", store, "--json", "-q")
    assert res.exit_code == 0, res.output
    return store, json.loads(res.stdout)["run"]["id"]


@pytest.fixture()
def watched(stored: tuple[str, str]) -> Iterator[Watched]:
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        context = chromium.new_context(viewport={"width": 1280, "height": 900})
        page = Watched(context.new_page())
        yield page
        context.close()
        chromium.close()
    page.check_clean()


def test_the_paper_tab_from_a_run_page(stored: tuple[str, str], watched: Watched) -> None:
    store, run_id = stored
    with view_server(store) as base:
        watched.open(base + "#/run/" + run_id)
        watched.page.click("a.paper-link")
        watched.ready()
        text = watched.main_text()
        assert "wildtoolbench: the paper's tables" in text
        assert "Table 2 · Accuracy by task type" in text and "Table 4 · Error analysis" in text
        assert "100.00" in text  # gold: every rate in percent
        assert watched.page.locator("main .paper-block svg").count() >= 3  # Figure 5 and Tables 2-4 drawn
        watched.open(base + "#/paper/wildtoolbench?run=nosuchrun")
        assert "no run 'nosuchrun'" in watched.main_text()
        # The browser logs the API's deliberate 404 as a failed resource: that one error, and nothing else.
        assert len(watched.errors) == 1 and "404" in watched.errors[0], watched.errors
        watched.errors.clear()
