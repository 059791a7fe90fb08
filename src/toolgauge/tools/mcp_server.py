"""Launch an untrusted MCP server in the sandbox and talk to it over stdio.

``launch_server`` copies the server's files into a fresh staging folder (``toolgauge.tools.staging``: no
link is ever followed), starts it through
``toolgauge.sandbox.sandboxed_command`` (via the shim, which accepts plain stdio scripts and the
official class shape) and connects the official ``mcp`` client (``stdio_client`` +
``ClientSession``). Everything a broken server can do (exit at once, hang, crash on a call, answer
garbage) surfaces as a ``ServerLaunchError`` or a ``ToolCallOutcome.failure``, never as another
exception.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import json
import logging
import os
import shutil
import signal
import tempfile
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Literal

import anyio
from pydantic import BaseModel

from toolgauge.tools import stdout_codec
from toolgauge.tools.backend import ToolCallOutcome
from toolgauge.tools.shim import SHIM_FILE_NAME
from toolgauge.tools.staging import (
    PID_FILE,
    WORK_DIR,
    StagingError,
    UnsafeFile,
    new_staging_dir,
    read_untrusted_file,
    sweep_stale_staging,
)
from toolgauge.tools.staging import stage_server_files as _stage_files

if TYPE_CHECKING:
    import mcp_types
    from mcp import ClientSession

    from toolgauge.sandbox import SandboxLimits

LaunchStage = Literal["prepare", "start", "initialize", "list_tools"]
ServerShape = Literal["script", "class"]

_STDERR_TAIL = 1500
_PING_TIMEOUT = 5.0
INVALID_UTF8 = "invalid UTF-8 on the server's stdout"


class ServerLaunchError(Exception):
    """A server that could not be started and listed; ``stage`` says where it stopped."""

    def __init__(self, stage: LaunchStage, reason: str):
        self.stage: LaunchStage = stage
        self.reason = reason
        super().__init__(f"{stage}: {reason}")


def detect_server_shape(source: str) -> ServerShape:
    """Decide how to start a server from its source, without executing it.

    A module with a top-level ``if __name__ == "__main__":`` block is a script. Otherwise a module
    defining a class with an ``_initialize_mcp_server`` method is the official class shape.
    Anything else (including code that does not parse) is run as a script, and fails as one.
    """
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return "script"
    for node in tree.body:
        if isinstance(node, ast.If) and _is_main_guard(node.test):
            return "script"
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and any(
            isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == "_initialize_mcp_server"
            for item in node.body
        ):
            return "class"
    return "script"


def _is_main_guard(test: ast.expr) -> bool:
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return False
    sides = [test.left, *test.comparators]
    names = [s for s in sides if isinstance(s, ast.Name) and s.id == "__name__"]
    consts = [s for s in sides if isinstance(s, ast.Constant) and s.value == "__main__"]
    return bool(names and consts)


def wire_content(items: Sequence[BaseModel | Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Content blocks in wire shape, ``_meta`` dropped when empty (the official v1 dump had no value there)."""
    out: list[dict[str, Any]] = []
    for item in items:
        data = item.model_dump(by_alias=True, mode="json") if isinstance(item, BaseModel) else dict(item)
        if data.get("_meta") is None:
            data.pop("_meta", None)
        out.append(data)
    return out


def content_text(content: Sequence[dict[str, Any]]) -> str:
    """The text a model would read: text blocks joined by newlines, other blocks as JSON."""
    parts = []
    for block in content:
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            parts.append(block["text"])
        else:
            parts.append(json.dumps(block, ensure_ascii=False))
    return "\n".join(parts)


def _tool_wire(tool: mcp_types.Tool) -> dict[str, Any]:
    data: dict[str, Any] = tool.model_dump(by_alias=True, mode="json", exclude_none=True)
    return {
        "name": data.get("name"),
        "description": data.get("description"),
        "inputSchema": data.get("inputSchema", {}),
        **{k: v for k, v in data.items() if k not in ("name", "description", "inputSchema")},
    }


