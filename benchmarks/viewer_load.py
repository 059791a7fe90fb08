"""How fast the viewer answers on a run of 10,000 samples: its API, and its pages in headless Chromium.

Makes a suite run of N dialogues (the built-in suite's dialogues repeated under new ids) in a temporary
SQLite store, answered by a scripted model that is right except on every 7th dialogue (so verdicts and
error classes are mixed), starts ``toolgauge view`` on 127.0.0.1, and times:

- API: the first requests of the run apart (they start, then wait for, the computation of the run's
  verdicts in the viewer's worker thread), then each endpoint a few times (median);
- browser: from navigation to the page being shown completely (the front end's ``data-ready`` mark),
  for the runs list, the run page, the first and last page of the sample list, a filtered page and a sample.

    .venv/bin/python benchmarks/viewer_load.py            # 10,000 samples
    .venv/bin/python benchmarks/viewer_load.py --samples 2000 --repeat 3

Needs the [view] extra, playwright and Debian's chromium (make setup-dev installs them).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from toolgauge.benchmarks.suite.cli import build
from toolgauge.benchmarks.suite.loader import builtin_suite_path
from toolgauge.driver import RunOptions, run_benchmark
from toolgauge.engine import EngineConfig
from toolgauge.models.offline import ScriptedClient
from toolgauge.records import AssistantTurn, ModelRequest, ToolCall

CHROMIUM = "/usr/bin/chromium"


def write_suite(path: Path, n: int) -> None:
    """``n`` dialogues: the built-in suite's, in turn, each under a new id."""
    dialogues = [json.loads(line) for line in builtin_suite_path().read_text().splitlines() if line.strip()]
    with path.open("w") as f:
        for i in range(n):
            f.write(json.dumps({**dialogues[i % len(dialogues)], "id": f"d{i:05d}"}) + "\n")


def answer(request: ModelRequest) -> AssistantTurn:
    """The gold answer, except on every 7th dialogue: a call of a tool that does not exist."""
    assert request.gold is not None
    if int(request.sample_key[1:]) % 7 == 0:
        return AssistantTurn(tool_calls=[ToolCall(name="no_such_tool", arguments={"x": 1})], finish_reason="tool_calls")
    return request.gold


def make_run(store_url: str, data: Path) -> tuple[str, float]:
    started = time.perf_counter()
    bench = build(data=data)
    engine = EngineConfig(concurrency=8, show_progress=False, max_retries=0)
    options = RunOptions(store_url=store_url, engine=engine)
    result = asyncio.run(run_benchmark(bench, "scripted", options, client=ScriptedClient(policy=answer)))
    return result.run_id, time.perf_counter() - started


def timed_get(url: str) -> tuple[float, int]:
    started = time.perf_counter()
    with urllib.request.urlopen(url, timeout=600) as response:
        body = response.read()
    return time.perf_counter() - started, len(body)


def api_times(base: str, run_id: str, repeat: int) -> list[tuple[str, float, int]]:
    rows = []
    seconds, size = timed_get(f"{base}api/runs/{run_id}")
    rows.append(("run page, first request (starts computing the verdicts)", seconds, size))
    seconds, size = timed_get(f"{base}api/runs/{run_id}/units?page=1")
    rows.append(("units page 1 while the verdicts are computed (a 'computing' answer)", seconds, size))
    seconds, size = timed_get(f"{base}api/runs/{run_id}/units?page=1&wait=1")
    rows.append(("units page 1, waiting for the verdicts (once per run and viewer process)", seconds, size))
    paths = {
        "runs list": "api/runs",
        "run page": f"api/runs/{run_id}",
        "units page 1": f"api/runs/{run_id}/units?page=1",
        "units page 200 (last)": f"api/runs/{run_id}/units?page=200&per_page=50",
        "units, verdict=fail": f"api/runs/{run_id}/units?verdict=fail",
        "units, id search": f"api/runs/{run_id}/units?q=d09999",
        "sample with transcript": f"api/runs/{run_id}/samples/d00007",
    }
    for name, path in paths.items():
        times = []
        for _ in range(repeat):
            seconds, size = timed_get(base + path)
            times.append(seconds)
        rows.append((name, statistics.median(times), size))
    return rows


def browser_times(base: str, run_id: str, repeat: int) -> list[tuple[str, float]]:
    from playwright.sync_api import sync_playwright

    pages = {
        "runs list": "#/",
        "run page (metrics)": f"#/run/{run_id}",
        "sample list, page 1": f"#/run/{run_id}/samples",
        "sample list, last page": f"#/run/{run_id}/samples?page={10_000 // 50}",
        "sample list, failures": f"#/run/{run_id}/samples?verdict=fail",
        "sample page": f"#/run/{run_id}/sample/d00007",
    }
    rows = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        for name, hash_path in pages.items():
            times = []
            for _ in range(repeat):
                page = browser.new_page()
                started = time.perf_counter()
                page.goto(base + hash_path)
                page.wait_for_function(
                    "() => document.querySelector('main').dataset.ready === location.hash", timeout=600_000
                )
                times.append(time.perf_counter() - started)
                page.close()
            rows.append((name, statistics.median(times)))
        browser.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "suite.jsonl"
        write_suite(data, args.samples)
        store_url = f"sqlite:///{Path(tmp) / 'store.db'}"
        run_id, made = make_run(store_url, data)
        print(f"run {run_id}: {args.samples} dialogues stored in {made:.1f} s")
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
        proc = subprocess.Popen(
            [sys.executable, "-m", "toolgauge.cli", "view", "--store", store_url, "--port", "0"],
            stderr=subprocess.PIPE, text=True, env=env,
        )  # fmt: skip
        try:
            assert proc.stderr is not None
            line = proc.stderr.readline()
            match = re.search(r"(http://\S+)", line)
            if match is None:
                raise SystemExit(f"the viewer did not start: {line!r}")
            base = match.group(1)
            print("\nAPI (median of", args.repeat, "requests; the first one once):\n")
            print("| request | seconds | bytes |\n|---|---:|---:|")
            for name, seconds, size in api_times(base, run_id, args.repeat):
                print(f"| {name} | {seconds:.3f} | {size:,} |")
            print("\nbrowser (headless chromium, navigation to page shown, median of", args.repeat, "loads):\n")
            print("| page | seconds |\n|---|---:|")
            for name, seconds in browser_times(base, run_id, args.repeat):
                print(f"| {name} | {seconds:.3f} |")
        finally:
            proc.terminate()
            proc.wait(timeout=30)


if __name__ == "__main__":
    main()
