"""``toolgauge.analysis``: stored runs, their metrics and per-unit verdicts as pandas DataFrames.

Checked on real stored runs of the built-in suite (gold, and a scripted model that answers every turn with text,
two epochs), against what the store and ``rescore --samples`` hold.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
from pathlib import Path
from typing import Any

import pytest

from helpers.cli_helpers import SAMPLE_FIELDS, invoke, results_of, sample_rows
from toolgauge.analysis import METRIC_COLUMNS, RUN_COLUMNS, metrics_df, runs_df, samples_df
from toolgauge.api import read_run
from toolgauge.benchmarks.suite.loader import builtin_suite_path, load_suite
from toolgauge.errors import UsageError


@pytest.fixture(autouse=True)
def need_pandas() -> None:
    if importlib.util.find_spec("pandas") is not None:
        return
    if os.environ.get("CI") == "true":  # make test installs the [analysis] extra: a skip would hide a broken setup
        pytest.fail("CI must run the analysis tests: pandas is not installed")
    pytest.skip("pandas is not installed (pip install 'toolgauge[analysis]'; make test installs it)")


LIMIT = 5


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A store with a gold run and a scripted run of two epochs, both of the first LIMIT dialogues."""
    tmp = tmp_path_factory.mktemp("analysis")
    url = f"sqlite:///{tmp / 'store.db'}"
    script = tmp / "script.json"
    script.write_text(json.dumps(["I cannot help with that."] * 200))
    ids = []
    for model in (["--model", "gold"], ["--model", f"scripted:{script}", "--epochs", "2"]):
        res = invoke("eval", "suite", *model, "--limit", str(LIMIT), "--store", url, "--json", "-q")
        assert res.exit_code in (0, 1), res.output  # the scripted run fails turns, not samples
        run = results_of(res).run
        assert run is not None
        ids.append(run.id)
    return {"url": url, "gold": ids[0], "scripted": ids[1], "tmp": tmp}


def test_runs_df_lists_every_run_newest_first(store: dict[str, Any]) -> None:
    frame = runs_df(store=store["url"])
    assert list(frame.columns) == list(RUN_COLUMNS)
    assert list(frame["run_id"]) == [store["scripted"], store["gold"]]
    gold = frame.set_index("run_id").loc[store["gold"]]
    stored = read_run(store["gold"], store=store["url"])
    assert stored.results is not None and stored.results.run is not None
    assert (gold["benchmark"], gold["model"], gold["status"], gold["samples"]) == ("suite", "gold", "finished", LIMIT)
    assert gold["epochs"] == 1 and gold["model_calls"] == stored.results.run.model_calls > 0
    assert frame.set_index("run_id").loc[store["scripted"], "epochs"] == 2
    assert str(frame["created_at"].dt.tz) == "UTC"
    assert list(runs_df(store=store["url"], limit=1)["run_id"]) == [store["scripted"]]


def test_metrics_df_holds_every_metric_with_the_headline_spread(store: dict[str, Any]) -> None:
    frame = metrics_df(store["scripted"], store=store["url"])
    stored = read_run(store["scripted"], store=store["url"]).results
    assert stored is not None
    assert list(frame.columns) == list(METRIC_COLUMNS) and len(frame) == len(stored.metrics)
    for metric, row in zip(stored.metrics, frame.itertuples(index=False), strict=True):
        assert (row.name, row.value, row.kind) == (metric.name, metric.value, metric.kind)
        assert (row.by, row.group) == (metric.by, metric.group)
    headline = frame[frame["headline"]].set_index("name")
    assert set(headline.index) == set(stored.summary)
    for name, summary in stored.summary.items():
        assert summary.ci_low is not None
        got = headline.loc[name]
        assert (got["stderr"], got["ci_low"], got["ci_high"]) == (summary.stderr, summary.ci_low, summary.ci_high)
    assert not frame[~frame["headline"]]["ci_low"].notna().any()  # no spread where the store has none


def test_samples_df_is_rescore_samples_as_a_frame(store: dict[str, Any]) -> None:
    frame = samples_df(store["scripted"], store=store["url"])
    out = store["tmp"] / "rescored.jsonl"
    rescored = invoke("rescore", store["scripted"], "--store", store["url"], "--samples", out, "--json")
    assert rescored.exit_code == 0, rescored.output
    rows = sample_rows(out)
    turns = sum(len(d.turns) for d in load_suite(builtin_suite_path())[:LIMIT])
    assert len(frame) == len(rows) == 2 * turns  # every turn of every dialogue, in both epochs
    assert list(frame.columns[:3]) == ["run_id", "benchmark", "model"]
    # The frame has export's samples-table columns: the scores, not a sample's cost (sample_cost_usd).
    table_fields = {f for f in SAMPLE_FIELDS if f not in ("scores", "sample_cost_usd")}
    assert set(frame.columns) >= table_fields | {"scores.tool_accuracy"}
    assert set(frame["run_id"]) == {store["scripted"]} and set(frame["epoch"]) == {1, 2}
    for row, stored in zip(frame.to_dict("records"), rows, strict=True):
        assert (row["id"], row["sample"], row["epoch"], row["value"]) == (
            stored["id"], stored["sample"], stored["epoch"], stored["value"]
        )  # fmt: skip
        for name, score in stored["scores"].items():
            got = row[f"scores.{name}"]
            assert got == score or (score is None and (got is None or math.isnan(got))), name
        assert row["metadata"] == stored["metadata"] and row["weights"] == stored["weights"]
    gold = samples_df(store["gold"], store=store["url"])
    assert len(gold) == turns and (gold["value"] == 1.0).all()


def test_metrics_df_of_a_sweep_has_every_cells_run(store: dict[str, Any]) -> None:
    sweep_file = store["tmp"] / "SWEEP.toml"
    sweep_file.write_text(f'[[model]]\nspec = "gold"\n[[benchmark]]\nname = "suite"\nlimit = {LIMIT}\n'
                          '[[benchmark]]\nname = "wildtoolbench"\n')  # fmt: skip
    ran = invoke("sweep", sweep_file, "--store", store["url"], "--json")
    assert ran.exit_code == 0, ran.output
    doc = json.loads(ran.stdout)
    frame = metrics_df(doc["sweep"], store=store["url"])
    assert set(frame["run_id"]) == {cell["run"] for cell in doc["cells"]}
    assert set(frame["benchmark"]) == {"suite", "wildtoolbench"}
    for cell in doc["cells"]:
        mine = frame[(frame["run_id"] == cell["run"]) & frame["headline"]].set_index("name")
        for name, stat in cell["metrics"].items():
            assert mine.loc[name, "value"] == stat["mean"] and mine.loc[name, "ci_low"] == stat["ci_low"]


def test_a_missing_run_or_store_is_one_usage_error(store: dict[str, Any], tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no run 'nosuchrun'"):
        metrics_df("nosuchrun", store=store["url"])
    with pytest.raises(UsageError, match="no store at"):
        runs_df(store=tmp_path / "none.db")
