"""``--name`` and ``--tag KEY=VALUE``: stored with the run, shown in runs, report and --json; ``runs --tag``."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from helpers.cli_helpers import invoke, results_of
from toolgauge.errors import UsageError
from toolgauge.run_labels import check_name, parse_tags, run_meta_options


def test_tags_and_names_are_checked() -> None:
    assert parse_tags(["team=evals", "ckpt = step-400 ", "note="]) == {"team": "evals", "ckpt": "step-400", "note": ""}
    for bad in ("team", "=x", "a b=c"):
        with pytest.raises(UsageError, match="--tag"):
            parse_tags([bad])
    assert check_name("  baseline ") == "baseline"
    for bad in ("", "  ", "two\nlines"):
        with pytest.raises(UsageError, match="--name"):
            check_name(bad)


def test_cache_modes_and_the_no_cache_alias() -> None:
    assert run_meta_options().cache == "on"
    assert run_meta_options(no_cache=True).cache == "off"
    assert run_meta_options(cache="read").cache == "read"
    assert run_meta_options(cache="off", no_cache=True).cache == "off"
    with pytest.raises(UsageError, match="--cache 'sometimes'"):
        run_meta_options(cache="sometimes")
    with pytest.raises(UsageError, match="disagree"):
        run_meta_options(cache="on", no_cache=True)


def _eval(store: str, *extra: str) -> str:
    res = invoke("eval", "suite", "-m", "gold", "--limit", "2", "--store", store, "--json", *extra)
    assert res.exit_code == 0, res.stderr
    run = results_of(res).run
    assert run is not None
    return run.id


def test_names_and_tags_are_stored_and_shown_and_filter_the_run_list(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 's.db'}"
    a = _eval(store, "--name", "baseline", "--tag", "team=evals", "--tag", "ckpt=400")
    b = _eval(store, "--tag", "team=other", "--epochs", "2", "--temperature", "0.5")
    plain = _eval(store)

    report = results_of(invoke("report", a, "--store", store, "--json")).run
    assert report is not None and report.name == "baseline" and report.tags == {"team": "evals", "ckpt": "400"}
    table = " ".join(invoke("report", a, "--store", store).stdout.split())
    assert f"run {a} (baseline ckpt=400 team=evals)" in table

    rows = {r["id"]: r for r in json.loads(invoke("runs", "--store", store, "--json").stdout)}
    assert rows[a]["name"] == "baseline" and rows[a]["tags"] == {"team": "evals", "ckpt": "400"}
    assert rows[plain]["name"] is None and rows[plain]["tags"] == {}
    # The settings that tell runs apart, from each run's provenance.
    assert (rows[b]["epochs"], rows[b]["temperature"], rows[b]["limit"], rows[b]["variant"]) == (2, 0.5, 2, "strict")
    assert rows[a]["cost_usd"] == 0.0  # the gold model costs nothing

    listed = " ".join(invoke("runs", "--store", store).stdout.split())
    assert "baseline ckpt=400 team=evals" in listed and "epochs=2" in listed and "T=0.5" in listed

    tagged = json.loads(invoke("runs", "--store", store, "--json", "--tag", "team=evals").stdout)
    assert [r["id"] for r in tagged] == [a]
    both = json.loads(invoke("runs", "--store", store, "--json", "--tag", "team=evals", "--tag", "ckpt=1").stdout)
    assert both == []


def test_a_bad_tag_is_one_line_and_nothing_is_stored(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    res = invoke("eval", "suite", "-m", "gold", "--limit", "1", "--store", f"sqlite:///{db}", "--tag", "nokey")
    assert res.exit_code == 2 and res.stderr.strip().splitlines() == [
        "error: --tag 'nokey': give KEY=VALUE, e.g. --tag team=evals"
    ]
    assert not db.exists()


def test_a_store_without_the_labels_table_reads_as_unlabelled(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    store = f"sqlite:///{db}"
    run_id = _eval(store)
    with sqlite3.connect(db) as conn:  # a store made by a toolgauge without run labels
        conn.execute("drop table run_labels")
    rows = json.loads(invoke("runs", "--store", store, "--json").stdout)
    assert rows[0]["id"] == run_id and rows[0]["name"] is None
    assert json.loads(invoke("runs", "--store", store, "--json", "--tag", "a=b").stdout) == []


def test_a_sweep_names_its_models_tags_its_runs_and_shows_their_cost(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 's.db'}"
    sweep_file = tmp_path / "SWEEP.toml"
    sweep_file.write_text('[[model]]\nspec = "gold"\nname = "ceiling"\n[[benchmark]]\nname = "suite"\nlimit = 2\n')
    res = invoke("sweep", sweep_file, "--store", store, "--json", "--name", "nightly", "--tag", "team=evals")
    assert res.exit_code == 0, res.stderr
    [cell] = json.loads(res.stdout)["cells"]
    assert (cell["model"], cell["name"], cell["cost_usd"], cell["cost_per_point"]) == ("gold", "ceiling", 0.0, 0.0)
    [row] = json.loads(invoke("runs", "--store", store, "--json", "--tag", "sweep=nightly").stdout)
    assert (
        row["id"] == cell["run"] and row["name"] == "ceiling" and row["tags"] == {"sweep": "nightly", "team": "evals"}
    )
    board = " ".join(invoke("report", json.loads(res.stdout)["sweep"], "--store", store).stdout.split())
    assert "ceiling (gold)" in board and "$/point" in board and "$0" in board

    sweep_file.write_text('[[model]]\nspec = "gold"\nname = ""\n[[benchmark]]\nname = "suite"\n')
    bad = invoke("sweep", sweep_file, "--store", store)
    assert bad.exit_code == 2 and "model[1].name" in bad.stderr


def test_the_viewer_shows_names_tags_settings_and_cost(tmp_path: Path) -> None:
    from toolgauge.cli.view import registry_benchmarks
    from toolgauge.store import open_store
    from toolgauge.view.data import ViewData

    store = f"sqlite:///{tmp_path / 's.db'}"
    named = _eval(store, "--name", "baseline", "--tag", "team=evals", "--epochs", "2")
    plain = _eval(store)
    st = open_store(store, create=False)
    try:
        data = ViewData(st, registry_benchmarks())
        rows = {row.id: row for row in data.runs()}
        page = data.run(named)["run"]
    finally:
        st.close()
    assert (rows[named].name, rows[named].tags, rows[named].cost_usd) == ("baseline", {"team": "evals"}, 0.0)
    assert rows[named].settings == {"mode": None, "variant": "strict", "temperature": 0.0, "epochs": 2, "limit": 2}
    assert rows[plain].name is None and rows[plain].tags == {}
    assert page["name"] == "baseline" and page["settings"]["epochs"] == 2


def test_an_inspect_export_carries_the_name_tags_and_cost(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 's.db'}"
    run_id = _eval(store, "--name", "baseline", "--tag", "team=evals")
    out = tmp_path / "logs"
    res = invoke("export", run_id, "--format", "inspect", "--log-format", "json", "--out", out, "--store", store)
    assert res.exit_code == 0, res.output
    (log,) = list(out.iterdir())
    document = json.loads(log.read_text())
    assert document["tags"] == ["team=evals"]
    metadata = document["eval"]["metadata"]
    assert metadata["toolgauge_name"] == "baseline" and metadata["toolgauge_cost_usd"] == 0.0
