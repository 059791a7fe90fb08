"""Tool-Genesis level 4: the proxy agent over MCP and the completeness judge."""

from __future__ import annotations

import json
import tempfile
from typing import Any

import pytest

from helpers.episode_helpers import FakeMcpClient, in_episode
from toolgauge.benchmarks.tool_genesis.agent import (
    AgentTrajectory,
    JudgeVerdict,
    build_judge_prompt,
    conversation_history,
    judge_task,
    solve_task,
)
from toolgauge.engine import EpisodeContext
from toolgauge.errors import ModelError
from toolgauge.models.offline import ScriptedClient
from toolgauge.records import AssistantTurn, Message, ModelRequest, ToolSpec
from toolgauge.sandbox import detect_sandbox
from toolgauge.tools import McpBackend, McpServerSession, ReplayBackend, ToolCallOutcome, call_key, launch_mcp_backend

# Generated code runs only under bubblewrap; elsewhere a launch is refused (tested in test_sandbox.py).
HAVE_SANDBOX = detect_sandbox() == "bwrap"

TINY_SERVER = '''from mcp.server import MCPServer
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
TASK = "What is 2 + 3? Use the tools."
ADD_SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}
ADD_NUMBERS = ToolSpec(name="add_numbers", description="Add two integers.", parameters=ADD_SCHEMA)


def call(tool: str, call_id: str = "c1", **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": tool, "arguments": arguments, "id": call_id}]}


def recorded_adder() -> ReplayBackend:
    """add_numbers with recorded answers: a call without ``a`` timed out, ``a=99`` answers 5000 characters."""
    return ReplayBackend(
        [ADD_NUMBERS],
        {
            call_key("add_numbers", {"b": 1}): ToolCallOutcome(failure="timed out after 30 s"),
            call_key("add_numbers", {"a": 99, "b": 1}): "x" * 5000,
            call_key("add_numbers", {"a": 1, "b": 1}): json.dumps({"sum": 2}),
        },
    )


# -- the agent -----------------------------------------------------------------------------------------
@pytest.mark.skipif(not HAVE_SANDBOX, reason="bubblewrap sandbox not available here")
async def test_scripted_agent_solves_a_task_on_a_real_sandboxed_server(tmp_path):
    code = tmp_path / "srv" / "server.py"
    code.parent.mkdir()
    code.write_text(TINY_SERVER)
    agent = ScriptedClient([call("add_numbers", a=2, b=3), "2 + 3 = 5."], record_requests=True)

    async def body(ctx: EpisodeContext) -> AgentTrajectory:
        async with launch_mcp_backend(code) as backend:
            return await solve_task(ctx, TASK, backend)

    traj = await in_episode(tmp_path, body, AgentTrajectory, agent=agent)
    assert traj.stopped == "answer" and traj.final_answer == "2 + 3 = 5."
    assert [c.name for c in traj.tool_calls] == ["add_numbers"]
    assert json.loads(traj.steps[0].result.text) == {"sum": 5} and traj.steps[0].result.is_error is False
    # The agent was offered the server's live tools and got the result back as a tool message.
    first = agent.requests[0]
    assert [t.name for t in first.tools] == ["add_numbers"]
    assert first.tools[0].parameters["properties"].keys() == {"a", "b"}
    tool_msg = agent.requests[1].messages[-1]
    assert tool_msg.role == "tool" and tool_msg.tool_call_id == "c1" and json.loads(tool_msg.content) == {"sum": 5}
    assert [m.role for m in traj.messages] == ["system", "user", "assistant", "tool", "assistant"]


async def test_agent_stops_at_max_steps_and_reports_bad_calls(tmp_path):
    backend = recorded_adder()
    agent = ScriptedClient(
        [call("nope"), call("add_numbers", b=1), call("add_numbers", a=99, b=1), call("add_numbers", a=1, b=1)]
    )

    async def body(ctx: EpisodeContext) -> AgentTrajectory:
        return await solve_task(ctx, TASK, backend, max_steps=3)

    traj = await in_episode(tmp_path, body, AgentTrajectory, agent=agent)
    assert traj.stopped == "max_steps" and traj.final_answer is None and traj.model_steps == 3
    assert agent.request_count == 3
    unknown, failed, long = (s.result for s in traj.steps)
    assert unknown.text == "Error: unknown tool 'nope'; available tools: add_numbers."
    assert unknown.failure == "unknown_tool" and (backend.calls[0].name, backend.calls[0].arguments) == (
        "add_numbers",
        {"b": 1},
    )
    assert failed.text == "Error: timed out after 30 s" and failed.is_error
    assert long.text.startswith("x" * 4000) and long.text.endswith("[1000 more characters cut]")


async def test_agent_model_error_ends_the_trajectory_without_raising(tmp_path):
    def boom(request: ModelRequest) -> AssistantTurn:
        raise ModelError("HTTP 400")

    async def body(ctx: EpisodeContext) -> AgentTrajectory:
        return await solve_task(ctx, TASK, recorded_adder())

    traj = await in_episode(tmp_path, body, AgentTrajectory, agent=ScriptedClient(policy=boom))
    assert traj.stopped == "model_error" and traj.errors == ["step 0: model error: HTTP 400"]


async def test_agent_calls_the_server_by_its_own_tool_name(tmp_path):
    client = FakeMcpClient()
    tools = [{"name": "calc.add_numbers", "description": "Add two integers.", "inputSchema": ADD_SCHEMA}]
    agent = ScriptedClient([call("calc_add_numbers", a=1, b=2), "3"])
    with tempfile.TemporaryFile("w+") as errlog:
        backend = McpBackend(McpServerSession(client, tools, errlog, "script"))  # type: ignore[arg-type]

        async def body(ctx: EpisodeContext) -> AgentTrajectory:
            return await solve_task(ctx, TASK, backend)

        traj = await in_episode(tmp_path, body, AgentTrajectory, agent=agent)
    assert client.calls == [("calc.add_numbers", {"a": 1, "b": 2})]
    assert json.loads(traj.steps[0].result.text) == {"sum": 3}


# -- the judge -----------------------------------------------------------------------------------------
def rated(label: str) -> str:
    return f"<response><completeness><reasoning>ok</reasoning><rating>{label}</rating></completeness></response>"


def finished_trajectory() -> AgentTrajectory:
    return AgentTrajectory(
        task=TASK,
        messages=[Message(role="system", content="s"), Message(role="user", content=TASK),
                  Message(role="assistant", content="It is 5.")],
        final_answer="It is 5.",
    )  # fmt: skip


async def test_judge_variant_decides_whether_a_bare_rating_tag_counts(tmp_path):
    # reference reads the XML like the official parser: a bare <rating> element is the root, and
    # root.find(".//rating") searches below it, so nothing is found; strict falls back to the tag.
    bare = "<rating>fully complete</rating>"
    for variant, expected in (("reference", (0, 3)), ("strict", (5, 1))):
        judge = ScriptedClient([bare], cycle=True)

        async def body(ctx: EpisodeContext, variant: str = variant) -> JudgeVerdict:
            return await judge_task(ctx, TASK, finished_trajectory(), variant=variant)  # type: ignore[arg-type]

        verdict = await in_episode(tmp_path / variant, body, JudgeVerdict, judge=judge)
        assert (verdict.score, verdict.attempts) == expected


async def test_judge_reads_the_rating_first_time(tmp_path):
    judge = ScriptedClient([rated("mostly complete")], record_requests=True)

    async def body(ctx: EpisodeContext) -> JudgeVerdict:
        return await judge_task(ctx, TASK, finished_trajectory())

    verdict = await in_episode(tmp_path, body, JudgeVerdict, judge=judge)
    assert (verdict.score, verdict.attempts, verdict.reasoning) == (4, 1, "ok")
    prompt = judge.requests[0].messages[-1].content
    assert TASK in prompt and '"content": "It is 5."' in prompt and "<rating>" in prompt


async def test_judge_retries_unparsable_output_then_succeeds(tmp_path):
    judge = ScriptedClient(
        ["I think it is fine", "<rating>superb</rating>", rated("fully complete")], record_requests=True
    )

    async def body(ctx: EpisodeContext) -> JudgeVerdict:
        return await judge_task(ctx, TASK, finished_trajectory())

    verdict = await in_episode(tmp_path, body, JudgeVerdict, judge=judge)
    assert (verdict.score, verdict.attempts) == (5, 3)
    # Each retry differs in its seed, so a cached answer is not served again.
    assert [r.options.seed for r in judge.requests] == [None, 1, 2]


async def test_judge_gives_zero_after_three_unparsable_answers(tmp_path):
    judge = ScriptedClient(["no", "still no", "nope", rated("fully complete")])

    async def body(ctx: EpisodeContext) -> JudgeVerdict:
        return await judge_task(ctx, TASK, finished_trajectory())

    verdict = await in_episode(tmp_path, body, JudgeVerdict, judge=judge)
    assert (verdict.score, verdict.attempts, verdict.raw) == (0, 3, "nope")
    assert judge.request_count == 3


async def test_judge_model_errors_count_as_attempts(tmp_path):
    answers = iter([ModelError("HTTP 500"), rated("incomplete")])

    def policy(request: ModelRequest) -> AssistantTurn:
        item = next(answers)
        if isinstance(item, Exception):
            raise item
        return AssistantTurn(content=item)

    async def body(ctx: EpisodeContext) -> JudgeVerdict:
        return await judge_task(ctx, TASK, finished_trajectory())

    verdict = await in_episode(tmp_path, body, JudgeVerdict, judge=ScriptedClient(policy=policy))
    assert (verdict.score, verdict.attempts) == (2, 2)
    assert verdict.errors == ["attempt 1: model error: HTTP 500"]


def test_judge_prompt_fills_each_slot_once_and_cuts_long_histories():
    traj = finished_trajectory()
    prompt = build_judge_prompt("task mentions {history} literally", traj)
    assert "task mentions {history} literally" in prompt
    assert prompt.count('"content": "It is 5."') == 1
    long = AgentTrajectory(task=TASK, messages=[Message(role="tool", content="y" * 50_000)])
    text = conversation_history(long, limit=3000)
    assert len(text) < 3100 and "characters cut" in text and text.rstrip().endswith("]")
