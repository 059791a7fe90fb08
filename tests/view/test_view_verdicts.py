"""The viewer's verdicts kept in the store: computed once, paged and filtered by SQL, shared by every viewer.

The run is a real stored suite run (3 dialogues, the gold model); its verdicts come from a stand-in scoring
(``Benchmarks.verdicts``) that counts its calls and makes units of every verdict, error class and epoch, so
each page can be checked against the same filter applied in Python to every unit.
"""

from __future__ import annotations

import html
import json
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from helpers.cli_helpers import invoke
from helpers.view_runs import HOSTILE, skip_or_fail_without, view_missing
from toolgauge.errors import DataError
from toolgauge.results import SampleScore
from toolgauge.store import open_store
from toolgauge.store.store import RunInfo, Store
from toolgauge.view.data import Benchmarks, ViewData, unit_row

skip_or_fail_without(view_missing(browser=False))

SAMPLES = ("weather-001", "weather-002", "weather-003")
UNITS = 1_234


def made_units(n: int = UNITS) -> list[SampleScore]:
    """``n`` units spread over the run's 3 samples: pass, fail, partial, error and unscored, 3 error classes."""
    units = []
    for i in range(n):
        kind = i % 5
        units.append(
            SampleScore(
                id=f"{SAMPLES[i % 3]}#{i:04d}" + ("-Mixed" if i % 11 == 0 else ""),
                sample=SAMPLES[i % 3],
                value=None if kind == 4 else (1.0, 0.0, 0.5, 0.0)[kind],
                error="boom" if kind == 3 else None,
                explanation=None if kind in (0, 4) else f"class-{i % 3}: {HOSTILE}",
                epoch=1 + i % 2,
            )
        )
    return units


@dataclass
class Scoring:
    """A stand-in for the benchmark's scoring: the units it makes, how often it was asked, and what it raises."""

    units: list[SampleScore] = field(default_factory=made_units)
    calls: int = 0
    raises: Exception | None = None

    def __call__(self, _store: Store, _run: RunInfo) -> Iterator[SampleScore]:
        self.calls += 1
        if self.raises is not None:
            raise self.raises
        return iter(self.units)


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    path = tmp_path_factory.mktemp("verdicts") / "s.db"
    res = invoke("eval", "suite", "--model", "gold", "--store", f"sqlite:///{path}", "--limit", "3", "-q", "--json")
    assert res.exit_code == 0, res.output
    return path, json.loads(res.stdout)["run"]["id"]


@pytest.fixture
def store_copy(stored: tuple[Path, str], tmp_path: Path) -> tuple[str, str]:
    """A copy of the stored run for one test: verdicts one test keeps are not another's."""
    path, run = stored
    copy = tmp_path / "s.db"
    copy.write_bytes(path.read_bytes())
    return f"sqlite:///{copy}", run


def viewer(url: str, scoring: Scoring) -> ViewData:
    return ViewData(open_store(url, create=False), Benchmarks(verdicts=scoring))


def expected(units: list[SampleScore], **chosen: Any) -> list[dict[str, Any]]:
    rows = [unit_row(u).model_dump(mode="json") for u in units]
    return [
        r
        for r in rows
        if (not chosen.get("verdict") or r["verdict"] == chosen["verdict"])
        and (not chosen.get("error_class") or r["error_class"] == chosen["error_class"])
        and (not chosen.get("query") or chosen["query"].lower() in r["id"].lower())
    ]


def test_verdicts_are_computed_once_and_a_new_viewer_reads_them_from_the_store(store_copy: tuple[str, str]):
    url, run = store_copy
    scoring = Scoring()
    first = viewer(url, scoring).units(run, per_page=7)
    assert scoring.calls == 1 and first.total == UNITS and len(first.rows) == 7
    again = viewer(url, scoring)  # another viewer process on the same store
    assert again.units(run, per_page=7) == first and scoring.calls == 1
    assert again.sample(run, "weather-002")["units"] and scoring.calls == 1
    counts = Counter(unit_row(u).verdict for u in scoring.units)
    assert first.verdicts == dict(counts) and sum(first.error_classes.values()) == sum(
        1 for u in scoring.units if unit_row(u).error_class
    )
    # What the run was scored from changes (here: it is marked running again): its verdicts are computed again.
    store = open_store(url)
    store.set_run_status(run, "interrupted")
    store.close()
    assert viewer(url, scoring).units(run).total == UNITS and scoring.calls == 2


