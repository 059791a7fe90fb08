"""L1–L3 of Tool-Genesis for every server of a data file, with the real MiniLM embedder; wall time.

Runs the evaluation benchmark (``GenesisBenchmark``, L4 skipped) through the normal driver on the gold
servers (default) or on a registry (``--pred``), with ``--concurrency`` servers at once, and reports the
wall time, the time per server and the extrapolation to the full 86-server dataset (time per server ×
86; the full dataset has 9,441 unit tests against the subset's 2,142, so the per-test extrapolation is
printed too).

    .venv/bin/python benchmarks/genesis_l1_l3.py --data ../shared/data/tool-genesis/tool_genesis_v3_subset.json \
        --concurrency 2 [--cache cold|warm-expected|warm|off] [--cache-dir DIR] [--baseline]

``--cache`` sets the embedder's on-disk vector cache: ``cold`` a new empty one, ``warm-expected`` a new one
filled first with the dataset's side only (the expected unit-test texts and the gold schemas' texts: what a
second evaluation of *another* model finds), ``warm`` the directory ``--cache-dir`` as it is (run twice with the
same directory: the second run finds everything, as a re-evaluation of the same servers does), ``off`` none.
``--baseline`` runs the embedder as it was before issue 11 (sentence-transformers' own batching at batch 8,
2 threads, OpenMP's default wait policy, no disk cache) for a before/after in one session.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import tempfile
import time
from pathlib import Path

import numpy as np

from toolgauge.benchmarks.tool_genesis.loader import load_genesis, load_registry
from toolgauge.benchmarks.tool_genesis.metrics.schema import match_schemas
from toolgauge.benchmarks.tool_genesis.metrics.unit_tests import compared_texts
from toolgauge.benchmarks.tool_genesis.options import GenesisOptions
from toolgauge.benchmarks.tool_genesis.protocol import GenesisBenchmark, GenesisEvalResult, GenesisSample, pair_registry
from toolgauge.benchmarks.tool_genesis.records import GenesisServer
from toolgauge.driver import RunOptions, RunResult, run_benchmark
from toolgauge.embeddings.base import Vectors
from toolgauge.embeddings.minilm import MiniLMEmbedder
from toolgauge.engine import EngineConfig
from toolgauge.models.offline import GoldClient

FULL_SERVERS = 86
FULL_UNIT_TESTS = 9441


def _cpu_seconds() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


class BaselineEmbedder(MiniLMEmbedder):
    """The embedder before issue 11: sentence-transformers sorts by characters, batch 8, 2 threads, no disk cache."""

    def __init__(self) -> None:
        super().__init__(cache_dir=None, threads=2)

    def _load(self) -> object:
        import torch  # before the embedder's first load, so its OMP_WAIT_POLICY default does not apply

        torch.set_num_threads(2)
        return super()._load()

    def _encode(self, texts: list[str]) -> Vectors:
        rows = self._model.encode(
            texts, batch_size=8, convert_to_numpy=True, normalize_embeddings=True, show_progress_bar=False
        )
        return np.asarray(rows, dtype=np.float32)


def prefill_dataset_side(embedder: MiniLMEmbedder, servers: list[GenesisServer], variant: str) -> None:
    """Embed the texts that come from the dataset alone: expected unit-test outputs and the gold schemas."""
    texts = []
    for server in servers:
        for tests in server.unit_test.values():
            for test in tests:
                texts.append(compared_texts(None, test.function_output_content, variant)[1].strip().lower())  # type: ignore[arg-type]
    embedder.embed(list(dict.fromkeys(texts)))
    for server in servers:
        match_schemas(server.tool_definitions, server.tool_definitions, embedder, variant)  # type: ignore[arg-type]


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--pred", type=Path, default=None, help="a registry (default: the gold servers)")
    parser.add_argument("--variant", choices=["reference", "strict"], default="reference")
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--cache", choices=["cold", "warm-expected", "warm", "off"], default="cold")
    parser.add_argument("--cache-dir", type=Path, default=None, help="with --cache warm: the cache directory")
    parser.add_argument("--baseline", action="store_true", help="the embedder before issue 11")
    args = parser.parse_args()
    servers = load_genesis(args.data)[: args.limit]
    n_tests = sum(s.n_unit_tests for s in servers)
    with tempfile.TemporaryDirectory() as tmp:
        embedder: MiniLMEmbedder
        if args.baseline:
            embedder = BaselineEmbedder()
        elif args.cache == "off":
            embedder = MiniLMEmbedder(cache_dir=None)
        elif args.cache == "warm":
            if args.cache_dir is None:
                parser.error("--cache warm needs --cache-dir")
            embedder = MiniLMEmbedder(cache_dir=args.cache_dir)
        else:
            embedder = MiniLMEmbedder(cache_dir=Path(tmp) / "cache")
        # L1-L3 only: L4 is skipped.
        if args.pred:
            samples, _ = pair_registry(servers, load_registry(args.pred))
            options = GenesisOptions(data=args.data, variant=args.variant, pred=args.pred, skip_l4=True)
        else:
            samples = [GenesisSample(server=s) for s in servers]
            options = GenesisOptions(
                data=args.data, variant=args.variant, model="gold", out=Path(tmp) / "gold", skip_l4=True
            )
        bench = GenesisBenchmark(samples, options, data_label=str(args.data), embedder=embedder)
        warm = time.perf_counter()
        bench.embedder.embed(["warm up"])  # model load is a one-off per process; reported separately
        load_s = time.perf_counter() - warm
        prefill_s = 0.0
        if args.cache == "warm-expected" and not args.baseline:
            warm = time.perf_counter()
            prefill_dataset_side(embedder, servers, args.variant)
            prefill_s = time.perf_counter() - warm
            fresh = MiniLMEmbedder(cache_dir=Path(tmp) / "cache")  # as a new process's embedder: memory empty
            fresh._model, fresh._disk = embedder._model, embedder._disk
            embedder = bench._embedder = fresh
        computed_before, disk_before = embedder.computed, embedder.from_disk
        load_before = os.getloadavg()
        cpu_before = _cpu_seconds()
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
        load_after = os.getloadavg()
        cpu = _cpu_seconds() - cpu_before
    results = result.scored.results
    per_server = wall / len(servers)
    print(f"{len(servers)} servers, {n_tests} unit tests, variant {args.variant}, concurrency {args.concurrency}")
    mode = "baseline (before issue 11)" if args.baseline else f"disk cache {args.cache}"
    print(
        f"embedder: {mode}; load: {load_s:.1f} s (once per process)"
        + (f"; prefill {prefill_s:.1f} s" if prefill_s else "")
    )
    print(
        f"texts embedded during the run: {embedder.computed - computed_before}, "
        f"from the disk cache: {embedder.from_disk - disk_before}"
    )
    print(
        "load average (1, 5, 15 min) before: "
        + ", ".join(f"{x:.1f}" for x in load_before)
        + "; after: "
        + ", ".join(f"{x:.1f}" for x in load_after)
    )
    print(
        f"L1-L3 wall time: {wall:.1f} s = {per_server:.2f} s per server, {1000 * wall / n_tests:.1f} ms per unit test"
    )
    print(
        f"extrapolated to {FULL_SERVERS} servers: {per_server * FULL_SERVERS / 60:.1f} min by servers, "
        f"{wall / n_tests * FULL_UNIT_TESTS / 60:.1f} min by unit tests"
    )
    per_server_cpu = cpu / len(servers)
    print(
        f"CPU time of this process during the run (the sandboxed servers are not counted): {cpu:.1f} s "
        f"= {per_server_cpu:.2f} s per server; its part of {FULL_SERVERS} servers on 2 otherwise idle cores: "
        f"{per_server_cpu * FULL_SERVERS / 2 / 60:.1f} min (both cores busy throughout) to "
        f"{per_server_cpu * FULL_SERVERS / 60:.1f} min (one core)"
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
