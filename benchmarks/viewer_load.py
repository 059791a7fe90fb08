"""How fast and how lean the viewer is on a large run: its API and pages, its memory, and ``report --html``.

Makes (once, then reuses) a suite run of N dialogues (the built-in suite's dialogues repeated under new ids)
in a SQLite store, answered by a scripted model that is right except on every 7th dialogue (so verdicts and
error classes are mixed). The store and its data file are kept in ``--cache`` (default
``~/.cache/toolgauge/viewer_load``) under a name with N, so the next measurement starts at once; ``--fresh``
makes them again. Then:

- **first view**: ``toolgauge view`` on 127.0.0.1 computes the run's verdicts once and keeps them in the store
  (the time of that one request, and that viewer's peak RSS);
- **after start**: a new viewer on the same store, every API page timed (median of ``--repeat`` requests,
  the first request of each page once), its peak RSS (``VmHWM``) after all of them;
- **report**: ``toolgauge report RUN --html`` in a child process: wall time, peak RSS (``wait4``), file size;
- **browser** (``--browser``): each page in headless Chromium, from navigation to the page shown completely.

    PYTHONPATH=$PWD/src .venv/bin/python benchmarks/viewer_load.py                    # 10,000 samples
    PYTHONPATH=$PWD/src .venv/bin/python benchmarks/viewer_load.py --samples 100000 --browser
    PYTHONPATH=$PWD/src .venv/bin/python benchmarks/viewer_load.py --quick            # what make bench runs

``--quick`` is 100,000 samples, 3 repeats, no browser, and prints only ``name value unit`` lines; it keeps the
verdicts an earlier run kept in the store, so it measures the viewer after start and the report (about a
minute). The first time it also makes the store and the verdicts (15 and 6 minutes on a busy 2-core machine).
Needs the [view] extra; ``--browser`` needs playwright and Debian's chromium (make setup-dev installs them).
Figures: docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

from toolgauge.benchmarks.suite.build import build
from toolgauge.benchmarks.suite.loader import builtin_suite_path
from toolgauge.benchmarks.suite.options import SuiteOptions
from toolgauge.driver import RunOptions, run_benchmark
from toolgauge.engine import EngineConfig
from toolgauge.models.offline import ScriptedClient
from toolgauge.records import AssistantTurn, ModelRequest, ToolCall

CHROMIUM = "/usr/bin/chromium"
# Bumped when the generated run changes, so an old cached store is not reused.
STORE_FORMAT = 1
SRC = Path(__file__).resolve().parents[1] / "src"


def write_suite(path: Path, n: int) -> None:
    """``n`` dialogues: the built-in suite's, in turn, each under a new id."""
    dialogues = [json.loads(line) for line in builtin_suite_path().read_text().splitlines() if line.strip()]
    with path.open("w") as f:
        for i in range(n):
            f.write(json.dumps({**dialogues[i % len(dialogues)], "id": f"d{i:06d}"}) + "\n")


def answer(request: ModelRequest) -> AssistantTurn:
    """The gold answer, except on every 7th dialogue: a call of a tool that does not exist."""
    assert request.gold is not None
    if int(request.sample_key[1:]) % 7 == 0:
        return AssistantTurn(tool_calls=[ToolCall(name="no_such_tool", arguments={"x": 1})], finish_reason="tool_calls")
    return request.gold


def cached_run(cache: Path, n: int, *, fresh: bool) -> tuple[str, str, float | None]:
    """The store URL and run id of the N-dialogue run, made now (and its seconds) or found in ``cache``."""
    cache.mkdir(parents=True, exist_ok=True)
    stem = cache / f"suite-{n}-v{STORE_FORMAT}"
    data, db, marker = stem.with_suffix(".jsonl"), stem.with_suffix(".db"), stem.with_suffix(".run")
    url = f"sqlite:///{db}"
    if marker.exists() and db.exists() and data.exists() and not fresh:
        return url, marker.read_text().strip(), None
    for old in (marker, db, data, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")):
        old.unlink(missing_ok=True)
    write_suite(data, n)
    started = time.perf_counter()
    engine = EngineConfig(concurrency=8, show_progress=False, max_retries=0)
    options = RunOptions(store_url=url, engine=engine)
    result = asyncio.run(
        run_benchmark(build(SuiteOptions(data=data)), "scripted", options, client=ScriptedClient(policy=answer))
    )
    marker.write_text(result.run_id + "\n")  # last: a store without it is made again
    return url, result.run_id, time.perf_counter() - started


def timed_get(url: str) -> tuple[float, int]:
    started = time.perf_counter()
    with urllib.request.urlopen(url, timeout=900) as response:
        body = response.read()
    return time.perf_counter() - started, len(body)


def memory_mb(pid: int) -> dict[str, float]:
    """The process's resident memory now (``VmRSS``) and at its peak (``VmHWM``), in MB."""
    found = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            found[name] = int(value.split()[0]) / 1024
    return found


@contextmanager
def viewer(store_url: str) -> Iterator[tuple[str, int]]:
    """``toolgauge view`` on a free port: its base URL and pid."""
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "toolgauge.cli", "view", "--store", store_url, "--port", "0"],
        stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()  # the child prints its URL once listening, or dies (EOF)
        match = re.search(r"(http://\S+)", line)
        if match is None:
            raise SystemExit(f"the viewer did not start: {line!r}")
        yield match.group(1), proc.pid
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def children_peak_mb(pid: int) -> float:
    """The highest ``VmHWM`` of the process's children right now (0 without children), in MB."""
    peak = 0.0
    for task in Path(f"/proc/{pid}/task").iterdir():  # a child is listed under the thread that started it
        with contextlib.suppress(FileNotFoundError):  # the thread or the child just ended
            for child in (task / "children").read_text().split():
                peak = max(peak, memory_mb(int(child)).get("VmHWM", 0.0))
    return peak


