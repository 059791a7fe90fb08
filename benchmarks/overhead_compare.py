"""Compare the harness overhead of two or more trees with figures that do not depend on the machine's load.

``overhead.py``'s wall time per sample moves by 10% from run to run on a shared machine. This script measures
the same trivial task (``overhead.py``'s, 100 samples in flight, SQLite store) in each tree's own fresh
interpreter (its ``src/`` first on ``PYTHONPATH``) and prints, for each tree:

- ``calls_per_sample``: Python function calls per sample, every thread profiled (cProfile), after a warm-up run;
  and the functions whose count per sample differs most from the first tree's. The counts of the group commit
  (how many samples finish in one tick) still depend a little on scheduling; the rest are exact.
- ``first_run_cpu_ms``: the CPU time of a first one-sample run in a fresh interpreter, less that of a second
  one: what every ``overhead.py`` figure includes once (SQLAlchemy's import, the store's schema, the run's set-up).
- with ``--valgrind``: callgrind's instruction counts of the imports alone and of runs of two sizes, giving
  the instructions per sample (the slope) and the fixed part inside the timed window.
- with ``--memory N``: the peak RSS of ``memcheck.py``'s gold suite run at N dialogues, ``--repeat`` times.

    .venv/bin/python benchmarks/overhead_compare.py /tmp/wt-old /tmp/wt-new --samples 3000
    .venv/bin/python benchmarks/overhead_compare.py /tmp/wt-old /tmp/wt-new --valgrind 1000,4000 --memory 5000

Figures: docs/benchmarks.md (the overhead section) and docs/benchmarks/memory.md.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import re
import resource
import subprocess
import sys
import tempfile
import threading
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def child_calls(n: int) -> dict[str, Any]:
    """Function calls per sample of one ``n``-sample run after a warm-up, by ``file:function``, every thread."""
    from overhead import run_toolgauge

    run_toolgauge(20, 100)
    profiles: list[cProfile.Profile] = []

    def profile_this_thread(*_: Any) -> None:  # the store's threads start inside the run
        sys.setprofile(None)
        profile = cProfile.Profile()
        profiles.append(profile)
        profile.enable()

    threading.setprofile(profile_this_thread)
    main = cProfile.Profile()
    main.enable()
    run_toolgauge(n, 100)
    main.disable()
    threading.setprofile(None)
    counts: Counter[str] = Counter()
    for profile in [main, *profiles]:
        stats: dict[tuple[str, int, str], tuple[Any, ...]] = pstats.Stats(profile).stats  # type: ignore[attr-defined]
        for (file, _line, name), (_cc, calls, *_rest) in stats.items():
            # Line numbers and module layout differ between trees: a function is its file's name and its own.
            counts[f"{Path(file).name}:{name}" if file != "~" else re.sub(r" at 0x\w+", "", name)] += calls
    return {"calls_per_sample": round(sum(counts.values()) / n, 2), "by_function": dict(counts)}


def child_first_run() -> dict[str, Any]:
    """CPU ms of a first and of a second one-sample run in this fresh interpreter."""
    from overhead import run_toolgauge

    start = _cpu_s()
    run_toolgauge(1, 100)
    first = _cpu_s()
    run_toolgauge(1, 100)
    second = _cpu_s()
    return {
        "first_run_cpu_ms": round((first - start) * 1000, 1),
        "second_run_cpu_ms": round((second - first) * 1000, 1),
    }


def _env(tree: Path) -> dict[str, str]:
    """The environment of a child running ``tree``'s code, with this folder's scripts importable."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree / "src"), str(HERE)])}


def _child(tree: Path, *args: str) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, __file__, *args], env=_env(tree), capture_output=True, text=True, timeout=1800, check=False
    )
    if out.returncode != 0:
        raise SystemExit(f"{tree}: {' '.join(args)} failed: {out.stderr.strip()[-2000:]}")
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def _instructions(tree: Path, n: int | None) -> int:
    """callgrind's instructions of a fresh interpreter importing overhead.py and running ``n`` samples (or none)."""
    code = "import overhead" if n is None else f"import overhead; overhead.run_toolgauge({n}, 100)"
    with tempfile.TemporaryDirectory() as tmp:
        out = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={tmp}/cg.out", sys.executable, "-c", code],
            env=_env(tree), capture_output=True, text=True, timeout=3600, check=False,
        )  # fmt: skip
    found = re.search(r"Collected : (\d+)", out.stderr)
    if out.returncode != 0 or found is None:
        raise SystemExit(f"{tree}: callgrind failed: {out.stderr.strip()[-2000:]}")
    return int(found.group(1))


def _peak_rss(tree: Path, dialogues: int) -> float:
    code = f"from memcheck import peak_rss_mb; print(peak_rss_mb({dialogues}, 'gold'))"
    out = subprocess.run(
        [sys.executable, "-c", code], env=_env(tree), capture_output=True, text=True, timeout=3600, check=True
    )
    return round(float(out.stdout.strip().splitlines()[-1]), 1)


def main() -> None:
    """Measure every tree (interleaved where a figure is repeated) and print one JSON line per tree."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trees", nargs="+", type=Path, help="checkouts (each with a src/); the first is the base")
    ap.add_argument("--samples", type=int, default=3000, help="samples of the profiled run")
    ap.add_argument("--repeat", type=int, default=3, help="repeats of the first-run CPU and of the memory figure")
    ap.add_argument("--top", type=int, default=25, help="functions listed whose calls per sample differ most")
    ap.add_argument("--valgrind", default=None, help="two sample counts for callgrind, e.g. 1000,4000")
    ap.add_argument("--memory", type=int, default=None, help="dialogues of the memcheck gold run to measure")
    a = ap.parse_args()
    rows: dict[Path, dict[str, Any]] = {t: {"tree": str(t)} for t in a.trees}
    calls = {t: _child(t, "--child-calls", str(a.samples)) for t in a.trees}
    for _ in range(a.repeat):
        for t in a.trees:
            rows[t].setdefault("first_run_cpu_ms", []).append(_child(t, "--child-first-run")["first_run_cpu_ms"])
    if a.valgrind:
        small, large = (int(x) for x in a.valgrind.split(","))
        for t in a.trees:
            imports, at_small, at_large = _instructions(t, None), _instructions(t, small), _instructions(t, large)
            slope = (at_large - at_small) / (large - small)
            rows[t].update(
                instructions_imports=imports,
                instructions_per_sample=round(slope),
                instructions_fixed_in_run=round(at_small - imports - slope * small),
            )
    if a.memory:
        for _ in range(a.repeat):
            for t in a.trees:
                rows[t].setdefault(f"peak_rss_mb_{a.memory}_dialogues", []).append(_peak_rss(t, a.memory))
    base = calls[a.trees[0]]["by_function"]
    for t in a.trees:
        rows[t]["calls_per_sample"] = calls[t]["calls_per_sample"]
        print(json.dumps(rows[t]))
    for t in a.trees[1:]:
        mine = calls[t]["by_function"]
        diff = {k: (mine.get(k, 0) - base.get(k, 0)) / a.samples for k in set(base) | set(mine)}
        print(f"# calls per sample, {t} against {a.trees[0]}:")
        for name, d in sorted(diff.items(), key=lambda kv: -abs(kv[1]))[: a.top]:
            print(f"#   {d:+7.2f}  {name}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child-calls"]:
        print(json.dumps(child_calls(int(sys.argv[2]))))
    elif sys.argv[1:2] == ["--child-first-run"]:
        print(json.dumps(child_first_run()))
    else:
        main()
