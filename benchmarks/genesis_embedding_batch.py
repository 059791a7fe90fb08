"""MiniLM throughput on the texts L3 really embeds (Tool-Genesis unit tests): old batching against token budgets.

Embeds the distinct lower-cased texts of the subset's unit tests in both forms the `reference` variant
compares (the recorded output, and the official "actual" text: ``json.dumps`` of a text content list),
every ``--every``-th text, with no disk cache, and prints texts per second for

- ``st-batch8``: sentence-transformers' own ``encode`` at batch 8 (the embedder before issue 11: it sorts by
  characters and cuts fixed batches), and
- ``budget-N``: the embedder's token-budget batching with N padded tokens per pass,

at each thread count of ``--threads`` (``auto``: the embedder's choice from the load average), with the
padded-token total of each batching, and the largest difference of every vector from embedding each text
alone (batch 1, no padding). The OpenMP wait policy is the process's:
run with ``OMP_WAIT_POLICY=ACTIVE`` or ``PASSIVE`` in the environment to compare them (the embedder sets
PASSIVE when the variable is unset).

    .venv/bin/python benchmarks/genesis_embedding_batch.py --data ../shared/data [--every 4] [--threads 1,2]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path
from typing import Literal

import numpy as np

from toolgauge.benchmarks.tool_genesis.loader import load_genesis
from toolgauge.embeddings.batching import token_batches
from toolgauge.embeddings.minilm import MiniLMEmbedder
from toolgauge.embeddings.threads import OwnLoad, threads_for_now


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[1].parent / "shared" / "data")
    ap.add_argument("--every", type=int, default=4)
    ap.add_argument("--budgets", default="512,1024,2048")
    ap.add_argument("--threads", default="2")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--no-alone", action="store_true", help="skip the one-by-one reference vectors")
    args = ap.parse_args()
    servers = load_genesis(args.data / "tool-genesis" / "tool_genesis_v3_subset.json")
    expected = [t.function_output_content for s in servers for tests in s.unit_test.values() for t in tests]
    actual = [json.dumps([{"type": "text", "text": x, "annotations": None}]) for x in expected]
    texts = sorted({x.strip().lower() for x in expected + actual})[:: args.every]
    loader = MiniLMEmbedder(cache_dir=None, threads=2)
    loader.embed(["warm up"])  # loads the model outside the timing
    model = loader._model
    import torch

    passive = os.environ.get("OMP_WAIT_POLICY", "").upper() == "PASSIVE"

    lengths = [len(x) for x in model.tokenizer(texts, truncation=True, max_length=256)["input_ids"]]
    print(
        f"{len(texts)} texts (every {args.every}th distinct unit-test text), {sum(lengths)} tokens, "
        f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', '(unset)')}, load average {os.getloadavg()[0]:.1f}"
    )
    print(f"padded tokens: st-batch8 {_st_padded(texts, lengths, 8)}", end="")
    for budget in [int(b) for b in args.budgets.split(",")]:
        padded = sum(len(b) * max(lengths[i] for i in b) for b in token_batches(lengths, budget, 64))
        print(f", budget-{budget} {padded}", end="")
    print()
    alone = None
    if not args.no_alone:
        torch.set_num_threads(2)
        alone = np.stack([model.encode([t], normalize_embeddings=True, convert_to_numpy=True)[0] for t in texts])
    variants: list[tuple[str, int | None]] = [("st-batch8", None)] + [
        (f"budget-{b}", int(b)) for b in args.budgets.split(",")
    ]
    thread_counts: list[int | Literal["auto"]] = ["auto" if t == "auto" else int(t) for t in args.threads.split(",")]
    times: dict[tuple[int | str, str], list[float]] = {}
    loads: dict[tuple[int | str, str], list[float]] = {}
    vectors: dict[tuple[int | str, str], np.ndarray] = {}
    # Rounds interleave the variants, so a load that changes during the run weighs on each of them alike.
    for _ in range(args.repeat):
        for threads in thread_counts:
            for name, budget in variants:
                torch.set_num_threads(threads_for_now(OwnLoad(), passive=passive) if threads == "auto" else threads)
                start = time.perf_counter()
                if budget is None:
                    out = model.encode(
                        texts, batch_size=8, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
                    )
                else:
                    fresh = MiniLMEmbedder(cache_dir=None, token_budget=budget, threads=threads)
                    fresh._model = model  # same weights, empty text cache
                    out = fresh.embed(texts)
                times.setdefault((threads, name), []).append(time.perf_counter() - start)
                loads.setdefault((threads, name), []).append(os.getloadavg()[0])
                vectors[(threads, name)] = out
    for threads in thread_counts:
        for name, _ in variants:
            runs = times[(threads, name)]
            diff = ""
            if alone is not None:
                diff = f", max |diff| from one-by-one {float(np.abs(vectors[(threads, name)] - alone).max()):.1e}"
            print(
                f"threads {threads} {name:12s}: {len(texts) / statistics.median(runs):6.1f} texts/s median "
                f"(best {len(texts) / min(runs):.1f}) of {len(runs)}{diff}, "
                f"load {min(loads[(threads, name)]):.1f}-{max(loads[(threads, name)]):.1f}"
            )


def _st_padded(texts: list[str], lengths: list[int], batch: int) -> int:
    """Padded tokens of sentence-transformers' batching: sorted by character length (longest first), fixed size."""
    order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
    return sum(len(c) * max(lengths[i] for i in c) for c in (order[k : k + batch] for k in range(0, len(order), batch)))


if __name__ == "__main__":
    main()
