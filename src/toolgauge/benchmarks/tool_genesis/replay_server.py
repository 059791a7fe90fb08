"""A standalone stdio MCP server that replays a Tool-Genesis server's unit-test recordings.

Run inside the sandbox as ``python reference_server.py spec.json`` (it imports only the standard
library and ``mcp``). The spec file is::

    {"name": "<slug>",
     "tools": [{"name", "description", "inputSchema"}, ...],          # listed exactly as given
     "defaults": {"<tool>": {"<argument>": <default>, ...}},          # optional
     "recordings": {"<tool>": [{"arguments": {...}, "output": "<text>", "is_error": false}, ...]}}

Matching rule: a call is answered with the output of the first recording of that tool whose
arguments equal the call's arguments after (1) filling every absent argument that has a default
(on both sides; the defaults come from ``defaults`` when the spec gives them, else from the listed
schema's ``default`` keywords) and (2) normalising numbers (``1`` equals ``1.0``; booleans
are not numbers). Nothing else is relaxed: an extra or missing key, another string, or another
order inside a list means no match. A call without a match returns a tool error
``Error: no recorded answer for <tool>(<arguments as JSON>)``; an unknown tool returns
``Error: unknown tool: <name>``. Both are results with ``isError: true`` and start with "Error" so
that the official unit-test check, which only looks for error words, sees them as errors too. A
recording whose ``is_error`` is true (a recorded error message) also comes back with ``isError``.
"""

from __future__ import annotations

import json
import sys
from typing import Any


def schema_defaults(schema: dict[str, Any]) -> dict[str, Any]:
    """The ``default`` of every top-level property of an object schema that declares one."""
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(properties, dict):
        return {}
    return {name: prop["default"] for name, prop in properties.items() if isinstance(prop, dict) and "default" in prop}


def fill_defaults(arguments: dict[str, Any], defaults: dict[str, Any]) -> dict[str, Any]:
    """``arguments`` plus every default whose argument is absent."""
    return {**defaults, **arguments}


def normalise(value: Any) -> Any:
    """A canonical form for comparison: integral floats become ints, containers recursively."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {str(k): normalise(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [normalise(v) for v in value]
    return value


def arguments_key(arguments: dict[str, Any], defaults: dict[str, Any]) -> str:
    """The comparison key of a call: defaults filled, numbers normalised, keys sorted."""
    return json.dumps(normalise(fill_defaults(arguments, defaults)), sort_keys=True, ensure_ascii=False)


class Recordings:
    """The lookup table: tool name -> (arguments key -> first recorded answer)."""

    def __init__(self, spec: dict[str, Any]):
        self.tools: list[dict[str, Any]] = list(spec.get("tools") or [])
        given = spec.get("defaults") or {}
        self.defaults: dict[str, dict[str, Any]] = {}
        for t in self.tools:
            name = str(t["name"])
            own = given.get(name)
            schema = t.get("inputSchema") or t.get("input_schema") or {}
            self.defaults[name] = dict(own) if isinstance(own, dict) else schema_defaults(schema)
        self.table: dict[str, dict[str, tuple[str, bool]]] = {}
        for tool, cases in (spec.get("recordings") or {}).items():
            defaults = self.defaults.get(tool, {})
            answers = self.table.setdefault(tool, {})
            for case in cases:
                args = case.get("arguments")
                key = arguments_key(args if isinstance(args, dict) else {}, defaults)
                answers.setdefault(key, (str(case.get("output", "")), bool(case.get("is_error", False))))

    def answer(self, tool: str, arguments: dict[str, Any] | None) -> tuple[str, bool]:
        """(text, is_error) for a call."""
        if tool not in self.defaults:
            return f"Error: unknown tool: {tool}", True
        args = arguments or {}
        found = self.table.get(tool, {}).get(arguments_key(args, self.defaults[tool]))
        if found is None:
            shown = json.dumps(args, sort_keys=True, ensure_ascii=False)
            return f"Error: no recorded answer for {tool}({shown})", True
        return found


def build_server(recordings: Recordings, name: str) -> Any:
    """A low-level ``mcp`` server that lists the spec's tools verbatim and answers from recordings."""
    import mcp_types as types
    from mcp.server.lowlevel import Server

    listed = [
        types.Tool(
            name=str(t["name"]),
            description=t.get("description"),
            input_schema=t.get("inputSchema") or t.get("input_schema") or {"type": "object", "properties": {}},
        )
        for t in recordings.tools
    ]

    async def list_tools(ctx: Any, params: Any) -> Any:
        return types.ListToolsResult(tools=listed)

    async def call_tool(ctx: Any, params: Any) -> Any:
        text, is_error = recordings.answer(params.name, params.arguments)
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=is_error)

    return Server(name, on_list_tools=list_tools, on_call_tool=call_tool)


async def serve(spec_path: str) -> None:
    """Serve the spec at ``spec_path`` on stdio until stdin closes."""
    from mcp.server.stdio import stdio_server

    with open(spec_path, encoding="utf-8") as handle:
        spec = json.load(handle)
    server = build_server(Recordings(spec), str(spec.get("name") or "reference"))
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def main(argv: list[str] | None = None) -> int:
    """Entry point: ``reference_server.py SPEC.json``."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: reference_server.py SPEC.json", file=sys.stderr)
        return 2
    import anyio

    anyio.run(serve, args[0])
    return 0


if __name__ == "__main__":
    sys.exit(main())
