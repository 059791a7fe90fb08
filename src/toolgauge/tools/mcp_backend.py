"""An MCP server running in the sandbox as a ``ToolBackend``, and the launcher that starts one.

:class:`McpBackend` wraps a live :class:`~toolgauge.tools.mcp_server.McpServerSession`: it offers the
server's listed tools as the model's function tools (:func:`tool_specs`) and runs each call through
the session with a per-call timeout. :func:`launch_mcp_backend` is the default
:data:`ServerLauncher`: objects that start servers take a launcher, so tests hand them a fake one.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolgauge.records import ToolCall, ToolSpec
from toolgauge.tools.backend import ToolBackend, ToolCallOutcome
from toolgauge.tools.mcp_server import McpServerSession, launch_server

if TYPE_CHECKING:
    from toolgauge.sandbox import SandboxLimits

CALL_TIMEOUT = 30.0
# Starts the server whose code is at the given path and yields it as a backend; raises ServerLaunchError.
ServerLauncher = Callable[[Path], AbstractAsyncContextManager[ToolBackend]]

_FUNCTION_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


def tool_specs(tools: Sequence[Mapping[str, Any]]) -> tuple[list[ToolSpec], dict[str, str]]:
    """Turn MCP wire-shape tools (name, description, inputSchema) into the model's function tools.

    Returns the specs and a map from the name the model sees to the server's tool name. MCP allows
    names that chat APIs refuse for functions (dots, spaces, over 64 characters); those are offered
    under a cleaned name so one odd tool does not turn every request into an HTTP 400.
    """
    specs: list[ToolSpec] = []
    names: dict[str, str] = {}
    for tool in tools:
        name = tool.get("name")
        if not isinstance(name, str) or not name:
            continue
        offered = name if _FUNCTION_NAME.fullmatch(name) else _clean_name(name, names)
        schema = tool.get("inputSchema", tool.get("input_schema"))
        if not isinstance(schema, dict):
            schema = {"type": "object", "properties": {}}
        description = tool.get("description")
        specs.append(
            ToolSpec(name=offered, description=description if isinstance(description, str) else "", parameters=schema)
        )
        names[offered] = name
    return specs, names


def _clean_name(name: str, taken: dict[str, str]) -> str:
    base = re.sub(r"[^A-Za-z0-9_-]", "_", name)[:60] or "tool"
    offered, n = base, 1
    while offered in taken:
        n += 1
        offered = f"{base}_{n}"
    return offered


class McpBackend:
    """A running MCP server as a ``ToolBackend``: its listed tools, each call with a timeout.

    A call by an offered (cleaned) name goes to the server's own tool; any other name is passed on as
    it is, and the server answers it. The session's outcome is returned unchanged (``failure`` set and
    no text when the call produced no result).
    """

    def __init__(self, session: McpServerSession, *, timeout: float = CALL_TIMEOUT):
        self.session = session
        self.timeout = timeout
        self._specs, self._names = tool_specs(session.tools)

    async def list_tools(self) -> list[ToolSpec]:
        """The server's tools under the names the model may use."""
        return list(self._specs)

    async def call(self, call: ToolCall) -> ToolCallOutcome:
        """Call the server's tool; never raises (see ``McpServerSession.call``)."""
        name = self._names.get(call.name, call.name)
        return await self.session.call(name, dict(call.arguments), timeout=self.timeout)


@asynccontextmanager
async def launch_mcp_backend(
    code_path: Path,
    *,
    limits: SandboxLimits | None = None,
    startup_timeout: float = 30.0,
    call_timeout: float = CALL_TIMEOUT,
) -> AsyncIterator[McpBackend]:
    """Start the server at ``code_path`` in the sandbox (``launch_server``) and yield it as a backend.

    Raises:
        ServerLaunchError: the server could not be started and listed.
    """
    async with launch_server(code_path, limits=limits, startup_timeout=startup_timeout) as session:
        yield McpBackend(session, timeout=call_timeout)
