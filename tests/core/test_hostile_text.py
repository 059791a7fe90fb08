"""Text from data, models and servers is printed as text, never read as rich markup."""

from __future__ import annotations

import io
import json
import re
import shutil
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from rich.table import Table
from rich.text import Text

from helpers.chat_stub import ChatStub, completion, error, is_probe
from helpers.cli_helpers import invoke, results_of
from helpers.paths import FIXTURE_ROOT
from toolgauge.benchmarks.registry import spec_for_run
from toolgauge.benchmarks.suite.loader import builtin_suite_path
from toolgauge.report.console import TerminalConsole, printable
from toolgauge.report.terminal import render_results
from toolgauge.results import EvalResults, Metric, RunStats
from toolgauge.sandbox import detect_sandbox

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


# -- control characters: shown as \xNN on the terminal, kept as they are in JSON ----------------------------------
# What a hostile model, server or generated server may print, each sequence a terminal would obey.
ATTACKS = {
    "osc52_clipboard": "\x1b]52;c;cm0gLXJmIH4=\x07",
    "osc0_title": "\x1b]0;pwned\x07",
    "cursor_up_erase_line": "\x1b[1A\x1b[2K",
    "clear_screen": "\x1b[2J\x1b[H",
    "c1_csi": "\x9b31m",
    "bell": "\x07",
}
CONTROL = "".join(ATTACKS.values()) + "all tests passed"
# A raw byte of any of these in terminal output came from the data: the consoles below draw no colour.
RAW = ("\x1b", "\x9b", "\x07")


def assert_shown_not_obeyed(text: str) -> None:
    """No raw control character of the attacks reached the output, and each is visible as its escape."""
    for raw in RAW:
        assert raw not in text, (raw, text)
    for seq in ("\\x1b]52;c;cm0gLXJmIH4=", "\\x1b]0;pwned", "\\x1b[1A\\x1b[2K", "\\x1b[2J\\x1b[H", "\\x9b31m"):
        assert seq in text, (seq, text)


def test_printable_escapes_every_control_character_but_newline_and_tab() -> None:
    every = "".join(map(chr, range(0x00, 0xA0)))
    shown = printable(every)
    assert "\n" in shown and "\t" in shown
    kept = {c for c in shown if not c.isprintable()}
    assert kept == {"\n", "\t"}, kept
    assert printable("a\x1b[2Jb\x9b\x7f\r\nc") == "a\\x1b[2Jb\\x9b\\x7f\nc"
    assert printable("plain text: é, 日本, \u2028") == "plain text: é, 日本, \u2028"


def test_the_terminal_console_shows_control_characters_in_strings_text_and_tables_and_keeps_its_own_styles() -> None:
    buf = io.StringIO()
    console = TerminalConsole(file=buf, force_terminal=True, color_system="truecolor", width=300)
    table = Table("id", "reason")
    table.add_row(CONTROL, Text(CONTROL, style="red"))
    console.print(CONTROL)
    console.print(f"[bold]{CONTROL}[/]")
    console.print(Text(CONTROL, style="bold"), Text.assemble(("x", "green"), CONTROL))
    console.print(table)
    written = buf.getvalue()
    # The console's own colours are escape sequences too: only SGR ones (ESC [ ... m) may be there.
    own = re.sub(r"\x1b\[[0-9;]*m", "", written)
    assert_shown_not_obeyed(own)
    assert "\x1b[1m" in written  # bold still drawn: styles are not text


@pytest.mark.parametrize("case", list(CASES))
def test_every_renderer_shows_control_characters_from_data(case: str) -> None:
    results, _places = CASES[case]
    hostile = EvalResults.model_validate(with_control(results.model_dump(mode="json")))
    buf = io.StringIO()
    console = TerminalConsole(file=buf, width=400, color_system=None)
    spec = spec_for_run(hostile.benchmark)
    render_results(hostile, console, spec.render if spec else None, spec.unit if spec else "samples")
    assert_shown_not_obeyed(buf.getvalue())


def with_control(value: Any) -> Any:
    """``value`` with the control sequences put where the markup-shaped text marks a place (``zz``)."""
    if isinstance(value, str):
        return value.replace("zz", CONTROL)
    if isinstance(value, dict):
        return {with_control(k): with_control(v) for k, v in value.items()}
    if isinstance(value, list):
        return [with_control(v) for v in value]
    return value


@pytest.fixture()
def hostile_model() -> Iterator[str]:
    """An endpoint whose every answer is the control sequences (after a clean probe)."""

    def respond(request: dict[str, Any], _headers: Mapping[str, str]) -> tuple[int, bytes]:
        return 200, completion("fine" if is_probe(request) else CONTROL)

    with ChatStub(respond) as stub:
        yield stub.model()


