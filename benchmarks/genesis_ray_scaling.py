"""Tool-Genesis L1–L3 of the gold servers as a sweep: the local executor, then Ray with 1 and 2 worker nodes.

    PYTHONPATH=src python benchmarks/genesis_ray_scaling.py [--limit 20] [--shard-size 5]

One cell (model ``gold``, benchmark ``tool-genesis`` with ``skip_l4``, the first ``--limit`` servers of the
shared subset). The local executor uses SQLite and runs 2 servers at once; the Ray runs use a PostgreSQL store
(tests/helpers/pg_server.py) and a cluster of loopback nodes of one CPU each
(tests/helpers/ray_cluster.py, started before the
clock), with the cell cut into shards of ``--shard-size`` servers, each shard a Ray task. Every run starts with
an empty embedding disk cache of its own (``TOOLGAUGE_CACHE_DIR`` in a temporary folder; the nodes of one
cluster share it, as nodes sharing a cache folder would), so each embeds from scratch. Each Ray task's worker
process loads the embedder once (Ray reuses the process for later shards). Prints the wall time of each run
(sweep command start to end, cluster start excluded), the load average, and whether the leaderboards agree.
Needs the [ray], [postgres] and [embeddings] extras and PostgreSQL's server binaries.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
from helpers.pg_server import PgServer  # noqa: E402
from helpers.ray_cluster import RayCluster  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sweep_scaling import board  # noqa: E402
from sweep_scaling import run_sweep as sweep_run  # noqa: E402


def sweep_file(folder: Path, data: Path, limit: int) -> Path:
    path = folder / "SWEEP.toml"
    path.write_text(
        "epochs = 1\nseed = 0\n"
        '[[model]]\nspec = "gold"\n'
        f'[[benchmark]]\nname = "tool-genesis"\ndata = "{data}"\nskip_l4 = true\nlimit = {limit}\n'
        f'out = "{folder / "gold"}"\n'
    )
    return path


def run_sweep(path: Path, store: str, *extra: str) -> tuple[dict[str, Any], float, str]:
    """``sweep_scaling.run_sweep`` with the load average before and after it."""
    load = f"{os.getloadavg()[0]:.1f}"
    doc, wall = sweep_run(path, store, *extra, timeout=7200)
    return doc, wall, f"{load} to {os.getloadavg()[0]:.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=20)
    parser.add_argument("--shard-size", type=int, default=5)
    parser.add_argument("--runs", default="local,ray1,ray2")
    args = parser.parse_args()
    data_dir = Path(os.environ.get("TOOLGAUGE_SHARED_DATA", REPO.parent / "shared" / "data")).resolve()
    data = data_dir / "tool-genesis" / "tool_genesis_v3_subset.json"
    runs = args.runs.split(",")
    results: dict[str, tuple[dict[str, Any], float, str]] = {}
    with tempfile.TemporaryDirectory(prefix="tggenray") as tmp:
        folder = Path(tmp)
        path = sweep_file(folder, data, args.limit)
        if "local" in runs:
            os.environ["TOOLGAUGE_CACHE_DIR"] = str(folder / "cache-local")
            results["local (one process, 2 servers at once)"] = run_sweep(
                path, f"sqlite:///{folder / 'local.db'}", "--concurrency", "2"
            )
        pg = PgServer()
        pg.start()
        try:
            for nodes in (1, 2):
                if f"ray{nodes}" not in runs:
                    continue
                os.environ["TOOLGAUGE_CACHE_DIR"] = str(folder / f"cache-ray{nodes}")
                cluster = RayCluster()  # takes os.environ (with the cache folder) for its nodes
                try:
                    cluster.start(worker=nodes == 2)
                    store = pg.create_database(f"ray{nodes}")
                    results[f"Ray, {nodes} node(s) of 1 CPU"] = run_sweep(
                        path, store, "--executor", "ray", "--address", cluster.address,
                        "--shard-size", str(args.shard_size), "--concurrency", "2",
                    )  # fmt: skip
                finally:
                    cluster.close()
        finally:
            pg.close()
    reference = board(next(iter(results.values()))[0])
    print(f"tool-genesis gold, {args.limit} servers, L1-L3, shards of {args.shard_size} on Ray")
    print("| executor | wall (s) | load average (start to end) | same leaderboard as the first |")
    print("|---|---|---|---|")
    for name, (doc, wall, load) in results.items():
        print(f"| {name} | {wall:.1f} | {load} | {'yes' if board(doc) == reference else 'NO'} |")
    for model, bench, status, metrics in reference:
        print(f"  {bench:12s} {model:10s} {status:10s} {metrics[:300]}")


if __name__ == "__main__":
    main()
