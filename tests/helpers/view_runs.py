"""Stored runs for the viewer's tests, and the viewer itself started as a real server on 127.0.0.1.

:func:`make_runs` fills a store with real runs: the built-in suite with the gold model, MTU-Bench (real data,
gold, a few items per split: a per-split chart), BFCL (real data, gold, a few entries of four categories: a
per-category chart), the suite against a real endpoint (tests/helpers/chat_stub.py) that
always calls one weather tool (some turns right, most wrong: verdicts and error classes to filter), and a
planted hostile dialogue whose data, model answer and tool call carry markup, script, ``javascript:`` URLs,
entities and a 100,000-character line.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from helpers.chat_stub import ChatStub, completion, is_probe
from helpers.child_process import LineReader
from helpers.cli_helpers import invoke
from helpers.paths import SRC
from toolgauge.benchmarks.suite.loader import builtin_suite_path, load_suite
from toolgauge.store import open_store

SCRIPT = "<script>alert('script')</script>"
IMG = '<img src=x onerror=alert("img")>'
JS_URL = "javascript:alert('url')"
ENTITIES = "&lt;b&gt;not bold&lt;/b&gt; &amp; &#60;i&#62;"
LONG_LINE = "L" * 100_000
HOSTILE = f'{SCRIPT} {IMG} <a href="{JS_URL}">click</a> {ENTITIES}'
HOSTILE_ID = 'hostile-<img src=x onerror=alert("id")>'
HOSTILE_TOOL = "<script>alert('tool')</script>"
KNOWN_SAMPLE = "weather-001"
BFCL_CATEGORIES = "simple_python,multiple,parallel,irrelevance"


VIEW_MODULES = ("starlette", "uvicorn", "altair", "vl_convert")
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


def view_missing(*, browser: bool) -> str | None:
    """Why the viewer's tests cannot run here (the [view] extra, and for ``browser`` playwright and chromium)."""
    for module in (*VIEW_MODULES, *(("playwright",) if browser else ())):
        if importlib.util.find_spec(module) is None:
            return f"{module} is not installed (pip install -e '.[view,dev]'; make setup-dev does)"
    if browser and not Path(CHROMIUM).exists():
        return "Debian's chromium is not installed (apt-get install chromium; make setup-dev does)"
    return None


def skip_or_fail_without(missing: str | None) -> None:
    """Skip the module with the reason where the viewer's packages are missing; fail in CI, which must run it."""
    if missing is None:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI must run the viewer's tests: {missing}", pytrace=False)
    pytest.skip(missing, allow_module_level=True)


@dataclass(frozen=True)
class Runs:
    """The store URL and the id of each run :func:`make_runs` made."""

    url: str
    gold: str
    mtu: str | None
    bfcl: str | None
    mixed: str
    hostile: str


def _run_id(res: Any) -> str:
    assert res.exit_code in (0, 1), res.output
    match = re.search(r"run (\d{8}-\d{6}-[0-9a-f]{6})", res.output)
    assert match, res.output
    return match.group(1)


def hostile_suite(path: Path) -> Path:
    """A suite file of one dialogue whose every text is hostile (user, tool result, assistant, id)."""
    first = json.loads(builtin_suite_path().read_text().splitlines()[0])
    turn = dict(first["turns"][0])
    turn["user"] = f"{HOSTILE}\n{LONG_LINE}"
    turn["tool_results"] = [json.dumps({"html": HOSTILE, "link": JS_URL})]
    turn["assistant"] = HOSTILE
    second = {"user": f"again {SCRIPT}", "expected_calls": [], "assistant": ENTITIES}
    path.write_text(json.dumps({**first, "id": HOSTILE_ID, "turns": [turn, second]}) + "\n")
    return path


def _tool_call_answer(name: str, arguments: Mapping[str, Any]) -> bytes:
    return json.dumps(
        {
            "id": "c", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": None,
                "tool_calls": [{"id": "call_1", "type": "function",
                                "function": {"name": name, "arguments": json.dumps(arguments)}}]}}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
        }
    ).encode()  # fmt: skip


