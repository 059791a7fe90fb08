"""``toolgauge export --format csv|jsonl|parquet``: per-sample tables that hold what ``rescore --samples`` writes.

Each table is read back and rebuilt into ``--samples`` rows of the same run; the metrics tables hold what
``report --csv`` prints. Bad input is one line and exit 2, and ``--out`` is written whole or not at all.
"""

from __future__ import annotations

import csv
import importlib.util
import json
import os
import shutil
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

from helpers.cli_helpers import SAMPLE_FIELDS, invoke
from helpers.export_runs import bfcl_replay_run, rescored_rows, suite_gold_run
from toolgauge.export.staging import staged_dir
from toolgauge.export.tables import LEAD_COLUMNS, SCORE_PREFIX

HAVE_PYARROW = importlib.util.find_spec("pyarrow") is not None


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("export_tables")


@pytest.fixture(scope="module")
def store(work: Path) -> str:
    return f"sqlite:///{work / 'store.db'}"


@pytest.fixture(scope="module")
def suite_run(store: str) -> str:
    return suite_gold_run(store)


@pytest.fixture(scope="module")
def bfcl_run(store: str, bfcl_dir: Path, work: Path) -> str:
    return bfcl_replay_run(store, bfcl_dir, work)


def _typed(text: str, like: Any) -> Any:
    """A CSV cell back as the type of the ``--samples`` value it stands for."""
    if text == "":
        return None if like is None or not isinstance(like, str) else ""
    if isinstance(like, bool):
        return {"true": True, "false": False}[text]
    if isinstance(like, int):
        return int(text)
    if isinstance(like, float):
        return float(text)
    return text


def rebuild(row: dict[str, Any], expected: dict[str, Any], *, text_cells: bool) -> dict[str, Any]:
    """A table row as a ``--samples`` row; ``text_cells``: every cell is text (CSV), objects are JSON text."""
    rebuilt: dict[str, Any] = {}
    for column in LEAD_COLUMNS:
        rebuilt[column] = _typed(row[column], expected[column]) if text_cells else row[column]
    rebuilt["scores"] = {}
    for column, value in row.items():
        if column.startswith(SCORE_PREFIX):
            name = column[len(SCORE_PREFIX) :]
            if name in expected["scores"]:
                like = expected["scores"][name]
                rebuilt["scores"][name] = _typed(value, like) if text_cells else value
            else:  # a measure other units have: empty here
                assert value in ("", None), (column, value)
    for column in ("weights", "metadata"):
        rebuilt[column] = json.loads(row[column]) if isinstance(row[column], str) else row[column]
    return rebuilt


def read_table(path: Path) -> list[dict[str, Any]]:
    if path.suffix == ".csv":
        with path.open(newline="", encoding="utf-8") as fh:
            return list(csv.DictReader(fh))
    if path.suffix == ".jsonl":
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    import pyarrow.parquet as pq

    return list(pq.read_table(path).to_pylist())


def _require_pyarrow(fmt: str) -> None:
    if fmt == "parquet" and not HAVE_PYARROW:
        if os.environ.get("CI") == "true":
            pytest.fail("CI must check the Parquet export: pyarrow is not installed (the dev setup installs it)")
        pytest.skip("pyarrow not installed: pip install 'toolgauge[parquet]' (make test installs it)")


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
@pytest.mark.parametrize("which", ["suite", "bfcl"])
def test_table_round_trips_to_the_rescored_samples(fmt: str, which: str, request: pytest.FixtureRequest, tmp_path):
    _require_pyarrow(fmt)
    store = request.getfixturevalue("store")
    run_id = request.getfixturevalue(f"{which}_run")
    rescored = rescored_rows(store, run_id, tmp_path / "samples.jsonl")
    assert rescored and set(rescored[0]) == SAMPLE_FIELDS
    # The tables hold the scores; a sample's cost (sample_cost_usd) is not one of their columns.
    expected = [{k: v for k, v in row.items() if k != "sample_cost_usd"} for row in rescored]
    assert any(row["value"] == 0.0 for row in expected) or which == "suite"  # the BFCL run has failures

    res = invoke("export", run_id, "--format", fmt, "--out", tmp_path / "out", "--store", store)
    assert res.exit_code == 0, res.output
    rows = read_table(tmp_path / "out" / f"samples.{fmt}")
    assert len(rows) == len(expected)
    columns = list(rows[0])
    assert columns[: len(LEAD_COLUMNS)] == list(LEAD_COLUMNS)
    assert columns[-2:] == ["weights", "metadata"]
    assert {c[len(SCORE_PREFIX) :] for c in columns if c.startswith(SCORE_PREFIX)} == {
        name for row in expected for name in row["scores"]
    }
    for row, want in zip(rows, expected, strict=True):
        assert rebuild(row, want, text_cells=fmt == "csv") == want


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_metrics_table_is_what_report_csv_prints(fmt: str, store: str, bfcl_run: str, tmp_path: Path):
    _require_pyarrow(fmt)
    report = invoke("report", bfcl_run, "--store", store, "--csv")
    assert report.exit_code == 0, report.output
    res = invoke("export", bfcl_run, "--format", fmt, "--out", tmp_path / "out", "--store", store)
    assert res.exit_code == 0, res.output
    path = tmp_path / "out" / f"metrics.{fmt}"
    if fmt == "csv":
        assert path.read_text() == report.stdout
        return
    expected = list(csv.DictReader(report.stdout.splitlines()))
    rows = read_table(path)
    assert [list(r) for r in rows] == [list(e) for e in expected]
    for row, want in zip(rows, expected, strict=True):
        # One type per column: Parquet holds the values (counts and rates) as float64.
        value = want.pop("value")
        assert row.pop("value") == (float(value) if value else None)
        assert {k: "" if v is None else str(v) for k, v in row.items()} == want