@pytest.mark.parametrize(
    "chosen",
    [{}, {"verdict": "fail"}, {"verdict": "partial", "error_class": "class-2"}, {"error_class": "run error"},
     {"query": "mixed"}, {"query": "WEATHER-003#1"}, {"verdict": "pass", "query": "no-such-unit"}],
)  # fmt: skip
def test_every_page_of_every_filter_is_the_same_filter_over_every_unit(
    store_copy: tuple[str, str], chosen: dict[str, str]
):
    url, run = store_copy
    scoring = Scoring()
    data = viewer(url, scoring)
    want = expected(scoring.units, **chosen)
    got: list[dict[str, Any]] = []
    page = 1
    while True:
        found = data.units(run, page=page, per_page=100, **chosen)
        assert found.total == len(want) and found.page == page
        got += [r.model_dump(mode="json") for r in found.rows]
        if len(found.rows) < 100:
            break
        page += 1
    assert got == want  # the run's order, every unit once, masked as unit_row masks it
    assert data.units(run, page=page + 5, per_page=100, **chosen).rows == []  # past the end: empty, not an error


def test_previous_and_next_follow_the_sample_list_under_its_filters(store_copy: tuple[str, str]):
    from toolgauge.store.verdicts import UnitFilter

    url, run = store_copy
    units = [
        SampleScore(id="a", sample="weather-001", value=0.0, explanation="x"),
        SampleScore(id="b", sample="weather-002", value=1.0),
        SampleScore(id="c", sample="weather-003", value=0.0, explanation="x"),
        SampleScore(id="d", sample="weather-002", value=1.0),
    ]
    data = viewer(url, Scoring(units=units))
    every = {key: (page["prev"], page["next"]) for key in SAMPLES for page in [data.sample(run, key)]}
    # Samples in the order of their first unit: 001, 002, 003 (002's second unit does not make it come again).
    assert every == {"weather-001": (None, "weather-002"), "weather-002": ("weather-001", "weather-003"),
                     "weather-003": ("weather-002", None)}  # fmt: skip
    failing = UnitFilter(verdict="fail")
    assert (data.sample(run, "weather-001", chosen=failing)["next"]) == "weather-003"
    assert (data.sample(run, "weather-003", chosen=failing)["prev"]) == "weather-001"
    assert data.sample(run, "weather-003", chosen=failing)["next"] is None
    # A sample the filter leaves out still has neighbours: those around its place in the whole list.
    assert (
        data.sample(run, "weather-002", chosen=failing)["prev"],
        data.sample(run, "weather-002", chosen=failing)["next"],
    ) == ("weather-001", "weather-003")


def test_previous_and_next_decide_by_a_grouped_query_when_samples_interleave(store_copy: tuple[str, str], monkeypatch):  # type: ignore[no-untyped-def]
    from toolgauge.store import verdicts

    url, run = store_copy
    monkeypatch.setattr(verdicts, "SCAN", 2)  # as if every sample had more than 200 units in a row
    data = viewer(url, Scoring())  # the 3 samples' units interleave: 001, 002, 003, 001, 002, ...
    assert [(data.sample(run, k)["prev"], data.sample(run, k)["next"]) for k in SAMPLES] == [
        (None, "weather-002"),
        ("weather-001", "weather-003"),
        ("weather-002", None),
    ]


def test_a_scoring_that_cannot_run_lists_the_samples_and_the_next_viewer_tries_again(store_copy: tuple[str, str]):
    url, run = store_copy
    missing = Scoring(raises=DataError("suite.jsonl", "no such file"))
    page = viewer(url, missing).units(run)
    assert page.note == "verdicts not available: suite.jsonl: no such file"
    assert [r.id for r in page.rows] == list(SAMPLES) and {r.verdict for r in page.rows} == {"unscored"}
    working = Scoring()
    assert viewer(url, working).units(run).total == UNITS and working.calls == 1  # the note was not kept for good


def test_a_read_only_store_keeps_the_verdicts_in_a_private_file(store_copy: tuple[str, str]):
    from sqlalchemy import text

    url, run = store_copy
    path = url.removeprefix("sqlite:///")
    scoring = Scoring()
    data = viewer(f"sqlite:///file:{path}?mode=ro&uri=true", scoring)
    assert data.units(run, verdict="fail").total == len(expected(scoring.units, verdict="fail"))
    assert data.sample(run, "weather-001")["units"]
    store = open_store(url, create=False)
    with store.engine.connect() as conn:  # nothing was written to it (its tables were made by the eval)
        assert conn.execute(text("SELECT count(*) FROM view_units")).scalar_one() == 0
    store.close()


def test_a_store_with_the_viewers_tables_is_still_schema_3_for_every_toolgauge(store_copy: tuple[str, str]):
    from toolgauge.store.schema import SCHEMA_VERSION

    url, run = store_copy
    viewer(url, Scoring()).units(run)
    assert SCHEMA_VERSION == 3  # the tables are a cache older clients never read: no version of their own
    for create in (False, True):
        store = open_store(url, create=create)
        assert store.schema_version == 3
        store.close()


