"""The ``code-agent`` strategy: the model writes, launches and tests its server with tools, in the one tool loop.

The model gets ``write_file`` (only inside the server's own folder), ``launch_server`` (in the sandbox,
through the injected launcher), ``list_tools``, ``call_tool`` and ``finish``, for at most ``max_steps``
model calls (:func:`toolgauge.tools.run_tool_loop`). A reply without tool calls ends the loop; fenced
blocks in it are written as in the direct strategy. The files left in the folder are the result.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from types import TracebackType

from toolgauge.benchmarks.tool_genesis.answer import parse_answer
from toolgauge.benchmarks.tool_genesis.generation import GenerationResult, GenerationStep
from toolgauge.benchmarks.tool_genesis.prompts import agent_messages
from toolgauge.benchmarks.tool_genesis.records import GenesisServer
from toolgauge.benchmarks.tool_genesis.server_files import CODE_FILE, check_files, server_record, write_answer_files
from toolgauge.engine import EpisodeContext
from toolgauge.records import GenerateOptions, ToolCall, ToolSpec
from toolgauge.tools import (
    CodeWorkspace,
    ServerLauncher,
    ServerLaunchError,
    ToolBackend,
    ToolCallOutcome,
    launch_mcp_backend,
    run_tool_loop,
)
from toolgauge.tools.backend import unknown_tool
from toolgauge.tools.workspace import write_file_spec

AGENT_TOOLS = [
    write_file_spec("Write (or replace) a text file in your server folder, e.g. tools.json or server.py."),
    ToolSpec(
        name="launch_server",
        description="Start server.py in the sandbox; reports the listed tools or the launch error.",
        parameters={"type": "object", "properties": {}, "required": []},
    ),
    ToolSpec(
        name="list_tools",
        description="List the tools of the running server.",
        parameters={"type": "object", "properties": {}, "required": []},
    ),
    ToolSpec(
        name="call_tool",
        description="Call one tool of the running server.",
        parameters={
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "Tool name."},
                "arguments": {"type": "object", "description": "Arguments object for the tool."},
            },
            "required": ["name"],
        },
    ),
    ToolSpec(
        name="finish",
        description="Stop working; the files in your folder are the result.",
        parameters={"type": "object", "properties": {}, "required": []},
    ),
]

_NOT_RUNNING = "Error: the server is not running; call launch_server() first."


class CodeAgentBackend:
    """The code agent's tools over one server folder; leaving the context stops the running server."""

    def __init__(self, folder: Path, launcher: ServerLauncher = launch_mcp_backend):
        self.workspace = CodeWorkspace(folder)
        self.launcher = launcher
        self.server: ToolBackend | None = None
        self.finished = False
        self._stack: AsyncExitStack | None = None

    async def __aenter__(self) -> CodeAgentBackend:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop_server()

    async def list_tools(self) -> list[ToolSpec]:
        """The five tools of the code agent."""
        return list(AGENT_TOOLS)

    async def call(self, call: ToolCall) -> ToolCallOutcome:
        """Run one tool of the code agent."""
        args = call.arguments
        if call.name == "write_file":
            return await self.write_file(call)
        if call.name == "launch_server":
            return await self.launch()
        if call.name == "list_tools":
            if self.server is None:
                return ToolCallOutcome.error(_NOT_RUNNING)
            return ToolCallOutcome(text=_describe_tools(await self.server.list_tools()))
        if call.name == "call_tool":
            return await self.call_tool(args.get("name"), args.get("arguments"))
        if call.name == "finish":
            self.finished = True
            return ToolCallOutcome(text="Finished.", stop=True)
        return unknown_tool(call.name, (t.name for t in AGENT_TOOLS))

    async def write_file(self, call: ToolCall) -> ToolCallOutcome:
        """Write a file in the server folder (``CodeWorkspace``); say so when the running server is now stale."""
        result = await self.workspace.call(call)
        path = call.arguments.get("path")
        if not result.is_error and self.server is not None and isinstance(path, str) and path.endswith(".py"):
            note = " The running server still runs the old code; call launch_server() to restart it."
            result = result.model_copy(update={"text": result.text + note})
        return result

    async def launch(self) -> ToolCallOutcome:
        """(Re)start the server in the sandbox and report its tools or the launch error."""
        await self.stop_server()
        code = self.workspace.folder / CODE_FILE
        if not code.is_file():
            return ToolCallOutcome.error(f"Error: there is no {CODE_FILE} yet; write it with write_file first.")
        stack = AsyncExitStack()
        try:
            server = await stack.enter_async_context(self.launcher(code))
            tools = await server.list_tools()
        except ServerLaunchError as exc:  # a launch failure is an observation for the model, not a crash
            await stack.aclose()
            return ToolCallOutcome.error(f"Launch failed ({exc.stage}): {exc.reason}")
        except Exception as exc:
            await stack.aclose()
            return ToolCallOutcome.error(f"Launch failed: {str(exc) or exc.__class__.__name__}")
        self._stack, self.server = stack, server
        return ToolCallOutcome(text="Server started. " + _describe_tools(tools))

    async def call_tool(self, name: object, arguments: object) -> ToolCallOutcome:
        """Call one tool of the running server: ``Result: ...``, ``Tool error: ...`` or ``Call failed: ...``."""
        if self.server is None:
            return ToolCallOutcome.error(_NOT_RUNNING)
        if not isinstance(name, str) or not name:
            return ToolCallOutcome.error("Error: call_tool needs the tool name as a string.")
        if arguments is None:
            arguments = {}
        if isinstance(arguments, str):  # some models send the arguments object as JSON text
            try:
                arguments = json.loads(arguments) if arguments.strip() else {}
            except (ValueError, RecursionError):
                return ToolCallOutcome.error("Error: arguments must be a JSON object.")
        if not isinstance(arguments, dict):
            return ToolCallOutcome.error("Error: arguments must be a JSON object.")
        try:
            outcome = await self.server.call(ToolCall(name=name, arguments=arguments))
        except Exception as exc:  # the server crashed or hung: report it, the loop goes on
            return ToolCallOutcome.error(f"Error: the call failed: {exc.__class__.__name__}: {exc}")
        if outcome.failure:
            text = f"Call failed: {outcome.failure}" + (f"\n{outcome.text}" if outcome.text else "")
            return ToolCallOutcome.error(text)
        prefix = "Tool error: " if outcome.is_error else "Result: "
        return ToolCallOutcome(text=prefix + outcome.text, is_error=outcome.is_error, seconds=outcome.seconds)

    async def stop_server(self) -> None:
        """Stop the running server, if any."""
        stack, self._stack, self.server = self._stack, None, None
        if stack is not None:
            # A server that dies badly on shutdown is no reason to fail the generation.
            with contextlib.suppress(Exception):
                await stack.aclose()