class McpServerSession:
    """A running server: its listed tools, tool calls with per-call timeouts, and liveness."""

    def __init__(
        self,
        session: ClientSession,
        tools: list[dict[str, Any]],
        errlog: IO[str],
        shape: ServerShape,
        encoding: str = "utf-8",
        pidfile: Path | None = None,
    ):
        self._session = session
        self.tools = tools
        self._errlog = errlog
        self.shape: ServerShape = shape
        self._encoding = encoding
        self._pidfile = pidfile
        self.alive = True
        self.death_reason: str | None = None

    @property
    def tool_names(self) -> list[str]:
        """Names of the listed tools."""
        return [str(t.get("name")) for t in self.tools]

    def stderr_tail(self, limit: int = _STDERR_TAIL) -> str:
        """The last ``limit`` characters the server wrote to stderr."""
        return _read_tail(self._errlog, limit)

    async def call(self, name: str, arguments: dict[str, Any], timeout: float = 30.0) -> ToolCallOutcome:
        """Call a tool; never raises. A timeout or a dead server is a ``failure``."""
        if not self.alive:
            return ToolCallOutcome(failure=f"server not running ({self.death_reason})")
        started = time.perf_counter()
        try:
            with anyio.fail_after(timeout):
                result = await self._session.call_tool(name, arguments)
        except TimeoutError:
            seconds = time.perf_counter() - started
            reason = f"timed out after {timeout:g} s"
            if not await self._responds():
                self._mark_dead(f"no answer to ping after a call {reason}")
            return ToolCallOutcome(failure=reason, seconds=seconds)
        except Exception as exc:  # the server is untrusted: any failure is an outcome
            seconds = time.perf_counter() - started
            reason = _describe(exc)
            if _is_protocol_error(exc) and await self._responds():
                return ToolCallOutcome(failure=f"protocol error: {reason}", seconds=seconds)
            self._mark_dead(reason)
            return ToolCallOutcome(failure=f"server died: {self.death_reason}", seconds=seconds)
        seconds = time.perf_counter() - started
        if stdout_codec.saw_invalid_utf8(self._encoding):
            self._mark_dead(INVALID_UTF8)
            return ToolCallOutcome(failure=f"server failed: {INVALID_UTF8}", seconds=seconds)
        from mcp_types import CallToolResult

        # Anything but a tool result (an input request) carries no content: an empty, non-error result.
        called = isinstance(result, CallToolResult)
        content = wire_content(result.content) if called else []
        return ToolCallOutcome(
            content=content, text=content_text(content), is_error=called and bool(result.is_error), seconds=seconds
        )

    def kill(self) -> None:
        """SIGKILL the server's whole sandbox now (an interrupted run does not wait for a clean shutdown)."""
        self.alive = False
        self.death_reason = self.death_reason or "killed by the harness"
        if self._pidfile is not None:
            _kill_sandbox(self._pidfile)

    async def ping(self) -> bool:
        """True when the server answers a ping within a few seconds."""
        if not self.alive:
            return False
        return await self._responds()

    async def _responds(self) -> bool:
        try:
            with anyio.fail_after(_PING_TIMEOUT):
                await self._session.send_ping()
        except Exception:
            return False
        return True

    def _mark_dead(self, reason: str) -> None:
        self.alive = False
        tail = " ".join(self.stderr_tail(600).split())[-200:]
        self.death_reason = f"{reason}; stderr: ...{tail}" if tail else reason


def _is_protocol_error(exc: Exception) -> bool:
    """A JSON-RPC error answer (the server is alive and said no), as opposed to a broken connection."""
    try:
        from mcp.shared.exceptions import MCPError
    except ImportError:  # pragma: no cover - mcp always ships it
        return False
    return isinstance(exc, MCPError) and "connection closed" not in str(exc).lower()


