"""Every kind of bad input, through every loader, is one line on stderr and exit 2, with nothing written.

Each case runs the real command on a temporary folder: the store and the ``--samples`` file must not
exist afterwards (bad input is rejected before a run starts).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from cli_helpers import invoke, results_of
from toolgauge.benchmarks.suite.loader import builtin_suite_path

# (file content, what the error line must say)
BAD_CONTENT: dict[str, tuple[bytes, str]] = {
    "deeply_nested": (b"[" * 100_000 + b"]" * 100_000 + b"\n", "nesting too deep"),
    "huge_integer": (b'{"id": ' + b"9" * 5000 + b"}\n", "integer with too many digits"),
    "binary": (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe", "not valid UTF-8 text (binary file?)"),
    "nan": (b'{"id": NaN}\n', "NaN is not a JSON value"),
    "infinity": (b'{"id": -Infinity}\n', "-Infinity is not a JSON value"),
    "float_overflow": (b'{"id": 1e999}\n', "out of range"),
    "empty": (b"\n   \n", "the file is empty"),
}

MTU_ITEM = {"id": "S-S_0", "question": "q", "answer": {"A": {}}}
BFCL_QUESTION = {
    "id": "simple_python_0",
    "question": [[{"role": "user", "content": "hi"}]],
    "function": [{"name": "f", "description": "", "parameters": {"type": "dict", "properties": {}, "required": []}}],
}
BFCL_ANSWER = {"id": "simple_python_0", "ground_truth": [{"f": {}}]}


def _jsonl(path: Path, *records: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _bfcl_dir(tmp: Path) -> Path:
    folder = tmp / "bfcl"
    _jsonl(folder / "BFCL_v4_simple_python.json", BFCL_QUESTION)
    _jsonl(folder / "possible_answer" / "BFCL_v4_simple_python.json", BFCL_ANSWER)
    return folder


# Each loader case: given a temporary folder and the bad bytes, place them where that loader reads and
# return (command line, the file that holds them).
Case = Callable[[Path, bytes], tuple[list[str], Path]]


def suite_data(tmp: Path, bad: bytes) -> tuple[list[str], Path]:
    bad_file = tmp / "suite.jsonl"
    bad_file.write_bytes(bad)
    return ["eval", "suite", "--data", str(bad_file), "--model", "gold"], bad_file


def suite_replay(tmp: Path, bad: bytes) -> tuple[list[str], Path]:
    bad_file = tmp / "recorded.jsonl"
    bad_file.write_bytes(bad)
    return ["eval", "suite", "--model", f"replay:{bad_file}"], bad_file


def scripted_outputs(tmp: Path, bad: bytes) -> tuple[list[str], Path]:
    bad_file = tmp / "script.jsonl"
    bad_file.write_bytes(bad)
    return ["eval", "suite", "--model", f"scripted:{bad_file}"], bad_file


def mtu_data(tmp: Path, bad: bytes) -> tuple[list[str], Path]:
    bad_file = tmp / "mtu" / "S-S_eval.jsonl"
    bad_file.parent.mkdir()
    bad_file.write_bytes(bad)
    return ["eval", "mtu-bench", "--data", str(bad_file.parent), "--splits", "S-S", "--model", "gold"], bad_file


def mtu_predictions(tmp: Path, bad: bytes) -> tuple[list[str], Path]:
    data = _jsonl(tmp / "mtu" / "S-S_eval.jsonl", MTU_ITEM).parent
    bad_file = tmp / "S-S_mine.jsonl"
    bad_file.write_bytes(bad)
    return ["score", "mtu-bench", "--data", str(data), "--predictions", str(bad_file), "--splits", "S-S"], bad_file


def bfcl_questions(tmp: Path, bad: bytes) -> tuple[list[str], Path]:
    data = _bfcl_dir(tmp)
    bad_file = data / "BFCL_v4_simple_python.json"
    bad_file.write_bytes(bad)
    return ["eval", "bfcl", "--data", str(data), "--categories", "simple_python", "--model", "gold"], bad_file


def bfcl_answers(tmp: Path, bad: bytes) -> tuple[list[str], Path]:
    data = _bfcl_dir(tmp)
    bad_file = data / "possible_answer" / "BFCL_v4_simple_python.json"
    bad_file.write_bytes(bad)
    return ["eval", "bfcl", "--data", str(data), "--categories", "simple_python", "--model", "gold"], bad_file


def bfcl_results(tmp: Path, bad: bytes) -> tuple[list[str], Path]:
    data = _bfcl_dir(tmp)
    bad_file = tmp / "BFCL_v4_simple_python_result.json"
    bad_file.write_bytes(bad)
    return [
        "score", "bfcl", "--data", str(data), "--predictions", str(bad_file), "--categories", "simple_python",
    ], bad_file  # fmt: skip


def wild_sessions(tmp: Path, bad: bytes) -> tuple[list[str], Path]:
    bad_file = tmp / "sessions.jsonl"
    bad_file.write_bytes(bad)
    return ["eval", "wildtoolbench", "--data", str(bad_file), "--model", "gold"], bad_file


def wild_predictions(tmp: Path, bad: bytes) -> tuple[list[str], Path]:
    sessions = Path(__file__).parent / "fixtures" / "wildtoolbench" / "sessions.jsonl"
    bad_file = tmp / "steps.jsonl"
    bad_file.write_bytes(bad)
    return ["score", "wildtoolbench", "--data", str(sessions), "--predictions", str(bad_file)], bad_file


LOADERS: dict[str, Case] = {
    "suite": suite_data,
    "suite-replay": suite_replay,
    "scripted": scripted_outputs,
    "mtu-data": mtu_data,
    "mtu-predictions": mtu_predictions,
    "bfcl-questions": bfcl_questions,
    "bfcl-answers": bfcl_answers,
    "bfcl-results": bfcl_results,
    "wild-sessions": wild_sessions,
    "wild-predictions": wild_predictions,
}


def run_rejected(tmp_path: Path, args: list[str]) -> str:
    """Run a command that must reject its input; return its one stderr line after checking nothing was written."""
    db = tmp_path / "store.db"
    samples = tmp_path / "samples.jsonl"
    res = invoke(*args, "--store", f"sqlite:///{db}", "--samples", samples, "-q")
    assert res.exit_code == 2, (res.exit_code, res.output)
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    assert lines[0].startswith("error: ")
    assert "Traceback" not in res.output
    assert res.stdout == ""
    assert not db.exists(), "bad input must be rejected before the store is opened"
    assert not samples.exists()
    return lines[0]


@pytest.mark.parametrize("kind", list(BAD_CONTENT))
@pytest.mark.parametrize("loader", list(LOADERS))
def test_bad_file_is_one_line_exit_2(tmp_path: Path, loader: str, kind: str) -> None:
    content, expected = BAD_CONTENT[kind]
    args, bad_file = LOADERS[loader](tmp_path, content)
    line = run_rejected(tmp_path, args)
    assert f"error: {bad_file}" in line, line
    assert expected in line, line
    # A script starting with "[" is one JSON document, so nesting has no line of its own; an empty file has none.
    whole_file = kind == "empty" or (loader == "scripted" and kind == "deeply_nested")
    assert (f"{bad_file}:1:" in line) != whole_file, line


def test_a_non_finite_float_flag_within_its_range_is_a_usage_error(tmp_path: Path) -> None:
    # --timeout has no upper bound, so inf passes typer's range and is refused by the bounds' own check.
    # (--timeout nan and every --temperature beyond 0..2, nan and inf included, fail typer's range check:
    # test_cli_inputs.py checks that cli.main() prints those as one line.)
    line = run_rejected(tmp_path, ["eval", "suite", "--model", "gold", "--timeout", "inf"])
    assert line == "error: --timeout: input should be a finite number, got inf", line


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("http://127.0.0.1:99999/v1#m", "Port out of range"),
        ("http://127.0.0.1:http/v1#m", "invalid URL"),
        ("http://:80/v1#m", "no host name"),
        ("https://127.0.0.1:0/v1#m", "port 0"),
        ("ftp://127.0.0.1/v1#m", "unknown model spec"),
        ("openai:m@ftp://127.0.0.1/v1", "must start with http:// or https://"),
        ("http://127.0.0.1:8000/v1", "give the model name after '#'"),
    ],
)
def test_invalid_model_urls_are_rejected_at_parse(tmp_path: Path, spec: str, expected: str) -> None:
    line = run_rejected(tmp_path, ["eval", "suite", "--model", spec])
    assert expected in line, line


def test_the_builtin_suite_still_loads_with_the_safe_reader(tmp_path: Path) -> None:
    # The control for the cases above: the same command on good data runs and writes both files.
    db = tmp_path / "store.db"
    samples = tmp_path / "samples.jsonl"
    res = invoke(
        "eval", "suite", "--data", builtin_suite_path(), "--model", "gold", "--store", f"sqlite:///{db}",
        "--samples", samples, "-q", "--json",
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert db.exists() and samples.exists()
    assert results_of(res).value("tool_accuracy") == 1.0
