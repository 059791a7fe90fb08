"""A run's 95% intervals are a function of its stored verdicts and seed only (docs/statistics.md).

The case reported: an HTTP run of BFCL simple_python + multiple at concurrency 4 printed one interval at the end
of ``eval`` and another from ``rescore`` of the same stored run (a rescore loads the categories sorted, so the
units came in another order, and the bootstrap followed it). Here a real endpoint answers after a seeded random
delay (samples finish out of order), right for some entries and wrong for others, and the interval ``eval``
prints and stores must be the one every ``rescore`` prints and returns. A sweep run by the local executor and
by Ray (shards of samples finishing in any order) gives the same intervals, not only the same means.
"""

from __future__ import annotations

import importlib.util
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from helpers.chat_stub import ChatStub, completion, is_probe
from helpers.cli_helpers import invoke, results_of
from helpers.ray_cluster import RAY_ENV
from toolgauge.benchmarks.bfcl.io import bfcl_gold_turn
from toolgauge.benchmarks.bfcl.loader import load_bfcl
from toolgauge.records import ToolCall
from toolgauge.results import EvalResults
from toolgauge.selection import limit_items

pytestmark = pytest.mark.slow  # real runs over HTTP, and a local Ray instance

# Given unsorted, as in the report: eval keeps this order, a rescore loads the categories sorted.
CATEGORIES = ["simple_python", "multiple"]
LIMIT = 20
MAX_DELAY_S = 0.03


