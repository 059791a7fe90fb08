"""Gold and reference servers for Tool-Genesis, built from the data alone.

``write_gold_server`` is what ``--model gold`` emits (the ceiling): the reference tool schemas made
strictly compliant (``make_strictly_compliant``: optional ``anyOf [T, null]`` becomes ``T``,
``additionalProperties: false``) in ``tools.json``, and a server that lists those tools and answers
each call with a recorded unit-test output (``toolgauge.benchmarks.tool_genesis.replay_server``; its docstring
states the matching rule). ``write_reference_server`` builds the L4 oracle the same way but lists
the reference schemas exactly as the data gives them.

Matching always fills defaults from the data's schemas (the strict rewrite drops ``default: null``),
so the gold server and the oracle answer the same calls.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from toolgauge.benchmarks.tool_genesis.metrics.compliance import make_strictly_compliant
from toolgauge.benchmarks.tool_genesis.metrics.unit_tests import has_error_word
from toolgauge.benchmarks.tool_genesis.records import GeneratedServer, GenesisServer
from toolgauge.benchmarks.tool_genesis.server_files import CODE_FILE, SCHEMA_FILE

SPEC_FILE = "reference_spec.json"
RUNTIME_FILE = "reference_server.py"

_SERVER_SOURCE = '''"""Reference server for {slug}: answers from recorded unit-test outputs (written by toolgauge)."""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from reference_server import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main([os.path.join(HERE, "{spec}")]))
'''


def _input_schema(tool: dict[str, Any]) -> dict[str, Any]:
    schema = tool.get("input_schema", tool.get("inputSchema"))
    return schema if isinstance(schema, dict) else {"type": "object", "properties": {}}


def wire_tool(tool: dict[str, Any]) -> dict[str, Any]:
    """A data tool in ``tools/list`` wire shape: name, description, inputSchema."""
    description = tool.get("description")
    return {
        "name": str(tool["name"]),
        "description": description if isinstance(description, str) else "",
        "inputSchema": _input_schema(tool),
    }


def reference_spec(server: GenesisServer, *, strict: bool) -> dict[str, Any]:
    """The reference server's spec: tools to list, and every unit test as a recording.

    ``strict`` lists the strictly compliant schemas (gold); otherwise the data's own. Recordings keep
    the data's order (the first match wins); a test whose arguments are not an object is recorded
    with ``{}``, which is what the official evaluator sends for it. A recording is marked
    ``is_error`` when its text carries an error word, the rule the strict unit-test check applies.
    """
    tools = [wire_tool(make_strictly_compliant(t) if strict else t) for t in server.tool_definitions]
    defaults = {
        str(t["name"]): {
            name: prop["default"]
            for name, prop in (_input_schema(t).get("properties") or {}).items()
            if isinstance(prop, dict) and "default" in prop
        }
        for t in server.tool_definitions
    }
    recordings = {
        tool: [
            {
                "arguments": case.arguments_dict,
                "output": case.function_output_content,
                "is_error": has_error_word(case.function_output_content),
            }
            for case in cases
        ]
        for tool, cases in server.unit_test.items()
    }
    return {"name": server.server_slug, "tools": tools, "defaults": defaults, "recordings": recordings}


def _write_server(server: GenesisServer, dest_dir: Path, *, strict: bool) -> GeneratedServer:
    dest = Path(dest_dir)
    dest.mkdir(parents=True, exist_ok=True)
    spec = reference_spec(server, strict=strict)
    (dest / SPEC_FILE).write_text(json.dumps(spec, ensure_ascii=False, indent=1), encoding="utf-8")
    (dest / SCHEMA_FILE).write_text(
        json.dumps({"tools": spec["tools"]}, ensure_ascii=False, indent=2) + "\n", encoding="utf-8"
    )
    shutil.copy2(Path(__file__).with_name("replay_server.py"), dest / RUNTIME_FILE)
    (dest / CODE_FILE).write_text(_SERVER_SOURCE.format(slug=server.server_slug, spec=SPEC_FILE), encoding="utf-8")
    return GeneratedServer(
        slug=server.server_slug,
        schema_path=dest / SCHEMA_FILE,
        code_path=dest / CODE_FILE,
        server_id=server.server_id,
        server_name=server.server_name or server.server_slug,
    )


def write_gold_server(server: GenesisServer, dest_dir: Path) -> GeneratedServer:
    """Write the gold server for ``server`` into ``dest_dir`` (its own folder) and return its record."""
    return _write_server(server, dest_dir, strict=True)


def write_reference_server(server: GenesisServer, dest_dir: Path) -> GeneratedServer:
    """Write the L4 oracle: the data's own schemas, answering from the recordings."""
    return _write_server(server, dest_dir, strict=False)
