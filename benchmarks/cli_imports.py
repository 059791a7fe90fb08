"""CPU of short CLI commands, and which heavy libraries they load, for one or more source trees.

Each command runs in a fresh interpreter (``python -m toolgauge.cli ...``) with ``PYTHONPATH`` set to the
tree's ``src``; its CPU (user + system, from ``wait4``) is counted whole: interpreter start, imports and the
command itself. The trees run interleaved, ``--repeat`` times each. A second pass of each command with
``-c`` prints which of SQLAlchemy, the openai SDK, httpx, numpy and scipy it loaded.

Commands: ``--help``; ``eval suite --model gold`` (24 dialogues, 55 model calls, a fresh SQLite store).

    mkdir -p /tmp/before && git archive 3982597 src | tar -x -C /tmp/before   # from the repository's root
    .venv/bin/python benchmarks/cli_imports.py --tree before=/tmp/before/src --tree after=src --repeat 5
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

WATCHED = ("sqlalchemy", "openai", "httpx", "numpy", "scipy")
COMMANDS = {"--help": ["--help"], "eval suite --model gold": ["eval", "suite", "--model", "gold", "-q"]}


def run(tree: str, args: list[str], cwd: str) -> float:
    """CPU seconds of one ``toolgauge ARGS`` process (it must exit 0)."""
    env = {**os.environ, "PYTHONPATH": str(Path(tree).resolve())}
    env.pop("TOOLGAUGE_STORE", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "toolgauge.cli", *args], cwd=cwd, env=env,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    assert proc.stderr is not None
    if proc.returncode != 0:
        raise SystemExit(f"{tree}: toolgauge {' '.join(args)} exited {proc.returncode}: {proc.stderr.read()[-500:]}")
    proc.stderr.close()
    return usage.ru_utime + usage.ru_stime


def loaded(tree: str, args: list[str], cwd: str) -> list[str]:
    """Which of ``WATCHED`` the command loads."""
    code = (
        "import sys\nfrom toolgauge.cli import main\n"
        f"sys.argv = ['toolgauge', *{args!r}]\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        f"print('LOADED:' + ','.join(m for m in {WATCHED!r} if m in sys.modules))"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(tree).resolve())}
    out = subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, check=True)
    line = next(x for x in reversed(out.stdout.splitlines()) if x.startswith("LOADED:"))
    return [m for m in line.removeprefix("LOADED:").split(",") if m]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tree", action="append", default=[], help="LABEL=SRC_DIR (repeatable; default: this tree)")
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    trees = [t.split("=", 1) for t in a.tree] or [["this", str(Path(__file__).resolve().parents[1] / "src")]]
    print(f"load before: {os.getloadavg()}", flush=True)
    cpu: dict[tuple[str, str], list[float]] = {}
    with tempfile.TemporaryDirectory() as work:
        for _ in range(a.repeat):
            for name, args in COMMANDS.items():
                for label, tree in trees:
                    cwd = tempfile.mkdtemp(dir=work)  # a fresh store for every eval
                    cpu.setdefault((label, name), []).append(run(tree, args, cwd))
        libs = {(label, name): loaded(tree, args, tempfile.mkdtemp(dir=work))
                for name, args in COMMANDS.items() for label, tree in trees}  # fmt: skip
    print(f"load after: {os.getloadavg()}\n")
    print(f"CPU seconds per command, {a.repeat} runs each (median [min-max]); heavy libraries it loads")
    print("| command | tree | CPU s | loads |\n|---|---|---|---|")
    for name in COMMANDS:
        for label, _tree in trees:
            v = cpu[(label, name)]
            lib = ", ".join(libs[(label, name)]) or "none of them"
            print(f"| `{name}` | {label} | {statistics.median(v):.2f} [{min(v):.2f}-{max(v):.2f}] | {lib} |")
    print(json.dumps({f"{k[0]} {k[1]}": v for k, v in cpu.items()}))


if __name__ == "__main__":
    main()