def test_parquet_without_pyarrow_is_one_line_naming_the_extra(store: str, suite_run: str, tmp_path: Path, monkeypatch):
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow now raises ImportError
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    res = invoke("export", suite_run, "--format", "parquet", "--out", tmp_path / "out", "--store", store)
    assert res.exit_code == 2
    assert res.stderr.strip().splitlines() == [
        "error: --format parquet needs pyarrow: pip install 'toolgauge[parquet]'"
    ]
    assert not (tmp_path / "out").exists()


def _beside(out: Path) -> list[str]:
    return sorted(p.name for p in out.parent.iterdir())


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("no-such-run", "--format", "csv"), "no run 'no-such-run' in the store"),
        (("{suite}", "--format", "xml"), "--format 'xml': one of inspect, bfcl, csv, jsonl, parquet"),
        (("{suite}", "--format", "bfcl"), "is a suite run: --format bfcl exports BFCL runs only"),
        (("{suite}", "--format", "csv", "--log-format", "json"), "--log-format is for --format inspect"),
        (("{suite}", "--format", "inspect", "--log-format", "zip"), "--log-format 'zip': one of eval, json"),
    ],
)
def test_bad_input_is_one_line_and_writes_nothing(args, message, store: str, suite_run: str, tmp_path: Path):
    out = tmp_path / "out"
    argv = [a.replace("{suite}", suite_run) for a in args]
    res = invoke("export", *argv, "--out", out, "--store", store)
    assert res.exit_code == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], res.stderr
    assert "Traceback" not in res.output
    assert _beside(out) == []  # neither --out nor a staging folder


