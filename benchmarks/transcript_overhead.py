"""What storing transcripts costs: time per sample and store size, with and without them.

Four workloads, each run through the engine (``run_episodes``) into a fresh SQLite store, with
transcript storage on (the default) and off (``EngineConfig(store_transcripts=False)``, an internal
switch for this measurement), alternating, ``--repeat`` times each:

- ``trivial``: ``benchmarks/overhead.py``'s task, 10,000 samples asking "What is 1 + 1?" once each,
  answered "2" by a scripted client: the smallest call, where storing its transcript weighs most;
- ``suite``: the built-in suite (24 dialogues, 55 turns) copied ``--suite-copies`` times under new ids,
  with the gold client: one call per turn on the gold history;
- ``mtu-native``: MTU-Bench's 1,009 eval items as native tool-calling requests (``--data``), gold
  client: one call per item, items of one dialogue sharing their history;
- ``agent-loop``: an MTU-sized multi-step tool loop: a system prompt, 8 tools (about 4 kB of JSON,
  MTU-Bench's mean), 10 steps per sample with a ~300-character tool result each, scripted client.

The model costs nothing, so the time is the harness's own. Scoring is left out: it reads no
transcript. For the run with transcripts, every sample's transcript is then read back
(``Store.transcript``), checked against what was sent, and timed; its size is compared with
storing every request whole (uncompressed JSON of messages, tools and options per call).

    PYTHONPATH=src .venv/bin/python benchmarks/transcript_overhead.py            # markdown tables
    PYTHONPATH=src .venv/bin/python benchmarks/transcript_overhead.py --json     # every figure
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from sqlalchemy import select

from toolgauge.engine import EngineConfig, EpisodeContext, run_episodes
from toolgauge.models.base import ModelClient
from toolgauge.models.offline import GoldClient, ScriptedClient
from toolgauge.records import AssistantTurn, GenerateOptions, Message, ModelRequest, ToolCall, ToolSpec
from toolgauge.store import open_store, schema
from toolgauge.store.transcripts import MessageChain, unpack

REPO = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("TOOLGAUGE_SHARED_DATA", REPO.parent / "shared" / "data"))


@dataclass
class Workload:
    name: str
    samples: Sequence[tuple[str, Any]]
    episode: Callable[[Any, EpisodeContext], Awaitable[BaseModel]]
    result_type: type[BaseModel]
    client: Callable[[], ModelClient]


def suite_workload(copies: int) -> Workload:
    from toolgauge.benchmarks.suite.loader import builtin_suite_path, load_suite
    from toolgauge.benchmarks.suite.options import SuiteOptions
    from toolgauge.benchmarks.suite.protocol import SuiteBenchmark, SuiteResult

    dialogues = load_suite(builtin_suite_path())
    copied = [d.replace(id=f"{d.id}~{k}") for k in range(copies) for d in dialogues]
    bench = SuiteBenchmark(copied, options=SuiteOptions(), data_label="builtin:sample x" + str(copies))
    return Workload("suite", bench.samples(), bench.episode, SuiteResult, GoldClient)  # type: ignore[arg-type]


def mtu_workload(data: Path) -> Workload | None:
    from toolgauge.benchmarks.mtu.loader import load_mtu
    from toolgauge.benchmarks.mtu.options import MtuOptions
    from toolgauge.benchmarks.mtu.protocol import MtuBenchmark, MtuResult

    if not (data / "mtu-bench").is_dir():
        return None
    bench = MtuBenchmark(load_mtu(data / "mtu-bench"), options=MtuOptions(mode="native"), data_label=str(data))
    return Workload("mtu-native", bench.samples(), bench.episode, MtuResult, GoldClient)  # type: ignore[arg-type]


class LoopResult(BaseModel):
    steps: int
    final: str | None


AGENT_STEPS = 10
AGENT_TOOLS = [
    ToolSpec(
        name=f"tool_{k}",
        description=f"Look up records of kind {k} in the booking system and return them as JSON. " * 3,
        parameters={
            "type": "object",
            "properties": {
                f"field_{j}": {"type": "string", "description": f"Filter on field {j} of the record (exact match)."}
                for j in range(6)
            },
            "required": ["field_0"],
        },
    )
    for k in range(8)
]
AGENT_SYSTEM = (
    "You are a careful assistant that books travel. Use the tools to look things up before you answer, "
    "one call per step, and answer in one short paragraph once you know enough. " * 4
)


async def agent_episode(sample: str, ctx: EpisodeContext) -> LoopResult:
    messages = [Message(role="system", content=AGENT_SYSTEM), Message(role="user", content=sample)]
    options = GenerateOptions(temperature=0.0, max_tokens=512)
    for step in range(AGENT_STEPS):
        turn = await ctx.generate(messages, AGENT_TOOLS, options)
        messages.append(turn.as_message())
        if not turn.tool_calls:
            return LoopResult(steps=step + 1, final=turn.content)
        for call in turn.tool_calls:
            result = json.dumps(
                {
                    "query": call.arguments,
                    "rows": [
                        {"id": f"{sample[-6:]}-{step}-{r}", "status": "confirmed", "price_usd": 100 + 7 * r + step}
                        for r in range(5)
                    ],
                }
            )
            messages.append(Message(role="tool", content=result, tool_call_id=call.id, name=call.name))
    return LoopResult(steps=AGENT_STEPS, final=None)


def agent_policy(request: ModelRequest) -> AssistantTurn:
    if request.step == AGENT_STEPS - 1:
        return AssistantTurn(
            content=f"All booked for {request.sample_key}: three records confirmed.", finish_reason="stop"
        )
    k = request.step % len(AGENT_TOOLS)
    call = ToolCall(
        name=f"tool_{k}", arguments={"field_0": f"{request.sample_key} {request.step}"}, id=f"call_{request.step}"
    )
    return AssistantTurn(tool_calls=[call], finish_reason="tool_calls")


def agent_workload(n: int) -> Workload:
    samples = [(f"trip-{i:05d}", f"Book me a trip for request {i:05d}: flights, a hotel and a car.") for i in range(n)]
    return Workload("agent-loop", samples, agent_episode, LoopResult, lambda: ScriptedClient(policy=agent_policy))


class Answer(BaseModel):
    text: str | None


async def trivial_episode(sample: str, ctx: EpisodeContext) -> Answer:
    turn = await ctx.generate([Message(role="user", content=sample)])
    return Answer(text=turn.content)


def trivial_workload(n: int) -> Workload:
    samples = [(f"s{i}", "What is 1 + 1?") for i in range(n)]
    return Workload(
        "trivial",
        samples,
        trivial_episode,
        Answer,
        lambda: ScriptedClient(policy=lambda _r: AssistantTurn(content="2")),
    )


def store_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))


def run_once(w: Workload, folder: Path, transcripts: bool, concurrency: int) -> dict[str, Any]:
    path = folder / f"{w.name}-{'on' if transcripts else 'off'}-{time.monotonic_ns()}.db"
    url = f"sqlite:///{path}"
    store = open_store(url)
    run_id = store.create_run(w.name, "offline", {})
    config = EngineConfig(concurrency=concurrency, show_progress=False, store_transcripts=transcripts)
    started, cpu = time.perf_counter(), time.process_time()
    outcome = asyncio.run(
        run_episodes(w.samples, w.episode, w.result_type, client=w.client(), store=store, run_id=run_id, config=config)
    )
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    assert not outcome.failed, outcome.failed[0].error
    calls = int(store.call_stats(run_id)["calls"])
    store.close()
    return {
        "wall_s": wall,
        "cpu_s": cpu,
        "calls": calls,
        "store_bytes": store_bytes(path),
        "url": url,
        "run_id": run_id,
    }


def recorded_requests(w: Workload, folder: Path) -> list[tuple[ModelRequest, AssistantTurn]]:
    """Every request of one run of the workload, in call order, with the answer it got."""
    inner = w.client()
    got: list[tuple[ModelRequest, AssistantTurn]] = []

    async def answer(request: ModelRequest) -> AssistantTurn:
        turn = await inner.generate(request)
        got.append((request, turn))
        return turn

    store = open_store(f"sqlite:///{folder / f'{w.name}-requests.db'}")
    run_id = store.create_run(w.name, "offline", {})
    config = EngineConfig(concurrency=1, show_progress=False, store_transcripts=False)
    client = ScriptedClient(policy=answer)
    asyncio.run(
        run_episodes(w.samples, w.episode, w.result_type, client=client, store=store, run_id=run_id, config=config)
    )
    store.close()
    return got


def store_path_cost(requests: list[tuple[ModelRequest, AssistantTurn]], folder: Path, transcripts: bool) -> float:
    """CPU seconds to record these calls into a fresh store (with or without their transcripts), commits included.

    CPU time, not wall time: on a machine shared with other jobs the wall time of a few milliseconds
    mostly measures the waiting for a core.
    """
    store = open_store(f"sqlite:///{folder / f'path-{transcripts}-{time.monotonic_ns()}.db'}")
    run_id = store.create_run("path", "offline", {})
    chains: dict[str, MessageChain] = {}
    started = time.process_time()
    for request, turn in requests:
        refs = store.put_request(chains.setdefault(request.sample_key, MessageChain()), request) if transcripts else {}
        row = {"run_id": run_id, "sample_key": request.sample_key, "step": request.step, **refs,
               "response": turn.model_dump_json(), "latency_s": 0.0}  # fmt: skip
        store.record_call(row)
    store.flush()
    elapsed = time.process_time() - started
    store.close()
    return elapsed


def read_back(w: Workload, url: str, run_id: str) -> dict[str, Any]:
    """Read every sample's transcript, check it is whole, and size it against storing each request whole."""
    store = open_store(url, create=False)
    whole = 0
    calls = 0
    started = time.perf_counter()
    transcripts = [store.transcript(run_id, key) for key, _ in w.samples]
    read_s = time.perf_counter() - started
    for records in transcripts:
        for r in records:
            assert r.messages is not None and r.tools is not None and r.options is not None and r.response is not None
            calls += 1
            whole += len(
                json.dumps(
                    {
                        "messages": [m.model_dump(mode="json", exclude_defaults=True) for m in r.messages],
                        "tools": [t.model_dump(mode="json") for t in r.tools],
                        "options": r.options.model_dump(mode="json"),
                    },
                    separators=(",", ":"),
                    ensure_ascii=False,
                ).encode()
            )
    blobs = blob_bytes = blob_json_bytes = 0
    with store.engine.connect() as conn:
        for (data,) in conn.execute(select(schema.blobs.c.data)):
            blobs += 1
            blob_bytes += len(data)
            blob_json_bytes += len(json.dumps(unpack(data), separators=(",", ":"), ensure_ascii=False).encode())
    store.close()
    return {
        "read_ms_per_sample": read_s / len(w.samples) * 1000,
        "calls_read": calls,
        "requests_whole_bytes": whole,
        "blobs": blobs,
        "blob_bytes": blob_bytes,
        "blob_json_bytes": blob_json_bytes,
    }


