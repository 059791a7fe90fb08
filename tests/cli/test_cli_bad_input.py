"""Every kind of bad input, through every loader, is one line on stderr and exit 2, with nothing written.

Each case runs the real command on a temporary folder: the store and the ``--samples`` file must not
exist afterwards (bad input is rejected before a run starts).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from helpers.cli_helpers import invoke, results_of
from helpers.paths import FIXTURE_ROOT
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
    # An object spread over lines (json.dumps(..., indent=2)): line 1 is "{" alone.
    "pretty_printed": (
        b'{\n  "id": "x",\n  "question": "q"\n}\n',
        "Expecting property name enclosed in double quotes (column 2); "
        "each line must be one JSON object (JSON Lines); this file looks pretty-printed",
    ),
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
    sessions = FIXTURE_ROOT / "wildtoolbench" / "sessions.jsonl"
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
    one_object_script = loader == "scripted" and kind == "pretty_printed"
    if one_object_script:  # one object over several lines: a script is a list of outputs, not one output
        expected = "expected a JSON array of outputs (or one output per line), got a JSON object"
    args, bad_file = LOADERS[loader](tmp_path, content)
    line = run_rejected(tmp_path, args)
    assert f"error: {bad_file}" in line, line
    assert expected in line, line
    # A script starting with "[" is one JSON document, so nesting has no line of its own; an empty file has none.
    whole_file = kind == "empty" or one_object_script or (loader == "scripted" and kind == "deeply_nested")
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


def test_a_pretty_printed_file_whose_first_line_opens_an_object_with_a_key_gets_the_hint(tmp_path: Path) -> None:
    data = tmp_path / "suite.jsonl"
    data.write_text('{"id": "d1",\n "tools": [],\n "turns": []}\n')
    line = run_rejected(tmp_path, ["eval", "suite", "--data", str(data), "--model", "gold"])
    assert line == (
        f"error: {data}:1: malformed JSON: Expecting property name enclosed in double quotes (column 13); "
        "each line must be one JSON object (JSON Lines); this file looks pretty-printed"
    )


def test_a_last_line_cut_short_is_not_called_pretty_printed(tmp_path: Path) -> None:
    data = _jsonl(tmp_path / "mtu" / "S-S_eval.jsonl", MTU_ITEM)
    with data.open("a") as handle:
        handle.write('{"id": "S-S_1", "question": "q",\n')
    line = run_rejected(
        tmp_path, ["eval", "mtu-bench", "--data", str(data.parent), "--splits", "S-S", "--model", "gold"]
    )
    assert line == f"error: {data}:2: invalid JSON: Expecting property name enclosed in double quotes (column 33)"


def test_a_misspelt_suite_field_is_one_line_with_a_did_you_mean(tmp_path: Path) -> None:
    dialogue = json.loads(builtin_suite_path().read_text().splitlines()[0])
    dialogue["turns"][0]["expected_call"] = dialogue["turns"][0].pop("expected_calls")
    data = _jsonl(tmp_path / "suite.jsonl", dialogue)
    line = run_rejected(tmp_path, ["eval", "suite", "--data", str(data), "--model", "gold"])
    assert line == (
        f"error: {data}:1: turns[0].expected_call: unknown field; did you mean 'expected_calls'? "
        "(allowed: user, expected_calls, tool_results, assistant)"
    )


def test_a_misspelt_candidate_field_is_said_the_same_way(tmp_path: Path) -> None:
    seeds = tmp_path / "seeds.jsonl"
    res = invoke("gate", "seeds", "fem", "--output", seeds)
    assert res.exit_code == 0, res.output
    candidate = json.loads(seeds.read_text().splitlines()[0])
    candidate["solutoin"] = candidate.pop("solution")
    pool = _jsonl(tmp_path / "pool.jsonl", candidate)
    line = run_rejected(tmp_path, ["gate", "screen", "--candidates", str(pool), "--screen", "gold"])
    assert line == (
        f"error: {pool}:1: solutoin: unknown field; did you mean 'solution'? "
        "(allowed: id, domain, question, options, answer, solution, meta)"
    )


# Each benchmark's data option, given a path where nothing is: the command line (with NOPE for the path).
NOPE = "NOPE"
MISSING_DATA: dict[str, list[str]] = {
    "eval suite": ["eval", "suite", "--data", NOPE, "--model", "gold"],
    "eval bfcl": ["eval", "bfcl", "--data", NOPE, "--categories", "simple_python", "--model", "gold"],
    "score bfcl": [
        "score",
        "bfcl",
        "--data",
        NOPE,
        "--predictions",
        NOPE + "-results",
        "--categories",
        "simple_python",
    ],
    "eval mtu-bench": ["eval", "mtu-bench", "--data", NOPE, "--model", "gold"],
    "score mtu-bench": ["score", "mtu-bench", "--data", NOPE, "--predictions", "PREDICTIONS"],
    "eval wildtoolbench": ["eval", "wildtoolbench", "--data", NOPE, "--model", "gold"],
    "score wildtoolbench": ["score", "wildtoolbench", "--data", NOPE, "--predictions", "STEPS"],
    "eval tool-genesis": ["eval", "tool-genesis", "--data", NOPE, "--model", "gold", "--skip-l4"],
    "genesis evaluate": ["genesis", "evaluate", "--data", NOPE, "--pred", NOPE + "-registry", "--skip-l4"],
    "genesis generate": ["genesis", "generate", "--data", NOPE, "--out", "OUT", "--model", "gold"],
    "gate screen": ["gate", "screen", "--candidates", NOPE, "--screen", "gold"],
    "gate check": ["gate", "check", "--candidates", NOPE, "--screen", "gold", "--solver", "scripted:x.jsonl"],
}


@pytest.mark.parametrize("command", list(MISSING_DATA))
def test_a_missing_data_path_names_the_option_not_a_file_inside_it(tmp_path: Path, command: str) -> None:
    nope = tmp_path / "nope"
    predictions = _jsonl(tmp_path / "S-S_mine.jsonl", {"id": "S-S_0", "response": "r"})
    steps = _jsonl(tmp_path / "steps.jsonl", {"session": "s", "task": 0, "step": 0, "content": "hi"})
    given = {NOPE: str(nope), "PREDICTIONS": str(predictions), "STEPS": str(steps), "OUT": str(tmp_path / "out")}
    args = [given.get(arg, arg.replace(NOPE, str(nope))) for arg in MISSING_DATA[command]]
    option = "--candidates" if command.startswith("gate") else "--data"
    assert run_rejected(tmp_path, args) == f"error: {option} {nope}: no such file or folder"


def test_gate_audit_of_a_missing_candidates_file_names_the_option(tmp_path: Path) -> None:
    nope = tmp_path / "nope.jsonl"
    res = invoke("gate", "audit", "--candidates", nope)
    assert res.exit_code == 2 and res.stdout == ""
    assert res.stderr.strip() == f"error: --candidates {nope}: no such file or folder"


def test_a_sweep_whose_data_is_missing_names_the_entry_and_the_path(tmp_path: Path) -> None:
    nope = tmp_path / "nope"
    sweep = tmp_path / "s.toml"
    sweep.write_text(f'[[model]]\nspec = "gold"\n[[benchmark]]\nname = "bfcl"\ndata = "{nope}"\n'
                     'categories = ["simple_python"]\n')  # fmt: skip
    db = tmp_path / "store.db"
    res = invoke("sweep", sweep, "--store", f"sqlite:///{db}")
    assert res.exit_code == 2 and res.stdout == ""
    assert res.stderr.strip() == f"error: {sweep}: benchmark[1] (bfcl): --data {nope}: no such file or folder"
    assert not db.exists()


def test_rescore_of_a_run_whose_data_is_gone_names_the_run_and_its_data(tmp_path: Path) -> None:
    data = tmp_path / "suite.jsonl"
    data.write_bytes(builtin_suite_path().read_bytes())
    store = f"sqlite:///{tmp_path / 'store.db'}"
    res = invoke("eval", "suite", "--data", data, "--model", "gold", "--store", store, "-q", "--json")
    assert res.exit_code == 0, res.output
    run = results_of(res).run
    assert run is not None
    data.unlink()
    res = invoke("rescore", run.id, "--store", store)
    assert res.exit_code == 2 and res.stdout == ""
    assert res.stderr == f"error: run {run.id} was made from {data}, which is gone: no such file or folder\n"
