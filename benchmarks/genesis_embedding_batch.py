"""MiniLM throughput by batch size on the texts L3 really embeds (Tool-Genesis unit tests).

Embeds the distinct lower-cased texts of the subset's unit tests in both forms the `reference` variant
compares (the recorded output, and the official "actual" text: ``json.dumps`` of a text content list),
every 4th text, at several batch sizes, and prints texts per second and the largest difference from the
batch-64 vectors.

    .venv/bin/python benchmarks/genesis_embedding_batch.py --data ../shared/data
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np

from toolgauge.benchmarks.tool_genesis.loader import load_genesis
from toolgauge.embeddings.minilm import MiniLMEmbedder


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[1].parent / "shared" / "data")
    ap.add_argument("--batch-sizes", default="4,8,16,64")
    args = ap.parse_args()
    servers = load_genesis(args.data / "tool-genesis" / "tool_genesis_v3_subset.json")
    expected = [t.function_output_content for s in servers for tests in s.unit_test.values() for t in tests]
    actual = [json.dumps([{"type": "text", "text": x, "annotations": None}]) for x in expected]
    texts = sorted({x.lower() for x in expected + actual})[::4]
    sizes = [int(b) for b in args.batch_sizes.split(",")]
    vectors: dict[int, np.ndarray] = {}
    print(f"{len(texts)} texts (every 4th of the distinct unit-test texts)")
    for size in sizes:
        embedder = MiniLMEmbedder(batch_size=size)
        embedder.embed(["warm up"])  # loads the model outside the timing
        runs = []
        for _ in range(2):
            fresh = MiniLMEmbedder(batch_size=size)
            fresh._model = embedder._model  # same weights, empty text cache
            start = time.perf_counter()
            vectors[size] = fresh.embed(texts)
            runs.append(time.perf_counter() - start)
        best = min(runs)
        print(f"batch {size:3d}: {len(texts) / best:6.1f} texts/s (best of 2, median {statistics.median(runs):.1f} s)")
    base = vectors[max(sizes)]
    for size in sizes:
        diff = float(np.abs(vectors[size] - base).max())
        print(f"batch {size:3d}: max |difference| from batch {max(sizes)}: {diff:.1e}")


if __name__ == "__main__":
    main()
