"""L1–L3 of Tool-Genesis for every server of a data file, with the real MiniLM embedder; wall time.

Runs the evaluation benchmark (``GenesisBenchmark``, L4 skipped) through the normal driver on the gold
servers (default) or on a registry (``--pred``), with ``--concurrency`` servers at once, and reports the
wall time, the time per server and the extrapolation to the full 86-server dataset (time per server ×
86; the full dataset has 9,441 unit tests against the subset's 2,142, so the per-test extrapolation is
printed too).

    .venv/bin/python benchmarks/genesis_l1_l3.py --data ../shared/data/tool-genesis/tool_genesis_v3_subset.json \
        --concurrency 2
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

from toolgauge.benchmarks.tool_genesis.loader import load_genesis, load_registry
from toolgauge.benchmarks.tool_genesis.protocol import (
    GenesisBenchmark,
    GenesisEvalResult,
    GenesisSample,
    L4Settings,
    pair_registry,
)
from toolgauge.driver import RunOptions, RunResult, run_benchmark
from toolgauge.engine import EngineConfig
from toolgauge.models.offline import GoldClient

FULL_SERVERS = 86
FULL_UNIT_TESTS = 9441


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--pred", type=Path, default=None, help="a registry (default: the gold servers)")
    parser.add_argument("--variant", choices=["reference", "strict"], default="reference")
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--limit", type=int, default=None)
    args = parser.parse_args()
    servers = load_genesis(args.data)[: args.limit]
    n_tests = sum(s.n_unit_tests for s in servers)
    with tempfile.TemporaryDirectory() as tmp:
        if args.pred:
            samples, _ = pair_registry(servers, load_registry(args.pred))
            bench = GenesisBenchmark(
                samples,
                data_label=str(args.data),
                variant=args.variant,
                l4=L4Settings(skip_reason="benchmark: L1-L3 only"),
            )
        else:
            bench = GenesisBenchmark(
                [GenesisSample(server=s) for s in servers],
                data_label=str(args.data),
                variant=args.variant,
                source="gold",
                out_dir=Path(tmp) / "gold",
                l4=L4Settings(skip_reason="benchmark: L1-L3 only"),
            )
        warm = time.perf_counter()
        bench.embedder.embed(["warm up"])  # model load is a one-off per process; reported separately
        load_s = time.perf_counter() - warm
        options = RunOptions(
            store_url=f"sqlite:///{Path(tmp) / 'store.db'}",
            engine=EngineConfig(concurrency=args.concurrency, show_progress=False),
        )
        levels: dict[str, float] = {}

        def add_levels(result: RunResult[GenesisEvalResult]) -> None:
            # The per-server rows read their results from the store: while it is open, as --samples does.
            for server in result.scored.iter_samples():
                for level, seconds in server.metadata["seconds"].items():
                    levels[level] = levels.get(level, 0.0) + seconds

        started = time.perf_counter()
        result = await run_benchmark(
            bench,
            "gold" if not args.pred else f"registry:{args.pred}",
            options,
            client=GoldClient(),
            on_scored=add_levels,
        )
        wall = time.perf_counter() - started
    results = result.scored.results
    per_server = wall / len(servers)
    print(f"{len(servers)} servers, {n_tests} unit tests, variant {args.variant}, concurrency {args.concurrency}")
    print(f"embedder load: {load_s:.1f} s (once per process)")
    print(
        f"L1-L3 wall time: {wall:.1f} s = {per_server:.2f} s per server, {1000 * wall / n_tests:.1f} ms per unit test"
    )
    print(
        f"extrapolated to {FULL_SERVERS} servers: {per_server * FULL_SERVERS / 60:.1f} min by servers, "
        f"{wall / n_tests * FULL_UNIT_TESTS / 60:.1f} min by unit tests"
    )
    print("time inside episodes, summed over servers: " + ", ".join(f"{k} {v:.1f} s" for k, v in levels.items()))
    print(
        "scores: "
        + ", ".join(
            f"{k}={results.value(k) or 0.0:.3f}"
            for k in ("server_execution", "schema_f1", "schema_f1_live", "ut_soft", "ut_hard")
        )
    )


if __name__ == "__main__":
    asyncio.run(main())