def first_view(store_url: str, run_id: str) -> dict[str, float]:
    """A new viewer's first unit page of the run, waiting for its verdicts (computed and kept unless they are).

    The viewer scores the run in a child process: its peak is read from ``/proc`` while the request waits
    (every 0.2 s; ``VmHWM`` keeps the peak, so the last reading before it ends is its peak).
    """
    with viewer(store_url) as (base, pid):
        answer: dict[str, float] = {}

        def ask() -> None:
            answer["seconds"] = timed_get(f"{base}api/runs/{run_id}/units?page=1&wait=1")[0]

        asking = threading.Thread(target=ask)
        asking.start()
        child = 0.0
        while asking.is_alive():
            child = max(child, children_peak_mb(pid))
            asking.join(timeout=0.2)
        return {"seconds": answer["seconds"], "child_peak_mb": child, **memory_mb(pid)}


def api_pages(run_id: str, n: int, units: int, charts: list[str]) -> dict[str, str]:
    """Every kind of API page the viewer's front end asks for, on this run (of ``units`` units, these charts)."""
    last = max(1, -(-units // 50))
    return {
        "runs list": "api/runs",
        "run page": f"api/runs/{run_id}",
        **{f"run chart {name}": f"api/runs/{run_id}/charts/{name}.svg" for name in charts},
        "run views (panels)": f"api/runs/{run_id}/panels",
        "units page 1": f"api/runs/{run_id}/units?page=1",
        "units, last page": f"api/runs/{run_id}/units?page={last}&per_page=50",
        "units, verdict=fail": f"api/runs/{run_id}/units?verdict=fail",
        "units, verdict=fail, page 100": f"api/runs/{run_id}/units?verdict=fail&page=100",
        "units, error class": f"api/runs/{run_id}/units?error_class=wrong_tool",
        "units, id search": f"api/runs/{run_id}/units?q=d0{n - 1:05d}",
        "error-class chart": f"api/runs/{run_id}/charts/error-classes.svg",
        "sample with transcript": f"api/runs/{run_id}/samples/d{n // 2:06d}",
        "sample, list filtered by verdict": f"api/runs/{run_id}/samples/d{(n // 2) // 7 * 7:06d}?verdict=fail",
    }


def get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=900) as response:
        return json.loads(response.read())


def after_start(
    store_url: str, run_id: str, n: int, repeat: int
) -> tuple[list[tuple[str, float, float, int]], dict[str, dict[str, float]]]:
    """A new viewer on the store: each page's first and median time and size; then the viewer's memory.

    The viewer is asked for the run's unit count and chart names first (not timed): the pages to time.
    """
    rows = []
    with viewer(store_url) as (base, pid):
        started = memory_mb(pid)
        units = get_json(f"{base}api/runs/{run_id}/units?per_page=1&wait=1")["total"]
        charts = [c["name"] for c in get_json(f"{base}api/runs/{run_id}")["charts"]]
        pages = api_pages(run_id, n, units, charts)
        for name, path in pages.items():
            first, size = timed_get(base + path)
            times = [timed_get(base + path)[0] for _ in range(repeat)]
            rows.append((name, first, statistics.median(times), size))
        return rows, {"started": started, "after": memory_mb(pid)}


def report_html(store_url: str, run_id: str) -> dict[str, float]:
    """``report RUN --html`` in a child process: seconds, peak RSS (MB) and the file's size (MB)."""
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "report.html"
        started = time.perf_counter()
        child = subprocess.Popen(
            [sys.executable, "-m", "toolgauge.cli", "report", run_id, "--store", store_url, "--html", str(out)],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env,
        )  # fmt: skip
        assert child.stderr is not None
        errors = child.stderr.read()
        _, status, usage = os.wait4(child.pid, 0)
        seconds = time.perf_counter() - started
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f"report --html failed: {errors.decode(errors='replace')[-2000:]}")
        return {"seconds": seconds, "peak_mb": usage.ru_maxrss / 1024, "size_mb": out.stat().st_size / 1e6}


