"""Time the WildToolBench call-graph engine against full path enumeration.

    .venv/bin/python benchmarks/wild_graph_speed.py [--repeat 200] [--timeout 120]

(a) one task with k parallel calls and a final answer, answered in one step (build + walk), for k = 4..8,
    beside the official approach: enumerate every path first (the re-stated official DFS from
    tests/benchmarks/wildtoolbench/test_wild_graph.py), run in a child process with a timeout and a 3 GiB memory cap;
(b) a realistic 50-node layered DAG (parallel groups, chains, same-name groups, clarify first, answer last),
    walked to the end two ways: all ready calls at once (the shortest path) and one call per step.
Also times first_optimal_path() (what the gold-history replay needs) on both graphs, and (c) two shapes
outside the goals: 30 parallel calls, and a clarify ready beside k calls (the official loop does not prune
on a clarify, so the alive branches grow with k).
"""

from __future__ import annotations

import argparse
import random
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from toolgauge.benchmarks.wildtoolbench.graph import PSEUDO_ANSWER, PSEUDO_CLARIFY, PSEUDO_TOOLS, CallGraph

TESTS = Path(__file__).resolve().parent.parent / "tests" / "benchmarks" / "wildtoolbench"


def best_of(repeat: int, fn: Callable[[], Any]) -> tuple[float, float]:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times), statistics.median(times)


def parallel_task(k: int) -> tuple[list[str], list[list[int]]]:
    names = [f"tool_{i}" for i in range(k)] + [PSEUDO_ANSWER]
    return names, [[] for _ in range(k)] + [list(range(k))]


def parallel_one_step(k: int) -> None:
    names, deps = parallel_task(k)
    walk = CallGraph.build(names, deps).start()
    assert walk.match_calls(names[:k]) is not None
    assert walk.match_text() is not None and walk.is_optimal()


def layered_task(seed: int = 7) -> tuple[list[str], list[list[int]]]:
    """50 nodes: clarify, then layers of parallel calls and chains, then the answer."""
    rng = random.Random(seed)
    widths = [4, 1, 6, 1, 1, 5, 3, 1, 7, 2, 1, 4, 1, 6, 2, 1, 1, 1]  # 48 tool nodes
    vocab = ["search", "weather", "convert", "lookup", "book", "price", "route", "news"]
    names, deps = [PSEUDO_CLARIFY], [[]]
    previous = [0]
    for width in widths:
        layer = []
        # Some layers repeat one tool (a consecutive same-name group); the others draw names at random.
        same = width > 2 and rng.random() < 0.3
        for j in range(width):
            node = len(names)
            names.append(vocab[0] if same else rng.choice(vocab))
            picks = rng.sample(previous, k=min(len(previous), 1 + (j % 2)))
            deps.append(sorted(picks))
            layer.append(node)
        previous = layer
    names.append(PSEUDO_ANSWER)
    deps.append(list(range(len(names) - 1)))
    assert len(names) == 50
    return names, deps


Script = list[list[str] | None]  # per model step: the called names, or None for a text reply


def script_from(graph: CallGraph, steps: list[list[int]]) -> Script:
    return [
        None if any(graph.names[i] in PSEUDO_TOOLS for i in step) else [graph.names[i] for i in step] for step in steps
    ]


def all_ready_at_once(deps: list[list[int]]) -> list[list[int]]:
    """ASAP layers: every ready node in every step (always a candidate, and the only one of its size)."""
    done: set[int] = set()
    steps: list[list[int]] = []
    while len(done) < len(deps):
        ready = [n for n in range(len(deps)) if n not in done and all(d in done for d in deps[n])]
        steps.append(ready)
        done.update(ready)
    return steps


def one_call_per_step(graph: CallGraph) -> list[list[int]]:
    """The first size-1 candidate at every step (built with the engine, outside the timed part)."""
    walk, steps = graph.start(), []
    while not walk.finished:
        step = walk.candidate_steps(limit=1)[0]
        steps.append(step)
        pseudo = graph.names[step[0]] in PSEUDO_TOOLS
        assert (walk.match_text() if pseudo else walk.match_calls([graph.names[step[0]]])) is not None
    return steps


