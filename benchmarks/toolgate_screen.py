"""The overhead of a ToolGate screen call: what the harness adds to one no-tool call of gate 2.

    PYTHONPATH=src .venv/bin/python benchmarks/toolgate_screen.py --candidates 200 --repeat 3

An OpenAI-compatible server on 127.0.0.1 (a process of its own, answering "A" at once) stands for the
screen's model, so every figure is harness and HTTP time, never model time. Per screen call it measures:

- **pure**: drawing the permutation from the seed, presenting the options, the prompt, parsing and grading the
  reply (``permutation_from_seed``, ``present``, ``screen_prompt``, ``grade_call``), in-process;
- **scripted**: ``gate screen``'s run through the real driver (engine, store, one logged call per request,
  scoring and the audit) with a scripted in-process screen: no HTTP;
- **raw HTTP**: the same number of chat completions sent with the OpenAI SDK directly (its raw-response path, the
  body decoded with ``json.loads``: what toolgauge's client sends and reads, without the harness), same
  concurrency;
- **harness HTTP**: the same run as "scripted" with the screen behind the local server (OpenAICompatClient),
  cache off; and once more with every answer in the cache (the same seeds again).

The pool is the eight fem seeds replicated with distinct ids; each figure is wall time / calls, the median of
``--repeat`` runs. The load average at the start is printed: other work on the machine slows every figure.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import statistics
import tempfile
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from toolgauge.benchmarks.toolgate.answers import grade_call, permutation_from_seed, present, screen_prompt
from toolgauge.benchmarks.toolgate.domains import get_domain
from toolgauge.benchmarks.toolgate.protocol import PoolBenchmark, PoolSettings
from toolgauge.benchmarks.toolgate.records import Candidate
from toolgauge.benchmarks.toolgate.screens import parse_screen_spec
from toolgauge.driver import RunOptions, run_benchmark
from toolgauge.engine import EngineConfig
from toolgauge.models.base import ModelClient
from toolgauge.models.offline import NoModel, ScriptedClient
from toolgauge.models.openai_compat import OpenAICompatClient

BODY = json.dumps(
    {
        "id": "c",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "A"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }
).encode()


class Handler(BaseHTTPRequestHandler):
    """Answers "A" to every POST."""

    protocol_version = "HTTP/1.1"  # keep-alive, as a real server
    disable_nagle_algorithm = True  # headers and body go out in two writes: no 40 ms delayed-ACK stall

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", 0)))
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(BODY)))
        self.end_headers()
        self.wfile.write(BODY)

    def log_message(self, *args: object) -> None:
        pass


def serve(ports: Any) -> None:
    """The server process: report the port, then serve until killed."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    ports.put(httpd.server_address[1])
    httpd.serve_forever()


class Server:
    """A chat-completions endpoint answering "A" to everything, in a process of its own (no GIL shared)."""

    def __init__(self) -> None:
        ports: Any = multiprocessing.Queue()
        self.process = multiprocessing.Process(target=serve, args=(ports,), daemon=True)
        self.process.start()
        self.port = int(ports.get(timeout=30))

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def close(self) -> None:
        self.process.terminate()
        self.process.join()


def pool(size: int) -> list[Candidate]:
    seeds = get_domain("fem").seeds()
    return [seeds[i % len(seeds)].model_copy(update={"id": f"c{i:05d}"}) for i in range(size)]


def pure_per_call(candidates: list[Candidate], rounds: int = 20_000) -> float:
    started = time.perf_counter()
    for i in range(rounds):
        candidate = candidates[i % len(candidates)]
        permutation = permutation_from_seed(i)
        screen_prompt(candidate.question, present(candidate.options, permutation))
        grade_call("A", permutation, candidate.answer, seed=i)
    return (time.perf_counter() - started) / rounds