def test_an_epochs_run_labels_each_verdict_and_shows_the_chosen_epochs_transcript(tmp_path: Path):
    from toolgauge.cli.view import registry_benchmarks
    from toolgauge.errors import UsageError

    url = f"sqlite:///{tmp_path / 'e.db'}"
    res = invoke("eval", "suite", "-m", "gold", "--limit", "2", "--epochs", "3", "--store", url, "-q", "--json")
    assert res.exit_code == 0, res.output
    run = json.loads(res.stdout)["run"]["id"]
    data = ViewData(open_store(url, create=False), registry_benchmarks())
    page = data.sample(run, "weather-001")
    assert page["epochs"] == 3 and page["epoch"] == 1
    assert sorted({u["epoch"] for u in page["units"]}) == [1, 2, 3]
    assert Counter(u["epoch"] for u in page["units"]).most_common(1)[0][1] == len(page["units"]) // 3
    for epoch in (1, 2, 3):
        shown = data.sample(run, "weather-001", epoch=epoch)
        assert shown["epoch"] == epoch and shown["calls"] and shown["state"]["status"] == "done"
        assert shown["calls"] == page["calls"] or epoch != 1
    store = data.store
    assert [c.model_dump(mode="json") for c in store.transcript(run, "weather-001@e3")] == data.sample(
        run, "weather-001", epoch=3
    )["calls"]
    with pytest.raises(UsageError, match=re.escape("epoch 4: run") + ".*epochs 1 to 3"):
        data.sample(run, "weather-001", epoch=4)
    assert {r.epoch for r in data.units(run, per_page=500).rows} == {1, 2, 3}


def test_the_report_lists_a_bounded_share_and_counts_every_unit(store_copy: tuple[str, str], monkeypatch):  # type: ignore[no-untyped-def]
    from toolgauge.view import html_report

    url, run = store_copy
    scoring = Scoring()
    monkeypatch.setattr(html_report, "ROWS_PER_VERDICT", 3)
    store = open_store(url, create=False)
    payload = html_report.report_data(store, run, Benchmarks(verdicts=scoring), transcripts=2)
    rows = payload["units"]["rows"]
    assert Counter(r["verdict"] for r in rows) == {v: 3 for v in ("pass", "fail", "partial", "error", "unscored")}
    every = [unit_row(u).model_dump(mode="json") for u in scoring.units]
    assert rows == [r for r in every if r in rows]  # the run's order
    assert payload["units"]["units"] == UNITS and sum(payload["units"]["verdicts"].values()) == UNITS
    assert len(payload["samples"]) == 2 and payload["sample_files"] is None


def test_all_samples_writes_one_static_page_per_sample_beside_the_report(store_copy: tuple[str, str], tmp_path: Path):
    from toolgauge.view.html_report import write_html_report
    from toolgauge.view.sample_pages import sample_file_name

    url, run = store_copy
    out = tmp_path / "out" / "r.html"
    store = open_store(url, create=False)
    folder = write_html_report(store, run, out, Benchmarks(verdicts=Scoring()), all_samples=True)
    assert folder == tmp_path / "out" / "r_samples"
    assert sorted(p.name for p in folder.iterdir()) == sorted(["index.html", *(sample_file_name(k) for k in SAMPLES)])
    index = (folder / "index.html").read_text()
    assert index.count("<tr><td>") == UNITS and "<script" not in index.lower()
    page = (folder / sample_file_name("weather-002")).read_text()
    assert "<script" not in page.lower() and HOSTILE not in page
    assert html.escape(HOSTILE, quote=False) in page  # the explanation, as text
    assert "default-src 'none'" in html.unescape(page) and 'href="../r.html"' in page
    assert f'href="{sample_file_name("weather-001")}" id="prev"' in page
    assert f'href="{sample_file_name("weather-003")}" id="next"' in page
    assert "Enjoy Lyon.</pre>" in page  # the transcript is there (weather-002 is about Lyon)
    payload = json.loads(out.read_text().split('id="toolgauge-data">')[1].split("</script>")[0])
    assert payload["sample_files"]["dir"] == "r_samples"
    assert payload["sample_files"]["files"]["weather-001"] == sample_file_name("weather-001")
    # Written again: the folder is replaced whole, nothing else is left beside it.
    write_html_report(store, run, out, Benchmarks(verdicts=Scoring()), all_samples=True)
    assert sorted(p.name for p in out.parent.iterdir()) == ["r.html", "r_samples"]


def test_sample_file_names_are_plain_distinct_and_short():
    from toolgauge.view.sample_pages import sample_file_name

    keys = ["a", "A", "a/b", "../x", "é", "x" * 500, ".hidden", '<img src=x onerror="1">']
    names = [sample_file_name(k) for k in keys]
    assert len(set(names)) == len(keys)
    assert all(re.fullmatch(r"[A-Za-z0-9_-][A-Za-z0-9._-]*\.html", n) and len(n) < 90 for n in names)
