"""A code workspace as a ``ToolBackend``: a folder of the model's own, ``write_file`` and ``run_python``.

``write_file`` writes only inside the folder: absolute paths, ``..`` escapes and anything resolving
outside it are refused with an error result, and files are limited to :data:`MAX_FILE_BYTES`.
``run_python`` runs code in the sandbox (``toolgauge.sandbox.run_sandboxed``) with a private copy of
the folder as its working directory: it can import and read what was written, and what it writes
there is discarded with the sandbox.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from toolgauge.errors import UsageError
from toolgauge.records import ToolCall, ToolSpec
from toolgauge.sandbox import run_sandboxed, sandbox_python
from toolgauge.tools.backend import ToolCallOutcome, unknown_tool

if TYPE_CHECKING:
    from toolgauge.sandbox import SandboxLimits

MAX_FILE_BYTES = 1_000_000


def write_file_spec(description: str = "Write (or replace) a text file in your folder.") -> ToolSpec:
    """The ``write_file`` tool (a path relative to the model's folder, the full content), as every workspace offers it.

    ``description`` says what the folder is for (Tool-Genesis names the files its server needs).
    """
    return ToolSpec(
        name="write_file",
        description=description,
        parameters={
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "File path relative to your folder."},
                "content": {"type": "string", "description": "The full file content."},
            },
            "required": ["path", "content"],
        },
    )


def run_python_spec(
    description: str = (
        "Run Python code in a sandbox (no network) with your folder as the working directory; returns its "
        "standard output, standard error and exit status. Files it writes are not kept."
    ),
    code: str = "The Python source to run.",
) -> ToolSpec:
    """The ``run_python`` tool (one argument, the source), as every sandboxed Python runner offers it.

    ``description`` says what the run has and returns (ToolGate's solver: the libraries, ``question.json``, JSON).
    """
    return ToolSpec(
        name="run_python",
        description=description,
        parameters={
            "type": "object",
            "properties": {"code": {"type": "string", "description": code}},
            "required": ["code"],
        },
    )


WRITE_FILE = write_file_spec()
RUN_PYTHON = run_python_spec()


class CodeWorkspace:
    """A folder the model writes files in and runs Python against, in the sandbox."""

    def __init__(self, folder: Path, *, limits: SandboxLimits | None = None, max_file_bytes: int = MAX_FILE_BYTES):
        self.folder = Path(folder)
        self.limits = limits
        self.max_file_bytes = max_file_bytes

    async def list_tools(self) -> list[ToolSpec]:
        """``write_file`` and ``run_python``."""
        return [WRITE_FILE, RUN_PYTHON]

    async def call(self, call: ToolCall) -> ToolCallOutcome:
        """Run ``write_file`` or ``run_python``."""
        args = call.arguments
        if call.name == WRITE_FILE.name:
            path, content = args.get("path"), args.get("content")
            if not isinstance(path, str) or not isinstance(content, str):
                return ToolCallOutcome.error("Error: write_file needs string arguments path and content.")
            return self.write_file(path, content)
        if call.name == RUN_PYTHON.name:
            code = args.get("code")
            if not isinstance(code, str):
                return ToolCallOutcome.error("Error: run_python needs the code as a string.")
            return await self.run_python(code)
        return unknown_tool(call.name, (WRITE_FILE.name, RUN_PYTHON.name))

    def write_file(self, path: str, content: str) -> ToolCallOutcome:
        """Write a file inside the folder; anything resolving outside it is refused."""
        self.folder.mkdir(parents=True, exist_ok=True)
        root = self.folder.resolve()
        if not path or os.path.isabs(path) or "\x00" in path:
            return ToolCallOutcome.error(f"Error: {path!r} is not a relative path inside your folder.")
        data = content.encode("utf-8", errors="replace")
        if len(data) > self.max_file_bytes:
            return ToolCallOutcome.error(f"Error: the file is {len(data)} bytes; the limit is {self.max_file_bytes}.")
        try:
            target = (root / path).resolve()
            if target == root or not target.is_relative_to(root):
                return ToolCallOutcome.error(f"Error: {path!r} is outside your folder; write only inside it.")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        except OSError as exc:  # a name too long, a folder where a file should be, ...
            return ToolCallOutcome.error(f"Error: could not write {path!r}: {exc.strerror or exc}")
        return ToolCallOutcome(text=f"Wrote {target.relative_to(root).as_posix()} ({len(data)} bytes).")

    async def run_python(self, code: str) -> ToolCallOutcome:
        """Run ``code`` in the sandbox, the folder's files beside it; a failed run is an error result."""
        self.folder.mkdir(parents=True, exist_ok=True)
        try:
            run = await run_sandboxed([sandbox_python(), "-"], self.folder, self.limits, stdin=code.encode("utf-8"))
        except UsageError as exc:  # no bubblewrap and no opt-out: the code is refused, not run
            return ToolCallOutcome.error(f"Error: {exc}", "sandbox refused")
        parts = [run.stdout.rstrip("\n")] if run.stdout else []
        if run.stderr:
            parts.append("stderr:\n" + run.stderr.rstrip("\n"))
        parts.append(f"[exit code {run.returncode}]" if run.reason is None else f"[failed: {run.reason}]")
        return ToolCallOutcome(text="\n".join(parts), is_error=run.reason is not None, seconds=run.seconds)
