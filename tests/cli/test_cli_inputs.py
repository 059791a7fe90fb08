"""Inputs the red-team pass found accepted (issue 24 §5): each is refused in one line, exit 2, nothing written.

Folders the user did not name are never made; output paths are checked before a run starts; every input file
is a regular file within ``TOOLGAUGE_MAX_INPUT_BYTES`` (FIFOs and devices refused without a read); the run
options have one declaration of their bounds, which ``eval`` and a sweep file share; the resume hint never
prints a password. Cases that need the real ``cli.main()`` (typer's own option checks) or could hang if the
fix regressed (a FIFO, ``/dev/zero``) run the CLI as a subprocess with a deadline.
"""

from __future__ import annotations

import json
import os
import resource
import shlex
import subprocess
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from helpers.chat_stub import ChatStub, completion, is_probe
from helpers.cli_helpers import invoke
from helpers.paths import FIXTURE_ROOT, SRC
from toolgauge.bounds import MAX_EPOCHS
from toolgauge.cli.common import resume_command
from toolgauge.jsonl import MAX_INPUT_ENV
from toolgauge.options import check_option
from toolgauge.sweep.file import MAX_NESTING, SweepFileError, parse_sweep

GENESIS = FIXTURE_ROOT / "genesis"
WILD_SESSIONS = FIXTURE_ROOT / "wildtoolbench" / "sessions.jsonl"
MTU_ITEM = {"id": "S-S_0", "question": "q", "answer": {"A": {}}}


def one_error_line(res: Any) -> str:
    """The single stderr line of a refused in-process command (exit 2, nothing on stdout)."""
    assert res.exit_code == 2, (res.exit_code, res.output)
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), res.stderr
    assert res.stdout == ""
    return str(lines[0])