def _describe_tools(tools: Sequence[ToolSpec]) -> str:
    if not tools:
        return "It lists no tools."
    lines = [f"It lists {len(tools)} tool(s):"]
    for tool in tools:
        props = tool.parameters.get("properties")
        args = ", ".join(props) if isinstance(props, dict) else ""
        lines.append(f"- {tool.name}({args}): {tool.description.strip()[:200]}")
    return "\n".join(lines)


async def run_code_agent(
    ctx: EpisodeContext,
    server: GenesisServer,
    folder: Path,
    options: GenerateOptions,
    max_steps: int,
    launcher: ServerLauncher,
) -> GenerationResult:
    """Run the code agent on ``server`` in ``folder`` (at most ``max_steps`` model calls) and check the files left.

    A model that fails late may already have left working files: those are the result, as after ``finish()``,
    and the model error is kept in ``model_error``; otherwise the error opens the recorded reason.
    """
    async with CodeAgentBackend(folder, launcher) as backend:
        transcript = await run_tool_loop(ctx, agent_messages(server, max_steps), backend, max_steps, options=options)
    steps = [
        GenerationStep(
            step=i, content=turn.content, tool_calls=list(turn.tool_calls), observations=transcript.observations(i)
        )
        for i, turn in enumerate(transcript.turns)
    ]
    if transcript.stopped == "answer":
        # A text answer ends the loop; fenced blocks in it are kept, as in the direct strategy.
        written = write_answer_files(folder, parse_answer(transcript.final_answer))
        if written:
            steps[-1].observations.append(f"(no tool call; wrote {', '.join(written)} from the answer's fenced blocks)")
    error = None
    if transcript.model_error is not None:
        error = f"model error at step {transcript.model_steps}: {transcript.model_error}"
    problems = check_files(folder)
    if error is not None and problems is not None:
        problems = f"{error}; {problems}"
    return GenerationResult(
        server=server_record(server, folder, problems, ctx.epoch),
        strategy="code-agent",
        steps=steps,
        finished=backend.finished,
        model_error=error,
    )
