"""Text from data, models and servers is printed as text, never read as rich markup."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from typer.testing import CliRunner

from chat_stub import ChatStub, completion, error, is_probe
from toolgauge.benchmarks.suite.loader import builtin_suite_path
from toolgauge.cli import app
from toolgauge.report.terminal import render_summary

runner = CliRunner()
HOSTILE = "[/x][bold]x[/][red]"  # no spaces: table titles wrap at spaces


def suite_with_id(tmp_path: Path, dialogue_id: str, copies: int = 1) -> Path:
    first = json.loads(builtin_suite_path().read_text().splitlines()[0])
    path = tmp_path / "suite.jsonl"
    path.write_text("".join(json.dumps({**first, "id": dialogue_id}) + "\n" for _ in range(copies)))
    return path


def test_a_markup_closing_tag_in_a_suite_id_is_one_error_line(tmp_path: Path) -> None:
    # Two dialogues with the id "[/x]": the duplicate-id message quotes it (this was a 52-line traceback).
    data = suite_with_id(tmp_path, "[/x]", copies=2)
    res = runner.invoke(
        app, ["eval", "suite", "--data", str(data), "--model", "gold", "--store", f"sqlite:///{tmp_path / 's.db'}"]
    )
    assert res.exit_code == 2, res.output
    assert res.stderr.strip() == f"error: {data}:2: id: duplicate dialogue id '[/x]' (first used on line 1)"


@pytest.fixture()
def hostile_server() -> Iterator[str]:
    """An endpoint that answers the probe, rejects the first sample request with markup-shaped text, then answers."""
    rejected = threading.Event()

    def respond(request: dict[str, Any], _headers: Mapping[str, str]) -> tuple[int, bytes]:
        if is_probe(request) or rejected.is_set():
            return 200, completion("fine")
        rejected.set()
        return 400, error(f"model says {HOSTILE}")

    with ChatStub(respond) as stub:
        yield stub.model()


def test_server_text_and_data_ids_print_literally_in_warnings_and_errors(tmp_path: Path, hostile_server: str) -> None:
    first = json.loads(builtin_suite_path().read_text().splitlines()[0])
    data = tmp_path / "suite.jsonl"
    data.write_text("".join(json.dumps({**first, "id": i}) + "\n" for i in ("[/x]", "[/y]")))
    res = runner.invoke(
        app,
        ["eval", "suite", "--data", str(data), "--model", hostile_server, "--store", f"sqlite:///{tmp_path / 's.db'}",
         "--max-retries", "0", "--concurrency", "1", "-q"],
    )  # fmt: skip
    # The first sample fails: the table's warning quotes its id and the server's message literally.
    assert res.exit_code == 1, res.output
    flat = " ".join(res.stdout.split())  # the table wraps long lines
    assert "first ([/x]): model_error: HTTP 400: model says " + HOSTILE in flat, res.stdout
    assert "Traceback" not in res.output


def test_install_hints_keep_their_extras(tmp_path: Path) -> None:
    # pg8000 is not a dependency: SQLAlchemy's import of it fails and the hint names the extra to install.
    res = runner.invoke(app, ["eval", "suite", "--model", "gold", "--store", "postgresql+pg8000://u@127.0.0.1:1/db"])
    assert res.exit_code == 2, res.output
    assert "pip install 'toolgauge[postgres]'" in res.stderr


def test_local_model_hint_keeps_its_extra(tmp_path: Path) -> None:
    import importlib.util

    if importlib.util.find_spec("llama_cpp") is not None:
        pytest.skip("llama-cpp-python is installed, so the 'not installed' hint cannot be produced")
    res = runner.invoke(app, ["eval", "suite", "--model", "local", "--store", f"sqlite:///{tmp_path / 's.db'}"])
    assert res.exit_code == 2, res.output
    assert "pip install 'toolgauge[local]'" in res.stderr


def rendered(summary: dict[str, Any]) -> str:
    console = Console(record=True, width=400, color_system=None)
    render_summary(summary, console)
    return console.export_text()


RUN = {"id": "[/x]", "samples": 1, "sample_errors": 0, "model_calls": 1, "cached_calls": 0, "input_tokens": 0,
       "output_tokens": 0, "wall_seconds": 0.1}  # fmt: skip


@pytest.mark.parametrize(
    ("summary", "places"),
    [
        ({"benchmark": "mtu-bench", "variant": HOSTILE, "mode": "prompt",
          "splits": {HOSTILE: {"n": 1, "tool_accuracy": 1.0}}, "warnings": [HOSTILE], "run": RUN}, 3),
        ({"benchmark": "bfcl", "mode": HOSTILE, "categories": {HOSTILE: {"correct": 1, "n": 1, "accuracy": 1.0}},
          "aggregates": {HOSTILE: 1.0}, "warnings": [HOSTILE], "run": RUN}, 4),
        ({"benchmark": HOSTILE, "scores": {HOSTILE: HOSTILE}}, 4),
        ({"benchmark": "wildtoolbench", "variant": HOSTILE, "language": "en", "data": HOSTILE,
          "scores": {"by_task_type": {HOSTILE: {"total": 1, "correct": 1, "accuracy": 1.0}},
                     "errors": {"failed_tasks": 1, "counts": {HOSTILE: 1}, "shares": {HOSTILE: 1.0}}},
          "warnings": [HOSTILE], "run": RUN}, 5),
        ({"benchmark": "tool-genesis", "variant": HOSTILE, "source": HOSTILE, "cascade": {HOSTILE: {"servers": 1}},
          "servers": {HOSTILE: {"failures": {"L1": HOSTILE}}}, "l4": HOSTILE, "warnings": [HOSTILE], "run": RUN}, 7),
    ],
    ids=["mtu", "bfcl", "generic", "wild", "genesis"],
)  # fmt: skip
def test_every_renderer_prints_data_literally(summary: dict[str, Any], places: int) -> None:
    text = rendered(summary)
    # Every place the hostile string was put shows it whole: no tag swallowed, no MarkupError.
    assert text.count(HOSTILE) == places, text
    if "run" in summary:
        assert "run [/x] · 1" in text, text