async def harness_run(
    candidates: list[Candidate], client: ModelClient, store: str, concurrency: int, *, seed: int, cache: bool
) -> float:
    screen = parse_screen_spec("gold,name=s")  # the spec only names the screen: the client comes from `client`
    settings = PoolSettings(command="screen", gates=("screens",), screens=(screen,), seed=seed)
    bench = PoolBenchmark.of(candidates, settings, source="bench")
    options = RunOptions(
        store_url=store, engine=EngineConfig(concurrency=concurrency, show_progress=False, use_cache=cache)
    )
    started = time.perf_counter()
    result = await run_benchmark(bench, "bench", options, client=NoModel("bench"), roles={screen.role: client})
    wall = time.perf_counter() - started
    counts = result.scored.results.details["counts"]
    assert counts["total"] == len(candidates) and counts["errors"] == 0, counts
    return wall / (3 * len(candidates))


async def raw_run(url: str, calls: int, concurrency: int, prompts: list[str]) -> float:
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=url, api_key="sk-none", max_retries=0)
    queue = iter(range(calls))

    async def worker() -> None:
        for i in queue:
            raw = await client.chat.completions.with_raw_response.create(
                model="m", messages=[{"role": "user", "content": prompts[i % len(prompts)]}]
            )
            json.loads(raw.http_response.content)

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    wall = time.perf_counter() - started
    await client.close()
    return wall / calls


def median_ms(values: list[float]) -> float:
    return round(statistics.median(values) * 1000, 3)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--candidates", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 16])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    candidates = pool(args.candidates)
    server = Server()
    prompts = [
        screen_prompt(c.question, present(c.options, permutation_from_seed(i))) for i, c in enumerate(candidates)
    ]
    rows: list[dict[str, Any]] = []
    load = os.getloadavg()[0]
    pure = pure_per_call(candidates)
    with tempfile.TemporaryDirectory(prefix="toolgauge-screen-bench-") as tmp:
        for concurrency in args.concurrency:
            figures: dict[str, list[float]] = {"scripted": [], "raw": [], "http": [], "cached": []}
            for r in range(args.repeat):
                store = f"sqlite:///{Path(tmp) / f'c{concurrency}-r{r}.db'}"
                scripted = ScriptedClient(["A"], cycle=True)
                figures["scripted"].append(
                    await harness_run(candidates, scripted, store, concurrency, seed=r, cache=False)
                )
                figures["raw"].append(await raw_run(server.url, 3 * len(candidates), concurrency, prompts))
                http = OpenAICompatClient("m", base_url=server.url, api_key="sk-none")
                figures["http"].append(
                    await harness_run(candidates, http, store, concurrency, seed=1000 + r, cache=True)
                )
                http = OpenAICompatClient("m", base_url=server.url, api_key="sk-none")
                figures["cached"].append(
                    await harness_run(candidates, http, store, concurrency, seed=1000 + r, cache=True)
                )
            row = {"concurrency": concurrency, **{k: median_ms(v) for k, v in figures.items()}}
            row["overhead_ms"] = round(row["http"] - row["raw"], 3)
            rows.append(row)
    server.close()
    report = {
        "candidates": args.candidates,
        "calls_per_run": 3 * args.candidates,
        "repeat": args.repeat,
        "load_average": round(load, 2),
        "pure_us": round(pure * 1e6, 2),
        "rows": rows,
    }
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(f"load average {load:.2f}; {args.candidates} candidates, {3 * args.candidates} screen calls per run")
    print(f"pure per call (permutation, prompt, grading): {report['pure_us']} us")
    print("concurrency | scripted (no HTTP) | raw HTTP (SDK) | harness HTTP | harness HTTP, cached | overhead")
    for row in rows:
        print(
            f"{row['concurrency']:>11} | {row['scripted']:>15} ms | {row['raw']:>11} ms | {row['http']:>9} ms | "
            f"{row['cached']:>17} ms | {row['overhead_ms']} ms"
        )


if __name__ == "__main__":
    asyncio.run(main())
