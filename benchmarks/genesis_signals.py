"""Single and double signals at offsets spread over a `genesis evaluate` run: exit codes, tracebacks, aborts, hangs.

    .venv/bin/python benchmarks/genesis_signals.py --runs 50
    .venv/bin/python benchmarks/genesis_signals.py --runs 50 --src /other/checkout/src   # compare another tree

First one run without a signal measures how long a whole run takes (T). Then each of --runs tries starts
`python -m toolgauge.cli genesis evaluate --skip-l4` on a fixture server (tests/fixtures/genesis/correct, with
L1-L3 and the schema embedding), and sends its signal after an offset spread evenly over [0.2 s, T]: even tries
one signal, odd tries two (the second 0.05-0.5 s after the first). Tries alternate between a child with SIGINT
(Ctrl-C) and one started as a background job (SIGINT ignored, so SIGTERM). A try is counted as a traceback when
its stderr holds one, an abort when it ends by a signal (SIGABRT: "terminate called without an active
exception") or prints that line, and a hang when it has not exited --deadline seconds after the last signal.
A run that had finished before its signal is counted apart (exit 0).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from sandbox_interrupt import stage  # noqa: E402


def command(folder: Path, data: Path, pred: Path) -> list[str]:
    return [sys.executable, "-m", "toolgauge.cli", "genesis", "evaluate", "--data", str(data), "--pred", str(pred),
            "--skip-l4", "--store", f"sqlite:///{folder / 'store.db'}", "-q"]  # fmt: skip


def ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def whole_run_seconds(src: Path) -> float:
    with tempfile.TemporaryDirectory(prefix="toolgauge-signals-") as tmp:
        folder = Path(tmp)
        data, pred = stage(folder, "correct")
        started = time.monotonic()
        done = subprocess.run(command(folder, data, pred), cwd=folder, env={**os.environ, "PYTHONPATH": str(src)},
                              capture_output=True, text=True, timeout=600, check=False)  # fmt: skip
        if done.returncode != 0:
            raise SystemExit(f"the unsignalled run failed ({done.returncode}): {done.stderr[-2000:]}")
        return time.monotonic() - started


def one_try(src: Path, offset: float, double: bool, background: bool, deadline: float) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="toolgauge-signals-") as tmp:
        folder = Path(tmp)
        data, pred = stage(folder, "correct")
        cli = subprocess.Popen(command(folder, data, pred), cwd=folder, env={**os.environ, "PYTHONPATH": str(src)},
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                               preexec_fn=ignore_sigint if background else default_sigint)  # fmt: skip
        stop = signal.SIGTERM if background else signal.SIGINT
        time.sleep(offset)  # the benchmark spreads signals over the run's phases by time, on purpose
        cli.send_signal(stop)
        if double:
            time.sleep(0.05 + (offset * 7919 % 0.45))
            cli.send_signal(stop if background else signal.SIGTERM)
        try:
            _, err = cli.communicate(timeout=deadline)
            hang = False
        except subprocess.TimeoutExpired:
            cli.kill()
            _, err = cli.communicate(timeout=60)
            hang = True
        return {
            "offset": round(offset, 2),
            "double": double,
            "background": background,
            "returncode": cli.returncode,
            "hang": hang,
            "traceback": "Traceback" in err,
            "abort": cli.returncode == -signal.SIGABRT or "terminate called" in err,
            "stderr_lines": err.count("\n"),
            # What went wrong, when something did: the end of stderr.
            "stderr_tail": err[-1500:] if cli.returncode != 130 or "Traceback" in err else None,
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--src", type=Path, default=ROOT / "src", help="the toolgauge source tree to run")
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--deadline", type=float, default=60.0)
    args = parser.parse_args()
    whole = whole_run_seconds(args.src)
    print(json.dumps({"whole_run_s": round(whole, 2)}), flush=True)
    rows = []
    for i in range(args.runs):
        offset = 0.2 + (whole - 0.2) * (i // 2) / max(1, args.runs // 2 - 1)
        row = one_try(args.src, offset, double=i % 2 == 1, background=(i // 2) % 2 == 1, deadline=args.deadline)
        rows.append(row)
        print(json.dumps(row), flush=True)
    codes = Counter(str(r["returncode"]) for r in rows)
    print(
        f"{len(rows)} runs ({sum(1 for r in rows if r['double'])} with two signals) over offsets 0.2-{whole:.1f} s: "
        f"exit codes {dict(codes)}; tracebacks {sum(1 for r in rows if r['traceback'])}, "
        f"aborts {sum(1 for r in rows if r['abort'])}, hangs {sum(1 for r in rows if r['hang'])}"
    )


if __name__ == "__main__":
    main()
