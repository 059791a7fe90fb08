"""What masking secrets on the way to the store costs (issue 24 §1).

Every parameter of every statement the store sends passes through ``SecretMasker.parameters``. Two
measurements, with one secret-looking environment variable and one learned URL password (as a user
with ``TOOLGAUGE_API_KEY`` and a ``--model http://user:pw@...`` has):

1. **Per row**: the CPU time to mask one row as the engine writes it: a trivial sample (a 13-byte
   result), a 2 kB result of ordinary text, a 2 kB result full of URLs (each string is then checked for
   a ``user:password@``), and a 2 kB result that holds the key (masked, re-serialised).
2. **Per sample, end to end**: ``benchmarks/overhead.py``'s trivial task (10,000 samples, SQLite store),
   CPU time of the whole process with the masking on, and with it replaced by a pass-through; the two
   alternate, ``--rounds`` times each, and the medians are printed.

    .venv/bin/python benchmarks/secret_masking.py [--samples 10000] [--rounds 5]
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
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from overhead import TrivialBenchmark

from toolgauge.driver import RunOptions, run_benchmark
from toolgauge.engine import EngineConfig
from toolgauge.models.offline import ScriptedClient
from toolgauge.records import AssistantTurn
from toolgauge.redact import SecretMasker, learn_url_credentials
from toolgauge.store.store import Store

KEY = "sk-bench-" + "7" * 40


def _turns(content: str) -> str:
    turn = {"content": content, "tool": {"name": "get_weather", "arguments": {"city": "Paris"}}}
    return json.dumps({"turns": [turn] * 8})


def per_row(repeat: int) -> dict[str, float]:
    """Microseconds of CPU to mask one samples row of each shape."""
    masker = SecretMasker()
    rows = {
        "trivial result (13 B)": json.dumps({"text": "2"}),
        "2 kB of text": _turns("The weather in Paris is sunny " * 5),
        "2 kB with URLs": _turns("see https://example.org/weather " * 5),
        "2 kB holding the key": _turns(f"the key is {KEY} " * 3),
    }
    out = {}
    for name, result in rows.items():
        row = ("20261205-071500-abcdef", f"sample-{name}", "done", result, None, 0.1, 1733382900.0)
        n = repeat if len(result) < 100 else repeat // 10
        start = time.process_time()
        for _ in range(n):
            masker.parameters(row)
        out[name] = round((time.process_time() - start) / n * 1e6, 2)
    return out


def run_trivial(n: int, *, masking: bool) -> float:
    """CPU milliseconds per sample of the trivial task, masking on or off."""
    original = Store._mask_statement
    if not masking:
        Store._mask_statement = lambda self, _c, _k, statement, parameters, _x, _m: (statement, parameters)  # type: ignore[method-assign,assignment]
    try:
        with tempfile.TemporaryDirectory() as tmp:
            client = ScriptedClient(policy=lambda _r: AssistantTurn(content="2"))
            options = RunOptions(
                store_url=f"sqlite:///{tmp}/bench.db", engine=EngineConfig(concurrency=100, show_progress=False)
            )
            start = time.process_time()
            asyncio.run(run_benchmark(TrivialBenchmark(n), "scripted", options, client=client))
            return (time.process_time() - start) / n * 1000
    finally:
        Store._mask_statement = original  # type: ignore[method-assign]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", type=int, default=10_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=20_000, help="rows masked per shape (a tenth for 2 kB rows)")
    a = ap.parse_args()
    os.environ["TOOLGAUGE_API_KEY"] = KEY
    learn_url_credentials("http://user:bench-url-password-55@127.0.0.1:8000/v1")
    result: dict[str, Any] = {"per_row_us": per_row(a.repeat)}
    on: list[float] = []
    off: list[float] = []
    for _ in range(a.rounds):
        off.append(run_trivial(a.samples, masking=False))
        on.append(run_trivial(a.samples, masking=True))
    result["trivial_task_cpu_ms_per_sample"] = {
        "masking_off": round(statistics.median(off), 4),
        "masking_on": round(statistics.median(on), 4),
        "rounds": a.rounds,
        "samples": a.samples,
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    sys.exit(main())
