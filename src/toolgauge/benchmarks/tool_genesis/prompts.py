"""What the generating model is asked: the output format, an example server, and each strategy's prompt.

The model sees the server's requirement (``agent_input_prompt``) and nothing else from the data: never
the task examples (L4 scores them) nor the unit tests (L3 scores them).
"""

from __future__ import annotations

from toolgauge.benchmarks.tool_genesis.records import GenesisServer
from toolgauge.benchmarks.tool_genesis.server_files import CODE_FILE, SCHEMA_FILE
from toolgauge.records import Message

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


def direct_messages(server: GenesisServer) -> list[Message]:
    """The one request of the direct strategy: the requirement and the required output format."""
    text = DIRECT_TEMPLATE.format(
        requirement=server.agent_input_prompt.strip(), format_rules=FORMAT_RULES, example=SERVER_EXAMPLE
    )
    return [Message(role="system", content=SYSTEM_PROMPT), Message(role="user", content=text)]


def agent_messages(server: GenesisServer, max_steps: int) -> list[Message]:
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