def test_a_models_answer_is_shown_escaped_by_transcript_and_kept_by_its_json(
    tmp_path: Path, hostile_model: str
) -> None:
    store = f"sqlite:///{tmp_path / 's.db'}"
    res = invoke("eval", "suite", "--model", hostile_model, "--store", store, "--limit", "1", "-q", "--json")
    assert res.exit_code in (0, 1), res.output
    run_id = results_of(res).run.id  # type: ignore[union-attr]
    key = json.loads(builtin_suite_path().read_text().splitlines()[0])["id"]
    shown = invoke("transcript", run_id, key, "--store", store)
    assert shown.exit_code == 0, shown.output
    assert_shown_not_obeyed(shown.stdout)
    assert "all tests passed" in shown.stdout
    as_json = invoke("transcript", run_id, key, "--store", store, "--json")
    assert as_json.exit_code == 0 and not any(raw in as_json.stdout for raw in RAW)
    answers = [call["response"]["content"] for call in json.loads(as_json.stdout)]
    assert answers and all(answer == CONTROL for answer in answers), answers


def test_a_servers_error_body_is_shown_escaped_in_the_probe_error_line(tmp_path: Path) -> None:
    def respond(_request: dict[str, Any], _headers: Mapping[str, str]) -> tuple[int, bytes]:
        return 400, error(f"bad model {CONTROL}")

    with ChatStub(respond) as stub:
        res = invoke("eval", "suite", "--model", stub.model(), "--store", f"sqlite:///{tmp_path / 's.db'}", "-q")
    assert res.exit_code == 2, res.output
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "HTTP 400" in lines[0], res.stderr
    assert_shown_not_obeyed(res.stderr)


def test_json_on_stdout_keeps_control_characters_as_json_escapes(tmp_path: Path) -> None:
    # The first sample is rejected with the sequences in the error body: --json carries the error whole, each
    # control character written as a JSON escape (\u001b, \u009b), none raw.
    rejected = threading.Event()

    def respond(request: dict[str, Any], _headers: Mapping[str, str]) -> tuple[int, bytes]:
        if is_probe(request) or rejected.is_set():
            return 200, completion("fine")
        rejected.set()
        return 400, error(CONTROL)

    with ChatStub(respond) as stub:
        res = invoke(
            "eval", "suite", "--model", stub.model(), "--store", f"sqlite:///{tmp_path / 's.db'}", "--limit", "2",
            "--max-retries", "0", "--concurrency", "1", "-q", "--json",
        )  # fmt: skip
    assert res.exit_code == 1, res.output
    assert not any(raw in res.stdout for raw in RAW), res.stdout
    assert "\\u001b]52;" in res.stdout and "\\u009b31m" in res.stdout
    first = results_of(res).run.first_error  # type: ignore[union-attr]
    assert first is not None and first.error.endswith(f"HTTP 400: {CONTROL}"), first
    assert not any(raw in res.stderr for raw in RAW), res.stderr


@pytest.mark.slow
@pytest.mark.skipif(detect_sandbox() != "bwrap", reason="bubblewrap sandbox not available here")
def test_a_generated_servers_stderr_is_shown_escaped_in_the_genesis_table(tmp_path: Path) -> None:
    fixtures = FIXTURE_ROOT / "genesis"
    server = tmp_path / "pred" / "mini-calc"
    server.mkdir(parents=True)
    shutil.copy(fixtures / "no_start" / "tools.json", server / "tools.json")
    # A server that prints the sequences on stderr and exits before serving: the table's reason quotes its stderr.
    (server / "server.py").write_text(
        f"import sys\nsys.stderr.write({CONTROL!r})\nsys.stderr.flush()\nraise SystemExit(1)\n"
    )
    registry = tmp_path / "pred" / "registry.json"
    registry.write_text(json.dumps({"mini-calc": {"json_schema_path": "mini-calc/tools.json",
                                                  "env_code_path": "mini-calc/server.py"}}))  # fmt: skip
    data = tmp_path / "data.json"
    data.write_text("[" + (fixtures / "spec.json").read_text() + "]")
    res = invoke("genesis", "evaluate", "--data", data, "--pred", registry, "--store", f"sqlite:///{tmp_path / 's.db'}")
    assert res.exit_code == 0, res.output
    flat = "".join(res.stdout.split())  # the reason column wraps
    assert "stderr:" in flat and "".join(printable(CONTROL).split()) in flat, res.stdout
    assert not any(raw in res.output for raw in RAW), res.output