def replay(names: list[str], deps: list[list[int]], script: Script) -> bool:
    walk = CallGraph.build(names, deps).start()
    for called in script:
        assert (walk.match_text() if called is None else walk.match_calls(called)) is not None
    assert walk.finished
    return walk.is_optimal()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=200)
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument("--enumerate-only", type=int, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.enumerate_only is not None:
        enumerate_child(a.enumerate_only)
        return
    print("python", sys.version.split()[0], "| repeat", a.repeat, "| times are best / median of the repeats")
    print("\n(a) k parallel calls + answer, answered in one step: build + walk, per task")
    print(f"{'k':>3} {'engine best':>12} {'median':>10} {'paths':>8} {'enumerate + walk':>17}")
    for k in range(4, 9):
        best, median = best_of(a.repeat, lambda k=k: parallel_one_step(k))
        paths, seconds = enumerate_in_child(k, a.timeout)
        enum = f"{seconds:.3f} s" if seconds is not None else f"> {a.timeout:.0f} s"
        print(f"{k:>3} {best * 1e3:>9.3f} ms {median * 1e3:>7.3f} ms {paths:>8} {enum:>17}")

    names, deps = layered_task()
    graph = CallGraph.build(names, deps)
    runs = {
        "all ready at once": script_from(graph, all_ready_at_once(deps)),
        "one call per step": script_from(graph, one_call_per_step(graph)),
    }
    edges = sum(len(d) for d in deps)
    print(f"\n(b) 50-node layered DAG ({edges} edges, min_steps {graph.min_steps}): build + walk to the end, per task")
    for label, script in runs.items():
        best, median = best_of(a.repeat, lambda s=script: replay(names, deps, s))
        flag = replay(names, deps, script)
        timing = f"{best * 1e3:7.3f} ms best {median * 1e3:7.3f} ms median"
        print(f"  {label:<18} {len(script):>3} steps {timing}  optimal={flag}")
    best, median = best_of(a.repeat, lambda: CallGraph.build(names, deps).first_optimal_path())
    print(f"  first_optimal_path (build + path)  {best * 1e3:7.3f} ms best {median * 1e3:7.3f} ms median")
    names8, deps8 = parallel_task(8)
    best, median = best_of(a.repeat, lambda: CallGraph.build(names8, deps8).first_optimal_path())
    print(f"  first_optimal_path, 8 parallel     {best * 1e3:7.3f} ms best {median * 1e3:7.3f} ms median")

    print("\n(c) stress: shapes outside the goals")
    best, median = best_of(a.repeat, lambda: parallel_one_step(30))
    print(f"  30 parallel calls + answer, one step     {best * 1e3:8.3f} ms best {median * 1e3:8.3f} ms median")
    # The engine's costly case: a clarify ready beside k calls. The official loop does not prune on a
    # clarify, so every subset of the k calls stays a live branch for the next step.
    for k in (4, 8):
        names_c = [PSEUDO_CLARIFY] + [f"tool_{i}" for i in range(k)] + [PSEUDO_ANSWER]
        deps_c: list[list[int]] = [[] for _ in range(k + 1)] + [list(range(k + 1))]
        script_c: Script = [None, names_c[1 : k + 1], None]
        best, median = best_of(a.repeat, lambda n=names_c, d=deps_c, s=script_c: replay(n, d, s))
        print(f"  clarify beside {k} parallel calls, 3 steps {best * 1e3:8.3f} ms best {median * 1e3:8.3f} ms median")


def enumerate_in_child(k: int, timeout: float) -> tuple[str, float | None]:
    try:
        out = subprocess.run(
            [sys.executable, __file__, "--enumerate-only", str(k)],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return "?", None
    if out.returncode != 0:
        return "?", None
    paths, seconds = out.stdout.split()
    return paths, float(seconds)


def enumerate_child(k: int) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
    sys.path.insert(0, str(TESTS))
    from test_wild_graph import ReferenceWalk, enumerate_paths  # child process only

    names, deps = parallel_task(k)
    t0 = time.perf_counter()
    paths = enumerate_paths(names, deps)
    walk = ReferenceWalk(names, paths)
    assert walk.match_calls(names[:k]) is not None and walk.match_text() is not None
    print(len(paths), time.perf_counter() - t0)


if __name__ == "__main__":
    main()
