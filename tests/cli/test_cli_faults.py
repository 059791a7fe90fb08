"""The real CLI process against the fault-injecting server on 127.0.0.1.

A run with injected faults gives the same verdicts as a clean run; a dead endpoint, a wrong
model name, an endpoint that dies mid-run, failed samples, usage errors and SIGTERM each end
with one clear line and their documented exit code.
"""

from __future__ import annotations

import contextlib
import json
import signal
import socket
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from helpers.child_process import LineReader, sigint_ignored, sigint_restored
from helpers.cli_helpers import sample_rows
from helpers.fault_server import FaultServer
from toolgauge.results import EvalResults, RunStats

CLI = [sys.executable, "-m", "toolgauge.cli"]
# The client timeout ends an injected hang; it must also leave room for a busy machine (pytest -n) to answer an
# ordinary request, or a slow answer becomes a retry the fault schedule did not plan.
TIMEOUT = "10"


def toolgauge(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout, check=False)


def suite(url: str, store: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return toolgauge(
        "eval", "suite", "--model", f"{url}#m", "--store", f"sqlite:///{store}", "-q", "--timeout", TIMEOUT,
        "--concurrency", "8", *extra,
    )  # fmt: skip


def run_status(store: Path) -> list[tuple[str, str]]:
    listed = toolgauge("runs", "--store", f"sqlite:///{store}", "--json")
    return [(r["id"], r["status"]) for r in json.loads(listed.stdout)]


def run_of(proc: subprocess.CompletedProcess[str]) -> RunStats:
    """The run record of a ``--json`` run's typed results."""
    run = EvalResults.model_validate_json(proc.stdout).run
    assert run is not None, proc.stdout
    return run


def sample_statuses(store: Path) -> list[tuple[str, str]]:
    """Every stored sample's key and status; none while the store has no schema yet."""
    if not store.exists():
        return []
    try:
        with sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=5) as conn:
            return [(str(k), str(s)) for k, s in conn.execute("SELECT sample_key, status FROM samples")]
    except sqlite3.OperationalError:
        return []


def sample_counts(store: Path, run_id: str) -> dict[str, int]:
    with sqlite3.connect(store) as conn:
        found = conn.execute(
            "SELECT sample_key, COUNT(*) FROM samples WHERE run_id = ? AND status = 'done' GROUP BY sample_key",
            (run_id,),
        ).fetchall()
    return dict(found)


def test_faults_change_no_verdict_and_fail_no_sample(tmp_path: Path):
    with FaultServer() as clean:
        ok = suite(clean.url, tmp_path / "clean.db", "--samples", str(tmp_path / "clean.jsonl"))
    assert ok.returncode == 0, ok.stderr
    with FaultServer(fault_rate=0.3, seed=7) as faulty:
        res = suite(faulty.url, tmp_path / "faulty.db", "--samples", str(tmp_path / "faulty.jsonl"), "--json")
    assert res.returncode == 0, res.stderr
    run = run_of(res)
    assert run.status == "finished" and run.sample_errors == 0
    assert sum(faulty.faults.values()) >= 10, faulty.faults  # the schedule did inject faults
    assert len(faulty.faults) >= 6, faulty.faults  # of many kinds
    assert sample_rows(tmp_path / "faulty.jsonl") == sample_rows(tmp_path / "clean.jsonl")
    assert set(sample_counts(tmp_path / "faulty.db", run.id).values()) == {1}


@pytest.mark.realdata
def test_bfcl_with_faults_matches_a_clean_run(bfcl_dir: Path, tmp_path: Path):
    def bfcl(url: str, name: str) -> subprocess.CompletedProcess[str]:
        return toolgauge(
            "eval", "bfcl", "--data", str(bfcl_dir), "--categories", "simple_python,multiple,irrelevance",
            "--limit", "30", "--model", f"{url}#m", "--store", f"sqlite:///{tmp_path / name}.db", "-q",
            "--timeout", TIMEOUT, "--concurrency", "8", "--samples", str(tmp_path / f"{name}.jsonl"),
        )  # fmt: skip

    with FaultServer() as clean:
        assert bfcl(clean.url, "clean").returncode == 0
    with FaultServer(fault_rate=0.25, seed=3) as faulty:
        res = bfcl(faulty.url, "faulty")
    assert res.returncode == 0, res.stderr
    assert sum(faulty.faults.values()) >= 10, faulty.faults
    clean_rows, faulty_rows = sample_rows(tmp_path / "clean.jsonl"), sample_rows(tmp_path / "faulty.jsonl")
    assert len(clean_rows) == 90 and faulty_rows == clean_rows  # --limit takes 30 of each of 3 categories
    assert {r["scores"]["valid"] for r in clean_rows} == {True, False}  # a comparison of mixed verdicts