class DelayedAnswers:
    """An endpoint that answers each request (``answer``) after a random delay drawn from a seeded generator."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.lock = threading.Lock()

    def answer(self, request: dict[str, Any]) -> bytes:
        raise NotImplementedError

    def __call__(self, request: dict[str, Any], _headers: Mapping[str, str]) -> tuple[int, bytes]:
        if is_probe(request):
            return 200, completion("ok")
        with self.lock:
            delay = self.rng.uniform(0, MAX_DELAY_S)
        time.sleep(delay)  # samples finish in an order of their own; nothing waits on this
        return 200, self.answer(request)


class GoldOrNot(DelayedAnswers):
    """Answers each BFCL entry with its gold call or a refusal (by its place in the data)."""

    def __init__(self, bfcl_dir: Path):
        super().__init__(1234)
        entries = limit_items(load_bfcl(bfcl_dir, CATEGORIES), LIMIT, group=lambda e: e.category)
        self.answers: dict[str, bytes] = {}
        for i, entry in enumerate(entries):
            question = entry.question[0][-1]["content"]
            if i % 3 == 0:  # a third wrong, spread over both categories: intervals of width > 0
                self.answers[question] = completion("I cannot help with that.")
            else:
                turn = bfcl_gold_turn(entry, style="native", underscore_to_dot=True)
                self.answers[question] = tool_calls_body(turn.tool_calls)

    def answer(self, request: dict[str, Any]) -> bytes:
        return self.answers[request["messages"][-1]["content"]]


def tool_calls_body(calls: list[ToolCall]) -> bytes:
    return json.dumps(
        {
            "id": "c", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": None,
                "tool_calls": [{"id": f"call_{i}", "type": "function",
                                "function": {"name": c.name, "arguments": json.dumps(c.arguments)}}
                               for i, c in enumerate(calls)]}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
    ).encode()  # fmt: skip


def summary_lines(stdout: str) -> list[str]:
    """The printed headline block: ``NAME  mean ± stderr  [low, high]  over n clusters, K epochs``."""
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("headline ± stderr"))
    return [line for line in lines[start + 1 :] if " over " in line]


def test_eval_and_every_rescore_give_the_same_interval(bfcl_dir: Path, tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 's.db'}"
    with ChatStub(GoldOrNot(bfcl_dir)) as stub:
        ran = invoke("eval", "bfcl", "-m", stub.model(), "--data", bfcl_dir, "--categories", ",".join(CATEGORIES),
                     "--limit", str(LIMIT), "--concurrency", "4", "--no-cache", "--store", store, "-q")  # fmt: skip
    assert ran.exit_code == 0, ran.output
    printed = summary_lines(ran.stdout)
    assert len(printed) == 1 and printed[0].startswith("accuracy") and " over 40 clusters, 1 epoch" in printed[0]

    stored = results_of(invoke("report", "latest", "--store", store, "--json"))
    spread = stored.summary["accuracy"]
    assert spread.ci_low is not None and spread.ci_high is not None
    assert 0 < spread.ci_low < spread.ci_high < 1  # a third wrong: an interval that can move

    for _ in range(2):  # a second rescore too: nothing is left over from the first
        again = invoke("rescore", "latest", "--store", store)
        assert again.exit_code == 0, again.output
        assert summary_lines(again.stdout) == printed
        as_json = invoke("rescore", "latest", "--store", store, "--json")
        assert as_json.exit_code == 0, as_json.output
        rescored = results_of(as_json)
        assert rescored.summary == stored.summary  # mean, stderr and both ends, to the last bit
        assert _overall(rescored) == _overall(stored)


def _overall(results: EvalResults) -> dict[str, Any]:
    return {m.name: m.value for m in results.overall()}


class SomeRight(DelayedAnswers):
    """Suite turns: a call to the first tool offered (right or not) or a refusal, by a hash of the request."""

    def answer(self, request: dict[str, Any]) -> bytes:
        tools = request.get("tools") or []
        if not tools or zlib.crc32(json.dumps(request["messages"], sort_keys=True).encode()) % 3 == 0:
            return completion("I cannot help with that.")
        return tool_calls_body([ToolCall(name=tools[0]["function"]["name"])])


def test_local_and_ray_executors_give_the_same_intervals(tmp_path: Path) -> None:
    if importlib.util.find_spec("ray") is None:
        if os.environ.get("CI") == "true":  # make test installs the [ray] extra: a skip would hide a broken setup
            pytest.fail("CI must run the Ray tests: ray is not installed")
        pytest.skip("ray is not installed (pip install 'toolgauge[ray]'; make test installs it)")
    sweep_file = tmp_path / "SWEEP.toml"
    with ChatStub(SomeRight(99)) as stub:
        sweep_file.write_text(
            f'epochs = 2\n[[model]]\nspec = "{stub.model()}"\nconcurrency = 4\nno_cache = true\n'
            '[[benchmark]]\nname = "suite"\nlimit = 12\n'
        )
        local = invoke("sweep", sweep_file, "--store", f"sqlite:///{tmp_path / 'local.db'}", "--json")
        assert local.exit_code == 0, local.stderr
        # The local instance's session folder goes to a folder of the test's (short: Ray's socket paths must fit).
        ray_tmp = tempfile.mkdtemp(prefix="tgray", dir="/tmp")
        try:
            ray = subprocess.run(
                [sys.executable, "-m", "toolgauge.cli", "sweep", str(sweep_file), "--executor", "ray",
                 "--shard-size", "3", "--store", f"sqlite:///{tmp_path / 'ray.db'}", "--json"],
                env={**os.environ, **RAY_ENV, "RAY_TMPDIR": ray_tmp}, capture_output=True, text=True, timeout=600,
                check=False,
            )  # fmt: skip
        finally:
            shutil.rmtree(ray_tmp, ignore_errors=True)
    assert ray.returncode == 0, ray.stderr[-3000:]
    (by_local,), (by_ray,) = (json.loads(doc)["cells"] for doc in (local.stdout, ray.stdout))
    assert by_local["status"] == by_ray["status"] == "finished"
    intervals = {name: (m["mean"], m["stderr"], m["ci_low"], m["ci_high"]) for name, m in by_local["metrics"].items()}
    tool = intervals["tool_accuracy"]
    assert tool[2] is not None and tool[3] is not None and 0 < tool[2] < tool[3] < 1  # some right, some wrong
    assert {name: (m["mean"], m["stderr"], m["ci_low"], m["ci_high"]) for name, m in by_ray["metrics"].items()} == (
        intervals
    )