def test_a_non_empty_out_needs_force_and_force_replaces_it(store: str, suite_run: str, tmp_path: Path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    res = invoke("export", suite_run, "--format", "jsonl", "--out", out, "--store", store)
    assert res.exit_code == 2
    assert res.stderr.strip() == f"error: --out {out}: folder exists and is not empty (give --force to replace it)"
    assert [p.name for p in out.iterdir()] == ["keep.txt"]

    res = invoke("export", suite_run, "--format", "jsonl", "--out", out, "--store", store, "--force")
    assert res.exit_code == 0, res.output
    assert sorted(p.name for p in out.iterdir()) == ["metrics.jsonl", "samples.jsonl"]
    assert _beside(out) == ["out"]

    empty = tmp_path / "empty"
    empty.mkdir()
    assert invoke("export", suite_run, "--format", "csv", "--out", empty, "--store", store).exit_code == 0
    assert sorted(p.name for p in empty.iterdir()) == ["metrics.csv", "samples.csv"]


def test_a_failure_while_writing_leaves_out_as_it_was(tmp_path: Path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "old.txt").write_text("old")
    with pytest.raises(RuntimeError), staged_dir(out, force=True) as folder:
        (folder / "half.csv").write_text("id\n")
        raise RuntimeError("disk full")
    assert [p.name for p in out.iterdir()] == ["old.txt"]
    assert _beside(out) == ["out"]


def test_a_run_that_cannot_be_rescored_exports_its_stored_samples_and_says_so(
    store: str, bfcl_dir: Path, tmp_path: Path
):
    # A BFCL run whose data folder is gone afterwards: the verdicts cannot be recomputed.
    data = tmp_path / "bfcl"
    (data / "possible_answer").mkdir(parents=True)
    shutil.copy(bfcl_dir / "BFCL_v4_simple_python.json", data)
    shutil.copy(bfcl_dir / "possible_answer" / "BFCL_v4_simple_python.json", data / "possible_answer")
    made = invoke("eval", "bfcl", "--data", data, "--categories", "simple_python", "--limit", "3", "--model", "gold",
                  "--store", store, "--json", "-q")  # fmt: skip
    assert made.exit_code == 0, made.output
    run_id = json.loads(made.stdout)["run"]["id"]
    shutil.rmtree(data)

    res = invoke("export", run_id, "--format", "jsonl", "--out", tmp_path / "out", "--store", store)
    assert res.exit_code == 0, res.output
    assert "could not be rescored" in res.stderr and "BFCL_v4_simple_python.json" in res.stderr
    rows = read_table(tmp_path / "out" / "samples.jsonl")
    assert [r["sample"] for r in rows] == ["simple_python_0", "simple_python_1", "simple_python_2"]
    assert all(r["value"] is None and r["metadata"]["status"] == "done" for r in rows)
    metrics = read_table(tmp_path / "out" / "metrics.jsonl")
    assert {"metric": "accuracy", "by": "category", "group": "simple_python", "value": 1.0, "n": 3} in metrics

    bfcl = invoke("export", run_id, "--format", "bfcl", "--out", tmp_path / "bfcl_out", "--store", store)
    assert bfcl.exit_code == 2
    assert "--format bfcl needs the run's verdicts" in bfcl.stderr
    assert not (tmp_path / "bfcl_out").exists()


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet", "inspect", "bfcl"])
def test_no_export_holds_a_secret_a_model_output_quoted(fmt: str, bfcl_dir: Path, tmp_path: Path, monkeypatch):
    _require_pyarrow(fmt)
    secret = "tg-export-s3cr3t-8f2a91"
    monkeypatch.setenv("EXPORT_TEST_API_TOKEN", secret)
    results = tmp_path / "results"
    results.mkdir()
    lines = [{"id": "simple_python_0", "result": f"I would use the key {secret} here."},
             {"id": "simple_python_1", "result": f"[math.factorial(number='{secret}')]"}]  # fmt: skip
    (results / "BFCL_v4_simple_python_result.json").write_text("".join(json.dumps(x) + "\n" for x in lines))
    store = f"sqlite:///{tmp_path / 'store.db'}"
    made = invoke("eval", "bfcl", "--data", bfcl_dir, "--categories", "simple_python", "--mode", "prompt",
                  "--limit", "2", "--model", f"replay:{results}", "--store", store, "--json", "-q")  # fmt: skip
    assert made.exit_code == 0, made.output
    run_id = json.loads(made.stdout)["run"]["id"]
    res = invoke("export", run_id, "--format", fmt, "--out", tmp_path / "out", "--store", store)
    assert res.exit_code == 0, res.output
    files = [p for p in (tmp_path / "out").rglob("*") if p.is_file()]
    assert files
    assert not [p for p in files if secret.encode() in content(p)]
    assert any(b"***" in content(p) for p in files)  # the outputs are there, masked


def content(path: Path) -> bytes:
    """A file's bytes; a zip's (Inspect's .eval log) are its members' decompressed bytes."""
    if not zipfile.is_zipfile(path):
        return path.read_bytes()
    with zipfile.ZipFile(path) as zf:
        return b"\n".join(zf.read(name) for name in zf.namelist())


def test_export_reads_a_postgresql_store(pg_url: str, tmp_path: Path):
    run_id = suite_gold_run(pg_url)
    # The tables hold the scores; a sample's cost (sample_cost_usd) is not one of their columns.
    expected = [
        {k: v for k, v in row.items() if k != "sample_cost_usd"}
        for row in rescored_rows(pg_url, run_id, tmp_path / "samples.jsonl")
    ]
    res = invoke("export", run_id, "--format", "jsonl", "--out", tmp_path / "out", "--store", pg_url)
    assert res.exit_code == 0, res.output
    rows = read_table(tmp_path / "out" / "samples.jsonl")
    assert [rebuild(row, want, text_cells=False) for row, want in zip(rows, expected, strict=True)] == expected
    assert len(rows) == len(expected) > 0


@pytest.mark.parametrize(("key", "epoch", "stored"), [("a", 1, "a"), ("a", 2, "a@e2"), ("s#3", 12, "s#3@e12")])
def test_a_later_try_is_read_under_its_store_key(key: str, epoch: int, stored: str):
    from toolgauge.export.source import split_store_key, transcript_key

    assert transcript_key(key, epoch) == stored
    assert split_store_key(stored) == (key, epoch)
    assert split_store_key("x@e1") == ("x@e1", 1)  # not a later try's suffix: a key of its own
