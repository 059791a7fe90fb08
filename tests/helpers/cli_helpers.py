"""One way for tests to drive the CLI in-process and read what it printed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import Result
from typer.testing import CliRunner

from toolgauge.cli import app
from toolgauge.results import EvalResults

runner = CliRunner()


def invoke(*args: str | Path) -> Result:
    """Run ``toolgauge ARGS`` in-process; exceptions the CLI does not turn into an exit code propagate."""
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


def results_of(res: Result) -> EvalResults:
    """The typed results a ``--json`` command printed."""
    return EvalResults.model_validate_json(res.stdout)


def sample_rows(path: Path) -> list[dict[str, Any]]:
    """The JSON lines of a ``--samples`` file."""
    return [json.loads(line) for line in Path(path).read_text().splitlines()]


# The fields of one ``--samples`` row (``toolgauge.results.SampleScore``), as docs/cli.md lists them.
SAMPLE_FIELDS = {"id", "sample", "value", "scores", "explanation", "error", "metadata", "epoch", "cluster", "weights",
                 "sample_cost_usd"}  # fmt: skip
