"""The real CLI on a full disk, N times: how often stderr is more than the one error line, and the stored status.

    sudo-less root or a user namespace: .venv/bin/python benchmarks/full_disk_cli.py --runs 30
    .venv/bin/python benchmarks/full_disk_cli.py --runs 30 --src /other/checkout/src   # compare another tree

Each run is tests/helpers/full_disk_run.py's ``cli`` mode in a private mount namespace (``unshare -m``):
``toolgauge eval
suite`` (4 epochs, 8 at once, 20 kB answers) with its SQLite store on a 640 kB tmpfs, until a write fails; then
the tmpfs grows, the stored status is read and the run is resumed. Counted: exit codes, runs whose stderr had more
than one line (before the fix: "Future exception was never retrieved" and three chained tracebacks), stored
statuses, and resumes that did not finish every try exactly once.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def one_run(src: Path) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="toolgauge-full-disk-") as tmp:
        disk = Path(tmp) / "disk"
        disk.mkdir()
        done = subprocess.run(
            ["unshare", "-m", "--propagation", "private", sys.executable,
             str(ROOT / "tests" / "helpers" / "full_disk_run.py"),
             str(disk), "cli"],
            env={**os.environ, "PYTHONPATH": os.pathsep.join([str(src), str(ROOT / "tests")])},
            capture_output=True, text=True, timeout=600, check=False,
        )  # fmt: skip
        if done.returncode != 0:
            raise SystemExit(f"full_disk_run.py failed ({done.returncode}): {done.stderr[-2000:]}")
        found = json.loads(done.stdout.splitlines()[-1])
        rows = found["done_rows"]
        return {
            "code": found["code"],
            "stderr_lines": found["stderr"].count("\n"),
            "status_after": found["status_after"],
            "resume_code": found["resume_code"],
            "resumed_exactly": len(rows) == 96 and set(rows.values()) == {1},
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--src", type=Path, default=ROOT / "src", help="the toolgauge source tree to run")
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    rows = []
    for _ in range(args.runs):
        rows.append(one_run(args.src))
        print(json.dumps(rows[-1]), flush=True)
    print(
        f"{len(rows)} runs: exit codes {dict(Counter(r['code'] for r in rows))}; "
        f"stderr more than one line {sum(1 for r in rows if r['stderr_lines'] != 1)}; "
        f"stored status {dict(Counter(r['status_after'] for r in rows))}; "
        f"resumed exactly {sum(1 for r in rows if r['resumed_exactly'])}/{len(rows)}"
    )


if __name__ == "__main__":
    main()
