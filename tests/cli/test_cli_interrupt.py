"""Ctrl-C on a real CLI process: exit 130, run marked interrupted, resume finishes the rest.

No timing: the first process's model answers a few calls and then blocks forever, and the test sends SIGINT
only once the store shows finished samples, so the run is always caught mid-way whatever the machine's load.
"""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from helpers.child_process import sigint_restored
from toolgauge.results import EvalResults

ANSWERED_CALLS = 6

# The CLI with a scripted model that answers ANSWERED_CALLS calls, then never answers again.
BLOCKING_CLI = textwrap.dedent(
    f"""
    import asyncio, sys
    import toolgauge.models.offline as offline
    plain = offline.ScriptedClient.generate
    answered = 0
    async def blocking(self, request):
        global answered
        answered += 1
        if answered > {ANSWERED_CALLS}:
            await asyncio.Event().wait()
        return await plain(self, request)
    offline.ScriptedClient.generate = blocking
    from toolgauge.cli import main
    sys.argv[0] = "toolgauge"
    main()
    """
)


def finished_samples(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as conn:
            return int(conn.execute("SELECT count(*) FROM samples WHERE status = 'done'").fetchone()[0])
    except sqlite3.OperationalError:  # the schema is not created yet
        return 0


def wait_for(condition, proc: subprocess.Popen[str], deadline_s: float = 120.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + deadline_s
    while not condition():
        assert proc.poll() is None, proc.communicate(timeout=60)[1]
        assert time.monotonic() < deadline, "the run never reached the awaited state"
        time.sleep(0.05)


def test_ctrl_c_then_resume(tmp_path: Path):
    script = tmp_path / "script.json"
    script.write_text(json.dumps(["ok"] * 500))
    db = tmp_path / "s.db"
    store = f"sqlite:///{db}"
    suite_run = ["eval", "suite", "--model", f"scripted:{script}", "-q", "--concurrency", "2"]
    common = [*suite_run, "--store", store]
    proc = subprocess.Popen(
        [sys.executable, "-c", BLOCKING_CLI, *common], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=sigint_restored,  # SIGINT reaches it even when this test runs as a background job
    )  # fmt: skip
    wait_for(lambda: finished_samples(db) >= 1, proc)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert "interrupted: finished samples of run" in err
    run_id = err.split("--resume ")[-1].split()[0]

    listed = subprocess.run(
        [sys.executable, "-m", "toolgauge.cli", "runs", "--store", store, "--json"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    assert json.loads(listed.stdout)[0]["status"] == "interrupted"

    resumed = subprocess.run(
        [sys.executable, "-m", "toolgauge.cli", *common, "--json", "--resume", run_id],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert resumed.returncode == 0, resumed.stderr
    run = EvalResults.model_validate_json(resumed.stdout).run
    assert run is not None and run.id == run_id
    assert run.resumed_samples >= 1
    assert run.resumed_samples < run.samples
    assert run.sample_errors == 0

    # Only the unfinished dialogues' turns are asked again: fewer calls than a whole run of the suite needs.
    other_store = f"sqlite:///{tmp_path / 'full.db'}"
    full = subprocess.run(
        [sys.executable, "-m", "toolgauge.cli", *suite_run, "--store", other_store, "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert full.returncode == 0, full.stderr
    full_run = EvalResults.model_validate_json(full.stdout).run
    assert full_run is not None and 0 < run.model_calls < full_run.model_calls
