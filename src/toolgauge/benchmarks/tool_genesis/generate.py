"""Tool-Genesis generation: turn each requirement into an MCP server (schema file + Python server).

Two strategies, as in the paper:

- ``direct``: one model call. The answer must hold a JSON block with the tool schema and a Python
  block with the server; both are pulled out of the text (robust to prose and junk around them).
- ``code-agent``: a loop of at most ``max_steps`` model calls with native tools: ``write_file``
  (only inside the server's own folder), ``launch_server`` (in the sandbox), ``list_tools``,
  ``call_tool`` and ``finish``. The model sees only the requirement, never the task examples or the
  hidden unit tests.

Each server goes to ``<out>/<slug>/tools.json`` and ``<out>/<slug>/server.py``; ``<out>/registry.json``
is the official registry layout. A server the model failed to produce is a ``GeneratedServer`` with
``error`` set, never an exception.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import shutil
from collections.abc import Mapping, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from toolgauge.benchmarks.tool_genesis.agent import ToolSessionLike, truncate
from toolgauge.benchmarks.tool_genesis.loader import load_registry, write_registry
from toolgauge.benchmarks.tool_genesis.records import GeneratedServer, GenesisServer
from toolgauge.driver import ScoredRun
from toolgauge.engine import EpisodeContext, SampleOutcome
from toolgauge.errors import DataError, ModelError
from toolgauge.recordings import read_recorded_turns
from toolgauge.records import AssistantTurn, GenerateOptions, Message, ToolCall, ToolSpec

Strategy = Literal["direct", "code-agent"]
SCHEMA_FILE = "tools.json"
CODE_FILE = "server.py"
RAW_FILE = "raw_answer.txt"
MAX_STEPS = 10
# Observations go back into the model's context: keep them short enough for small-context models.
MAX_OBSERVATION_CHARS = 4000
MAX_FILE_BYTES = 1_000_000

# -- prompts -------------------------------------------------------------------------------------------
FORMAT_RULES = """\
## What to deliver
1. A tool schema: a JSON object `{"tools": [...]}` in the shape an MCP `list_tools` call returns. Each tool has
   - `name`: lowercase, starts with a letter, only letters, digits and underscores;
   - `description`: one line saying what the tool does and when to use it;
   - `inputSchema`: a JSON Schema object written like this:
     `{"type": "object", "properties": {"<arg>": {"type": "...", "description": "..."}}, "required": [...], \
"additionalProperties": false}`.
     Every property has exactly one `type` (string, integer, number, boolean, array or object; no `anyOf`) and a
     `description`. `required` lists only names from `properties` (use `[]` when nothing is required). An array
     property has `items` with its own type; an object property has its own `properties`, `required` and
     `"additionalProperties": false`.
2. A Python MCP server implementing exactly those tools, with the same tool and argument names:
   - use the official SDK: `from mcp.server import MCPServer` and
     `from mcp.server.mcpserver.exceptions import ToolError`; create `mcp = MCPServer("<server name>")`;
   - register each tool with `@mcp.tool()` on a function with type-annotated parameters (optional ones get a
     default) and a docstring;
   - return a JSON-serialisable dict; derive results from the inputs and from state kept in memory; no network,
     no randomness, no clock, no subprocesses; only the standard library and `mcp`;
   - for bad input or a failed operation raise `ToolError("clear message")`; the caller sees that message;
   - end with `if __name__ == "__main__":` then `mcp.run()` (stdio transport); the server is started as
     `python server.py` in its own folder.
"""

SERVER_EXAMPLE = '''\
```python
from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

mcp = MCPServer("unit-converter")


@mcp.tool()
def convert_length(value: float, from_unit: str, to_unit: str = "m") -> dict:
    """Convert a length between metres, kilometres and miles."""
    factors = {"m": 1.0, "km": 1000.0, "mi": 1609.344}
    if from_unit not in factors or to_unit not in factors:
        raise ToolError(f"unknown unit; use one of {sorted(factors)}")
    return {"value": value * factors[from_unit] / factors[to_unit], "unit": to_unit}


if __name__ == "__main__":
    mcp.run()
```
'''

SYSTEM_PROMPT = "You are an expert Python developer who builds MCP (Model Context Protocol) servers."

DIRECT_TEMPLATE = """\
## Task
Design and implement an MCP server for the requirement below: infer the tools it needs, write their schema, \
and implement them.

