"""``make bench``: the quick benchmarks, each figure printed beside its committed baseline (baselines.json).

- overhead: ``benchmarks/overhead.py --samples 10000`` (toolgauge side), ms of wall time per sample;
- cache path: ``benchmarks/cache_path.py --samples 2000 --repeat 3`` (this tree), ms of CPU per sample per mode;
- memory: ``benchmarks/memory.py``'s gold suite run of 30,000 dialogues, peak RSS (the figure CI's
  ``benchmarks/memcheck.py`` holds under its ceiling);
- viewer: ``benchmarks/viewer_load.py --quick`` (100,000 samples; its ``name value unit`` lines beside the goals
  in baselines.json), or where that script has no ``--quick``, its own tables at ``--samples 100000`` as it
  prints them.

Run it before every stop that touches the engine, the store, results, statistics or the viewer, and update
docs/benchmarks.md from it. Timings depend on the machine's load (printed before and after); memory does not.

    PYTHONPATH=$PWD/src .venv/bin/python benchmarks/bench.py
    PYTHONPATH=$PWD/src .venv/bin/python benchmarks/bench.py --only memory,overhead
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memcheck import BASELINES, peak_rss_mb

HERE = Path(__file__).resolve().parent
Row = tuple[str, float, float | None, str]  # what, figure, baseline, unit


def _json_lines(command: list[str]) -> list[dict[str, Any]]:
    """Run a benchmark script; return the JSON objects it printed one per line (exit on failure)."""
    proc = subprocess.run(command, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(command[1:3])} failed: {proc.stderr.strip()[-2000:]}")
    rows: list[dict[str, Any]] = []
    for line in proc.stdout.splitlines():
        if line.startswith("{"):
            rows.append(json.loads(line))
    return rows


def overhead(base: dict[str, Any]) -> list[Row]:
    """ms of wall time per sample of the trivial task, toolgauge side."""
    rows = _json_lines([sys.executable, str(HERE / "overhead.py"), "--samples", str(base["samples"])])
    row = next(r for r in rows if r.get("harness") == "toolgauge")
    return [(f"overhead, {base['samples']:,} samples", float(row["ms_per_sample"]), base["ms_per_sample"], "ms/sample")]


def cache_path(base: dict[str, Any]) -> list[Row]:
    """ms of CPU per sample of each mode (median of the repeats)."""
    command = [sys.executable, str(HERE / "cache_path.py"), "--samples", str(base["samples"]), "--repeat", "3"]
    rows = _json_lines([*command, "--modes", ",".join(base["cpu_ms_per_sample"]), "--json"])
    out: list[Row] = []
    for mode, baseline in base["cpu_ms_per_sample"].items():
        figure = statistics.median(r["cpu_ms_per_sample"] for r in rows if r.get("mode") == mode)
        out.append((f"cache path `{mode}`, {base['samples']:,} samples", figure, baseline, "CPU ms/sample"))
    return out


def memory(base: dict[str, Any]) -> list[Row]:
    """Peak RSS of the gold suite run that CI checks."""
    figure = peak_rss_mb(int(base["dialogues"]), str(base["model"]))
    label = f"memory, {base['dialogues']:,} dialogues ({base['model']}; ceiling {base['ceiling_mb']} MB)"
    return [(label, figure, base["peak_rss_mb"], "MB peak RSS")]


def viewer(base: dict[str, Any]) -> list[Row]:
    """The viewer's figures on a generated store of ``base["samples"]`` samples.

    A viewer_load.py with ``--quick`` prints ``name value unit`` lines: each becomes a row, beside its goal in
    ``base["goals"]`` where there is one. An older one prints its own tables, passed through as they come.
    """
    script = HERE / "viewer_load.py"
    if "--quick" not in script.read_text(encoding="utf-8"):
        print(f"\nviewer ({script.name} --samples {base['samples']}); goal: {base['goal']}", flush=True)
        proc = subprocess.run([sys.executable, str(script), "--samples", str(base["samples"])], check=False)
        if proc.returncode != 0:
            raise SystemExit(f"{script.name} failed with exit code {proc.returncode}")
        return []
    done = subprocess.run([sys.executable, str(script), "--quick"], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{script.name} --quick failed: {done.stderr.strip()[-2000:]}")
    rows: list[Row] = []
    for line in done.stdout.splitlines():
        parts = line.split()
        if len(parts) == 3:
            name, value, unit = parts
            goal = base["goals"].get(name)
            label = f"viewer: {name}" + (" (baseline: the goal)" if goal is not None else "")
            rows.append((label, float(value), goal, unit))
    return rows


BENCHES: dict[str, Callable[[dict[str, Any]], list[Row]]] = {
    "overhead": overhead,
    "cache_path": cache_path,
    "memory": memory,
    "viewer": viewer,
}


def _load() -> str:
    try:
        return Path("/proc/loadavg").read_text(encoding="utf-8").split(" ", 1)[0]
    except OSError:
        return "?"


def main() -> int:
    """Run the chosen benchmarks, then print every figure beside its baseline."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help=f"comma list of {', '.join(BENCHES)} (default: all)")
    parser.add_argument("--baselines", type=Path, default=BASELINES, help="the committed baselines file")
    args = parser.parse_args()
    names = args.only.split(",") if args.only else list(BENCHES)
    unknown = [n for n in names if n not in BENCHES]
    if unknown:
        parser.error(f"unknown benchmark {unknown[0]!r} (known: {', '.join(BENCHES)})")
    baselines = json.loads(args.baselines.read_text(encoding="utf-8"))
    print(f"1-minute load before: {_load()}", flush=True)
    rows: list[Row] = []
    for name in names:
        rows += BENCHES[name](baselines[name])
    print(f"\n1-minute load after: {_load()}\n")
    if rows:
        print("| benchmark | figure | baseline | figure / baseline | unit |\n|---|---:|---:|---:|---|")
        for what, figure, baseline, unit in rows:
            ratio = f"{figure / baseline:.2f}" if baseline else "-"
            print(f"| {what} | {figure:.4g} | {baseline if baseline is not None else '-'} | {ratio} | {unit} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