def make_runs(tmp: Path, mtu_dir: Path | None) -> Runs:
    """Fill a SQLite store under ``tmp`` with the runs (MTU-Bench and BFCL only when their data is there)."""
    url = f"sqlite:///{tmp / 'view.db'}"
    gold = _run_id(invoke("eval", "suite", "--model", "gold", "--store", url, "-q"))
    mtu = None
    if mtu_dir is not None and mtu_dir.is_dir():
        mtu = _run_id(invoke("eval", "mtu-bench", "--data", mtu_dir, "--model", "gold", "--limit", "4", "--store", url,
                             "-q"))  # fmt: skip

    bfcl = None
    bfcl_dir = None if mtu_dir is None else mtu_dir.parent / "bfcl"
    if bfcl_dir is not None and bfcl_dir.is_dir():
        bfcl = _run_id(invoke("eval", "bfcl", "--data", bfcl_dir, "--categories", BFCL_CATEGORIES, "--model", "gold",
                              "--limit", "3", "--store", url, "-q"))  # fmt: skip

    def weather_always(request: dict[str, Any], _headers: Mapping[str, str]) -> tuple[int, bytes]:
        if is_probe(request):
            return 200, completion("ok")
        return 200, _tool_call_answer("get_current_weather", {"city": "Lisbon"})

    with ChatStub(weather_always) as stub:
        mixed = _run_id(invoke("eval", "suite", "--model", stub.model("weather-bot"), "--store", url, "--limit", "6",
                               "--max-retries", "0", "-q"))  # fmt: skip
    answers = iter(range(1_000_000))

    def hostile(request: dict[str, Any], _headers: Mapping[str, str]) -> tuple[int, bytes]:
        if is_probe(request):
            return 200, completion("ok")
        if next(answers) % 2 == 0:
            return 200, _tool_call_answer(HOSTILE_TOOL, {"q": HOSTILE, "url": JS_URL, "long": LONG_LINE})
        return 200, completion(f"{HOSTILE}\n{LONG_LINE}")

    data = hostile_suite(tmp / "hostile.jsonl")
    with ChatStub(hostile) as stub:
        bad = _run_id(invoke("eval", "suite", "--data", data, "--model", stub.model("hostile-model"), "--store", url,
                             "--max-retries", "0", "--concurrency", "1", "-q"))  # fmt: skip
    return Runs(url=url, gold=gold, mtu=mtu, bfcl=bfcl, mixed=mixed, hostile=bad)


