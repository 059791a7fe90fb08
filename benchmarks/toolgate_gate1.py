"""ToolGate gate-1 throughput on the fem seed items, and where the time of one verification goes.

    .venv/bin/python benchmarks/toolgate_gate1.py --rounds 3 --concurrency 2

For each seed item it runs the solution in the real sandbox (bubblewrap) with the gate's limits, wrapped so that
one run reports its own split on stderr (the host and the sandbox share the wall clock):
- start-up: from the launch on the host to the first line of the script (trampoline, bubblewrap, interpreter);
- imports: the solution's top-level imports;
- compute: the rest of the solution;
- exit: interpreter shutdown and the sandbox's teardown, up to the end of the process tree.
Each figure is the median of --rounds runs, one at a time. Then it verifies the whole seed set --rounds times
with `verify_candidate` and --concurrency sandboxes side by side, and reports candidates per minute (and the
same with one sandbox). The load average at the start is printed: other work on the machine slows every figure.
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

from toolgauge.benchmarks.toolgate.domains import get_domain
from toolgauge.benchmarks.toolgate.records import Candidate
from toolgauge.benchmarks.toolgate.verify import DEFAULT_TIME_LIMIT, stage_workdir, verify_candidate, verify_limits
from toolgauge.sandbox import require_isolation, run_sandboxed, sandbox_python


def imports_only(source: str) -> tuple[str, str]:
    """Split a solution into its top-level import statements and the rest (both as source)."""
    tree = ast.parse(source)
    imports = [node for node in tree.body if isinstance(node, ast.Import | ast.ImportFrom)]
    rest = [node for node in tree.body if not isinstance(node, ast.Import | ast.ImportFrom)]
    return ast.unparse(ast.Module(body=imports, type_ignores=[])), ast.unparse(ast.Module(body=rest, type_ignores=[]))


KEYS = ("startup", "imports", "compute", "exit", "total")
WRAPPER = """import json, sys, time
t0 = time.time()
scope = {"__name__": "__main__"}
exec(compile(IMPORTS, "solution.py", "exec"), scope)
t1 = time.time()
exec(compile(REST, "solution.py", "exec"), scope)
t2 = time.time()
print("SPLIT " + json.dumps([t0, t1, t2]), file=sys.stderr)
"""


async def time_split(candidate: Candidate) -> dict[str, float]:
    """One sandboxed run of the wrapped solution: start-up, imports and compute seconds."""
    imports, rest = imports_only(candidate.solution)
    script = f"IMPORTS = {imports!r}\nREST = {rest!r}\n" + WRAPPER
    limits = verify_limits(DEFAULT_TIME_LIMIT)
    with tempfile.TemporaryDirectory(prefix="toolgauge-bench-") as tmp:
        folder = stage_workdir(candidate.model_copy(update={"solution": script}), Path(tmp))
        launched = time.time()
        result = await run_sandboxed([sandbox_python(), "solution.py"], folder, limits)
    if result.returncode != 0 or "SPLIT " not in result.stderr:
        raise SystemExit(f"{candidate.id}: wrapped run failed: {result.reason}\n{result.stderr[-2000:]}")
    t0, t1, t2 = json.loads(result.stderr.split("SPLIT ", 1)[1].splitlines()[0])
    startup, imports_s, compute = t0 - launched, t1 - t0, t2 - t1
    return {
        "startup": startup,
        "imports": imports_s,
        "compute": compute,
        "exit": result.seconds - startup - imports_s - compute,
        "total": result.seconds,
    }


async def time_verify(candidate: Candidate) -> float:
    started = time.perf_counter()
    record = await verify_candidate(candidate, time_limit=DEFAULT_TIME_LIMIT)
    if not record.passed:
        raise SystemExit(f"{candidate.id} failed gate 1: {record.reason}: {record.detail}")
    return time.perf_counter() - started


async def split(seeds: list[Candidate], rounds: int) -> list[dict[str, object]]:
    runs: dict[str, list[dict[str, float]]] = {seed.id: [] for seed in seeds}
    for _ in range(rounds):  # interleaved, so that a burst of load elsewhere does not hit one seed only
        for seed in seeds:
            runs[seed.id].append(await time_split(seed))
    rows: list[dict[str, object]] = []
    for seed in seeds:
        row: dict[str, object] = {"id": seed.id, "topic": seed.topic}
        for key in KEYS:
            row[key] = statistics.median(run[key] for run in runs[seed.id])
        rows.append(row)
    return rows


async def throughput(seeds: list[Candidate], rounds: int, concurrency: int) -> tuple[int, float]:
    gate = asyncio.Semaphore(concurrency)

    async def one(seed: Candidate) -> None:
        async with gate:
            await time_verify(seed)

    started = time.perf_counter()
    await asyncio.gather(*(one(seed) for _ in range(rounds) for seed in seeds))
    return rounds * len(seeds), time.perf_counter() - started


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    require_isolation()
    domain = get_domain("fem")
    domain.require_installed()
    seeds = domain.seeds()
    load = os.getloadavg()
    rows = await split(seeds, args.rounds)
    parallel = await throughput(seeds, args.rounds, args.concurrency)
    serial = await throughput(seeds, args.rounds, 1)
    figures = {
        "cores": os.cpu_count(),
        "load_average_at_start": load,
        "versions": domain.versions(),
        "split": rows,
        "throughput": {
            f"concurrency_{args.concurrency}": {
                "candidates": parallel[0],
                "seconds": parallel[1],
                "per_minute": 60 * parallel[0] / parallel[1],
            },
            "concurrency_1": {"candidates": serial[0], "seconds": serial[1], "per_minute": 60 * serial[0] / serial[1]},
        },
    }
    if args.json:
        print(json.dumps(figures, indent=2))
        return
    print(f"cores: {figures['cores']}, load average at start: {load[0]:.2f}, libraries: {figures['versions']}")
    print(f"{'seed':<13} {'topic':<28} " + " ".join(f"{key:>9}" for key in KEYS))
    for row in rows:
        print(f"{row['id']:<13} {row['topic']:<28} " + " ".join(f"{float(str(row[key])):>8.2f}s" for key in KEYS))
    mean = {key: statistics.mean(float(str(row[key])) for row in rows) for key in KEYS}
    print(f"{'mean':<42} " + " ".join(f"{mean[key]:>8.2f}s" for key in KEYS))
    for label, (count, seconds) in ((f"concurrency {args.concurrency}", parallel), ("concurrency 1", serial)):
        print(f"{label}: {count} verifications in {seconds:.1f} s = {60 * count / seconds:.1f} candidates/min")


if __name__ == "__main__":
    asyncio.run(main())
