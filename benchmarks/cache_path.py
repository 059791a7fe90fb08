"""CPU per sample of an HTTP run with the response-cache path on and off, for one or more source trees.

The task is ``benchmarks/overhead.py``'s (one "What is 1 + 1?" call per sample, scored), run through the
whole driver (``run_benchmark``: fresh SQLite store, probe, engine, scoring) with toolgauge's real
OpenAI-compatible client against a real HTTP server on 127.0.0.1. The server runs in its own process, so
the CPU measured (``time.process_time`` of the run process: every thread, user + system) is toolgauge's
and the HTTP client's alone. Each measured run is a fresh interpreter with ``PYTHONPATH`` set to the
tree's ``src``, so a tree before a change and one after can be compared on the same machine, interleaved.

Modes, each one run of ``--samples`` samples:

- ``off``: the client is not cacheable (as gold, replay and scripted models are): no request hash,
  no cache look-up, no cache write; every call goes over HTTP;
- ``cold``: the normal HTTP run on an empty cache: hash, look-up (a miss), HTTP call, cache write;
- ``warm``: the same samples again, on a store whose cache holds every answer: hash, look-up (a hit: the
  first ones on the store's thread, the rest from the model's entries read ahead into memory, where the
  tree has that), no HTTP; CPU counted for this second run only;
- ``scripted``: no HTTP and no cache (a scripted client answering "2"), for scale;
- ``lookup`` (not a run): CPU per call of hashing a request (``request_hash``) and of a look-up that hits
  (``Store.cache_get``; and ``cache_get_async`` with ``--concurrency`` look-ups at a time, where the tree has it).

``cold - off`` is what the cache path adds to a run that calls the model; ``warm`` is a run served
wholly from the cache. The machine's load (``/proc/loadavg``) is printed before and after.

    # compare commit 1519644 with this tree, 5 interleaved repeats (from the repository's root)
    mkdir -p /tmp/before && git archive 1519644 src | tar -x -C /tmp/before
    PYTHONPATH=src .venv/bin/python benchmarks/cache_path.py --tree before=/tmp/before/src --tree after=src \\
        --samples 2000 --repeat 5
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

MODES = ("off", "cold", "warm", "scripted", "lookup")
ANSWER = json.dumps(
    {
        "id": "c", "object": "chat.completion", "created": 0, "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "2"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 8, "completion_tokens": 1, "total_tokens": 9},
    }
).encode()  # fmt: skip


# -- the server (its own process) ------------------------------------------------------------------
class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as a real inference server

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", 0)))
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(ANSWER)))
        self.end_headers()
        self.wfile.write(ANSWER)

    def log_message(self, *args: object) -> None:
        pass


def serve() -> None:
    """Serve chat completions on a free port of 127.0.0.1; print the port, then serve until killed."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    sys.stdout.write(f"{server.server_address[1]}\n")
    sys.stdout.flush()
    server.serve_forever()