## Requirement
{requirement}

{format_rules}
## Example of the server style (a different server)
{example}
## Answer format
Answer with exactly two fenced blocks and nothing else: first ```json with the schema object, then ```python \
with the complete server file.
"""

AGENT_TEMPLATE = """\
## Task
Design and implement an MCP server for the requirement below, then check that it works.

## Requirement
{requirement}

{format_rules}
## Example of the server style (a different server)
{example}
## How to work
You have a folder of your own and these tools:
- `write_file(path, content)`: write a file in your folder (write the schema to `{schema_file}` and the server \
to `{code_file}`; writing a file again replaces it);
- `launch_server()`: start `{code_file}` in a sandbox; reports the tools it lists, or the error;
- `list_tools()`: the tools of the running server;
- `call_tool(name, arguments)`: call one tool of the running server with an arguments object; returns its \
result or error text;
- `finish()`: stop; your files as they are then are the result.
You have at most {max_steps} steps (one reply = one step). Write both files, launch the server, try its tools, \
fix what fails, then call `finish()`.
"""

AGENT_TOOLS = [
    ToolSpec(
        name="write_file",
        description="Write (or replace) a text file in your server folder, e.g. tools.json or server.py.",
        parameters={
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "File path relative to your folder."},
                "content": {"type": "string", "description": "The full file content."},
            },
            "required": ["path", "content"],
        },
    ),
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


def direct_messages(server: GenesisServer) -> list[Message]:
    """The one request of the direct strategy: the requirement and the required output format."""
    text = DIRECT_TEMPLATE.format(
        requirement=server.agent_input_prompt.strip(), format_rules=FORMAT_RULES, example=SERVER_EXAMPLE
    )
    return [Message(role="system", content=SYSTEM_PROMPT), Message(role="user", content=text)]


def agent_messages(server: GenesisServer, max_steps: int = MAX_STEPS) -> list[Message]:
    """The opening messages of the code-agent strategy."""
    text = AGENT_TEMPLATE.format(
        requirement=server.agent_input_prompt.strip(),
        format_rules=FORMAT_RULES,
        example=SERVER_EXAMPLE,
        schema_file=SCHEMA_FILE,
        code_file=CODE_FILE,
        max_steps=max_steps,
    )
    return [Message(role="system", content=SYSTEM_PROMPT), Message(role="user", content=text)]


# -- parsing the answer --------------------------------------------------------------------------------
@dataclass(frozen=True)
class FencedBlock:
    """One fenced block of a model answer; ``closed`` is False when the answer ended inside it."""

    lang: str
    body: str
    closed: bool


class ParsedAnswer(BaseModel):
    """The schema payload and server code found in an answer, or why they were not found."""

    schema_payload: dict[str, Any] | None = None
    code: str | None = None
    error: str | None = None


def fenced_blocks(text: str) -> list[FencedBlock]:
    """Every fenced block (```lang ... ```) of ``text``; a block left open runs to the end."""
    blocks: list[FencedBlock] = []
    lang: str | None = None
    body: list[str] = []
    for line in text.splitlines():
        stripped = line.strip()
        if lang is None:
            if stripped.startswith("```"):
                lang = stripped[3:].strip().split(" ")[0].lower()
                body = []
        elif stripped == "```":
            blocks.append(FencedBlock(lang, "\n".join(body), True))
            lang = None
        else:
            body.append(line)
    if lang is not None:
        blocks.append(FencedBlock(lang, "\n".join(body), False))
    return blocks


def as_schema_payload(value: Any) -> dict[str, Any] | None:
    """The ``{"tools": [...]}`` payload in a decoded JSON value; a bare tool list is wrapped."""
    if isinstance(value, dict) and isinstance(value.get("tools"), list):
        return value
    if isinstance(value, list) and value and all(isinstance(t, dict) and "name" in t for t in value):
        return {"tools": value}
    return None


def _json_candidates(text: str) -> list[Any]:
    """Top-level JSON objects and arrays found anywhere in ``text`` (for answers without fences)."""
    decoder = json.JSONDecoder()
    found: list[Any] = []
    pos = 0
    while pos < len(text):
        starts = [i for i in (text.find("{", pos), text.find("[", pos)) if i >= 0]
        if not starts:
            break
        start = min(starts)
        try:
            value, end = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            pos = start + 1
            continue
        found.append(value)
        pos = end
    return found


_PY_LANGS = {"python", "py", "python3"}
_JSON_LANGS = {"json", "jsonc", "json5"}


def parse_answer(text: str | None) -> ParsedAnswer:
    """Pull the schema payload and the server code out of a model answer.

    The last JSON block holding a tool list wins (models often draft, then correct); without fences,
    JSON objects anywhere in the text are tried. The code is the last Python block that uses ``mcp``,
    else the last Python block. Never raises: what is missing is named in ``error``.
    """
    if not text or not text.strip():
        return ParsedAnswer(error="empty answer")
    blocks = fenced_blocks(text)
    payload: dict[str, Any] | None = None
    for block in blocks:
        if block.lang in _PY_LANGS:
            continue
        try:
            found = as_schema_payload(json.loads(block.body))
        except (ValueError, RecursionError):  # not JSON, or beyond the parser's limits
            found = None
        if found is not None:
            payload = found
    if payload is None:
        for value in _json_candidates(text):
            found = as_schema_payload(value)
            if found is not None:
                payload = found
    python = [b for b in blocks if b.lang in _PY_LANGS or (b.lang == "" and _looks_like_python(b.body))]
    with_mcp = [b for b in python if "mcp" in b.body.lower()]
    chosen = (with_mcp or python)[-1] if python else None
    code = chosen.body.strip("\n") + "\n" if chosen is not None and chosen.body.strip() else None
    problems = []
    if payload is None:
        problems.append('no JSON schema with a "tools" list in the answer')
    if code is None:
        problems.append("no Python code block in the answer")
    elif chosen is not None and not chosen.closed:
        problems.append("the Python block is not closed (answer cut off?)")
    return ParsedAnswer(schema_payload=payload, code=code, error="; ".join(problems) or None)


def _looks_like_python(body: str) -> bool:
    head = body.lstrip()
    return head.startswith(("import ", "from ", "def ", "class ", "#!")) or "\ndef " in body


# -- results -------------------------------------------------------------------------------------------
class GenerationStep(BaseModel):
    """One model step of a generation: what the model said or called, and what it observed."""

    step: int
    content: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    observations: list[str] = Field(default_factory=list)


class GenerationResult(BaseModel):
    """One server's generation: the files (or the error) plus the model's raw outputs."""

    server: GeneratedServer
    strategy: Strategy
    gold: bool = False
    steps: list[GenerationStep] = Field(default_factory=list)
    finished: bool = False
    model_error: str | None = None

    @property
    def raw_outputs(self) -> list[str]:
        """The model's text output per step."""
        return [s.content or "" for s in self.steps]


