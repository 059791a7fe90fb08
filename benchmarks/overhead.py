"""Harness overhead per sample: toolgauge's engine vs Inspect AI's mockllm on the same trivial task.

The task: each sample asks "What is 1 + 1?"; the scripted model answers "2"; the scorer checks
the answer. The model costs nothing, so the time per sample is the harness itself: scheduling,
request hashing, store writes (SQLite, as a user would run it), scoring and the typed results.

    .venv/bin/python benchmarks/overhead.py --samples 10000
    .venv/bin/python benchmarks/overhead.py --samples 10000 --inspect-python /tmp/inspect-venv/bin/python

The Inspect side runs in its own interpreter (inspect-ai is not a toolgauge dependency):
``python3 -m venv /tmp/inspect-venv && /tmp/inspect-venv/bin/pip install inspect-ai``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from toolgauge.driver import RunOptions, run_benchmark
from toolgauge.engine import EngineConfig, EpisodeContext, SampleOutcome
from toolgauge.models.offline import ScriptedClient
from toolgauge.records import AssistantTurn, Message
from toolgauge.results import EvalResults, Metric, ScoredRun


class Answer(BaseModel):
    text: str | None


class NoOptions(BaseModel):
    """A benchmark without options."""


class TrivialBenchmark:
    name = "overhead"
    result_type = Answer

    options = NoOptions()  # the stored config is the sample count alone

    def __init__(self, n: int):
        self.n = n

    def samples(self) -> list[tuple[str, str]]:
        return [(f"s{i}", "What is 1 + 1?") for i in range(self.n)]

    def config(self) -> dict[str, Any]:  # what a tree before the options seam (issue 23) stores instead
        return {"n": self.n}

    async def episode(self, sample: str, ctx: EpisodeContext) -> Answer:
        turn = await ctx.generate([Message(role="user", content=sample)])
        return Answer(text=turn.content)

    def score(self, samples: Sequence[tuple[str, str]], outcomes: Sequence[SampleOutcome[Answer]]) -> ScoredRun:
        correct = sum(1 for o in outcomes if o.result and (o.result.text or "").strip() == "2")
        accuracy = Metric(name="accuracy", value=correct / len(samples), n=len(samples))
        return ScoredRun(EvalResults(benchmark=self.name, metrics=[accuracy]))

    def replay_table(self, path: Path) -> Mapping[str, Sequence[AssistantTurn]]:
        return {}


def run_toolgauge(n: int, concurrency: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        client = ScriptedClient(policy=lambda _r: AssistantTurn(content="2"))
        options = RunOptions(
            store_url=f"sqlite:///{tmp}/bench.db",
            engine=EngineConfig(concurrency=concurrency, show_progress=False),
        )
        t0 = time.perf_counter()
        result = asyncio.run(run_benchmark(TrivialBenchmark(n), "scripted", options, client=client))
        wall = time.perf_counter() - t0
    assert result.scored.results.value("accuracy") == 1.0
    return {
        "harness": "toolgauge",
        "samples": n,
        "wall_s": round(wall, 3),
        "ms_per_sample": round(wall / n * 1000, 4),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


INSPECT_SCRIPT = textwrap.dedent(
    """
    import json, resource, sys, tempfile, time
    from inspect_ai import Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ModelOutput, ModelUsage, get_model
    from inspect_ai.scorer import match
    from inspect_ai.solver import generate

    n, max_samples = int(sys.argv[1]), int(sys.argv[2])

    def answer(input, tools, tool_choice, config):
        out = ModelOutput.from_content("mockllm/model", "2")
        out.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)  # offline: no tiktoken
        return out

    task = Task(dataset=[Sample(input="What is 1 + 1?", target="2") for _ in range(n)],
                solver=generate(), scorer=match())
    model = get_model("mockllm/model", custom_outputs=answer)
    with tempfile.TemporaryDirectory() as logs:
        t0 = time.perf_counter()
        log = eval(task, model=model, log_dir=logs, display="none", max_samples=max_samples)[0]
        wall = time.perf_counter() - t0
    acc = log.results.scores[0].metrics["accuracy"].value
    print(json.dumps({"harness": "inspect_ai", "samples": n, "wall_s": round(wall, 3),
                      "ms_per_sample": round(wall / n * 1000, 4), "accuracy": acc,
                      "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}))
    """
)


def run_inspect(python: str, n: int, max_samples: int) -> dict[str, Any]:
    proc = subprocess.run(
        [python, "-c", INSPECT_SCRIPT, str(n), str(max_samples)], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        return {"harness": "inspect_ai", "error": proc.stderr.strip().splitlines()[-1:]}
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", type=int, default=10_000)
    ap.add_argument("--concurrency", type=int, default=100)
    ap.add_argument("--inspect-python", default=None, help="interpreter with inspect-ai installed")
    a = ap.parse_args()
    rows = [run_toolgauge(a.samples, a.concurrency)]
    if a.inspect_python:
        rows.append(run_inspect(a.inspect_python, a.samples, a.concurrency))
        if "ms_per_sample" in rows[1]:
            rows.append({"ratio_inspect_over_toolgauge": round(rows[1]["ms_per_sample"] / rows[0]["ms_per_sample"], 1)})
    for row in rows:
        print(json.dumps(row))


if __name__ == "__main__":
    sys.exit(main())