def _describe(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _read_tail(handle: IO[str], limit: int) -> str:
    try:
        handle.flush()
        handle.seek(0, 2)
        size = handle.tell()
        handle.seek(max(0, size - limit * 4))
        return handle.read()[-limit:]
    except (OSError, ValueError):
        return ""


def stage_server_files(code_path: Path, workdir: Path, extra_files: Sequence[Path] = ()) -> Path:
    """Copy the server (and the shim) into ``workdir`` without following links; return the code file there.

    See :func:`toolgauge.tools.staging.stage_server_files`.

    Raises:
        ServerLaunchError: the code file is missing, or a file is unsafe (stage ``prepare``).
    """
    try:
        return _stage_files(
            code_path, workdir, extra_files, shim=Path(__file__).with_name("shim.py"), shim_name=SHIM_FILE_NAME
        )
    except StagingError as exc:
        raise ServerLaunchError("prepare", exc.reason) from None


@functools.cache
def _sweep_once() -> None:
    """Remove staging folders a killed run left behind (once per process, at the first launch)."""
    sweep_stale_staging()


def _kill_sandbox(pidfile: Path) -> None:
    """SIGKILL the sandbox's process group at once, if its trampoline is still our child."""
    try:
        # Read without following a link: in a fallback sandbox the program can reach the staging folder.
        pid = int(read_untrusted_file(pidfile, 64).decode("ascii").strip())
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (UnsafeFile, OSError, ValueError, IndexError):
        return
    # The pid file is the trampoline's: accept only our own child leading its own group.
    if int(fields[1]) != os.getpid() or int(fields[2]) != pid:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


@asynccontextmanager
async def launch_server(
    code_path: Path,
    *,
    limits: SandboxLimits | None = None,
    startup_timeout: float = 30.0,
    extra_files: Sequence[Path] = (),
) -> AsyncIterator[McpServerSession]:
    """Start the server at ``code_path`` in the sandbox; yield a session once it has listed its tools.

    The server runs in a fresh copy of its folder (``stage_server_files``); ``extra_files`` are copied
    next to it. Leaving the context closes the server's stdin, waits briefly and then kills its whole
    process tree (and the sandbox dies with its parent). Leaving it by cancellation or an interrupt kills
    the sandbox's process group at once.

    Raises:
        ServerLaunchError: the server could not be started (including: bubblewrap is missing and the
            opt-out is not in effect), did not answer ``initialize`` or ``list_tools`` within
            ``startup_timeout`` seconds, wrote invalid UTF-8, or listed no tools.
    """
    from mcp import StdioServerParameters, stdio_client

    from toolgauge.errors import UsageError
    from toolgauge.sandbox import SandboxLimits as Limits
    from toolgauge.sandbox import sandbox_python, sandboxed_command

    # An untrusted server may write anything on stdout; the SDK logs a traceback per unparsable line.
    logging.getLogger("mcp.client.stdio").setLevel(logging.CRITICAL)
    _sweep_once()
    stage_root = new_staging_dir()
    workdir, pidfile = stage_root / WORK_DIR, stage_root / PID_FILE
    encoding = stdout_codec.watched_encoding()
    try:
        with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as errlog:
            staged = stage_server_files(Path(code_path), workdir, extra_files)
            try:
                source = staged.read_text(encoding="utf-8", errors="replace")
            except OSError as exc:
                raise ServerLaunchError("prepare", f"cannot read {code_path}: {exc}") from None
            shape = detect_server_shape(source)
            flag = "--class" if shape == "class" else "--script"
            argv = [sandbox_python(), SHIM_FILE_NAME, flag, staged.name]
            try:
                command = sandboxed_command(argv, workdir, limits if limits is not None else Limits(), pidfile=pidfile)
            except UsageError as exc:  # no bubblewrap and no opt-out: the server is refused, not run
                raise ServerLaunchError("start", str(exc)) from None
            params = StdioServerParameters(
                command=command[0],
                args=command[1:],
                cwd=str(workdir),
                env={"PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1"},
                encoding=encoding,
            )
            try:
                async with AsyncExitStack() as stack:
                    stage: LaunchStage = "start"
                    try:
                        try:
                            read, write = await stack.enter_async_context(stdio_client(params, errlog=errlog))
                            session = await stack.enter_async_context(_UncheckedClientSession(read, write))
                            stage = "initialize"
                            with anyio.fail_after(startup_timeout):
                                await session.initialize()
                            stage = "list_tools"
                            with anyio.fail_after(startup_timeout):
                                tools = await _list_all_tools(session)
                        except TimeoutError:
                            reason = f"no answer within {startup_timeout:g} s"
                            raise ServerLaunchError(
                                stage, _with_stderr(_utf8_first(reason, encoding), errlog)
                            ) from None
                        except Exception as exc:
                            reason = _utf8_first(_describe(exc), encoding)
                            raise ServerLaunchError(stage, _with_stderr(reason, errlog)) from None
                        if stdout_codec.saw_invalid_utf8(encoding):
                            raise ServerLaunchError(stage, _with_stderr(INVALID_UTF8, errlog))
                        if not tools:
                            raise ServerLaunchError("list_tools", _with_stderr("the server lists no tools", errlog))
                        yield McpServerSession(session, tools, errlog, shape, encoding, pidfile)
                    except BaseException as exc:
                        if not isinstance(exc, Exception):
                            # Cancelled or interrupted: end the sandbox now, not after MCP's shutdown grace.
                            _kill_sandbox(pidfile)
                        raise
            except BaseExceptionGroup as group:
                # The SDK's task groups wrap whatever crosses them; callers get the one real exception.
                raise _single(group) from None
    finally:
        _kill_sandbox(pidfile)
        stdout_codec.forget(encoding)
        shutil.rmtree(stage_root, ignore_errors=True)


def _utf8_first(reason: str, encoding: str) -> str:
    """Name invalid UTF-8 as the cause when the server wrote some (what followed is a consequence)."""
    return f"{INVALID_UTF8} ({reason})" if stdout_codec.saw_invalid_utf8(encoding) else reason


def _single(group: BaseExceptionGroup[Any]) -> BaseException:
    exc: BaseException = group
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


def _with_stderr(reason: str, errlog: IO[str]) -> str:
    tail = _read_tail(errlog, 400).strip()
    if not tail:
        return reason
    last = " | ".join(line for line in tail.splitlines()[-4:] if line.strip())
    return f"{reason}; stderr: {last}"


async def _list_all_tools(session: ClientSession) -> list[dict[str, Any]]:
    tools: list[dict[str, Any]] = []
    cursor: str | None = None
    for _ in range(50):  # a server paging forever is cut off
        from mcp_types import PaginatedRequestParams

        result = await session.list_tools(params=PaginatedRequestParams(cursor=cursor) if cursor else None)
        tools.extend(_tool_wire(t) for t in result.tools)
        cursor = result.next_cursor
        if not cursor:
            break
    return tools


def _unchecked_session_class() -> type[ClientSession]:
    from mcp import ClientSession

    class UncheckedClientSession(ClientSession):
        """A client session that returns tool results as sent.

        The SDK client re-validates structured content against a tool's output schema and raises on
        a mismatch; the benchmark scores what the server returned, so that check is skipped.
        """

        async def validate_tool_result(self, name: str, result: Any) -> None:
            return None

    return UncheckedClientSession


class _LazySessionFactory:
    """Builds the session class on first use so importing this module does not import ``mcp``."""

    _cls: type[ClientSession] | None = None

    def __call__(self, read: Any, write: Any) -> ClientSession:
        if self._cls is None:
            self._cls = _unchecked_session_class()
        return self._cls(read, write)


_UncheckedClientSession = _LazySessionFactory()