def measure(w: Workload, repeat: int, concurrency: int) -> dict[str, Any]:
    n = len(w.samples)
    runs: dict[bool, list[dict[str, Any]]] = {False: [], True: []}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        run_once(w, folder, True, concurrency)  # warm-up: imports, caches
        for _ in range(repeat):
            for transcripts in (False, True):
                runs[transcripts].append(run_once(w, folder, transcripts, concurrency))
        back = read_back(w, runs[True][-1]["url"], runs[True][-1]["run_id"])
        # The storing alone, in CPU time, best of --repeat: the figure least moved by other load on the machine.
        requests = recorded_requests(w, folder)
        path = {t: min(store_path_cost(requests, folder, t) for _ in range(repeat)) for t in (False, True)}
    off = statistics.median(r["wall_s"] for r in runs[False]) / n * 1000
    on = statistics.median(r["wall_s"] for r in runs[True]) / n * 1000
    cpu_off = statistics.median(r["cpu_s"] for r in runs[False]) / n * 1000
    cpu_on = statistics.median(r["cpu_s"] for r in runs[True]) / n * 1000
    size_off, size_on = runs[False][-1]["store_bytes"], runs[True][-1]["store_bytes"]
    return {
        "workload": w.name,
        "samples": n,
        "calls": runs[True][-1]["calls"],
        "ms_per_sample_off": round(off, 4),
        "ms_per_sample_on": round(on, 4),
        "ms_per_sample_added": round(on - off, 4),
        "cpu_ms_per_sample_off": round(cpu_off, 4),
        "cpu_ms_per_sample_on": round(cpu_on, 4),
        "cpu_ms_per_call_added": round((cpu_on - cpu_off) * n / runs[True][-1]["calls"], 4),
        "store_path_ms_per_call_off": round(path[False] / len(requests) * 1000, 4),
        "store_path_ms_per_call_on": round(path[True] / len(requests) * 1000, 4),
        "store_path_ms_per_sample_added": round((path[True] - path[False]) / n * 1000, 4),
        "walls_off_s": [round(r["wall_s"], 3) for r in runs[False]],
        "walls_on_s": [round(r["wall_s"], 3) for r in runs[True]],
        "store_bytes_off": size_off,
        "store_bytes_on": size_on,
        "bytes_per_sample_added": round((size_on - size_off) / n),
        "read_ms_per_sample": round(back["read_ms_per_sample"], 3),
        "blobs": back["blobs"],
        "blob_bytes": back["blob_bytes"],
        "blob_json_bytes": back["blob_json_bytes"],
        "requests_whole_bytes": back["requests_whole_bytes"],
        "calls_read": back["calls_read"],
    }


