"""Embedding throughput with the real all-MiniLM-L6-v2, and the L2/L3 metrics of a perfect server on the real data.

    .venv/bin/python benchmarks/genesis_embeddings.py [--data ../shared/data]

1. Model load time (imports + weights), then throughput on the distinct recorded unit-test outputs of the
   shared Tool-Genesis subset (lower-cased, as the unit-test scorer embeds them), cold cache.
2. Schema-F1 of every server's reference schemas against themselves (and of the strictly compliant
   rewrite against the originals), both variants.
3. UT_soft / UT_hard of a "perfect" server that answers every unit test with its recorded output as one
   text content item, both variants: the reference variant's ceiling for recorded-answer servers.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import time
from pathlib import Path

from toolgauge.benchmarks.tool_genesis.metrics.compliance import make_strictly_compliant
from toolgauge.benchmarks.tool_genesis.metrics.schema import match_schemas, route_unit_test
from toolgauge.benchmarks.tool_genesis.metrics.unit_tests import UnitTestCall, score_unit_tests, summarise_unit_tests
from toolgauge.embeddings.minilm import MiniLMEmbedder


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[1].parent / "shared" / "data")
    args = ap.parse_args()
    servers = json.loads((args.data / "tool-genesis" / "tool_genesis_v3_subset.json").read_text(encoding="utf-8"))

    t0 = time.perf_counter()
    embedder = MiniLMEmbedder()
    embedder.embed(["warm-up"])
    load = time.perf_counter() - t0

    outputs = sorted(
        {c["function_output_content"].strip().lower() for s in servers for cs in s["unit_test"].values() for c in cs}
    )
    t0 = time.perf_counter()
    embedder.embed(outputs)
    embed_time = time.perf_counter() - t0
    print(f"model load (imports + weights): {load:.1f} s")
    print(
        f"embedded {len(outputs)} distinct unit-test outputs in {embed_time:.1f} s ({len(outputs) / embed_time:.0f}/s)"
    )

    for variant in ("reference", "strict"):
        t0 = time.perf_counter()
        self_f1 = [
            match_schemas(s["tool_definitions"], s["tool_definitions"], embedder, variant).schema_f1 for s in servers
        ]
        strict_f1 = [
            match_schemas(
                [make_strictly_compliant(t) for t in s["tool_definitions"]], s["tool_definitions"], embedder, variant
            ).schema_f1
            for s in servers
        ]
        schema_time = time.perf_counter() - t0
        print(
            f"[{variant}] Schema-F1 self: min {min(self_f1):.3f}; strict rewrite vs original: min {min(strict_f1):.3f}"
            f" ({schema_time:.1f} s for {2 * len(servers)} matches)"
        )

        t0 = time.perf_counter()
        soft, hard, tests = [], [], 0
        for server in servers:
            match = match_schemas(server["tool_definitions"], server["tool_definitions"], embedder, variant)
            calls = [
                UnitTestCall(
                    content=[{"type": "text", "text": case["function_output_content"], "annotations": None}],
                    expected=case["function_output_content"],
                )
                for gold_tool, cases in server["unit_test"].items()
                for case in cases
                if route_unit_test(gold_tool, case["arguments"], match) is not None
            ]
            scores = score_unit_tests(calls, embedder, variant)
            tests += len(scores)
            summary = summarise_unit_tests(scores, variant=variant)
            soft.append(summary.ut_soft)
            hard.append(summary.ut_hard)
        score_time = time.perf_counter() - t0
        print(
            f"[{variant}] perfect recorded-answer server, {tests} tests: UT_soft mean {statistics.mean(soft):.3f}"
            f" (min {min(soft):.3f}, max {max(soft):.3f}), UT_hard mean {statistics.mean(hard):.3f}"
            f" (min {min(hard):.3f}); scored in {score_time:.1f} s"
        )
    print(f"max RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


if __name__ == "__main__":
    main()
