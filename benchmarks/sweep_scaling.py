"""A sweep of 3 models x 3 benchmarks on the local executor and on Ray with 1 and 2 worker nodes: the same
leaderboard everywhere, and the wall time of each.

    PYTHONPATH=src python benchmarks/sweep_scaling.py [--epochs 3] [--limit 4] [--latency 0.05]

Models: ``gold``, a ``scripted:`` model (one fixed text answer) and a loopback OpenAI-compatible server that
answers every request after ``--latency`` seconds (a stand-in for a model's time per request). Benchmarks: the
built-in suite (24 dialogues), BFCL (simple_python and multiple, ``--limit`` each) and MTU-Bench (S-S and M-M,
``--limit`` each) from ``$TOOLGAUGE_SHARED_DATA`` (default ../shared/data). The Ray runs use a cluster of loopback
nodes of one CPU each (tests/helpers/ray_cluster.py), a PostgreSQL store (tests/helpers/pg_server.py) and shards
of 4 samples;
the local run uses SQLite. Needs the [ray] and [postgres] extras and PostgreSQL's server binaries.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
from helpers.chat_stub import ChatStub, completion  # noqa: E402
from helpers.pg_server import PgServer  # noqa: E402
from helpers.ray_cluster import RAY_ENV, RayCluster  # noqa: E402


def sweep_file(folder: Path, stub_model: str, data: Path, epochs: int, limit: int) -> Path:
    script = folder / "script.json"
    script.write_text(json.dumps(["I cannot help with that."] * 5000))
    path = folder / "SWEEP.toml"
    path.write_text(
        f"epochs = {epochs}\nseed = 0\n"
        '[[model]]\nspec = "gold"\n'
        f'[[model]]\nspec = "scripted:{script}"\n'
        f'[[model]]\nspec = "{stub_model}"\nconcurrency = 4\nno_cache = true\n'
        '[[benchmark]]\nname = "suite"\n'
        f'[[benchmark]]\nname = "bfcl"\ndata = "{data / "bfcl"}"\ncategories = ["simple_python", "multiple"]\n'
        f"limit = {limit}\n"
        f'[[benchmark]]\nname = "mtu-bench"\ndata = "{data / "mtu-bench"}"\nsplits = ["S-S", "M-M"]\n'
        f"limit = {limit}\n"
    )
    return path


def run_sweep(path: Path, store: str, *extra: str, timeout: float = 3600) -> tuple[dict[str, Any], float]:
    """``toolgauge sweep PATH --store STORE --json EXTRA...`` in a process of its own: its document and wall time."""
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "toolgauge.cli", "sweep", str(path), "--store", store, "--json", *extra],
        env={**os.environ, **RAY_ENV}, capture_output=True, text=True, timeout=timeout, check=False,
    )  # fmt: skip
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"sweep failed ({proc.returncode}): {proc.stderr[-3000:]}")
    return json.loads(proc.stdout), wall


def board(doc: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    return [(c["model"], c["benchmark"], c["status"], json.dumps(c["metrics"], sort_keys=True)) for c in doc["cells"]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--limit", type=int, default=4)
    parser.add_argument("--latency", type=float, default=0.05)
    args = parser.parse_args()
    data = Path(os.environ.get("TOOLGAUGE_SHARED_DATA", REPO.parent / "shared" / "data")).resolve()

    def answer(request: dict[str, Any], headers: Any) -> tuple[int, bytes]:
        time.sleep(args.latency)
        return 200, completion("I cannot help with that.")

    results: dict[str, tuple[dict[str, Any], float]] = {}
    with tempfile.TemporaryDirectory(prefix="tgsweep") as tmp, ChatStub(answer) as stub:
        folder = Path(tmp)
        path = sweep_file(folder, stub.model("stub"), data, args.epochs, args.limit)
        results["local"] = run_sweep(path, f"sqlite:///{folder / 'local.db'}", "--concurrency", "3")
        pg = PgServer()
        pg.start()
        try:
            for workers in (0, 1):
                cluster = RayCluster()
                try:
                    cluster.start(worker=workers == 1)
                    store = pg.create_database(f"ray{workers}")
                    results[f"ray, {workers + 1} node(s)"] = run_sweep(
                        path, store, "--executor", "ray", "--address", cluster.address, "--shard-size", "4",
                        "--concurrency", "9",
                    )  # fmt: skip
                finally:
                    cluster.close()
        finally:
            pg.close()
        requests = stub.requests
    reference = board(results["local"][0])
    cells = len(reference)
    print(f"{cells} cells, epochs {args.epochs}, stub latency {args.latency} s, {requests} stub requests in all")
    print("| executor | wall (s) | same leaderboard as local |")
    print("|---|---|---|")
    for name, (doc, wall) in results.items():
        print(f"| {name} | {wall:.1f} | {'yes' if board(doc) == reference else 'NO'} |")
    for model, bench, status, metrics in reference:
        print(f"  {bench:10s} {model[:40]:40s} {status:10s} {metrics[:150]}")


if __name__ == "__main__":
    main()