def server_dir(out_dir: Path, slug: str) -> Path:
    """The folder of one generated server."""
    return Path(out_dir) / _safe_name(slug)


def _safe_name(slug: str) -> str:
    cleaned = "".join(c if c.isalnum() or c in "-_." else "_" for c in slug).strip(".")
    return cleaned or "server"


def _fresh_dir(folder: Path) -> None:
    """Empty the server's own folder so files of an earlier attempt cannot pass as this one's."""
    if folder.is_symlink() or folder.is_file():
        folder.unlink()
    elif folder.is_dir():
        shutil.rmtree(folder)
    folder.mkdir(parents=True, exist_ok=True)


def _record(server: GenesisServer, folder: Path, error: str | None) -> GeneratedServer:
    return GeneratedServer(
        slug=server.server_slug,
        schema_path=folder / SCHEMA_FILE,
        code_path=folder / CODE_FILE,
        error=error,
        server_id=server.server_id,
        server_name=server.server_name or server.server_slug,
    )


async def generate_server(
    ctx: EpisodeContext,
    server: GenesisServer,
    out_dir: Path,
    strategy: Strategy,
    *,
    options: GenerateOptions | None = None,
    max_steps: int = MAX_STEPS,
) -> GeneratedServer:
    """Generate one server's files with ``strategy``; failures are a ``GeneratedServer`` with ``error``."""
    result = await generate_server_detailed(ctx, server, out_dir, strategy, options=options, max_steps=max_steps)
    return result.server