# -- one measured run (its own process, PYTHONPATH = the tree) -----------------------------------
def measure(mode: str, url: str, samples: int, concurrency: int) -> dict[str, Any]:
    """Run the task in this process (twice for ``warm``); return CPU and wall time per sample of the measured run."""
    from pydantic import BaseModel

    from toolgauge.driver import RunOptions, run_benchmark
    from toolgauge.engine import EngineConfig, EpisodeContext, SampleOutcome
    from toolgauge.models.offline import ScriptedClient
    from toolgauge.models.openai_compat import OpenAICompatClient
    from toolgauge.records import AssistantTurn, Message
    from toolgauge.results import EvalResults, Metric, ScoredRun

    # Loaded before the clock starts: a tree that imports the store lazily would count SQLAlchemy's import.
    importlib.import_module("toolgauge.store.store")

    class Answer(BaseModel):
        text: str | None

    class NoOptions(BaseModel):
        """A benchmark without options."""

    class Trivial:
        name = "cache_path"
        result_type = Answer

        options = NoOptions()  # the stored config is the sample count alone (as config() gives older trees)

        def samples(self) -> list[tuple[str, str]]:
            return [(f"s{i}", f"What is 1 + 1? ({i})") for i in range(samples)]

        def config(self) -> dict[str, Any]:  # what a tree before the options seam (issue 23) stores instead
            return {"n": samples}

        async def episode(self, sample: str, ctx: EpisodeContext) -> Answer:
            turn = await ctx.generate([Message(role="user", content=sample)])
            return Answer(text=turn.content)

        def score(self, items: Sequence[tuple[str, str]], outcomes: Sequence[SampleOutcome[Answer]]) -> ScoredRun:
            correct = sum(1 for o in outcomes if o.result and (o.result.text or "").strip() == "2")
            accuracy = Metric(name="accuracy", value=correct / len(items), n=len(items))
            return ScoredRun(EvalResults(benchmark=self.name, metrics=[accuracy]))

        def replay_table(self, path: Path) -> Mapping[str, Sequence[AssistantTurn]]:
            return {}

    class Uncached(OpenAICompatClient):
        cacheable = False

    def client() -> Any:
        if mode == "scripted":
            return ScriptedClient(policy=lambda _r: AssistantTurn(content="2"))
        if mode == "off":
            return Uncached("m", base_url=url, api_key="sk-bench")
        return OpenAICompatClient("m", base_url=url, api_key="sk-bench")

    with tempfile.TemporaryDirectory() as tmp:
        options = RunOptions(
            store_url=f"sqlite:///{tmp}/bench.db", engine=EngineConfig(concurrency=concurrency, show_progress=False)
        )
        if mode == "warm":  # fill the cache first; that run is not measured
            asyncio.run(run_benchmark(Trivial(), "http", options, client=client()))
        cpu0, wall0 = time.process_time(), time.perf_counter()
        result = asyncio.run(run_benchmark(Trivial(), "http", options, client=client()))
        cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    assert result.scored.results.value("accuracy") == 1.0, result.scored.results
    return {"cpu_ms_per_sample": cpu / samples * 1000, "wall_ms_per_sample": wall / samples * 1000}


def measure_lookup(samples: int, concurrency: int) -> dict[str, Any]:
    """CPU per call of the cache path's parts alone: hashing a request, and a look-up that hits (sync and async)."""
    from toolgauge.engine.cache import request_hash
    from toolgauge.records import GenerateOptions, Message, ModelRequest
    from toolgauge.store import open_store

    requests = [
        ModelRequest(messages=[Message(role="user", content=f"What is 1 + 1? ({i})")], tools=[],
                     options=GenerateOptions(), sample_key=f"s{i}", step=0)
        for i in range(samples)
    ]  # fmt: skip
    row: dict[str, Any] = {}
    cpu0 = time.process_time()
    keys = [request_hash("m@http://127.0.0.1/v1", r) for r in requests]
    row["hash_ms"] = (time.process_time() - cpu0) / samples * 1000
    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(f"sqlite:///{tmp}/bench.db")
        for key in keys:
            store.cache_put(key, "m", {"content": "2"})
        store.flush()
        cpu0 = time.process_time()
        assert all(store.cache_get(key) is not None for key in keys)
        row["get_ms"] = (time.process_time() - cpu0) / samples * 1000
        if hasattr(store, "cache_get_async"):  # the tree runs look-ups off the event loop

            async def lookups() -> None:
                async def worker(part: list[str]) -> None:
                    for key in part:
                        assert await store.cache_get_async(key) is not None

                await asyncio.gather(*(worker(keys[i::concurrency]) for i in range(concurrency)))

            cpu0 = time.process_time()
            asyncio.run(lookups())
            row["get_async_ms"] = (time.process_time() - cpu0) / samples * 1000
        store.close()
    return row


# -- the driver ------------------------------------------------------------------------------------
def _load() -> str:
    return Path("/proc/loadavg").read_text().split(" ", 3)[:3].__str__() if Path("/proc/loadavg").exists() else "?"


