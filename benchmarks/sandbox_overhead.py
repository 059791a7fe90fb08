"""Launch overhead of the sandbox: `python -c pass` plain vs inside each sandbox kind, plus a full MCP launch.

    .venv/bin/python benchmarks/sandbox_overhead.py --runs 20

For each kind it runs the same interpreter (the project venv's) `-c pass` through `subprocess.run` with the
command line from `sandboxed_command`, and reports the median and min/max wall time. `--mcp` adds the
median of launch + initialize + list_tools of a one-tool MCP server, plain and under the detected sandbox.
`--memory-probe 64,96,128` launches that server under each `memory_mb` and says which start.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mcp import ClientSession, StdioServerParameters, stdio_client

from toolgauge.sandbox import SandboxLimits, detect_sandbox, sandbox_python, sandboxed_command

SERVER = '''from mcp.server import MCPServer
server = MCPServer("tiny")
@server.tool()
def echo(text: str) -> str:
    """Return the text."""
    return text
server.run()
'''


def time_command(command: list[str], runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return times


async def time_mcp(command: list[str], runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        params = StdioServerParameters(command=command[0], args=command[1:])
        with open(os.devnull, "w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                await session.list_tools()
        times.append(time.perf_counter() - start)
    return times


def summary(times: list[float]) -> dict[str, float]:
    return {
        "median_s": round(statistics.median(times), 3),
        "min_s": round(min(times), 3),
        "max_s": round(max(times), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--mcp", action="store_true", help="also time an MCP launch + list_tools")
    parser.add_argument("--memory-probe", default="", help="comma-separated memory_mb values to try an MCP launch")
    args = parser.parse_args()
    limits = SandboxLimits()
    report: dict[str, object] = {"detected": detect_sandbox(), "runs": args.runs}
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        os.chmod(workdir, 0o755)
        (workdir / "server.py").write_text(SERVER)
        plain = [sandbox_python(), "-c", "pass"]
        report["plain"] = summary(time_command(plain, args.runs))
        for kind in ("bwrap", "namespaces", "rlimits"):
            report[kind] = summary(time_command(sandboxed_command(plain, workdir, limits, kind=kind), args.runs))
        if args.mcp:
            server = [sandbox_python(), "server.py"]
            os.chdir(workdir)
            report["mcp_plain"] = summary(asyncio.run(time_mcp(server, args.runs)))
            sandboxed = sandboxed_command(server, workdir, limits)
            report["mcp_sandboxed"] = summary(asyncio.run(time_mcp(sandboxed, args.runs)))
        probes: dict[str, str] = {}
        for value in filter(None, args.memory_probe.split(",")):
            command = sandboxed_command([sandbox_python(), "server.py"], workdir, SandboxLimits(memory_mb=int(value)))
            try:
                asyncio.run(asyncio.wait_for(time_mcp(command, 1), 60))
                probes[value] = "starts"
            except Exception as error:  # any failure to start counts as "fails"
                probes[value] = f"fails ({type(error).__name__})"
        if probes:
            report["memory_probe"] = probes
    json.dump(report, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
