"""One rule for the numbers in every table: rates in percent with two decimals, differences of rates in
percentage points, counts as counts (a mean count over epochs with two decimals); fractions stay in JSON.

And the small things around tables: "1 epoch", no ``<bool>`` after flags in ``--help``, piped output as wide as
``$COLUMNS`` says (else wide), the gold-below-100% footnote where the reference definition puts gold there.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from rich.console import Console

from helpers.cli_helpers import invoke
from helpers.paths import DOCS
from toolgauge.benchmarks.bfcl.report import render_bfcl
from toolgauge.benchmarks.tool_genesis.report import render_genesis
from toolgauge.cli import app
from toolgauge.cli.common import PIPED_WIDTH, piped_width
from toolgauge.report.terminal import number, run_line, summary_lines
from toolgauge.results import EvalResults, Metric, MetricSummary, RunStats
from toolgauge.sweep.report import CellReport, MetricStat, SweepReport, render_leaderboard


def printed(render: object, *args: object) -> str:
    """What a renderer prints on a wide console, as plain text."""
    buffer = io.StringIO()
    console = Console(file=buffer, width=200, color_system=None)
    render(*args, console)  # type: ignore[operator]
    return buffer.getvalue()


@pytest.mark.parametrize(
    ("value", "unit", "expected"),
    [
        (0.625, "rate", "62.50"),
        (1, "rate", "100.00"),
        (1 / 3, "rate", "33.33"),
        (-0.0125, "points", "-1.25"),
        (0.5, "points", "+50.00"),
        (0.0, "points", "+0.00"),
        (12, "count", "12"),
        (2.0, "count", "2"),
        (4 / 3, "count", "1.33"),
        (3.14159, "mean", "3.14"),
        (None, "rate", "—"),
        (True, "count", "—"),
    ],
)
def test_one_rule_for_every_number(value: object, unit: str, expected: str) -> None:
    assert number(value, unit) == expected  # type: ignore[arg-type]


def test_a_count_averaged_over_epochs_is_shown_with_two_decimals() -> None:
    # BFCL over 3 epochs: 1, 1 and 2 correct of 2 in simple_python is a mean count of 4/3.
    results = EvalResults(
        benchmark="bfcl",
        settings={"mode": "native"},
        metrics=[
            Metric(name="correct", value=4 / 3, group="simple_python", by="category", n=2, kind="count"),
            Metric(name="accuracy", value=2 / 3, group="simple_python", by="category", n=2),
            Metric(name="accuracy", value=2 / 3, n=2),
            Metric(name="unsatisfiable", value=1 / 3, n=2, kind="count"),
        ],
    )
    text = printed(render_bfcl, results)
    row = next(line for line in text.splitlines() if "simple_python" in line)
    assert row.split() == ["simple_python", "1.33", "2", "66.67"]
    assert "1.3333" not in text
    assert "note: 0.33 entries cannot be passed" in text


def test_epochs_and_clusters_are_counted_in_words() -> None:
    results = EvalResults(
        benchmark="t",
        metrics=[Metric(name="acc", value=0.625)],
        summary={"acc": MetricSummary(mean=0.625, stderr=0.05, ci_low=0.55, ci_high=0.7, n=1, epochs=1)},
    )
    assert summary_lines(results) == ["acc  62.50 ± 5.00  [55.00, 70.00]  over 1 cluster, 1 epoch"]
    results.summary["acc"] = results.summary["acc"].model_copy(update={"n": 40, "epochs": 3})
    assert summary_lines(results)[0].endswith("over 40 clusters, 3 epochs")
    run = RunStats(id="r", model="m", status="finished", samples=4, epochs=2)
    assert " · 4 samples × 2 epochs · " in run_line(run, "samples")
    assert " · 4 samples · " in run_line(run.model_copy(update={"epochs": 1}), "samples")


def test_the_sweep_leaderboard_shows_percentages() -> None:
    stat = MetricStat(mean=0.625, stderr=0.05, ci_low=0.55, ci_high=0.7, n=40)
    report = SweepReport(
        sweep="sweep-x",
        status="finished",
        cells=[CellReport(model="m", benchmark="suite", run="r1", status="finished", metrics={"tool_accuracy": stat})],
    )
    text = printed(render_leaderboard, report)
    assert "62.50 [55.00, 70.00]" in text and "0.625" not in text
    assert "rates in percent, each as mean [95% interval]" in text
    # JSON keeps fractions, and the document's shape.
    assert report.document()["cells"][0]["metrics"]["tool_accuracy"] == {
        "mean": 0.625, "stderr": 0.05, "ci_low": 0.55, "ci_high": 0.7, "n": 40
    }  # fmt: skip


def test_genesis_marks_the_metrics_gold_cannot_reach_in_reference() -> None:
    metrics = [Metric(name="ut_soft", value=0.308), Metric(name="ut_hard", value=1.0)]
    reference = EvalResults(benchmark="tool-genesis", settings={"variant": "reference"}, metrics=metrics)
    text = printed(render_genesis, reference)
    assert "UT_soft *" in text and "UT_hard *" not in text and "Schema-F1 (schema file) *" in text
    assert "* the reference definition can score even the gold answers below 100% here: see " in text
    assert "docs/metrics/tool-genesis.md#gold-below-100" in text
    strict = reference.model_copy(update={"settings": {"variant": "strict"}})
    assert "*" not in printed(render_genesis, strict)


def test_the_linked_gold_sections_exist() -> None:
    docs = DOCS / "metrics"
    for page in ("tool-genesis.md", "wildtoolbench.md"):
        headings = {
            line.lstrip("#").strip() for line in (docs / page).read_text().splitlines() if line.startswith("##")
        }
        assert "Gold below 100%" in headings, page  # GitHub's anchor for it: #gold-below-100


def test_wildtoolbench_gold_run_notes_why_ap_is_90(tmp_path: Path) -> None:
    res = invoke("eval", "wildtoolbench", "--model", "gold", "--store", f"sqlite:///{tmp_path / 's.db'}", "-q")
    assert res.exit_code == 0, res.output
    ap = next(line for line in res.stdout.splitlines() if "accomplish progress" in line)
    assert ap.split()[:5] == ["accomplish", "progress", "(AP)", "*", "90.00"]
    assert "see docs/metrics/wildtoolbench.md#gold-below-100" in res.stdout


def _commands(command: object, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = [path]
    for name, sub in (getattr(command, "commands", None) or {}).items():
        found += _commands(sub, (*path, name))
    return found


def test_no_help_shows_bool_after_a_flag() -> None:
    paths = _commands(typer.main.get_command(app))
    assert len(paths) > 20 and ("eval", "bfcl") in paths
    for path in paths:
        res = invoke(*path, "--help")
        assert res.exit_code == 0, (path, res.output)
        assert "<bool>" not in res.stdout, path
    bfcl = invoke("eval", "bfcl", "--help").stdout
    assert "--json" in bfcl and "<str>" in bfcl  # options that take a value still show their type


def test_piped_width_honours_columns_else_is_wide() -> None:
    assert piped_width({"COLUMNS": "200"}) == 200
    assert piped_width({}) == piped_width({"COLUMNS": "x"}) == piped_width({"COLUMNS": "0"}) == PIPED_WIDTH


@pytest.mark.slow
def test_a_piped_leaderboard_is_not_folded_into_narrow_columns(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 's.db'}"
    script = tmp_path / "script.json"
    script.write_text(json.dumps(["I cannot help with that."] * 100))
    sweep_file = tmp_path / "SWEEP.toml"
    sweep_file.write_text(
        f'[[model]]\nspec = "gold"\n[[model]]\nspec = "scripted:{script}"\n[[benchmark]]\nname = "suite"\nlimit = 4\n'
    )
    ran = invoke("sweep", sweep_file, "--store", store, "--json")
    assert ran.exit_code == 0, ran.output
    doc = json.loads(ran.stdout)
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    for columns in ("200", None):
        shown = subprocess.run(
            [sys.executable, "-m", "toolgauge.cli", "report", doc["sweep"], "--store", store],
            env={**env, **({"COLUMNS": columns} if columns else {})}, capture_output=True, text=True, timeout=120,
            check=False,
        )  # fmt: skip
        assert shown.returncode == 0, shown.stderr
        lines = shown.stdout.splitlines()
        assert columns is None or max(len(line) for line in lines) <= int(columns)
        for cell in doc["cells"]:
            # One line per model: every metric with its whole interval, and the whole run id (a long model path may
            # fold within 200 columns).
            row = next(line for line in lines if cell["run"] in line)
            assert cell["model"][:9] in row and row.count("[") == row.count("]") == 3, row
            assert columns is not None or cell["model"] in row
        assert "100.00 [100.00, 100.00]" in shown.stdout
    assert shown.stdout.endswith("\n")
