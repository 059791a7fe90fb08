"""Ctrl-C on a real CLI process: exit 130, run marked interrupted, resume finishes the rest."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

# The CLI with a scripted model slowed down, so there is time to press Ctrl-C mid-run.
SLOW_CLI = textwrap.dedent(
    """
    import asyncio, sys
    import toolgauge.models.offline as offline
    plain = offline.ScriptedClient.generate
    async def slow(self, request):
        await asyncio.sleep(0.2)
        return await plain(self, request)
    offline.ScriptedClient.generate = slow
    from toolgauge.cli import main
    sys.argv[0] = "toolgauge"
    main()
    """
)


def run_cli(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", SLOW_CLI, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def test_ctrl_c_then_resume(tmp_path: Path):
    script = tmp_path / "script.json"
    script.write_text(json.dumps(["ok"] * 500))
    store = f"sqlite:///{tmp_path / 's.db'}"
    common = ["eval", "suite", "--model", f"scripted:{script}", "--store", store, "-q", "--concurrency", "2"]
    proc = run_cli(*common)
    time.sleep(3.0)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert "interrupted: finished samples of run" in err
    run_id = err.split("--resume ")[-1].split()[0]

    listed = subprocess.run(
        [sys.executable, "-m", "toolgauge.cli", "runs", "--store", store, "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(listed.stdout)[0]["status"] == "interrupted"

    resumed = run_cli(*common, "--json", "--resume", run_id)
    out, err = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, err
    summary = json.loads(out)["run"]
    assert summary["resumed_samples"] > 0
    assert summary["resumed_samples"] < summary["samples"]
    assert 0 < summary["model_calls"] < 55  # only the unfinished dialogues' turns were asked again
    assert summary["sample_errors"] == 0