def test_a_dead_endpoint_fails_the_probe_in_one_line_with_exit_2(tmp_path: Path):
    # Bound but never listening: connections are refused, and no other test's server can take the port meanwhile.
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        started = time.monotonic()
        res = suite(f"http://127.0.0.1:{taken.getsockname()[1]}/v1", tmp_path / "s.db")
    assert res.returncode == 2
    assert res.stderr.count("\n") == 1 and "does not answer: APIConnectionError" in res.stderr, res.stderr
    assert time.monotonic() - started < 60  # generous: seconds, not a retry storm over 24 samples
    assert [status for _, status in run_status(tmp_path / "s.db")] == ["failed"]


def test_a_wrong_model_name_shows_the_servers_answer(tmp_path: Path):
    with FaultServer(models=("real",)) as srv:
        res = suite(srv.url, tmp_path / "s.db")
    assert res.returncode == 2
    assert "HTTP 404: The model 'm' does not exist" in res.stderr and res.stderr.count("\n") == 1, res.stderr
    assert srv.requests == 1  # the probe only: no sample was tried


def test_an_endpoint_that_dies_mid_run_stops_resumable_and_the_resume_runs_each_sample_once(tmp_path: Path):
    with FaultServer() as clean:
        assert suite(clean.url, tmp_path / "clean.db", "--samples", str(tmp_path / "clean.jsonl")).returncode == 0
    store = tmp_path / "s.db"
    with FaultServer(down_after=20) as srv:
        stopped = suite(srv.url, store)
        assert stopped.returncode == 75, stopped.stderr
        assert "stopped answering" in stopped.stderr and "connection failures in a row" in stopped.stderr
        assert stopped.stderr.count("\n") == 1, stopped.stderr
        (run_id, status), *_ = run_status(store)
        assert status == "interrupted"
        assert f"--resume {run_id}" in stopped.stderr
        before = sample_counts(store, run_id)
        assert 0 < len(before) < 24

        srv.down_after = None  # the endpoint is back
        resumed = suite(srv.url, store, "--resume", run_id, "--json", "--samples", str(tmp_path / "resumed.jsonl"))
    assert resumed.returncode == 0, resumed.stderr
    run = run_of(resumed)
    assert run.status == "finished" and run.resumed_samples == len(before)
    counts = sample_counts(store, run_id)
    assert len(counts) == 24 and set(counts.values()) == {1}
    assert sample_rows(tmp_path / "resumed.jsonl") == sample_rows(tmp_path / "clean.jsonl")


def test_every_sample_failed_prints_no_scores_and_exits_1(tmp_path: Path):
    with FaultServer(reject_tool_share=1.0) as srv:
        table = suite(srv.url, tmp_path / "s.db")
        as_json = suite(srv.url, tmp_path / "s.db", "--json")
    assert table.returncode == 1 and as_json.returncode == 1
    assert table.stdout == ""  # no score table
    assert "every sample failed" in table.stderr and "HTTP 400" in table.stderr
    assert table.stderr.count("\n") == 1, table.stderr
    failed = EvalResults.model_validate_json(as_json.stdout)
    assert failed.run is not None and failed.run.status == "failed" and failed.metrics == []
    assert [status for _, status in run_status(tmp_path / "s.db")] == ["failed", "failed"]
    # The stored run reports as failed too: one line, no table.
    reported = toolgauge("report", "latest", "--store", f"sqlite:///{tmp_path / 's.db'}")
    assert reported.returncode == 1 and reported.stdout == ""
    assert "failed: every sample failed, so it has no scores" in reported.stderr and "HTTP 400" in reported.stderr


def test_some_failed_samples_are_stored_as_such_and_the_table_says_so(tmp_path: Path):
    with FaultServer(reject_tool_share=0.3) as srv:
        res = suite(srv.url, tmp_path / "s.db")
    assert res.returncode == 1, res.stderr
    assert "samples failed; scores are not comparable" in " ".join(res.stdout.split())
    assert [status for _, status in run_status(tmp_path / "s.db")] == ["finished_with_errors"]


def test_usage_errors_are_one_line_with_exit_2():
    res = toolgauge("eval", "suite", "--model", "gold", "--concurrency", "many")
    assert res.returncode == 2
    assert res.stderr.startswith("error: Invalid value for '--concurrency'") and res.stderr.count("\n") == 1
    assert toolgauge("eval", "suite", "--help").returncode == 0