def cli(*args: str | Path, cwd: Path, env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The real CLI (``cli.main()``) in a subprocess with a deadline and 4 GB of address space at most."""

    def limit_memory() -> None:  # a regression that reads /dev/zero must fail here, not take the machine
        resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))

    return subprocess.run(
        [sys.executable, "-m", "toolgauge.cli", *map(str, args)],
        cwd=cwd, capture_output=True, text=True, timeout=120, check=False, preexec_fn=limit_memory,
        env={**os.environ, "PYTHONPATH": str(SRC), **(env or {})},
    )  # fmt: skip


def only_line(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stdout == ""
    return lines[0]


# -- no folder the user did not ask for ---------------------------------------------------------------------------
def test_a_named_store_in_a_missing_folder_is_refused_and_no_folder_is_made(tmp_path: Path) -> None:
    db = tmp_path / "missing" / "dir" / "x.db"
    line = one_error_line(invoke("eval", "suite", "--model", "gold", "--store", f"sqlite:///{db}", "-q"))
    assert line == (
        f"error: store 'sqlite:///{db}': the folder {db.parent} does not exist (toolgauge creates no folder); create it"
    )
    assert not (tmp_path / "missing").exists()


def test_a_samples_file_in_a_missing_folder_is_refused_before_the_run(tmp_path: Path) -> None:
    samples = tmp_path / "missing" / "dir" / "x.jsonl"
    res = invoke("eval", "suite", "--model", "gold", "--store", f"sqlite:///{tmp_path / 's.db'}", "--samples", samples)
    assert one_error_line(res) == (
        f"error: --samples {samples}: the folder {samples.parent} does not exist (toolgauge creates no folder); "
        "create it first"
    )
    assert not (tmp_path / "missing").exists() and not (tmp_path / "s.db").exists()


def test_the_default_stores_folder_is_still_made(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TOOLGAUGE_STORE", raising=False)
    res = invoke("eval", "suite", "--model", "gold", "--limit", "1", "-q")
    assert res.exit_code == 0, res.output
    assert (tmp_path / ".toolgauge" / "toolgauge.db").is_file()


# -- output paths are checked before a run starts -----------------------------------------------------------------
@pytest.mark.parametrize(
    ("where", "problem"),
    [("folder", "is a folder; give the path of a file to write"),
     ("device", "not a regular file; give the path of a file to write")],
)  # fmt: skip
def test_a_samples_path_that_is_no_file_is_refused_before_anything_is_stored(
    tmp_path: Path, where: str, problem: str
) -> None:
    target = tmp_path if where == "folder" else Path("/dev/null")
    db = tmp_path / "s.db"
    res = invoke("eval", "suite", "--model", "gold", "--store", f"sqlite:///{db}", "--samples", target, "-q")
    assert one_error_line(res) == f"error: --samples {target}: {problem}"
    assert not db.exists()  # nothing was run or stored
    assert Path("/dev/null").is_char_device()  # still the device: nothing was renamed onto it


def test_report_rescore_and_wild_outputs_are_checked_first(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 's.db'}"
    assert invoke("eval", "suite", "--model", "gold", "--limit", "1", "--store", store, "-q").exit_code == 0
    folder = tmp_path / "out"
    folder.mkdir()
    missing = tmp_path / "nowhere" / "r.html"
    assert one_error_line(invoke("report", "latest", "--store", store, "--html", folder)) == (
        f"error: --html {folder}: is a folder; give the path of a file to write"
    )
    assert one_error_line(invoke("report", "latest", "--store", store, "--html", missing)).startswith(
        f"error: --html {missing}: the folder {missing.parent} does not exist"
    )
    assert one_error_line(invoke("rescore", "latest", "--store", store, "--samples", folder)) == (
        f"error: --samples {folder}: is a folder; give the path of a file to write"
    )
    wild_db = tmp_path / "w.db"
    res = invoke("eval", "wildtoolbench", "--data", WILD_SESSIONS, "--model", "gold", "--store", f"sqlite:///{wild_db}",
                 "--steps-out", folder, "-q")  # fmt: skip
    assert one_error_line(res) == f"error: --steps-out {folder}: is a folder; give the path of a file to write"
    assert list(folder.iterdir()) == [] and not missing.parent.exists() and not wild_db.exists()


# -- input files: regular, and within the input limit -------------------------------------------------------------
def input_sites(tmp: Path, bad: Path) -> dict[str, list[str | Path]]:
    """Each place a loader reads a file named on the command line, with ``bad`` put there."""
    mtu = tmp / "mtu"
    mtu.mkdir(exist_ok=True)
    (mtu / "S-S_eval.jsonl").write_text(json.dumps(MTU_ITEM) + "\n")
    genesis_pred = tmp / "pred" / "registry.json"
    genesis_pred.parent.mkdir(exist_ok=True)
    genesis_pred.write_text("{}")
    return {
        "eval --data": ["eval", "suite", "--model", "gold", "--data", bad],
        "genesis evaluate --data": ["genesis", "evaluate", "--data", bad, "--pred", genesis_pred],
        "score mtu-bench --predictions": ["score", "mtu-bench", "--data", mtu, "--predictions", bad, "--splits", "S-S"],
        "scripted:FILE": ["eval", "suite", "--model", f"scripted:{bad}"],
    }


def test_an_input_over_the_limit_is_refused_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    big = tmp_path / "big.jsonl"
    big.write_text(json.dumps(MTU_ITEM) * 2000 + "\n")  # about 100 KB
    limit = 65536  # more than the built-in suite the scripted case loads, less than the file
    monkeypatch.setenv(MAX_INPUT_ENV, str(limit))
    size = big.stat().st_size
    for site, args in input_sites(tmp_path, big).items():
        db = tmp_path / "s.db"
        line = one_error_line(invoke(*args, "--store", f"sqlite:///{db}", "-q"))
        assert line == (
            f"error: {big}: the file holds {size} bytes, over the input limit of {limit} bytes "
            f"(set {MAX_INPUT_ENV} to raise it)"
        ), site
        assert not db.exists(), site
    monkeypatch.setenv(MAX_INPUT_ENV, "lots")
    line = one_error_line(invoke("eval", "suite", "--model", "gold", "--store", f"sqlite:///{tmp_path / 's.db'}"))
    assert line == f"error: {MAX_INPUT_ENV}='lots': expected a positive number of bytes"


def test_a_sweeps_data_over_the_limit_is_refused_before_anything_is_stored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    big = tmp_path / "big.jsonl"
    big.write_text("x" * 2000)
    sweep = tmp_path / "s.toml"
    sweep.write_text(f"[[model]]\nspec = 'gold'\n[[benchmark]]\nname = 'suite'\ndata = '{big}'\n")
    monkeypatch.setenv(MAX_INPUT_ENV, "1000")  # the sweep file itself is smaller
    line = one_error_line(invoke("sweep", sweep, "--store", f"sqlite:///{tmp_path / 's.db'}"))
    assert line.endswith(
        f"{big}: the file holds 2000 bytes, over the input limit of 1000 bytes (set {MAX_INPUT_ENV} to raise it)"
    )
    assert not (tmp_path / "s.db").exists()


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_fifo_or_a_device_as_input_is_refused_without_reading_it(tmp_path: Path, kind: str) -> None:
    if kind == "fifo":
        bad = tmp_path / "data.jsonl"
        os.mkfifo(bad)  # nobody writes: reading it would block forever
        what = "a FIFO"
    else:
        bad, what = Path("/dev/zero"), "a character device"
    for site, args in input_sites(tmp_path, bad).items():
        proc = cli(*args, "--store", f"sqlite:///{tmp_path / 's.db'}", "-q", cwd=tmp_path)
        assert only_line(proc) == f"error: {bad}: not a regular file ({what}); give a file", site
    sweep = tmp_path / "s.toml"
    sweep.write_text(f"[[model]]\nspec = 'gold'\n[[benchmark]]\nname = 'suite'\ndata = '{bad}'\n")
    proc = cli("sweep", sweep, "--store", f"sqlite:///{tmp_path / 's.db'}", cwd=tmp_path)
    assert only_line(proc).endswith(f"{bad}: not a regular file ({what}); give a file")
    if kind == "fifo":  # and a FIFO inside a data folder, where the loader finds it by its name
        mtu = tmp_path / "mtu-fifo"
        mtu.mkdir()
        os.mkfifo(mtu / "S-S_eval.jsonl")
        proc = cli("eval", "mtu-bench", "--data", mtu, "--model", "gold", "--store", f"sqlite:///{tmp_path / 's.db'}",
                   cwd=tmp_path)  # fmt: skip
        assert only_line(proc) == f"error: {mtu / 'S-S_eval.jsonl'}: not a regular file (a FIFO); give a file"
    assert not (tmp_path / "s.db").exists()


BAD_TEMPERATURE = "error: Invalid value for '--temperature': Input should be "


# -- option values --------------------------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["--temperature", "-5"], f"{BAD_TEMPERATURE}greater than or equal to 0"),
        (["--temperature", "2.5"], f"{BAD_TEMPERATURE}less than or equal to 2"),
        (["--temperature", "inf"], f"{BAD_TEMPERATURE}less than or equal to 2"),
        (["--temperature", "nan"], f"{BAD_TEMPERATURE}less than or equal to 2"),
        (["--epochs", str(MAX_EPOCHS + 1)],
         f"error: Invalid value for '--epochs': Input should be less than or equal to {MAX_EPOCHS}"),
        (["--limit", "0"], "error: Invalid value for '--limit': Input should be greater than or equal to 1"),
        (["--store", ""], "error: Invalid value for '--store': an empty store URL; give a URL, or leave --store out "
                          "for the default store"),
    ],
)  # fmt: skip
def test_option_values_out_of_bounds_are_one_line_and_nothing_is_made(
    tmp_path: Path, args: list[str], line: str
) -> None:
    proc = cli("eval", "suite", "--model", "gold", *args, cwd=tmp_path, env={"TOOLGAUGE_STORE": ""})
    assert only_line(proc) == f"{line} (see: python -m toolgauge.cli eval suite --help)"
    assert list(tmp_path.iterdir()) == []  # no default store made


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ('{\n  "outputs": ["a"]\n}\n', "expected a JSON array of outputs (or one output per line), got a JSON object"),
        ('{"outputs": ["a"]}\n', "output 0: unknown key 'outputs' (an output has content, finish_reason, tool_calls)"),
    ],
)  # fmt: skip
def test_a_script_holding_an_object_is_refused(tmp_path: Path, content: str, problem: str) -> None:
    script = tmp_path / "script.json"
    script.write_text(content)
    db = tmp_path / "s.db"
    res = invoke("eval", "suite", "--model", f"scripted:{script}", "--store", f"sqlite:///{db}", "-q")
    assert one_error_line(res) == f"error: {script}: {problem}"
    assert not db.exists()


# -- a sweep file is checked by eval's rules --------------------------------------------------------------------------
SWEEP_HEAD = "[[model]]\nspec = 'gold'\n[[benchmark]]\nname = 'suite'\n"


@pytest.mark.parametrize(
    ("line", "field", "name", "value"),
    [
        ("limit = 0", "benchmark[1].limit", "limit", 0),
        ("limit = true", "benchmark[1].limit", "limit", True),
        ("temperature = nan", "benchmark[1].temperature", "temperature", float("nan")),
        ("temperature = -5", "benchmark[1].temperature", "temperature", -5),
        ("max_tokens = 0", "benchmark[1].max_tokens", "max_tokens", 0),
        ("concurrency = true", "benchmark[1].concurrency", "concurrency", True),
    ],
)
def test_a_sweep_value_eval_refuses_is_refused_with_evals_reason(line: str, field: str, name: str, value: Any) -> None:
    with pytest.raises(SweepFileError) as caught:
        parse_sweep(SWEEP_HEAD + line + "\n", "s.toml")
    with pytest.raises(Exception) as by_eval:
        check_option(name, value)
    problem = str(by_eval.value).split(": ", 1)[1]  # "--limit: PROBLEM" as eval says it
    assert str(caught.value) == f"s.toml: {field}: {problem}"


def test_sweep_epochs_and_nesting_have_bounds() -> None:
    with pytest.raises(SweepFileError) as caught:
        parse_sweep("epochs = 1000000000000\n" + SWEEP_HEAD, "s.toml")
    assert str(caught.value) == (
        f"s.toml: epochs: input should be less than or equal to {MAX_EPOCHS}, got 1000000000000"
    )
    deep = "[" * 5000 + "]" * 5000
    with pytest.raises(SweepFileError) as caught:
        parse_sweep(SWEEP_HEAD + f"categories = {deep}\n", "s.toml")
    assert str(caught.value) == f"s.toml: arrays or tables nested deeper than {MAX_NESTING} levels"
    nested = "[" * (MAX_NESTING + 1) + "]" * (MAX_NESTING + 1)
    with pytest.raises(SweepFileError) as caught:
        parse_sweep(SWEEP_HEAD + f"categories = {nested}\n", "s.toml")
    assert str(caught.value).startswith("s.toml: benchmark[1].categories")
    assert str(caught.value).endswith(f": arrays or tables nested deeper than {MAX_NESTING} levels")


def test_a_refused_sweep_stores_nothing(tmp_path: Path) -> None:
    sweep = tmp_path / "s.toml"
    sweep.write_text(SWEEP_HEAD + "limit = 0\n")
    db = tmp_path / "s.db"
    line = one_error_line(invoke("sweep", sweep, "--store", f"sqlite:///{db}"))
    assert line == f"error: {sweep}: benchmark[1].limit: input should be greater than or equal to 1, got 0"
    assert not db.exists()


# -- the resume hint --------------------------------------------------------------------------------------------------
def test_the_resume_command_keeps_the_store_as_given_without_its_password(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TOOLGAUGE_STORE", raising=False)
    pg = ["eval", "suite", "--model", "gold", "--store", "postgresql://tg:s3cret@127.0.0.1:5432/tg", "--resume", "old"]
    assert resume_command(pg, "r1") == (
        "toolgauge eval suite --model gold --store postgresql://tg@127.0.0.1:5432/tg --resume r1 "
        "(with the store's password in PGPASSWORD)"
    )
    joined = ["eval", "suite", "--store=postgresql+psycopg://tg:a:b@c@db.example/tg"]
    assert resume_command(joined, "r1") == (
        "toolgauge eval suite --store=postgresql+psycopg://tg@db.example/tg --resume r1 "
        "(with the store's password in PGPASSWORD)"
    )
    plain = ["eval", "suite", "--store", "sqlite:///my runs/s.db", "--resume=old"]
    assert resume_command(plain, "r1") == "toolgauge eval suite --store 'sqlite:///my runs/s.db' --resume r1"
    monkeypatch.setenv("TOOLGAUGE_STORE", "postgresql://tg:s3cret@127.0.0.1:5432/tg")
    assert resume_command(["eval", "suite", "-q"], "r1") == (
        "toolgauge eval suite -q --resume r1 (with TOOLGAUGE_STORE set as for this run)"
    )


class DyingModel(ChatStub):
    """An endpoint that answers the probe and one sample, then closes its port (the run stops, resumable)."""

    def __init__(self) -> None:
        answered = threading.Event()

        def respond(request: dict[str, Any], _headers: Mapping[str, str]) -> tuple[int, bytes]:
            if not is_probe(request) and not answered.is_set():
                answered.set()
                threading.Thread(target=self.close_port, daemon=True).start()
            return 200, completion("fine")

        super().__init__(respond)

    def close_port(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def stopped_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *store: str) -> tuple[list[str], str, str]:
    """Run the suite against a model that dies after one sample; return its arguments, stderr and run id."""
    with DyingModel() as model:
        args = ["eval", "suite", "--model", model.model(), "--max-retries", "0", "--concurrency", "1", "-q", *store]
        monkeypatch.setattr(sys, "argv", ["toolgauge", *args])  # what the hint is made from
        res = invoke(*args)
    assert res.exit_code == 75, res.output
    return args, res.stderr, res.stderr.rsplit("--resume ", 1)[1].split()[0]


def test_a_stopped_run_prints_the_store_as_given_or_the_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TOOLGAUGE_STORE", raising=False)
    db = tmp_path / "my runs" / "s.db"
    db.parent.mkdir()
    args, stderr, run_id = stopped_run(tmp_path, monkeypatch, "--store", f"sqlite:///{db}")
    assert stderr.strip().endswith(f"the run is resumable: {shlex.join(['toolgauge', *args, '--resume', run_id])}")
    assert f"--store 'sqlite:///{db}' --resume" in stderr  # as given, quoted for the shell
    monkeypatch.setenv("TOOLGAUGE_STORE", f"sqlite:///{db}")
    args, stderr, run_id = stopped_run(tmp_path, monkeypatch)
    assert stderr.strip().endswith(
        f"{shlex.join(['toolgauge', *args, '--resume', run_id])} (with TOOLGAUGE_STORE set as for this run)"
    ), stderr
    assert str(db) not in stderr
