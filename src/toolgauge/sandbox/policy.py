"""Sandbox limits, detection of what the machine allows, and the sandboxed command line."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Literal, get_args

from pydantic import BaseModel, Field

from toolgauge.errors import UsageError

SandboxKind = Literal["bwrap", "namespaces", "rlimits"]
FORCE_ENV = "TOOLGAUGE_SANDBOX"
# The explicit, loudly named opt-out that lets untrusted code run without bubblewrap.
UNSAFE_ENV = "TOOLGAUGE_UNSAFE_NO_SANDBOX"
UNSAFE_FLAG = "--unsafe-no-sandbox"
REFUSAL = (
    "generated servers run only under bubblewrap: apt-get install bubblewrap "
    f"(or pass {UNSAFE_FLAG} to run them unisolated)"
)
LAUNCH_SCRIPT = Path(__file__).with_name("launch.py")
PROBE_TIMEOUT = 20.0


class SandboxLimits(BaseModel, frozen=True):
    """Resource limits of one sandboxed process tree.

    Attributes:
        cpu_seconds: RLIMIT_CPU of each process (SIGXCPU when reached).
        memory_mb: RLIMIT_AS (address space) of each process. Python with ``mcp`` imported maps far more
            address space than it touches; see docs/sandbox.md for the measured minimum.
        file_size_mb: RLIMIT_FSIZE, and the size of each private tmpfs (``/tmp`` and the workdir).
        open_files: RLIMIT_NOFILE.
        processes: RLIMIT_NPROC (processes and threads) of the sandbox's own unprivileged uid.
        wall_seconds: wall-clock limit enforced by :func:`toolgauge.sandbox.run_sandboxed`.
        output_bytes: how much of stdout and of stderr :func:`toolgauge.sandbox.run_sandboxed` keeps; more
            output stops the program.
    """

    cpu_seconds: int = Field(60, gt=0)
    memory_mb: int = Field(2048, gt=0)
    file_size_mb: int = Field(64, gt=0)
    open_files: int = Field(256, gt=0)
    processes: int = Field(128, gt=0)
    wall_seconds: float = Field(120.0, gt=0)
    output_bytes: int = Field(1_000_000, gt=0)


class SandboxStatus(BaseModel, frozen=True):
    """Which sandbox is active and why.

    Attributes:
        kind: the sandbox in use.
        why: what the detection found (or that the kind was forced).
        user_namespace: bubblewrap runs in a user namespace although the harness is root (root may not
            create namespaces directly here); the sandbox then keeps uid 0 of that namespace, which the
            kernel maps to host root, so the process limit is not enforced.
    """

    kind: SandboxKind
    why: str
    user_namespace: bool = False


def sandbox_python() -> str:
    """Return the interpreter to run inside the sandbox: this one, whose environment has ``mcp`` and toolgauge.

    Its prefix and base prefix are bound read-only into the bubblewrap sandbox.
    """
    return sys.executable


def interpreter_binds() -> list[str]:
    """Return the host paths the sandbox python needs, bound read-only at the same place (outside ``/usr``)."""
    # Not the toolgauge package: the harness's checkout stays out of the sandbox (the shim is copied in).
    paths = {
        sys.prefix,
        sys.base_prefix,
        sys.exec_prefix,
        sys.base_exec_prefix,
        os.path.dirname(os.path.realpath(sys.executable)),
    }
    kept: list[str] = []
    for path in sorted(os.path.realpath(p) for p in paths):
        if path == "/usr" or path.startswith("/usr/") or not os.path.isdir(path):
            continue
        if any(path == k or path.startswith(k + "/") for k in kept):
            continue  # already inside a bound directory
        kept.append(path)
    # sys.prefix of a venv is reached through its own path, not the resolved one: bind that too.
    for path in (sys.prefix, os.path.dirname(os.path.abspath(sys.executable))):
        if path not in kept and os.path.realpath(path) != path and os.path.isdir(path):
            kept.append(path)
    return kept


def sandboxed_command(
    argv: Sequence[str],
    workdir: Path,
    limits: SandboxLimits,
    *,
    kind: SandboxKind | None = None,
    pidfile: Path | None = None,
) -> list[str]:
    """Return a full command line that runs ``argv`` inside the sandbox.

    Run it with :mod:`subprocess`, or give it to MCP's ``stdio_client`` as
    ``StdioServerParameters(command=cmd[0], args=cmd[1:])``. ``argv`` then runs with a private copy of
    ``workdir``'s files as its working directory (``/sandbox`` under bubblewrap), no network, a read-only
    root, the rlimits of ``limits``, an unprivileged uid, a cleared environment and a new session, and it
    dies with its parent.

    Args:
        argv: the program and its arguments, e.g. ``[sandbox_python(), "server.py"]``.
        workdir: the directory holding the program's own files.
        limits: the resource limits.
        pidfile: where the trampoline writes its pid (the sandbox's process group) before it starts the
            program, so a caller without the process handle (MCP's ``stdio_client``) can kill the group.
        kind: the sandbox to use. Default: the detected one, which must be bubblewrap unless the opt-out is
            in effect (:func:`require_isolation`); an explicit kind is the caller's own choice.

    Returns:
        The command line, starting with this interpreter running the trampoline.

    Raises:
        UsageError: ``kind`` is None, bubblewrap is not available and the opt-out is not in effect.
    """
    if not argv:
        raise ValueError("sandboxed_command: empty argv")
    if kind is None:
        kind = require_isolation().kind
    return _command(argv, workdir, limits, kind, userns=sandbox_status().user_namespace, pidfile=pidfile)


def _command(
    argv: Sequence[str],
    workdir: Path,
    limits: SandboxLimits,
    chosen: SandboxKind,
    *,
    userns: bool,
    pidfile: Path | None = None,
) -> list[str]:
    """Build the trampoline command line (no detection)."""
    if not argv:
        raise ValueError("sandboxed_command: empty argv")
    command = [sys.executable, "-I", "-S", str(LAUNCH_SCRIPT), "--kind", chosen]
    if userns and chosen == "bwrap":
        command.append("--userns")
    if pidfile is not None:
        command += ["--pidfile", str(pidfile)]
    command += ["--limits", limits.model_dump_json(), "--workdir", str(Path(workdir).resolve())]
    if chosen == "bwrap":
        for path in interpreter_binds():
            command += ["--bind", path]
    return [*command, "--", *argv]


def probe_sandbox(kind: SandboxKind, *, userns: bool = False) -> str | None:
    """Run a trivial Python program in the sandbox of ``kind``; return None when it works, else why not."""
    limits = SandboxLimits(wall_seconds=PROBE_TIMEOUT)
    with tempfile.TemporaryDirectory(prefix="toolgauge-probe-") as tmp:
        os.chmod(tmp, 0o755)
        argv = [sandbox_python(), "-c", "import os; print('ok')"]
        command = _command(argv, Path(tmp), limits, kind, userns=userns)
        try:
            done = subprocess.run(command, capture_output=True, timeout=PROBE_TIMEOUT, check=False)
        except (OSError, subprocess.TimeoutExpired) as error:
            return str(error)
    if done.returncode == 0 and done.stdout.strip() == b"ok":
        return None
    lines = done.stderr.decode(errors="replace").strip().splitlines()
    return lines[-1] if lines else f"exit code {done.returncode}"


@functools.cache
def sandbox_status() -> SandboxStatus:
    """Detect (once per process) the strongest sandbox this machine allows.

    Order: bubblewrap, then ``unshare`` namespaces, then rlimits only. ``TOOLGAUGE_SANDBOX`` forces one.
    A fallback or a forced choice is said once on stderr.
    """
    forced = os.environ.get(FORCE_ENV, "").strip()
    if forced:
        if forced not in get_args(SandboxKind):
            raise UsageError(f"{FORCE_ENV}={forced!r}: expected one of {', '.join(get_args(SandboxKind))}")
        status = SandboxStatus(kind=forced, why=f"forced by {FORCE_ENV}")
        print(f"toolgauge: sandbox: {status.kind} ({status.why})", file=sys.stderr)
        return status
    failures: list[str] = []
    kinds: tuple[SandboxKind, ...] = ("bwrap", "namespaces")
    if os.geteuid() == 0:
        problem = probe_sandbox("bwrap")
        if problem is None:
            return SandboxStatus(kind="bwrap", why="bwrap works")
        # Root without CAP_SYS_ADMIN (a default Docker container) may still create a user namespace.
        if probe_sandbox("bwrap", userns=True) is None:
            why = f"privileged bwrap failed: {problem}; bwrap in a user namespace works (process limit not enforced)"
            print(f"toolgauge: sandbox: {why}", file=sys.stderr)
            return SandboxStatus(kind="bwrap", why=why, user_namespace=True)
        failures.append(f"bwrap failed: {problem}")
        kinds = ("namespaces",)
    for kind in kinds:
        problem = probe_sandbox(kind)
        if problem is None:
            status = SandboxStatus(kind=kind, why="; ".join(failures) or f"{kind} works")
            if failures:
                print(f"toolgauge: sandbox: falling back to {kind}: {status.why}", file=sys.stderr)
            return status
        failures.append(f"{kind} failed: {problem}")
    status = SandboxStatus(kind="rlimits", why="; ".join(failures))
    print(
        f"toolgauge: sandbox: falling back to rlimits only (no filesystem or network isolation): {status.why}",
        file=sys.stderr,
    )
    return status


def detect_sandbox() -> SandboxKind:
    """Return the kind of sandbox in use (detected once per process, see :func:`sandbox_status`)."""
    return sandbox_status().kind


def describe_sandbox() -> str:
    """Return one line saying which sandbox is active and why."""
    status = sandbox_status()
    return f"{status.kind}: {status.why}"


_opt_out = False


def allow_unisolated(allowed: bool = True) -> None:
    """Set the process-wide opt-out (the CLI's ``--unsafe-no-sandbox``): run untrusted code without bubblewrap."""
    global _opt_out
    _opt_out = allowed


def unisolated_allowed() -> bool:
    """Tell whether the opt-out is in effect (``--unsafe-no-sandbox`` or ``TOOLGAUGE_UNSAFE_NO_SANDBOX=1``)."""
    return _opt_out or os.environ.get(UNSAFE_ENV, "").strip().lower() in ("1", "true", "yes")


def require_isolation(*, allow_unsafe: bool = False) -> SandboxStatus:
    """Return the active sandbox if it may run untrusted code; only bubblewrap counts as isolation.

    Without bubblewrap the code is refused unless the opt-out is in effect (``allow_unsafe``, the
    process-wide :func:`allow_unisolated`, or ``TOOLGAUGE_UNSAFE_NO_SANDBOX=1``); then a loud warning is
    printed on stderr, once per process, and the strongest fallback is used.

    Raises:
        UsageError: bubblewrap is not available and the opt-out is not in effect (one line saying how to
            install it).
    """
    status = sandbox_status()
    if status.kind == "bwrap":
        return status
    if not (allow_unsafe or unisolated_allowed()):
        raise UsageError(REFUSAL)
    _warn_unisolated(status.kind)
    return status


@functools.cache
def _warn_unisolated(kind: SandboxKind) -> None:
    print(
        f"toolgauge: WARNING: running generated code WITHOUT ISOLATION (sandbox {kind!r}, opt-out "
        f"{UNSAFE_FLAG} / {UNSAFE_ENV}): it can read your files and secrets and write wherever this user can",
        file=sys.stderr,
    )
