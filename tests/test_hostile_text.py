"""Text from data, models and servers is printed as text, never read as rich markup."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from chat_stub import ChatStub, completion, error, is_probe
from cli_helpers import invoke
from toolgauge.benchmarks.registry import spec_for_run
from toolgauge.benchmarks.suite.loader import builtin_suite_path
from toolgauge.report.terminal import render_results
from toolgauge.results import EvalResults, Metric, RunStats

HOSTILE = "[/x][bold]x[/][red]"  # no spaces: table titles wrap at spaces


def suite_with_id(tmp_path: Path, dialogue_id: str, copies: int = 1) -> Path:
    first = json.loads(builtin_suite_path().read_text().splitlines()[0])
    path = tmp_path / "suite.jsonl"
    path.write_text("".join(json.dumps({**first, "id": dialogue_id}) + "\n" for _ in range(copies)))
    return path


def test_a_markup_closing_tag_in_a_suite_id_is_one_error_line(tmp_path: Path) -> None:
    # Two dialogues with the id "[/x]": the duplicate-id message quotes it (this was a 52-line traceback).
    data = suite_with_id(tmp_path, "[/x]", copies=2)
    res = invoke("eval", "suite", "--data", data, "--model", "gold", "--store", f"sqlite:///{tmp_path / 's.db'}")
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
    res = invoke(
        "eval", "suite", "--data", data, "--model", hostile_server, "--store", f"sqlite:///{tmp_path / 's.db'}",
        "--max-retries", "0", "--concurrency", "1", "-q",
    )  # fmt: skip
    # The first sample fails: the table's warning quotes its id and the server's message literally.
    assert res.exit_code == 1, res.output
    flat = " ".join(res.stdout.split())  # the table wraps long lines
    assert "first ([/x]): model_error: HTTP 400: model says " + HOSTILE in flat, res.stdout
    assert "Traceback" not in res.output


def test_install_hints_keep_their_extras(tmp_path: Path) -> None:
    # pg8000 is not a dependency: SQLAlchemy's import of it fails and the hint names the extra to install.
    res = invoke("eval", "suite", "--model", "gold", "--store", "postgresql+pg8000://u@127.0.0.1:1/db")
    assert res.exit_code == 2, res.output
    assert "pip install 'toolgauge[postgres]'" in res.stderr


def test_local_model_hint_keeps_its_extra(tmp_path: Path) -> None:
    import importlib.util

    if importlib.util.find_spec("llama_cpp") is not None:
        pytest.skip("llama-cpp-python is installed, so the 'not installed' hint cannot be produced")
    res = invoke("eval", "suite", "--model", "local", "--store", f"sqlite:///{tmp_path / 's.db'}")
    assert res.exit_code == 2, res.output
    assert "pip install 'toolgauge[local]'" in res.stderr


def hostile(place: str) -> str:
    """Markup-shaped text marking one place: parsed as markup it would lose its tags or raise."""
    return f"[/{place}][bold]{place}[/][red]"


H = [hostile(f"zz{i}") for i in range(10)]  # H[i] marks place zz{i}


def run_stats(run_id: str) -> RunStats:
    return RunStats(id=run_id, model="m", status="finished", samples=1, model_calls=1, wall_seconds=0.1)


def rendered(results: EvalResults) -> str:
    """The run as ``toolgauge report`` prints it: the registered renderer, then the warnings and the run line."""
    console = Console(record=True, width=400, color_system=None)
    spec = spec_for_run(results.benchmark)
    render_results(results, console, spec.render if spec else None, spec.unit if spec else "samples")
    return console.export_text()


def split_results(benchmark: str) -> EvalResults:
    return EvalResults(
        benchmark=benchmark, settings={"variant": H[1], "mode": H[2]},
        metrics=[Metric(name="tool_accuracy", value=1.0, group=H[3], by="split", n=1)],
        warnings=[H[4]], run=run_stats(H[5]),
    )  # fmt: skip


# Each case puts hostile text in the places its renderer shows (settings, group labels, details, warnings, the
# run id); the second item is how many places there are, all of which must be shown.
CASES = {
    "generic": (EvalResults(
        benchmark=H[1], settings={"mode": H[2]},
        metrics=[Metric(name=H[3], value=0.5), Metric(name="acc", value=1.0, group=H[4], by=H[5], n=1)],
        warnings=[H[6]], run=run_stats(H[7]),
    ), 7),
    "suite": (split_results("suite"), 5),
    "mtu": (split_results("mtu-bench"), 5),
    "bfcl": (EvalResults(
        benchmark="bfcl", settings={"mode": H[1]},
        metrics=[Metric(name="accuracy", value=1.0, group=H[2], by="category", n=1),
                 Metric(name="correct", value=1, group=H[2], by="category", n=1, kind="count"),
                 Metric(name="accuracy", value=1.0, group=H[3], by="aggregate", n=1)],
        warnings=[H[4]], run=run_stats(H[5]),
    ), 5),
    "wild": (EvalResults(
        benchmark="wildtoolbench", settings={"variant": H[1], "language": H[2], "data": H[3]},
        metrics=[Metric(name="task_accuracy", value=1.0, n=1),
                 Metric(name="task_accuracy", value=1.0, group=H[4], by="task_type", n=1),
                 Metric(name="correct_tasks", value=1, group=H[4], by="task_type", n=1, kind="count"),
                 Metric(name="failed_tasks", value=1, kind="count"),
                 Metric(name="failed_tasks", value=1, group=H[5], by="error_class", kind="count"),
                 Metric(name="failure_share", value=1.0, group=H[5], by="error_class")],
        warnings=[H[6]], run=run_stats(H[7]),
    ), 7),
    "genesis": (EvalResults(
        benchmark="tool-genesis", settings={"variant": H[1], "source": H[2]},
        metrics=[Metric(name="servers", value=1, group=H[3], by="cascade", kind="count")],
        details={"stopped": {H[4]: {"level": H[5], "reason": H[6]}}, "l4": H[7]},
        warnings=[H[8]], run=run_stats(H[9]),
    ), 9),
}  # fmt: skip


@pytest.mark.parametrize("case", list(CASES))
def test_every_renderer_prints_data_literally(case: str) -> None:
    results, places = CASES[case]
    if case != "generic":
        spec = spec_for_run(results.benchmark)
        assert spec is not None and spec.render is not None, f"{results.benchmark} has no registered renderer"
    text = rendered(results)
    for i in range(1, places + 1):
        # Every place the hostile text was put is shown whole: no tag swallowed (no MarkupError either)...
        assert text.count(H[i]) >= 1, (H[i], text)
        # ... and nothing of it is shown any other way.
        assert text.count(f"zz{i}") == 2 * text.count(H[i]), (H[i], text)
    assert f"run {H[places]} · 1 " in text, text
