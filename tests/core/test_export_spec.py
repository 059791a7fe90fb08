"""A benchmark's own export formats are reached through its spec (``BenchmarkSpec.exports``), not by name in the core.

The core's ``export_run`` knows only the formats every run has; the CLI hands it each benchmark's exporters
from the registry. A stub exporter offered for suite runs shows the path end to end; the error for a format
the run's benchmark does not offer lists the ones it does.
"""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path

import pytest

from helpers.cli_helpers import invoke
from helpers.export_runs import suite_gold_run
from toolgauge.benchmark import Exporter, lazy
from toolgauge.benchmarks.registry import specs
from toolgauge.errors import UsageError
from toolgauge.export import FORMATS, export_run
from toolgauge.export.source import RunSource
from toolgauge.store.store import RunInfo


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> str:
    return f"sqlite:///{tmp_path_factory.mktemp('export_spec') / 'store.db'}"


@pytest.fixture(scope="module")
def suite_run(store: str) -> str:
    return suite_gold_run(store)


def no_verdicts(run: RunInfo, store_url: str | None) -> tuple[None, str]:
    return None, "not recomputed in this test"


def test_every_offered_format_names_a_writer_that_exists_and_is_no_generic_format():
    offered = {(spec.name, fmt): exporter for spec in specs() for fmt, exporter in spec.exports.items()}
    assert ("bfcl", "bfcl") in offered  # BFCL's score files, offered by the BFCL spec
    for (benchmark, fmt), exporter in offered.items():
        assert fmt not in FORMATS, f"{benchmark} offers {fmt}, which every run has already"
        assert exporter.writes and exporter.runs
        module, name = exporter.write.lazy_target
        writer = getattr(importlib.import_module(module), name)
        assert list(inspect.signature(writer).parameters)[:2] == ["folder", "source"]
        assert "model_name" in inspect.signature(writer).parameters


def _written(folder: Path, source: RunSource, *, model_name: str | None = None) -> list[Path]:
    path = folder / "demo.txt"
    path.write_text(f"{source.run.id} {source.run.benchmark} {model_name}", encoding="utf-8")
    return [path]


def test_a_format_offered_for_the_runs_benchmark_is_written_by_its_exporter(store: str, suite_run: str, tmp_path: Path):
    demo = Exporter(writes="a line naming the run", runs="suite", write=_written)
    out = tmp_path / "out"
    report = export_run(
        suite_run, "demo", out, store_url=store, verdicts=no_verdicts, model_name="m1",
        benchmark_exports={"suite": {"demo": demo}},
    )  # fmt: skip
    assert report.files == [out / "demo.txt"]
    assert (out / "demo.txt").read_text(encoding="utf-8") == f"{suite_run} suite m1"


def test_a_lazy_exporter_is_imported_when_the_export_runs(store: str, suite_run: str, tmp_path: Path):
    demo = Exporter(writes="a line naming the run", runs="suite", write=lazy(__name__, "_written"))
    out = tmp_path / "out"
    export_run(
        suite_run, "demo", out, store_url=store, verdicts=no_verdicts, benchmark_exports={"suite": {"demo": demo}}
    )
    assert (out / "demo.txt").read_text(encoding="utf-8") == f"{suite_run} suite None"


def test_a_format_offered_only_for_other_benchmarks_is_refused_before_anything_is_written(
    store: str, suite_run: str, tmp_path: Path
):
    demo = Exporter(writes="a line naming the run", runs="Demo", write=_written)
    out = tmp_path / "out"
    with pytest.raises(UsageError) as caught:
        export_run(
            suite_run, "demo", out, store_url=store, verdicts=no_verdicts, benchmark_exports={"demo": {"demo": demo}}
        )
    assert str(caught.value) == (
        f"run {suite_run} is a suite run: --format demo exports Demo runs only "
        "(this suite run: inspect, csv, jsonl, parquet)"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_without_benchmark_exports_only_the_generic_formats_exist(store: str, suite_run: str, tmp_path: Path):
    with pytest.raises(UsageError, match=r"--format 'bfcl': one of inspect, csv, jsonl, parquet \(this suite run"):
        export_run(suite_run, "bfcl", tmp_path / "out", store_url=store, verdicts=no_verdicts)


def test_an_unknown_format_lists_every_format_and_the_runs_own(store: str, suite_run: str, tmp_path: Path):
    res = invoke("export", suite_run, "--format", "xml", "--out", tmp_path / "out", "--store", store)
    assert res.exit_code == 2
    assert res.stderr.strip().splitlines() == [
        "error: --format 'xml': one of inspect, bfcl, csv, jsonl, parquet (this suite run: inspect, csv, jsonl, "
        "parquet)"
    ]
