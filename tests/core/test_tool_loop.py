"""The one tool loop and its backends: replay (fast), MCP and the code workspace (real sandbox where it exists)."""

from __future__ import annotations

import json
import tempfile
from typing import Any

import pytest

from helpers.episode_helpers import FakeMcpClient, in_episode
from toolgauge.engine import EpisodeContext
from toolgauge.errors import ModelError
from toolgauge.models.offline import ScriptedClient
from toolgauge.records import AssistantTurn, Message, ModelRequest, ToolCall, ToolSpec
from toolgauge.sandbox import detect_sandbox
from toolgauge.tools import (
    MAX_TOOL_OUTPUT_CHARS,
    CodeWorkspace,
    McpBackend,
    McpServerSession,
    ReplayBackend,
    ToolCallOutcome,
    ToolTranscript,
    call_key,
    launch_mcp_backend,
    run_tool_loop,
    tool_specs,
)

# Generated code runs only under bubblewrap; elsewhere a launch is refused (tested in test_sandbox.py).
HAVE_SANDBOX = detect_sandbox() == "bwrap"
NEEDS_SANDBOX = pytest.mark.skipif(not HAVE_SANDBOX, reason="bubblewrap sandbox not available here")

ADD = ToolSpec(
    name="add",
    description="Add two integers.",
    parameters={"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}},
)
OPENING = [Message(role="system", content="You are a helpful assistant."), Message(role="user", content="2 + 3?")]
TINY_SERVER = '''from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

mcp = MCPServer("adder")


@mcp.tool()
def add(a: int, b: int) -> dict:
    """Add two integers."""
    if a < 0:
        raise ToolError("a must be non-negative")
    return {"sum": a + b}


if __name__ == "__main__":
    mcp.run()
'''


def call(tool: str, call_id: str | None = "c1", **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": tool, "arguments": arguments, "id": call_id}]}


def adder(**extra: ToolCallOutcome | str) -> ReplayBackend:
    """A replay backend that knows 2 + 3 (and whatever ``extra`` records, keyed by call_key)."""
    return ReplayBackend([ADD], {call_key("add", {"a": 2, "b": 3}): '{"sum": 5}', **extra})


async def loop(tmp_path, client: ScriptedClient, backend: Any, max_steps: int = 10, **kw: Any) -> ToolTranscript:
    async def body(ctx: EpisodeContext) -> ToolTranscript:
        return await run_tool_loop(ctx, OPENING, backend, max_steps, role="agent", **kw)

    return await in_episode(tmp_path, body, ToolTranscript, agent=client)


# -- the loop, with a scripted model and recorded tool outputs ------------------------------------------
async def test_calls_go_through_the_backend_and_the_final_answer_ends_the_loop(tmp_path):
    client = ScriptedClient([call("add", a=2, b=3), "It is 5."], record_requests=True)
    backend = adder()
    before = list(OPENING)
    transcript = await loop(tmp_path, client, backend)
    assert transcript.stopped == "answer" and transcript.final_answer == "It is 5." and transcript.model_steps == 2
    assert [c.name for c in transcript.tool_calls] == ["add"] and backend.calls[0].arguments == {"a": 2, "b": 3}
    step = transcript.steps[0]
    assert (step.step, step.result.text, step.result.is_error) == (0, '{"sum": 5}', False)
    # The model of role "agent" was offered the backend's tools and read the result as a tool message.
    assert client.requests[0].tools == [ADD]
    tool_msg = client.requests[1].messages[-1]
    assert (tool_msg.role, tool_msg.tool_call_id, tool_msg.name, tool_msg.content) == (
        "tool",
        "c1",
        "add",
        '{"sum": 5}',
    )
    assert [m.role for m in transcript.messages] == ["system", "user", "assistant", "tool", "assistant"]
    assert transcript.observations(0) == ['{"sum": 5}'] and transcript.observations(1) == []
    assert before == OPENING  # the caller's messages are not changed


async def test_the_loop_stops_after_max_steps(tmp_path):
    client = ScriptedClient([call("add", a=2, b=3)], cycle=True)
    transcript = await loop(tmp_path, client, adder(), max_steps=3)
    assert (transcript.stopped, transcript.final_answer, transcript.model_steps) == ("max_steps", None, 3)
    assert client.request_count == 3 and len(transcript.steps) == 3


async def test_unknown_tools_and_undecodable_arguments_are_answered_without_running_them(tmp_path):
    broken = ToolCall(name="add", id="c2", raw="{a: 2", parse_error="Expecting property name")
    turn = AssistantTurn(tool_calls=[ToolCall(name="nope", id="c1"), broken])
    backend = adder()
    transcript = await loop(tmp_path, ScriptedClient([turn, "done"]), backend)
    unknown, bad = (s.result for s in transcript.steps)
    assert unknown.text == "Error: unknown tool 'nope'; available tools: add."
    assert (unknown.failure, unknown.is_error) == ("unknown_tool", True)
    assert bad.text == "Error: the arguments could not be decoded (Expecting property name); send a JSON object."
    assert (bad.failure, bad.is_error) == ("bad_arguments", True)
    assert backend.calls == []


async def test_a_failure_without_text_reads_as_an_error_and_long_output_is_cut_to_the_shared_limit(tmp_path):
    backend = adder(
        **{
            call_key("add", {"b": 1}): ToolCallOutcome(failure="timed out after 30 s"),
            call_key("add", {"a": 99, "b": 1}): "x" * (MAX_TOOL_OUTPUT_CHARS + 1000),
        }
    )
    client = ScriptedClient([call("add", b=1), call("add", a=99, b=1), "ok"])
    failed, long = (s.result for s in (await loop(tmp_path, client, backend)).steps)
    assert (failed.text, failed.is_error, failed.failure) == (
        "Error: timed out after 30 s",
        True,
        "timed out after 30 s",
    )
    assert long.text == "x" * MAX_TOOL_OUTPUT_CHARS + "\n... [1000 more characters cut]" and not long.is_error


async def test_missing_call_ids_are_made_up_per_step_and_call(tmp_path):
    turn = AssistantTurn(tool_calls=[ToolCall(name="add", arguments={"a": 2, "b": 3})] * 2)
    client = ScriptedClient([turn, "5"], record_requests=True)
    await loop(tmp_path, client, adder())
    ids = [m.tool_call_id for m in client.requests[1].messages if m.role == "tool"]
    assert ids == ["call_0_0", "call_0_1"]


class Finishing:
    """A backend whose ``finish`` tool ends the loop."""

    def __init__(self) -> None:
        self.ran: list[str] = []

    async def list_tools(self) -> list[ToolSpec]:
        return [ToolSpec(name="finish"), ToolSpec(name="note")]

    async def call(self, call: ToolCall) -> ToolCallOutcome:
        self.ran.append(call.name)
        return ToolCallOutcome(text="Finished.", stop=True) if call.name == "finish" else ToolCallOutcome(text="ok")


async def test_a_backend_can_end_the_loop_after_the_step(tmp_path):
    turn = AssistantTurn(tool_calls=[ToolCall(name="finish", id="a"), ToolCall(name="note", id="b")])
    backend = Finishing()
    client = ScriptedClient([turn, "never asked"])
    transcript = await loop(tmp_path, client, backend)
    # The rest of the step still runs; the model is not asked again.
    assert backend.ran == ["finish", "note"] and client.request_count == 1
    assert transcript.stopped == "tool" and transcript.final_answer is None


class Raising:
    async def list_tools(self) -> list[ToolSpec]:
        return [ADD]

    async def call(self, call: ToolCall) -> ToolCallOutcome:
        raise RuntimeError("boom")


async def test_a_backend_that_raises_is_a_failed_call_and_the_loop_goes_on(tmp_path):
    client = ScriptedClient([call("add", a=1, b=1), "sorry"])
    transcript = await loop(tmp_path, client, Raising())
    result = transcript.steps[0].result
    assert (result.text, result.failure, result.is_error) == (
        "Error: the tool call failed: RuntimeError: boom",
        "boom",
        True,
    )
    assert transcript.stopped == "answer"


async def test_a_model_error_ends_the_loop_with_the_error_kept(tmp_path):
    answers = iter([AssistantTurn(tool_calls=[ToolCall(name="add", arguments={"a": 2, "b": 3}, id="c")])])

    def policy(request: ModelRequest) -> AssistantTurn:
        turn = next(answers, None)
        if turn is None:
            raise ModelError("HTTP 400: context too long")
        return turn

    transcript = await loop(tmp_path, ScriptedClient(policy=policy), adder())
    assert (transcript.stopped, transcript.model_error, transcript.model_steps) == (
        "model_error",
        "HTTP 400: context too long",
        1,
    )
    assert len(transcript.steps) == 1 and transcript.final_answer is None


# -- the replay backend ---------------------------------------------------------------------------------
async def test_replay_matches_arguments_in_any_key_order_and_reports_what_it_lacks():
    backend = ReplayBackend.from_pairs([ADD], [(ToolCall(name="add", arguments={"b": 3, "a": 2}), "5")])
    assert (await backend.call(ToolCall(name="add", arguments={"a": 2, "b": 3}))).text == "5"
    missing = await backend.call(ToolCall(name="add", arguments={"a": 1}))
    assert (missing.text, missing.failure, missing.is_error) == (
        'Error: no recorded answer for add({"a": 1})',
        "no_recording",
        True,
    )
    assert (await backend.call(ToolCall(name="sub"))).failure == "unknown_tool"
    assert [c.arguments for c in backend.calls] == [{"a": 2, "b": 3}, {"a": 1}, {}]


# -- the MCP backend ------------------------------------------------------------------------------------
async def test_mcp_tool_names_chat_apis_refuse_are_offered_cleaned_and_called_by_the_servers_name(tmp_path):
    wire = {"description": "Add.", "inputSchema": ADD.parameters}
    tools = [{"name": "calc.add", **wire}, {"name": "calc add", **wire}, {"name": "ok_name", **wire}, {}]
    client = FakeMcpClient()
    with tempfile.TemporaryFile("w+") as errlog:
        backend = McpBackend(McpServerSession(client, tools, errlog, "script"))  # type: ignore[arg-type]
        # "calc.add" and "calc add" both clean to "calc_add"; the second gets a suffix; the nameless tool is skipped.
        assert [t.name for t in await backend.list_tools()] == ["calc_add", "calc_add_2", "ok_name"]
        agent = ScriptedClient([call("calc_add_2", a=1, b=2), "3"])
        transcript = await loop(tmp_path, agent, backend)
    assert client.calls == [("calc add", {"a": 1, "b": 2})]
    assert json.loads(transcript.steps[0].result.text) == {"sum": 3}
    assert transcript.steps[0].result.content == [{"type": "text", "text": '{"sum": 3}', "annotations": None}]


def test_tool_specs_map_offered_names_to_the_servers_and_default_a_missing_schema():
    specs, names = tool_specs(
        [{"name": "math.add"}, {"name": "math add"}, {"name": "ok_name", "inputSchema": {"type": "object"}}, {}]
    )
    # "math.add" and "math add" both clean to "math_add"; the second gets a suffix; the nameless tool is skipped.
    assert [s.name for s in specs] == ["math_add", "math_add_2", "ok_name"]
    assert names == {"math_add": "math.add", "math_add_2": "math add", "ok_name": "ok_name"}
    assert specs[0].parameters == {"type": "object", "properties": {}}
    assert specs[2].parameters == {"type": "object"}


@NEEDS_SANDBOX
async def test_the_loop_drives_a_real_sandboxed_mcp_server(tmp_path):
    code = tmp_path / "srv" / "server.py"
    code.parent.mkdir()
    code.write_text(TINY_SERVER)
    client = ScriptedClient([call("add", a=2, b=3), call("add", "c2", a=-1, b=3), "5"], record_requests=True)
    async with launch_mcp_backend(code) as backend:
        transcript = await loop(tmp_path, client, backend)
    ok, refused = (s.result for s in transcript.steps)
    assert json.loads(ok.text) == {"sum": 5} and not ok.is_error and ok.failure is None
    assert refused.is_error and "a must be non-negative" in refused.text
    assert [t.name for t in client.requests[0].tools] == ["add"]
    assert client.requests[0].tools[0].parameters["properties"].keys() == {"a", "b"}


# -- the code workspace ---------------------------------------------------------------------------------
async def test_workspace_writes_only_inside_its_folder(tmp_path):
    folder = tmp_path / "ws"
    space = CodeWorkspace(folder, max_file_bytes=10)
    assert [t.name for t in await space.list_tools()] == ["write_file", "run_python"]
    (tmp_path / "elsewhere").mkdir()
    folder.mkdir()
    (folder / "link").symlink_to(tmp_path / "elsewhere")
    refused = {
        "../evil.py": "Error: '../evil.py' is outside your folder; write only inside it.",
        str(tmp_path / "abs.py"): f"Error: {str(tmp_path / 'abs.py')!r} is not a relative path inside your folder.",
        "link/x.py": "Error: 'link/x.py' is outside your folder; write only inside it.",
    }
    for path, expected in refused.items():
        result = await space.call(ToolCall(name="write_file", arguments={"path": path, "content": "x"}))
        assert (result.text, result.is_error) == (expected, True)
    big = space.write_file("big.txt", "x" * 11)
    assert big.text == "Error: the file is 11 bytes; the limit is 10." and big.is_error
    assert space.write_file("sub/ok.txt", "ok").text == "Wrote sub/ok.txt (2 bytes)."
    assert (folder / "sub" / "ok.txt").read_text() == "ok"
    assert not (tmp_path / "evil.py").exists() and not (tmp_path / "elsewhere" / "x.py").exists()
    wrong = await space.call(ToolCall(name="write_file", arguments={"path": "a"}))
    assert wrong.text == "Error: write_file needs string arguments path and content." and wrong.is_error


@NEEDS_SANDBOX
async def test_run_python_runs_in_the_sandbox_beside_the_written_files(tmp_path):
    folder = tmp_path / "ws"
    script = [
        call("write_file", "w", path="helper.py", content="X = 41\n"),
        call("run_python", "r", code="import helper\nprint(helper.X + 1)\nopen('new.txt', 'w').write('x')"),
        call("run_python", "f", code="import sys\nprint('bad', file=sys.stderr)\nsys.exit(3)"),
        "done",
    ]
    transcript = await loop(tmp_path, ScriptedClient(script), CodeWorkspace(folder))
    wrote, ran, failed = (s.result for s in transcript.steps)
    assert wrote.text == "Wrote helper.py (7 bytes)."
    assert ran.text == "42\n[exit code 0]" and not ran.is_error
    assert failed.is_error and failed.text.startswith("stderr:\nbad\n[failed: exited with code 3")
    # The sandbox works on a copy: what the code wrote is not kept.
    assert sorted(p.name for p in folder.iterdir()) == ["helper.py"]