def browser_times(base: str, run_id: str, n: int, repeat: int) -> list[tuple[str, float]]:
    from playwright.sync_api import sync_playwright

    pages = {
        "runs list": "#/",
        "run page (metrics)": f"#/run/{run_id}",
        "sample list, page 1": f"#/run/{run_id}/samples",
        "sample list, last page": f"#/run/{run_id}/samples?page={max(1, -(-n // 50))}",
        "sample list, failures": f"#/run/{run_id}/samples?verdict=fail",
        "sample page": f"#/run/{run_id}/sample/{quote(f'd{n // 2:06d}')}",
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


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "toolgauge" / "viewer_load")
    parser.add_argument("--fresh", action="store_true", help="make the store again even when it is cached")
    parser.add_argument("--browser", action="store_true", help="also time the pages in headless Chromium")
    parser.add_argument("--no-report", action="store_true", help="skip report --html")
    parser.add_argument("--quick", action="store_true", help="100,000 samples, 3 repeats, 'name value unit' lines")
    args = parser.parse_args()
    if args.quick:
        args.samples, args.repeat, args.browser = 100_000, 3, False
    n = args.samples
    url, run_id, made = cached_run(args.cache, n, fresh=args.fresh)
    say = (lambda *_a, **_k: None) if args.quick else print
    say(f"run {run_id}: {n:,} dialogues" + (f", stored in {made:.0f} s" if made is not None else " (cached store)"))
    # The viewer's tables are dropped, so the first view is measured as a user first meets it (--quick keeps
    # the verdicts an earlier run of it left: it measures the viewer after start, not the scoring).
    from sqlalchemy import create_engine, inspect, select

    from toolgauge.store import schema

    engine = create_engine(url)
    if not args.quick:
        schema.metadata.drop_all(engine, tables=[schema.view_units, schema.view_unit_sets])
    kept = schema.view_unit_sets.name in inspect(engine).get_table_names()
    if kept:  # the tables are there (a writing command makes them): are this run's verdicts?
        with engine.connect() as conn:
            sets = schema.view_unit_sets.c
            kept = conn.execute(select(sets.run_id).where(sets.run_id == run_id)).first() is not None
    engine.dispose()
    first = first_view(url, run_id)
    rows, memory = after_start(url, run_id, n, args.repeat)
    report = None if args.no_report else report_html(url, run_id)
    first_figures = [] if kept else [
        ("viewer_first_view_verdicts", first["seconds"], "s"),
        ("viewer_first_view_peak_rss", first["VmHWM"], "MB"),
        ("viewer_first_view_scoring_process_peak_rss", first["child_peak_mb"], "MB"),
    ]  # fmt: skip
    figures = [
        *first_figures,
        ("viewer_rss_after_start", memory["started"]["VmRSS"], "MB"),
        ("viewer_peak_rss", memory["after"]["VmHWM"], "MB"),
        ("viewer_slowest_page", max(max(first_s, median) for _n, first_s, median, _s in rows), "s"),
        *((f"viewer_page_{_slug(name)}", max(first_s, median), "s") for name, first_s, median, _s in rows),
    ]
    if report is not None:
        figures += [
            ("report_html_seconds", report["seconds"], "s"),
            ("report_html_peak_rss", report["peak_mb"], "MB"),
            ("report_html_size", report["size_mb"], "MB"),
        ]
    if args.quick:
        for name, value, unit in figures:
            print(f"{name} {value:.3f} {unit}")
        return
    print(f"\nfirst view: the verdicts of {n:,} samples computed and kept in {first['seconds']:.1f} s, "
          f"that viewer's peak RSS {first['VmHWM']:.0f} MB, "
          f"its scoring process's {first['child_peak_mb']:.0f} MB")  # fmt: skip
    print(f"\nafter start (a new viewer; first request, then the median of {args.repeat}):\n")
    print("| request | first s | median s | bytes |\n|---|---:|---:|---:|")
    for name, first_s, median, size in rows:
        print(f"| {name} | {first_s:.3f} | {median:.3f} | {size:,} |")
    print(f"\nviewer RSS: {memory['started']['VmRSS']:.0f} MB started, {memory['after']['VmRSS']:.0f} MB after every "
          f"page, peak {memory['after']['VmHWM']:.0f} MB")  # fmt: skip
    if report is not None:
        print(f"report --html: {report['seconds']:.1f} s, peak RSS {report['peak_mb']:.0f} MB, "
              f"{report['size_mb']:.2f} MB")  # fmt: skip
    if args.browser:
        with viewer(url) as (base, _pid):
            print(f"\nbrowser (headless chromium, navigation to page shown, median of {args.repeat} loads):\n")
            print("| page | seconds |\n|---|---:|")
            for name, seconds in browser_times(base, run_id, n, args.repeat):
                print(f"| {name} | {seconds:.3f} |")
    print()
    for name, value, unit in figures:
        print(f"{name} {value:.3f} {unit}")


if __name__ == "__main__":
    main()