def size(n: int) -> str:
    return f"{n / 1e6:.2f} MB" if n >= 1e6 else f"{n / 1e3:.1f} kB"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--data",
        type=Path,
        default=DATA,
        help="the shared data folder (default: $TOOLGAUGE_SHARED_DATA, else ../shared/data)",
    )
    parser.add_argument("--suite-copies", type=int, default=100)
    parser.add_argument("--agent-samples", type=int, default=500)
    parser.add_argument("--trivial-samples", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--only", choices=["trivial", "suite", "mtu-native", "agent-loop"], action="append")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    loads: list[Workload | None] = []
    if not args.only or "trivial" in args.only:
        loads.append(trivial_workload(args.trivial_samples))
    if not args.only or "suite" in args.only:
        loads.append(suite_workload(args.suite_copies))
    if not args.only or "mtu-native" in args.only:
        mtu = mtu_workload(args.data)
        if mtu is None:
            print(f"MTU-Bench data not found under {args.data}: mtu-native skipped", file=sys.stderr)
        loads.append(mtu)
    if not args.only or "agent-loop" in args.only:
        loads.append(agent_workload(args.agent_samples))
    rows = [measure(w, args.repeat, args.concurrency) for w in loads if w is not None]
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    header = [
        "workload", "samples", "calls", "storing a call, CPU ms: without → with", "added per sample",
        "CPU ms/sample off → on", "wall ms/sample off → on", "store per sample off → on", "requests whole → blobs",
        "read ms/sample",
    ]  # fmt: skip
    print("| " + " | ".join(header) + " |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        n = r["samples"]
        cells = [
            r["workload"],
            f"{n:,}",
            f"{r['calls']:,}",
            f"{r['store_path_ms_per_call_off']:.3f} → {r['store_path_ms_per_call_on']:.3f}",
            f"{r['store_path_ms_per_sample_added']:.3f} ms",
            f"{r['cpu_ms_per_sample_off']:.3f} → {r['cpu_ms_per_sample_on']:.3f}",
            f"{r['ms_per_sample_off']:.3f} → {r['ms_per_sample_on']:.3f}",
            f"{r['store_bytes_off'] / n:,.0f} B → {r['store_bytes_on'] / n:,.0f} B",
            f"{size(r['requests_whole_bytes'])} → {size(r['blob_bytes'])} ({r['blobs']:,} blobs)",
            f"{r['read_ms_per_sample']:.2f}",
        ]
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
