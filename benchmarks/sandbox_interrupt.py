"""Ctrl-C during `genesis evaluate`: how long the CLI takes to exit, and whether any sandbox process survives.

    .venv/bin/python benchmarks/sandbox_interrupt.py --tries 5 --server hang_on_call --delays 0,2,4,6,8
    .venv/bin/python benchmarks/sandbox_interrupt.py --src /other/checkout/src   # compare another tree

Each try copies a fixture server (tests/fixtures/genesis/hang_on_call: initialises, then every tool call
hangs; or tests/fixtures/hostile/sleep_forever.py: never answers `initialize`) into a fresh registry, starts
`python -m toolgauge.cli genesis evaluate` on it, waits until the server's own process is running inside the
sandbox, waits the try's extra delay (so the interrupt lands in different phases: start-up, L2 embedding,
the hanging L3 call), sends SIGINT and measures the time until the CLI has exited. It then reports any
process of the sandbox still alive (after a bounded poll). A try that has not exited after --deadline
seconds is reported as a hang and killed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
sys.path.insert(0, str(ROOT / "tests"))
from helpers.proc_tree import descendants, survivors  # noqa: E402


def stage(folder: Path, server: str) -> tuple[Path, Path]:
    pred = folder / "pred"
    if server == "sleep_forever":
        (pred / "mini-calc").mkdir(parents=True)
        shutil.copy2(FIXTURES / "hostile" / "sleep_forever.py", pred / "mini-calc" / "server.py")
        shutil.copy2(FIXTURES / "genesis" / "correct" / "tools.json", pred / "mini-calc" / "tools.json")
    else:
        shutil.copytree(FIXTURES / "genesis" / server, pred / "mini-calc")
    entry = {"json_schema_path": "mini-calc/tools.json", "env_code_path": "mini-calc/server.py"}
    (pred / "registry.json").write_text(json.dumps({"mini-calc": entry}))
    data = folder / "data.json"
    data.write_text("[" + (FIXTURES / "genesis" / "spec.json").read_text() + "]")
    return data, pred


def one_try(src: Path, server: str, delay: float, deadline: float) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="toolgauge-interrupt-") as tmp:
        folder = Path(tmp)
        data, pred = stage(folder, server)
        command = [sys.executable, "-m", "toolgauge.cli", "genesis", "evaluate", "--data", str(data),
                   "--pred", str(pred), "--skip-l4", "--call-timeout", "600",
                   "--store", f"sqlite:///{folder / 'store.db'}", "-q"]  # fmt: skip
        started = time.monotonic()
        cli = subprocess.Popen(command, cwd=folder, env={**os.environ, "PYTHONPATH": str(src)},
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
        sandbox: dict[int, tuple[int, str]] = {}
        while cli.poll() is None and time.monotonic() - started < 300:
            sandbox = descendants(cli.pid)
            if any("_toolgauge_shim.py" in c and not c.startswith("/usr/bin/bwrap") for _, c in sandbox.values()):
                break
            time.sleep(0.05)
        up = time.monotonic() - started
        time.sleep(delay)
        sandbox.update(descendants(cli.pid))
        sent = time.monotonic()
        cli.send_signal(signal.SIGINT)
        try:
            cli.wait(timeout=deadline)
            exit_seconds: float | None = time.monotonic() - sent
        except subprocess.TimeoutExpired:
            exit_seconds = None
        left_at_exit = survivors(set(sandbox), {g for g, _ in sandbox.values()})
        if cli.poll() is None:
            cli.kill()
            cli.wait()
        end = time.monotonic() + 10
        pids, groups = set(sandbox), {g for g, _ in sandbox.values()}
        while survivors(pids, groups) and time.monotonic() < end:
            time.sleep(0.05)
        return {
            "delay": delay,
            "server_up_s": round(up, 2),
            "exit_s": None if exit_seconds is None else round(exit_seconds, 2),
            "returncode": cli.returncode,
            "sandbox_alive_at_exit": len(left_at_exit),
            "sandbox_alive_10s_later": len(survivors(pids, groups)),
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--src", type=Path, default=ROOT / "src", help="the toolgauge source tree to run")
    parser.add_argument("--server", choices=["hang_on_call", "sleep_forever"], default="hang_on_call")
    parser.add_argument("--delays", default="0,2,4,6,8", help="extra seconds after the server is up, per try")
    parser.add_argument("--tries", type=int, default=5)
    parser.add_argument("--deadline", type=float, default=60.0)
    args = parser.parse_args()
    delays = [float(x) for x in args.delays.split(",")]
    rows = [one_try(args.src, args.server, delays[i % len(delays)], args.deadline) for i in range(args.tries)]
    for row in rows:
        print(json.dumps(row))
    times = [r["exit_s"] for r in rows if isinstance(r["exit_s"], float)]
    hangs = sum(1 for r in rows if r["exit_s"] is None)
    alive = sum(1 for r in rows if r["sandbox_alive_10s_later"])
    if times:
        print(
            f"exit after SIGINT: median {statistics.median(times):.2f} s, min {min(times):.2f}, "
            f"max {max(times):.2f}; hangs (> {args.deadline:g} s): {hangs}/{len(rows)}; "
            f"tries with a sandbox process alive 10 s later: {alive}/{len(rows)}"
        )


if __name__ == "__main__":
    main()