@contextmanager
def view_server(store_url: str, *args: str, timeout: float = 60.0) -> Iterator[str]:
    """``toolgauge view`` in a subprocess on a free port; yields the URL it printed (with ``?token=`` if any)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC),
                                                        os.environ.get("PYTHONPATH", "")])}  # fmt: skip
    proc = subprocess.Popen(
        [sys.executable, "-m", "toolgauge.cli", "view", "--store", store_url, "--port", "0", *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    try:
        assert proc.stderr is not None
        lines = LineReader(proc.stderr).until(lambda line: "toolgauge view: " in line, timeout=timeout)
        match = re.search(r"(http://\S+)", lines[-1])
        assert match is not None, f"the viewer did not start: {lines!r}"
        yield match.group(1)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=60)


def store_sample_keys(url: str, run_id: str) -> list[str]:
    """The stored sample keys of a run."""
    st = open_store(url, create=False)
    try:
        return sorted(st.sample_states(run_id))
    finally:
        st.close()


@dataclass(frozen=True)
class SweepRuns:
    """A store with one sweep of the built-in suite: the gold model and two replays that fail known turns."""

    url: str
    sweep: str
    gold: str
    replay: str
    failing: list[str]  # the units the replay fails (turn 0 of every third dialogue that calls a tool)
    replay2: str
    failing2: list[str]  # the units the second replay fails (turn 0 of every second dialogue that calls a tool)


def failing_every(every: int) -> list[str]:
    """The units a replay of :func:`write_replay_every` gets wrong: turn 0 of every ``every``-th dialogue with calls."""
    dialogues = load_suite(builtin_suite_path())
    return [f"{d.id}#0" for i, d in enumerate(dialogues) if i % every == 0 and d.turns[0].expected_calls]


def write_replay_every(path: Path, every: int) -> None:
    """The gold answers of the suite with the calls of turn 0 removed in every ``every``-th dialogue."""
    lines = []
    for i, dialogue in enumerate(load_suite(builtin_suite_path())):
        for t, turn in enumerate(dialogue.turns):
            calls = [] if (i % every == 0 and t == 0) else [c.model_dump(mode="json") for c in turn.expected_calls]
            lines.append({"id": dialogue.id, "turn": t, "content": None if calls else "Sorry.", "tool_calls": calls})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


def make_sweep(tmp: Path) -> SweepRuns:
    """Run ``toolgauge sweep`` (gold and two replays, the whole built-in suite) into a SQLite store under ``tmp``.

    Ranked by success rate: gold (every turn), the replay (fails turn 0 of every third dialogue), the second
    replay (of every second one).
    """
    url = f"sqlite:///{tmp / 'sweep.db'}"
    replay, replay2 = tmp / "replay.jsonl", tmp / "replay2.jsonl"
    write_replay_every(replay, 3)
    write_replay_every(replay2, 2)
    sweep_file = tmp / "SWEEP.toml"
    sweep_file.write_text(
        f'epochs = 1\nseed = 0\n[[model]]\nspec = "gold"\n[[model]]\nspec = "replay:{replay}"\n'
        f'[[model]]\nspec = "replay:{replay2}"\n[[benchmark]]\nname = "suite"\n'
    )
    doc = run_sweep(sweep_file, url)
    runs = {cell["model"]: cell["run"] for cell in doc["cells"]}

    def run_of(file: Path) -> str:
        return next(run for model, run in runs.items() if model.endswith(file.name))

    return SweepRuns(url=url, sweep=doc["sweep"], gold=runs["gold"], replay=run_of(replay), failing=failing_every(3),
                     replay2=run_of(replay2), failing2=failing_every(2))  # fmt: skip


@dataclass(frozen=True)
class ChartSweep:
    """A store with a sweep whose run has charts: the gold model on a few BFCL entries of four categories."""

    url: str
    sweep: str
    run: str


def run_sweep(sweep_file: Path, url: str) -> dict[str, Any]:
    """``toolgauge sweep SWEEP_FILE --store URL --json``'s document.

    In a process of its own: the browser tests' Playwright keeps an event loop running in this thread.
    """
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC),
                                                        os.environ.get("PYTHONPATH", "")])}  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "toolgauge.cli", "sweep", str(sweep_file), "--store", url, "--json"],
        capture_output=True, text=True, env=env, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def chart_sweep_report(tmp: Path) -> tuple[ChartSweep, Path]:
    """A BFCL sweep of the gold model (:func:`make_chart_sweep`) and its ``report SWEEP --html`` file; skips
    without the BFCL data."""
    from conftest import shared_data_dir

    bfcl = shared_data_dir() / "bfcl"
    if not bfcl.is_dir():
        pytest.skip(f"BFCL data not found at {bfcl} (set TOOLGAUGE_SHARED_DATA)")
    swept = make_chart_sweep(tmp, bfcl)
    out = tmp / "charts.html"
    assert invoke("report", swept.sweep, "--store", swept.url, "--html", out).exit_code == 0
    return swept, out


def make_chart_sweep(tmp: Path, bfcl_dir: Path) -> ChartSweep:
    """Run ``toolgauge sweep`` of the gold model on BFCL (real data, per-category chart) into a store under ``tmp``."""
    url = f"sqlite:///{tmp / 'charts.db'}"
    sweep_file = tmp / "CHARTS.toml"
    categories = ", ".join(f'"{c}"' for c in BFCL_CATEGORIES.split(","))
    sweep_file.write_text(
        f'[[model]]\nspec = "gold"\n[[benchmark]]\nname = "bfcl"\ndata = "{bfcl_dir}"\n'
        f"categories = [{categories}]\nlimit = 3\n"
    )
    doc = run_sweep(sweep_file, url)
    [cell] = doc["cells"]
    return ChartSweep(url=url, sweep=doc["sweep"], run=cell["run"])
