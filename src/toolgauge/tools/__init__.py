"""Tools during an episode: the ``ToolBackend`` interface, its backends, and the one tool loop.

- ``backend``: :class:`ToolBackend` (list tools; call one) and :class:`ToolCallOutcome`, the typed result.
- ``loop``: :func:`run_tool_loop`, which drives a model against a backend, and its :class:`ToolTranscript`.
- ``mcp_backend``: :class:`McpBackend`, an MCP server in the sandbox; :func:`launch_mcp_backend`, the default
  :data:`ServerLauncher`.
- ``workspace``: :class:`CodeWorkspace`, ``write_file`` and ``run_python`` in the sandbox.
- ``replay``: :class:`ReplayBackend`, recorded outputs.
- ``mcp_server``, ``shim``, ``staging``, ``stdout_codec``: the MCP edge (sandboxed launch, calls, the
  class-shape shim, safe staging of untrusted files).
"""

from toolgauge.tools.backend import ToolBackend, ToolCallOutcome
from toolgauge.tools.loop import MAX_TOOL_OUTPUT_CHARS, ToolStep, ToolTranscript, run_tool_loop, truncate
from toolgauge.tools.mcp_backend import McpBackend, ServerLauncher, launch_mcp_backend, tool_specs
from toolgauge.tools.mcp_server import McpServerSession, ServerLaunchError, detect_server_shape, launch_server
from toolgauge.tools.replay import ReplayBackend, call_key
from toolgauge.tools.workspace import CodeWorkspace

__all__ = [
    "MAX_TOOL_OUTPUT_CHARS",
    "CodeWorkspace",
    "McpBackend",
    "McpServerSession",
    "ReplayBackend",
    "ServerLaunchError",
    "ServerLauncher",
    "ToolBackend",
    "ToolCallOutcome",
    "ToolStep",
    "ToolTranscript",
    "call_key",
    "detect_server_shape",
    "launch_mcp_backend",
    "launch_server",
    "run_tool_loop",
    "tool_specs",
    "truncate",
]