def _child(tree: str, mode: str, url: str, args: argparse.Namespace) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(Path(tree).resolve())}
    cmd = [sys.executable, __file__, "--child", mode, "--url", url, "--samples", str(args.samples),
           "--concurrency", str(args.concurrency)]  # fmt: skip
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{tree} {mode}: {proc.stderr.strip().splitlines()[-1:]}")
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tree", action="append", default=[], help="LABEL=SRC_DIR (repeatable; default: this tree)")
    ap.add_argument("--samples", type=int, default=2000)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--modes", default="off,cold,warm,scripted")
    ap.add_argument("--json", action="store_true", help="print every run as a JSON line too")
    ap.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--child", choices=MODES, help=argparse.SUPPRESS)
    ap.add_argument("--url", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.serve:
        serve()
        return
    if a.child == "lookup":
        sys.stdout.write(json.dumps(measure_lookup(a.samples, a.concurrency)) + "\n")
        return
    if a.child:
        sys.stdout.write(json.dumps(measure(a.child, a.url, a.samples, a.concurrency)) + "\n")
        return
    trees = [t.split("=", 1) for t in a.tree] or [["this", str(Path(__file__).resolve().parents[1] / "src")]]
    modes = a.modes.split(",")
    server = subprocess.Popen([sys.executable, __file__, "--serve"], stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        url = f"http://127.0.0.1:{server.stdout.readline().strip()}/v1"
        print(f"load before: {_load()}", flush=True)
        runs: dict[tuple[str, str], list[dict[str, float]]] = {}
        for rep in range(a.repeat):
            for mode in modes:
                for label, tree in trees:  # interleaved: every tree once per mode per repeat
                    row = _child(tree, mode, url, a)
                    runs.setdefault((label, mode), []).append(row)
                    if a.json:
                        print(json.dumps({"repeat": rep, "tree": label, "mode": mode, **row}), flush=True)
        print(f"load after: {_load()}")
    finally:
        server.terminate()
        server.wait()
    _summary(runs, trees, modes, a)


def _cell(values: list[float]) -> str:
    return f"{statistics.median(values):.3f} [{min(values):.3f}-{max(values):.3f}]"


def _summary(
    runs: dict[tuple[str, str], list[dict[str, float]]], trees: list[list[str]], modes: list[str], a: argparse.Namespace
) -> None:
    """Markdown tables: medians [min-max] over the repeats, and the differences that isolate the cache path."""
    run_modes = [m for m in modes if m != "lookup"]
    diffs = [(x, y) for x, y in (("cold", "off"), ("warm", "scripted")) if {x, y} <= set(run_modes)]
    if run_modes:
        print(f"\nCPU ms per sample, {a.samples} samples, concurrency {a.concurrency}, {a.repeat} repeats "
              "(median [min-max]; a difference is the median of the per-repeat differences)")  # fmt: skip
        print("| tree | " + " | ".join([*run_modes, *(f"{x} - {y}" for x, y in diffs)]) + " |")
        print("|---" * (1 + len(run_modes) + len(diffs)) + "|")
        for label, _tree in trees:
            cells = [_cell([r["cpu_ms_per_sample"] for r in runs[(label, m)]]) for m in run_modes]
            for x, y in diffs:
                pairs = zip(runs[(label, x)], runs[(label, y)], strict=True)
                cells.append(
                    f"{statistics.median(p['cpu_ms_per_sample'] - q['cpu_ms_per_sample'] for p, q in pairs):.3f}"
                )
            print(f"| {label} | " + " | ".join(cells) + " |")
    if "lookup" in modes:
        fields = ("hash_ms", "get_ms", "get_async_ms")
        print(f"\nCPU ms per call, {a.samples} calls, {a.repeat} repeats (median [min-max])")
        print("| tree | request_hash | cache_get (hit) | cache_get_async (hit) |\n|---|---|---|---|")
        for label, _tree in trees:
            rows = runs[(label, "lookup")]
            print(
                f"| {label} | "
                + " | ".join(_cell([r[f] for r in rows]) if f in rows[0] else "-" for f in fields)
                + " |"
            )


if __name__ == "__main__":
    main()
