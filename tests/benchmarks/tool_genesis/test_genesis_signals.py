"""Signals at several points of a ``genesis evaluate`` run: always exit 130 with the hint, never an abort or a hang.

Each point is reached by state, not by time: the run is stored; its server is up in the sandbox; the schema
embedding runs on its worker thread (a gate in the child holds it there until the signals are sent, then lets
the real embedding run while the process exits: the exit must wait for it, not abort in torch). A single
signal (Ctrl-C, or SIGTERM to a background job) and a double one (both signals back to back) are sent at
each point. A loop over many time offsets of a real run is benchmarks/genesis_signals.py.
"""

from __future__ import annotations

import contextlib
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from helpers.child_process import LineReader, sigint_ignored, sigint_restored
from helpers.genesis_stage import stage_server
from helpers.proc_tree import descendants, survivors
from toolgauge.sandbox import detect_sandbox

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(detect_sandbox() != "bwrap", reason="bubblewrap sandbox not available here"),
]

# The CLI, with the first schema match (run on the embedding worker thread) held at a gate until stdin has a line.
GATED_GENESIS = textwrap.dedent(
    """
    import sys, threading
    import toolgauge.benchmarks.tool_genesis.protocol as protocol
    plain = protocol.match_schemas
    first = threading.Lock()
    def gated(*args, **kwargs):
        if first.acquire(blocking=False):
            sys.stderr.write("EMBEDDING\\n")
            sys.stderr.flush()
            sys.stdin.readline()
        return plain(*args, **kwargs)
    protocol.match_schemas = gated
    from toolgauge.cli import main
    sys.argv[0] = "toolgauge"
    main()
    """
)


def stored_runs(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as conn:
            return int(conn.execute("SELECT count(*) FROM runs").fetchone()[0])
    except sqlite3.OperationalError:  # the schema is not created yet
        return 0


def server_up(pid: int) -> bool:
    # The server itself (inside bubblewrap) runs: the shim's own interpreter, not bwrap's command line.
    return any(
        "_toolgauge_shim.py" in cmd and not cmd.startswith("/usr/bin/bwrap") for _, cmd in descendants(pid).values()
    )


def wait_until(reached: Callable[[], bool], proc: subprocess.Popen[str], what: str) -> None:
    deadline = time.monotonic() + 120
    while not reached():
        assert proc.poll() is None, f"the run ended before {what}"
        assert time.monotonic() < deadline, f"the run never reached {what}"
        time.sleep(0.05)


@pytest.mark.parametrize("point", ["stored", "server", "embedding"])
@pytest.mark.parametrize(
    ("signals", "sigint"),
    [("single", sigint_restored), ("double", sigint_ignored)],  # each run takes seconds: two of the four pairs
    ids=["single-interactive", "double-background"],
)
def test_a_signal_anywhere_in_genesis_evaluate_ends_it_with_the_hint(
    tmp_path: Path, point: str, signals: str, sigint: Callable[[], None]
) -> None:
    data, pred = stage_server(tmp_path, "correct")
    db = tmp_path / "store.db"
    cli = subprocess.Popen(
        [sys.executable, "-c", GATED_GENESIS, "genesis", "evaluate", "--data", str(data), "--pred", str(pred),
         "--skip-l4", "--store", f"sqlite:///{db}", "-q"],
        cwd=tmp_path, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        preexec_fn=sigint,
    )  # fmt: skip
    assert cli.stderr is not None and cli.stdin is not None
    stderr = LineReader(cli.stderr)
    before: list[str] = []
    sandbox: dict[int, tuple[int, str]] = {}
    try:
        if point == "stored":
            wait_until(lambda: stored_runs(db) > 0, cli, "a stored run")
        elif point == "server":
            wait_until(lambda: server_up(cli.pid), cli, "a running server")
        else:
            before = stderr.until(lambda line: line == "EMBEDDING\n", timeout=120)
        sandbox = descendants(cli.pid)
        first = signal.SIGINT if sigint is sigint_restored else signal.SIGTERM
        cli.send_signal(first)
        if signals == "double":
            cli.send_signal(signal.SIGTERM)
        with contextlib.suppress(BrokenPipeError):  # the gate's line (the run may be gone by now)
            cli.stdin.write("\n")
            cli.stdin.close()
        err = "".join(before) + stderr.rest(timeout=120)
        code = cli.wait(timeout=120)
    finally:
        if cli.poll() is None:
            cli.kill()
            cli.wait(timeout=60)
    assert code == 130, err  # not -6 (SIGABRT), -15 or a hang
    assert "Traceback" not in err and "terminate called" not in err, err
    lines = [line for line in err.splitlines() if line != "EMBEDDING"]
    assert lines and lines[0].startswith("interrupted"), err
    pids, groups = set(sandbox), {pgid for pgid, _ in sandbox.values()}
    end = time.monotonic() + 10  # the kernel reaps a killed namespace asynchronously
    while survivors(pids, groups) and time.monotonic() < end:
        time.sleep(0.05)
    assert survivors(pids, groups) == []
