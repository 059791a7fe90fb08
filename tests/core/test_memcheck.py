"""CI's memory check (benchmarks/memcheck.py) prints the figure either way and fails above its ceiling."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.paths import REPO, SRC

SCRIPT = REPO / "benchmarks" / "memcheck.py"


def _check(tmp_path: Path, ceiling_mb: float) -> subprocess.CompletedProcess[str]:
    baselines = tmp_path / f"baselines-{ceiling_mb}.json"
    entry = {"dialogues": 24, "model": "gold", "peak_rss_mb": 50, "ceiling_mb": ceiling_mb, "commit": "test"}
    baselines.write_text(json.dumps({"memory": entry}), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(SRC), "TMPDIR": str(tmp_path)}
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--baselines", str(baselines)],
        capture_output=True, text=True, env=env, timeout=300, check=False,
    )  # fmt: skip


@pytest.mark.slow
def test_the_check_passes_under_the_ceiling_and_fails_above_it_printing_the_figure(tmp_path: Path) -> None:
    under = _check(tmp_path, 100_000)
    assert under.returncode == 0, under.stderr
    assert "a 24-dialogue gold suite run peaked at" in under.stdout and under.stdout.rstrip().endswith(": ok")
    over = _check(tmp_path, 1)
    assert over.returncode == 1, over.stderr
    assert "peaked at" in over.stdout and "ceiling 1 MB): FAILED: above the ceiling" in over.stdout
