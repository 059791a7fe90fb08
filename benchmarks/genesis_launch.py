"""Launch + initialize + list_tools time per Tool-Genesis server, through the sandbox.

Writes the gold server of every server in the data file (the reference server answering from the
unit-test recordings), then launches each one ``--repeat`` times with ``toolgauge.tools.launch_server``
(sandboxed, official ``mcp`` client) and reports the median per server and overall. Shutdown is timed
separately. Optionally also times the same for a plain MCPServer script (``--probe``).

    .venv/bin/python benchmarks/genesis_launch.py --data ../shared/data/tool-genesis/tool_genesis_v3_subset.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path

from toolgauge.benchmarks.tool_genesis.gold import write_gold_server
from toolgauge.benchmarks.tool_genesis.loader import load_genesis
from toolgauge.sandbox import describe_sandbox
from toolgauge.tools import launch_server

PROBE = """from mcp.server import MCPServer
server = MCPServer("probe")

@server.tool()
def echo(text: str) -> str:
    \"\"\"Echo.\"\"\"
    return text

if __name__ == "__main__":
    server.run()
"""


async def time_launch(code: Path) -> tuple[float, float, int]:
    started = time.perf_counter()
    async with launch_server(code) as session:
        ready = time.perf_counter() - started
        tools = len(session.tools)
        closing = time.perf_counter()
    return ready, time.perf_counter() - closing, tools


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--probe", action="store_true", help="also time a one-tool MCPServer script")
    parser.add_argument("--out", type=Path, default=None, help="write the figures as JSON here")
    args = parser.parse_args()
    print(describe_sandbox())
    servers = load_genesis(args.data)[: args.limit]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        targets = []
        for server in servers:
            targets.append((server.server_slug, write_gold_server(server, Path(tmp) / server.server_slug).code_path))
        if args.probe:
            (Path(tmp) / "probe").mkdir()
            (Path(tmp) / "probe" / "server.py").write_text(PROBE)
            targets.append(("(probe: one-tool MCPServer script)", Path(tmp) / "probe" / "server.py"))
        for slug, code in targets:
            ready, stop, n = [], [], 0
            for _ in range(args.repeat):
                r, s, n = await time_launch(code)
                ready.append(r)
                stop.append(s)
            rows.append(
                {
                    "server": slug,
                    "tools": n,
                    "median_ready_s": statistics.median(ready),
                    "min_ready_s": min(ready),
                    "max_ready_s": max(ready),
                    "median_stop_s": statistics.median(stop),
                }
            )
            print(
                f"{slug:45s} tools={n:3d} ready median {statistics.median(ready):.2f} s "
                f"(min {min(ready):.2f}, max {max(ready):.2f}); stop {statistics.median(stop):.2f} s"
            )
    gold = [r for r in rows if not r["server"].startswith("(probe")]
    overall = statistics.median(r["median_ready_s"] for r in gold)
    print(
        f"median over {len(gold)} servers of the per-server median: {overall:.2f} s "
        f"(launch + initialize + list_tools, {args.repeat} launches each)"
    )
    if args.out:
        args.out.write_text(json.dumps({"rows": rows, "median_ready_s": overall}, indent=2))


if __name__ == "__main__":
    asyncio.run(main())