# The CLI whose model answers 6 calls and then blocks, so a signal always finds the run mid-way, with a
# gate that can stop the process at one place ("shutdown": while the blocked call is being cancelled;
# "exit": in an atexit hook, after main() has decided its exit code; "none": no gate) until the test has
# sent its second signal and written a line to stdin. No timing: every step waits for the one before.
GATED_CLI = textwrap.dedent(
    """
    import asyncio, atexit, sys
    import toolgauge.models.offline as offline
    where = sys.argv.pop(1)
    def gate():
        sys.stderr.write("GATE\\n")
        sys.stderr.flush()
        sys.stdin.readline()
    plain = offline.ScriptedClient.generate
    answered = 0
    async def blocking(self, request):
        global answered
        answered += 1
        if answered > 6:
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                if where == "shutdown":
                    gate()
                raise
        return await plain(self, request)
    offline.ScriptedClient.generate = blocking
    if where == "exit":
        atexit.register(gate)
    from toolgauge.cli import main
    sys.argv[0] = "toolgauge"
    main()
    """
)


def start_gated_run(
    tmp_path: Path, where: str, sigint: Callable[[], None] = sigint_restored
) -> tuple[subprocess.Popen[str], Path]:
    """A suite run of :data:`GATED_CLI`, returned once a sample is stored (its model then blocks).

    ``sigint`` sets the child's SIGINT before it starts: restored (the test sends it SIGINT, whatever the test
    process inherited) or ignored (as a background job of a script starts it).
    """
    script = tmp_path / "script.json"
    script.write_text(json.dumps(["ok"] * 500))
    store = tmp_path / "s.db"
    args = ["eval", "suite", "--model", f"scripted:{script}", "--store", f"sqlite:///{store}", "-q", "-c", "1"]
    proc = subprocess.Popen(
        [sys.executable, "-c", GATED_CLI, where, *args], stdin=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=sigint,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while not any(status == "done" for _, status in sample_statuses(store)):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(f"the run stored no sample: {proc.communicate(timeout=60)[1]}")
        time.sleep(0.05)
    return proc, store


@pytest.mark.parametrize("sigint", [sigint_restored, sigint_ignored], ids=["interactive", "background"])
def test_sigterm_stops_the_run_like_ctrl_c(tmp_path: Path, sigint: Callable[[], None]):
    proc, store = start_gated_run(tmp_path, "none", sigint)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    (run_id, status), *_ = run_status(store)
    assert status == "interrupted"
    args = ["eval", "suite", "--model", f"scripted:{tmp_path / 'script.json'}", "--store", f"sqlite:///{store}",
            "-q", "-c", "1"]  # fmt: skip
    assert err == (
        f"interrupted: finished samples of run {run_id} are saved; continue with:\n"
        f"  toolgauge {' '.join(args)} --resume {run_id}\n"
    )
    resumed = toolgauge(*args, "--resume", run_id, "--json")
    assert resumed.returncode == 0, resumed.stderr
    run = run_of(resumed)
    assert run.status == "finished" and 1 <= run.resumed_samples < run.samples
    counts = sample_counts(store, run_id)  # every sample done, each once
    assert len(counts) == run.samples and set(counts.values()) == {1}


@pytest.mark.parametrize("where", ["shutdown", "exit"])
@pytest.mark.parametrize("sigint", [sigint_restored, sigint_ignored], ids=["interactive", "background"])
def test_a_second_signal_exits_130_without_a_traceback(tmp_path: Path, where: str, sigint: Callable[[], None]):
    """Two Ctrl-Cs; or, started as a background job (SIGINT ignored), two SIGTERMs."""
    proc, store = start_gated_run(tmp_path, where, sigint)
    assert proc.stderr is not None and proc.stdin is not None
    stop = signal.SIGINT if sigint is sigint_restored else signal.SIGTERM
    stderr = LineReader(proc.stderr)
    proc.send_signal(stop)
    before = stderr.until(lambda line: line == "GATE\n", timeout=60)  # the process now waits at its gate
    proc.send_signal(stop)
    with contextlib.suppress(BrokenPipeError):  # the second signal may have ended the process already
        proc.stdin.write("\n")
        proc.stdin.close()
    err = "".join(before) + stderr.rest(timeout=60)
    assert proc.wait(timeout=60) == 130, err
    assert "Traceback" not in err and "interrupted: finished samples of run" in err, err
    assert [status for _, status in run_status(store)] == ["interrupted"]
