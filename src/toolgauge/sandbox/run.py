"""Run one program in the sandbox to completion: wall clock, output cap, kill of everything it started."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel

from toolgauge.sandbox.launch import SETUP_FAILED, SETUP_PREFIX
from toolgauge.sandbox.policy import SandboxKind, SandboxLimits, sandboxed_command

READ_CHUNK = 65536
PIPE_GRACE_SECONDS = 2.0
KILL_WAIT_SECONDS = 10.0
EXIT_POLL_SECONDS = 0.05
# bubblewrap reports a child killed by signal N as exit code 128 + N.
SIGNAL_EXIT_BASE = 128
STDERR_HINTS = (
    ("MemoryError", "memory limit"),
    ("Cannot allocate memory", "memory limit"),
    ("File too large", "file size limit"),
    ("Too many open files", "open files limit"),
    ("Resource temporarily unavailable", "process limit"),
    ("Read-only file system", "write outside the workdir refused (read-only)"),
    ("Permission denied", "permission denied"),
    ("Network is unreachable", "network access refused"),
    ("Temporary failure in name resolution", "network access refused"),
)


class SandboxResult(BaseModel):
    """What a sandboxed run did.

    Attributes:
        returncode: the exit code (negative: killed by that signal; None: never collected).
        stdout: the program's standard output, at most ``output_bytes`` of it, decoded as UTF-8.
        stderr: its standard error, same cap.
        timed_out: the wall-clock limit stopped it.
        reason: a human-readable cause when the run failed ("timed out after 120 s", "CPU limit", ...);
            None when it exited with code 0.
        seconds: wall-clock time from launch to the end of the process tree.
    """

    returncode: int | None
    stdout: str
    stderr: str
    timed_out: bool
    reason: str | None
    seconds: float


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def explain_failure(
    returncode: int | None, stderr: str, limits: SandboxLimits, *, timed_out: bool, output_overflow: bool
) -> str | None:
    """Return the reason string for a finished run, or None when it succeeded.

    Args:
        returncode: the exit code as :mod:`asyncio` reports it.
        stderr: the captured standard error (its last lines name Python's error).
        limits: the limits the run had.
        timed_out: the wall clock stopped it.
        output_overflow: it wrote more than ``limits.output_bytes``.
    """
    if timed_out:
        return f"timed out after {limits.wall_seconds:g} s (wall clock)"
    if output_overflow:
        return f"output limit: more than {limits.output_bytes} bytes written"
    if returncode == 0:
        return None
    if returncode == SETUP_FAILED and SETUP_PREFIX in stderr:
        line = next(x for x in stderr.splitlines() if SETUP_PREFIX in x)
        return f"sandbox failed to start: {line.split(SETUP_PREFIX, 1)[1].strip()}"
    if returncode is not None and stderr.lstrip().startswith("bwrap:"):
        return f"sandbox failed to start: {stderr.strip().splitlines()[0]}"
    signum: int | None = None
    if returncode is not None and returncode < 0:
        signum = -returncode
    elif returncode is not None and SIGNAL_EXIT_BASE < returncode < SIGNAL_EXIT_BASE + 65:
        signum = returncode - SIGNAL_EXIT_BASE
    if signum == signal.SIGXCPU:
        return f"CPU limit: {limits.cpu_seconds} s of CPU time used (SIGXCPU)"
    if signum == signal.SIGXFSZ:
        return f"file size limit: {limits.file_size_mb} MB (SIGXFSZ)"
    last = stderr.strip().splitlines()[-1] if stderr.strip() else ""
    for needle, what in STDERR_HINTS:
        if needle in last:
            return f"{what}: {last[:200]}"
    if signum is not None:
        return f"killed by {_signal_name(signum)}"
    return f"exited with code {returncode}" + (f": {last[:200]}" if last else "")


async def _drain(stream: asyncio.StreamReader | None, keep: bytearray, cap: int, overflow: asyncio.Event) -> None:
    """Read ``stream`` to its end, keeping at most ``cap`` bytes; set ``overflow`` when more arrive."""
    if stream is None:
        return
    # Read to the end even past the cap (discarding), so the pipe is closed once the group is killed.
    while chunk := await stream.read(READ_CHUNK):
        room = cap - len(keep)
        if room > 0:
            keep += chunk[:room]
        if len(chunk) > room:
            overflow.set()


def kill_group(pid: int) -> None:
    """SIGKILL the process group led by ``pid`` (the trampoline starts a new session)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


async def run_sandboxed(
    argv: Sequence[str],
    workdir: Path,
    limits: SandboxLimits | None = None,
    *,
    stdin: bytes | None = None,
    kind: SandboxKind | None = None,
) -> SandboxResult:
    """Run ``argv`` in the sandbox until it exits, hits a limit or runs out of wall-clock time.

    The whole process group is killed at the end (and bubblewrap's pid namespace takes every other
    descendant with it), so nothing the program started outlives the call. Never raises for anything the
    program does; a launch that cannot start at all is a result with a reason too.

    Args:
        argv: the program and its arguments.
        workdir: the directory holding the program's own files.
        limits: resource limits (defaults: :class:`SandboxLimits`).
        stdin: bytes fed to standard input (then closed); None gives an empty input.
        kind: the sandbox to use; default the detected one, which must be bubblewrap unless the opt-out is
            in effect (see :func:`toolgauge.sandbox.require_isolation`).

    Returns:
        The result, with ``reason`` set whenever the run did not exit with code 0.

    Raises:
        UsageError: no kind given, bubblewrap unavailable and no opt-out.
    """
    limits = limits or SandboxLimits()
    command = sandboxed_command(argv, workdir, limits, kind=kind)
    started = time.monotonic()
    try:
        process = await asyncio.create_subprocess_exec(
            *command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
        )
    except OSError as error:
        return SandboxResult(
            returncode=None,
            stdout="",
            stderr=str(error),
            timed_out=False,
            reason=f"sandbox failed to start: {error}",
            seconds=time.monotonic() - started,
        )
    out, err = bytearray(), bytearray()
    overflow = asyncio.Event()

    async def feed() -> None:
        assert process.stdin is not None
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            if stdin:
                process.stdin.write(stdin)
                await process.stdin.drain()
            process.stdin.close()

    reading = asyncio.gather(
        feed(),
        _drain(process.stdout, out, limits.output_bytes, overflow),
        _drain(process.stderr, err, limits.output_bytes, overflow),
    )

    async def exited() -> None:
        # Not process.wait(): asyncio's wait() also waits for the pipes to close, which a descendant
        # still holding stdout would delay until the wall clock.
        while process.returncode is None:
            await asyncio.sleep(EXIT_POLL_SECONDS)

    exiting = asyncio.ensure_future(exited())
    stopping = asyncio.ensure_future(overflow.wait())
    try:
        done, _ = await asyncio.wait({exiting, stopping}, timeout=limits.wall_seconds, return_when="FIRST_COMPLETED")
        timed_out = not done
    finally:
        # Killing the group loses nothing already written: it stays in the pipes, read just below.
        kill_group(process.pid)
        stopping.cancel()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(exiting, timeout=KILL_WAIT_SECONDS)
        exiting.cancel()
        # A descendant outside the group (only possible without bubblewrap's pid namespace) may hold a pipe.
        await asyncio.wait({reading}, timeout=PIPE_GRACE_SECONDS)
        if not reading.done():
            reading.cancel()
        with contextlib.suppress(asyncio.CancelledError, OSError):
            await reading
    stderr_text = err.decode(errors="replace")
    return SandboxResult(
        returncode=process.returncode,
        stdout=out.decode(errors="replace"),
        stderr=stderr_text,
        timed_out=timed_out,
        reason=explain_failure(
            process.returncode, stderr_text, limits, timed_out=timed_out, output_overflow=overflow.is_set()
        ),
        seconds=time.monotonic() - started,
    )