async def generate_server_detailed(
    ctx: EpisodeContext,
    server: GenesisServer,
    out_dir: Path,
    strategy: Strategy,
    *,
    options: GenerateOptions | None = None,
    max_steps: int = MAX_STEPS,
) -> GenerationResult:
    """Like ``generate_server``, but also return the model's steps and raw outputs."""
    folder = server_dir(out_dir, server.server_slug)
    _fresh_dir(folder)
    opts = options or GenerateOptions(temperature=0.0, max_tokens=4096)
    if strategy == "direct":
        return await _direct(ctx, server, folder, opts)
    return await CodeAgent(ctx, server, folder, opts, max_steps).run()


async def _direct(ctx: EpisodeContext, server: GenesisServer, folder: Path, opts: GenerateOptions) -> GenerationResult:
    try:
        turn = await ctx.generate(direct_messages(server), None, opts)
    except ModelError as exc:
        failed = f"model error: {exc}"
        return GenerationResult(server=_record(server, folder, failed), strategy="direct", model_error=failed)
    step = GenerationStep(step=0, content=turn.content, tool_calls=list(turn.tool_calls))
    (folder / RAW_FILE).write_text(turn.content or "", encoding="utf-8")
    parsed = parse_answer(turn.content)
    if parsed.schema_payload is not None:
        (folder / SCHEMA_FILE).write_text(
            json.dumps(parsed.schema_payload, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
        )
    if parsed.code is not None:
        (folder / CODE_FILE).write_text(parsed.code, encoding="utf-8")
    # A cut-off code block is still written and left to the launch to judge; only missing pieces are errors.
    missing = parsed.schema_payload is None or parsed.code is None
    error = f"parse failure: {parsed.error}" if missing else None
    if error and turn.finish_reason == "length":
        error += " (the answer hit max_tokens)"
    return GenerationResult(server=_record(server, folder, error), strategy="direct", steps=[step], finished=True)


# -- the code agent ------------------------------------------------------------------------------------
class CodeAgent:
    """The code-agent loop for one server: model steps with file, launch and call tools."""

    def __init__(
        self, ctx: EpisodeContext, server: GenesisServer, folder: Path, options: GenerateOptions, max_steps: int
    ):
        self.ctx = ctx
        self.server = server
        self.folder = folder
        self.options = options
        self.max_steps = max_steps
        self.session: ToolSessionLike | None = None
        self._stack: AsyncExitStack | None = None
        self.finished = False

    async def run(self) -> GenerationResult:
        """Run the loop (at most ``max_steps`` model calls) and check the files it left."""
        messages = agent_messages(self.server, self.max_steps)
        steps: list[GenerationStep] = []
        error: str | None = None
        try:
            for index in range(self.max_steps):
                try:
                    turn = await self.ctx.generate(list(messages), AGENT_TOOLS, self.options)
                except ModelError as exc:
                    error = f"model error at step {index}: {exc}"
                    break
                step = GenerationStep(step=index, content=turn.content, tool_calls=list(turn.tool_calls))
                steps.append(step)
                messages.append(Message(role="assistant", content=turn.content or "", tool_calls=list(turn.tool_calls)))
                if not turn.tool_calls:
                    # A text answer ends the loop; fenced blocks in it are kept, as in the direct strategy.
                    self._harvest(turn, step)
                    break
                for number, call in enumerate(turn.tool_calls):
                    observation = truncate(await self.act(call), MAX_OBSERVATION_CHARS)
                    step.observations.append(observation)
                    messages.append(
                        Message(role="tool", content=observation, tool_call_id=call.id or f"call_{index}_{number}")
                    )
                if self.finished:
                    break
        finally:
            await self.stop_server()
        problems = self.check_files()
        # A model that fails late may already have left working files: those are the result, as after finish().
        if error is not None and problems is not None:
            problems = f"{error}; {problems}"
        return GenerationResult(
            server=_record(self.server, self.folder, problems),
            strategy="code-agent",
            steps=steps,
            finished=self.finished,
            model_error=error,
        )

    def _harvest(self, turn: AssistantTurn, step: GenerationStep) -> None:
        parsed = parse_answer(turn.content)
        written = []
        if parsed.schema_payload is not None:
            self.write_file(SCHEMA_FILE, json.dumps(parsed.schema_payload, indent=2, ensure_ascii=False) + "\n")
            written.append(SCHEMA_FILE)
        if parsed.code is not None:
            self.write_file(CODE_FILE, parsed.code)
            written.append(CODE_FILE)
        if written:
            step.observations.append(f"(no tool call; wrote {', '.join(written)} from the answer's fenced blocks)")

    def check_files(self) -> str | None:
        """Why the folder does not hold a usable schema and server (None when it does)."""
        problems: list[str] = []
        schema = self.folder / SCHEMA_FILE
        if not schema.is_file():
            problems.append(f"no {SCHEMA_FILE} was written")
        else:
            try:
                payload = json.loads(schema.read_text(encoding="utf-8"))
            except (ValueError, RecursionError) as exc:  # also UnicodeDecodeError, a ValueError
                problems.append(f"{SCHEMA_FILE} is not valid JSON: {str(exc)[:200]}")
            else:
                if not isinstance(payload, dict):
                    problems.append(f"{SCHEMA_FILE} is not a JSON object")
        if not (self.folder / CODE_FILE).is_file():
            problems.append(f"no {CODE_FILE} was written")
        return "; ".join(problems) or None

    async def act(self, call: ToolCall) -> str:
        """Run one tool call of the model and return the observation text."""
        if call.parse_error:
            return f"Error: the arguments could not be decoded ({call.parse_error}); send a JSON object."
        args = call.arguments
        if call.name == "write_file":
            path, content = args.get("path"), args.get("content")
            if not isinstance(path, str) or not isinstance(content, str):
                return "Error: write_file needs string arguments path and content."
            return self.write_file(path, content)
        if call.name == "launch_server":
            return await self.launch()
        if call.name == "list_tools":
            if self.session is None:
                return "Error: the server is not running; call launch_server() first."
            return _describe_tools(self.session.tools)
        if call.name == "call_tool":
            return await self.call_tool(args.get("name"), args.get("arguments"))
        if call.name == "finish":
            self.finished = True
            return "Finished."
        return f"Error: unknown tool {call.name!r}; use write_file, launch_server, list_tools, call_tool or finish."

    def write_file(self, path: str, content: str) -> str:
        """Write a file inside the server folder; anything resolving outside it is refused."""
        root = self.folder.resolve()
        if not path or os.path.isabs(path) or "\x00" in path:
            return f"Error: {path!r} is not a relative path inside your folder."
        data = content.encode("utf-8", errors="replace")
        if len(data) > MAX_FILE_BYTES:
            return f"Error: the file is {len(data)} bytes; the limit is {MAX_FILE_BYTES}."
        try:
            target = (root / path).resolve()
            if target == root or not target.is_relative_to(root):
                return f"Error: {path!r} is outside your folder; write only inside it."
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        except OSError as exc:  # a name too long, a folder where a file should be, ...
            return f"Error: could not write {path!r}: {exc.strerror or exc}"
        note = ""
        if self.session is not None and target.name.endswith(".py"):
            note = " The running server still runs the old code; call launch_server() to restart it."
        return f"Wrote {target.relative_to(root).as_posix()} ({len(data)} bytes).{note}"

    async def launch(self) -> str:
        """(Re)start the server in the sandbox and report its tools or the launch error."""
        await self.stop_server()
        code = self.folder / CODE_FILE
        if not code.is_file():
            return f"Error: there is no {CODE_FILE} yet; write it with write_file first."
        servers = importlib.import_module("toolgauge.tools")
        stack = AsyncExitStack()
        try:
            session = await stack.enter_async_context(servers.launch_server(code))
        except Exception as exc:  # any launch failure is an observation for the model, not a crash
            await stack.aclose()
            reason = getattr(exc, "reason", None) or str(exc) or exc.__class__.__name__
            stage = getattr(exc, "stage", None)
            return f"Launch failed ({stage}): {reason}" if stage else f"Launch failed: {reason}"
        self._stack = stack
        self.session = session
        return "Server started. " + _describe_tools(session.tools)

    async def call_tool(self, name: Any, arguments: Any) -> str:
        """Call one tool of the running server."""
        if self.session is None:
            return "Error: the server is not running; call launch_server() first."
        if not isinstance(name, str) or not name:
            return "Error: call_tool needs the tool name as a string."
        if arguments is None:
            arguments = {}
        if isinstance(arguments, str):  # some models send the arguments object as JSON text
            try:
                arguments = json.loads(arguments) if arguments.strip() else {}
            except (ValueError, RecursionError):
                return "Error: arguments must be a JSON object."
        if not isinstance(arguments, dict):
            return "Error: arguments must be a JSON object."
        try:
            outcome = await self.session.call(name, arguments)
        except Exception as exc:  # the server crashed or hung: report it, the loop goes on
            return f"Error: the call failed: {exc.__class__.__name__}: {exc}"
        failure = getattr(outcome, "failure", None)
        text = str(getattr(outcome, "text", "") or "")
        if failure:
            return f"Call failed: {failure}" + (f"\n{text}" if text else "")
        prefix = "Tool error: " if getattr(outcome, "is_error", False) else "Result: "
        return prefix + text

    async def stop_server(self) -> None:
        """Stop the running server, if any."""
        stack, self._stack, self.session = self._stack, None, None
        if stack is not None:
            # A server that dies badly on shutdown is no reason to fail the generation.
            with contextlib.suppress(Exception):
                await stack.aclose()


def _describe_tools(tools: Sequence[Mapping[str, Any]]) -> str:
    if not tools:
        return "It lists no tools."
    lines = [f"It lists {len(tools)} tool(s):"]
    for tool in tools:
        schema = tool.get("inputSchema") or tool.get("input_schema") or {}
        props = schema.get("properties") if isinstance(schema, dict) else None
        args = ", ".join(props) if isinstance(props, dict) else ""
        lines.append(f"- {tool.get('name')}({args}): {str(tool.get('description') or '').strip()[:200]}")
    return "\n".join(lines)


# -- the benchmark -------------------------------------------------------------------------------------
class GenesisGenerateBenchmark:
    """``genesis generate``: one sample per server; results are the generated files plus raw outputs.

    ``registry.json`` is rewritten (atomically) after every server, so an interrupted run leaves a
    usable registry, and once more at the end from all outcomes, resumed ones included. With
    ``gold=True`` no model is asked: the reference server (``genesis_gold.write_gold_server``) is
    written instead.
    """

    name = "tool-genesis-generate"
    result_type = GenerationResult

    def __init__(
        self,
        servers: Sequence[GenesisServer],
        *,
        out_dir: Path,
        strategy: Strategy,
        data_label: str,
        gold: bool = False,
        options: GenerateOptions | None = None,
        max_steps: int = MAX_STEPS,
    ):
        self.servers = list(servers)
        self.out_dir = Path(out_dir)
        self.strategy: Strategy = strategy
        self.data_label = data_label
        self.gold = gold
        self.options = options or GenerateOptions(temperature=0.0, max_tokens=4096)
        self.max_steps = max_steps
        self._registry: dict[str, GeneratedServer] = self._existing_registry()

    def _existing_registry(self) -> dict[str, GeneratedServer]:
        reg = self.out_dir / "registry.json"
        if not reg.is_file():
            return {}
        try:
            return load_registry(reg, check_schemas=False)
        except DataError:
            return {}  # an unreadable old registry is replaced, not fatal

    @property
    def registry_path(self) -> Path:
        """Where the registry is written."""
        return self.out_dir / "registry.json"

    def samples(self) -> list[tuple[str, GenesisServer]]:
        """Servers keyed by slug (slugs are unique in a valid data file)."""
        return [(s.server_slug, s) for s in self.servers]

    def config(self) -> dict[str, Any]:
        """Settings that define the run."""
        return {
            "data": self.data_label,
            "out": str(self.out_dir.resolve()),
            "strategy": self.strategy,
            "gold": self.gold,
            "n": len(self.servers),
            "max_steps": self.max_steps,
            **self.options.model_dump(),
        }

    async def episode(self, sample: GenesisServer, ctx: EpisodeContext) -> GenerationResult:
        """Generate one server, then update the registry."""
        # Drop the entry first: its folder is about to be emptied, and a stale entry would point at nothing.
        if self._registry.pop(sample.server_slug, None) is not None:
            self._write_registry()
        if self.gold:
            result = self._gold(sample)
        else:
            result = await generate_server_detailed(
                ctx, sample, self.out_dir, self.strategy, options=self.options, max_steps=self.max_steps
            )
        self._registry[sample.server_slug] = result.server
        self._write_registry()
        return result

    def _gold(self, sample: GenesisServer) -> GenerationResult:
        folder = server_dir(self.out_dir, sample.server_slug)
        _fresh_dir(folder)
        gold = importlib.import_module("toolgauge.benchmarks.tool_genesis.gold")
        record: GeneratedServer = gold.write_gold_server(sample, folder)
        return GenerationResult(server=record, strategy=self.strategy, gold=True, finished=True)

    def _write_registry(self) -> None:
        write_registry(self.registry_path, self._registry.values())

    def score(
        self, samples: Sequence[tuple[str, GenesisServer]], outcomes: Sequence[SampleOutcome[GenerationResult]]
    ) -> ScoredRun:
        """Summarise what was generated and write the final registry."""
        by_key = {o.key: o for o in outcomes}
        rows: list[dict[str, Any]] = []
        failures: dict[str, str] = {}
        for key, server in samples:
            outcome = by_key.get(key)
            if outcome is not None and outcome.result is not None:
                record = outcome.result.server
                steps = len(outcome.result.steps)
                finished = outcome.result.finished
            else:
                reason = (outcome.error if outcome else None) or "not run"
                folder = server_dir(self.out_dir, server.server_slug)
                record = _record(server, folder, f"generation failed: {reason}")
                steps, finished = 0, False
            self._registry[key] = record
            if record.error:
                failures[key] = record.error
            rows.append(
                {
                    "id": key,
                    "schema_path": str(record.schema_path),
                    "code_path": str(record.code_path),
                    "error": record.error,
                    "model_steps": steps,
                    "finished": finished,
                }
            )
        self._write_registry()
        summary: dict[str, Any] = {
            "benchmark": self.name,
            "strategy": self.strategy,
            "data": self.data_label,
            "out": str(self.out_dir),
            "registry": str(self.registry_path),
            "servers": len(samples),
            "generated": len(samples) - len(failures),
            "failed": len(failures),
            "failures": failures,
        }
        return ScoredRun(summary=summary, rows=rows)

    def replay_table(self, path: Path) -> Mapping[str, Sequence[AssistantTurn]]:
        """Read recorded model outputs: JSONL lines ``{"id": slug, "step", "content", "tool_calls"}``."""
        return read_recorded_turns(path, index_field="step", what="recorded output")
