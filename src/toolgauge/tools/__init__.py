"""Running untrusted MCP servers: sandboxed launch and calls, the class-shape shim, the reference server."""

from toolgauge.tools.mcp_server import (
    McpServerSession,
    ServerLaunchError,
    ToolCallOutcome,
    detect_server_shape,
    launch_server,
)

__all__ = ["McpServerSession", "ServerLaunchError", "ToolCallOutcome", "detect_server_shape", "launch_server"]
