"""The sandbox against hostile programs (tests/fixtures/hostile/*.py).

Each hostile program, run with ``--once``, performs its attack, prints what it managed (``ESCAPED ...`` when
something got out) and exits non-zero; without ``--once`` it is an ordinary stdio MCP server that attacks at
start-up and then serves an ``attack_report`` tool. Every test checks containment on the HOST side (files
absent, listener untouched, secrets not printed, processes gone) and that the result carries a reason.
Host-side targets are made world-writable / world-readable on purpose: only the isolation may stop them.
The programs attack only paths the test names (a canary folder under tmp_path, unique marker names in the
host's /tmp, /var/tmp and /dev/shm); the containment tests are skipped where bubblewrap is unavailable,
and the refusal to run untrusted code there has its own tests that run everywhere.
"""

from __future__ import annotations

import ast
import asyncio
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from helpers.child_process import LineReader
from helpers.paths import FIXTURE_ROOT, REPO
from toolgauge.errors import UsageError
from toolgauge.sandbox import (
    SandboxLimits,
    SandboxStatus,
    allow_unisolated,
    detect_sandbox,
    explain_failure,
    policy,
    probe_sandbox,
    require_isolation,
    run_sandboxed,
    sandbox_python,
    sandbox_status,
    sandboxed_command,
)
from toolgauge.sandbox.launch import accessible_to_others, sandbox_env
from toolgauge.sandbox.policy import _command, interpreter_binds

FIXTURES = FIXTURE_ROOT / "hostile"
# Small limits keep the hostile runs quick and light on the shared machine.
SMALL = SandboxLimits(cpu_seconds=10, memory_mb=512, processes=32, wall_seconds=30, output_bytes=200_000)
ALLOWED_ENV = set(sandbox_env("/sandbox")) | {"PWD", "SHLVL", "_"}
IS_ROOT = os.geteuid() == 0

needs_bwrap = pytest.mark.skipif(detect_sandbox() != "bwrap", reason="bubblewrap sandbox not available here")


def stage(name: str, root: Path) -> Path:
    """Copy one hostile program into a fresh workdir as server.py (the workdir holds only it)."""
    workdir = root / f"work-{name}"
    workdir.mkdir()
    shutil.copy(FIXTURES / name, workdir / "server.py")
    return workdir


def tagged_pids(tag: str) -> list[int]:
    """Pids of live (non-zombie) processes whose command line carries ``tag``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if tag.encode() in cmdline and state != "Z":
            found.append(int(entry.name))
    return found


def wait_gone(tag: str, seconds: float = 5.0) -> list[int]:
    """Poll until no process carries ``tag``; return the survivors (empty when all are gone)."""
    deadline = time.monotonic() + seconds
    while (left := tagged_pids(tag)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


async def hostile(name: str, root: Path, *args: str, limits: SandboxLimits = SMALL, **kw: object):
    workdir = stage(name, root)
    return await run_sandboxed([sandbox_python(), "server.py", "--once", *args], workdir, limits, **kw)  # type: ignore[arg-type]


# --- pure parts ------------------------------------------------------------------------------------------


def test_explain_failure_maps_exit_statuses_to_reasons():
    limits = SandboxLimits(cpu_seconds=7, wall_seconds=3, output_bytes=10, file_size_mb=5)
    # Exit 0 is success: no reason.
    assert explain_failure(0, "", limits, timed_out=False, output_overflow=False) is None
    assert (
        explain_failure(None, "", limits, timed_out=True, output_overflow=False) == "timed out after 3 s (wall clock)"
    )
    assert explain_failure(-9, "", limits, timed_out=False, output_overflow=True).startswith(
        "output limit: more than 10"
    )
    # SIGXCPU is 24: -24 from a direct child, 128 + 24 = 152 as bubblewrap reports it.
    assert explain_failure(-24, "", limits, timed_out=False, output_overflow=False).startswith("CPU limit: 7 s")
    assert explain_failure(152, "", limits, timed_out=False, output_overflow=False).startswith("CPU limit: 7 s")
    assert explain_failure(1, "Traceback...\nMemoryError\n", limits, timed_out=False, output_overflow=False) == (
        "memory limit: MemoryError"
    )
    setup = explain_failure(
        125, "toolgauge sandbox: workdir /x is not a directory\n", limits, timed_out=False, output_overflow=False
    )
    assert setup == "sandbox failed to start: workdir /x is not a directory"
    assert explain_failure(-9, "", limits, timed_out=False, output_overflow=False) == "killed by SIGKILL"
    assert explain_failure(3, "boom\n", limits, timed_out=False, output_overflow=False) == "exited with code 3: boom"


def test_forced_kind_and_bad_value(monkeypatch):
    sandbox_status.cache_clear()
    try:
        monkeypatch.setenv("TOOLGAUGE_SANDBOX", "rlimits")
        assert detect_sandbox() == "rlimits"
        assert sandbox_status().why == "forced by TOOLGAUGE_SANDBOX"
        sandbox_status.cache_clear()
        monkeypatch.setenv("TOOLGAUGE_SANDBOX", "docker")
        with pytest.raises(UsageError, match="TOOLGAUGE_SANDBOX='docker'"):
            detect_sandbox()
    finally:
        sandbox_status.cache_clear()
        monkeypatch.delenv("TOOLGAUGE_SANDBOX")
        detect_sandbox()


@pytest.fixture
def no_bwrap(monkeypatch):
    """Pretend bubblewrap is unavailable here: detection found only the ``namespaces`` fallback."""
    status = SandboxStatus(kind="namespaces", why="bwrap failed: bwrap not found")
    monkeypatch.setattr(policy, "sandbox_status", lambda: status)
    monkeypatch.delenv(policy.UNSAFE_ENV, raising=False)
    policy._warn_unisolated.cache_clear()
    yield
    policy.allow_unisolated(False)


async def test_untrusted_code_is_refused_without_bubblewrap(tmp_path, no_bwrap):
    with pytest.raises(UsageError) as caught:
        sandboxed_command(["python", "server.py"], tmp_path, SMALL)
    assert str(caught.value) == (
        "generated servers run only under bubblewrap: apt-get install bubblewrap "
        "(or pass --unsafe-no-sandbox to run them unisolated)"
    )
    marker = tmp_path / "ran"
    with pytest.raises(UsageError):
        await run_sandboxed(["touch", str(marker)], tmp_path, SMALL)
    assert not marker.exists()
    # An explicit kind is the caller's own choice (the fallback tests below use it).
    assert "--kind" in sandboxed_command(["python"], tmp_path, SMALL, kind="rlimits")


@pytest.mark.parametrize("how", ["env", "flag"])
def test_the_opt_out_runs_the_fallback_with_a_loud_warning(tmp_path, no_bwrap, monkeypatch, capsys, how):
    if how == "env":
        monkeypatch.setenv(policy.UNSAFE_ENV, "1")
    else:
        allow_unisolated(True)
    cmd = sandboxed_command(["python", "server.py"], tmp_path, SMALL)
    assert cmd[cmd.index("--kind") + 1] == "namespaces"
    assert "WARNING: running generated code WITHOUT ISOLATION" in capsys.readouterr().err


def test_bwrap_is_accepted_without_an_opt_out(monkeypatch):
    monkeypatch.setattr(policy, "sandbox_status", lambda: SandboxStatus(kind="bwrap", why="bwrap works"))
    monkeypatch.delenv(policy.UNSAFE_ENV, raising=False)
    assert require_isolation().kind == "bwrap"


def test_sandboxed_command_shape(tmp_path):
    cmd = sandboxed_command(["python", "server.py"], tmp_path, SandboxLimits(), kind="bwrap")
    assert cmd[0] == sys.executable
    assert cmd[-3:] == ["--", "python", "server.py"]
    assert "--limits" in cmd and "--workdir" in cmd
    with pytest.raises(ValueError):
        sandboxed_command([], tmp_path, SandboxLimits())


async def test_missing_workdir_is_a_result_with_a_reason(tmp_path):
    result = await run_sandboxed(["true"], tmp_path / "nope", SMALL)
    assert result.returncode == 125
    assert result.reason is not None and result.reason.startswith("sandbox failed to start: workdir")


# --- the normal case -------------------------------------------------------------------------------------


async def test_benign_program_sees_clean_env_private_workdir_and_unprivileged_uid(tmp_path, monkeypatch):
    monkeypatch.setenv("TOOLGAUGE_SECRET", "s3cr3t-" + uuid.uuid4().hex)
    (tmp_path / "data.txt").write_text("mine\n")
    code = "import os, json; print(json.dumps([os.getuid(), os.getcwd(), sorted(os.environ), sorted(os.listdir('.'))]))"
    result = await run_sandboxed([sandbox_python(), "-c", code], tmp_path, SMALL)
    assert result.returncode == 0 and result.reason is None, result
    uid, cwd, env_keys, files = __import__("json").loads(result.stdout)
    assert set(env_keys) <= ALLOWED_ENV
    assert files == ["data.txt"]
    if detect_sandbox() == "bwrap":
        assert cwd == "/sandbox"
    if IS_ROOT and detect_sandbox() == "bwrap":
        assert uid != 0


# --- hostile programs through run_sandboxed --------------------------------------------------------------


@pytest.fixture
def host_listener() -> Iterator[tuple[int, list[bytes]]]:
    """A TCP listener on the host's 127.0.0.1 that records every connection it accepts."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.2)
    accepted: list[bytes] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except (TimeoutError, OSError):
                continue
            accepted.append(conn.recv(100))
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1], accepted
    stop.set()
    thread.join()
    server.close()


@needs_bwrap
async def test_network_egress_is_refused(tmp_path, host_listener):
    port, accepted = host_listener
    result = await hostile("net_egress.py", tmp_path, "--port", str(port))
    assert "ESCAPED" not in result.stdout, result.stdout
    # Four attempts, four refusals: TCP 1.1.1.1, TCP host loopback, UDP DNS, getaddrinfo.
    assert result.stdout.count("contained") == 4, result.stdout
    assert accepted == []
    assert result.reason and result.reason.startswith("network access refused: network attack:")


@needs_bwrap
async def test_fork_bomb_is_refused_and_its_children_die(tmp_path):
    tag = uuid.uuid4().hex
    result = await hostile("fork_bomb.py", tmp_path, "--tag", tag, limits=SMALL.model_copy(update={"processes": 16}))
    match = re.search(r"fork refused after (\d+) children", result.stdout)
    assert match, result
    # RLIMIT_NPROC 16 counts the sandbox uid's processes: the server itself plus at most 15 children.
    assert int(match.group(1)) <= 15
    assert result.reason and "fork refused" in result.reason
    assert wait_gone(tag) == []


@needs_bwrap
async def test_memory_bomb_hits_the_memory_limit(tmp_path):
    result = await hostile("memory_bomb.py", tmp_path, limits=SMALL.model_copy(update={"memory_mb": 256}))
    assert "ESCAPED" not in result.stdout
    assert result.reason == "memory limit: MemoryError", result


@needs_bwrap
async def test_cpu_spin_hits_the_cpu_limit(tmp_path):
    result = await hostile("cpu_spin.py", tmp_path, limits=SMALL.model_copy(update={"cpu_seconds": 1}))
    assert not result.timed_out
    assert result.reason and result.reason.startswith("CPU limit: 1 s"), result


@needs_bwrap
async def test_sleeping_forever_hits_the_wall_clock(tmp_path):
    tag = uuid.uuid4().hex
    # Long enough for bubblewrap and Python to start and print on a loaded machine; the program sleeps for days.
    result = await hostile(
        "sleep_forever.py", tmp_path, "--tag", tag, limits=SMALL.model_copy(update={"wall_seconds": 10})
    )
    assert result.timed_out
    assert result.reason == "timed out after 10 s (wall clock)"
    assert result.stdout == "sleeping\n"
    assert wait_gone(tag) == []


def bound_children(directory: Path) -> set[str]:
    """Names inside ``directory`` that exist in the sandbox only as the way to a bound interpreter path."""
    names = set()
    for bind in interpreter_binds():
        rel = os.path.relpath(bind, directory)
        if not rel.startswith(".."):
            names.add(rel.split("/")[0])
    return names


def scratch_markers(tag: str) -> list[Path]:
    """Unique marker names in the host's world-writable scratch places (none exists before the test)."""
    return [Path(place) / f"toolgauge-canary-{tag}" for place in ("/tmp", "/var/tmp", "/dev/shm")]


@needs_bwrap
async def test_writes_outside_the_workdir_never_reach_the_host(tmp_path):
    tag = uuid.uuid4().hex
    canary = tmp_path / "canary"
    canary.mkdir()
    canary.chmod(0o777)  # writable by anyone: only the mount isolation can stop the write
    markers = scratch_markers(tag)
    targets = [canary / "pwned", *markers]
    args = [item for target in targets for item in ("--target", str(target))]
    try:
        result = await hostile("write_outside.py", tmp_path, *args)
        # Each target was attempted; the ones in /tmp, /var/tmp and /dev/shm land in private tmpfs.
        assert all(str(t) in result.stdout for t in targets), result.stdout
        assert f"wrote /tmp/toolgauge-canary-{tag}" in result.stdout, result.stdout
        for target in targets:
            assert not target.exists(), f"{target} reached the host"
        assert list(canary.iterdir()) == []
        assert result.reason and "write attack:" in result.reason
    finally:
        for marker in markers:  # never leave litter on the host, even when the test fails
            marker.unlink(missing_ok=True)


@needs_bwrap
async def test_users_files_and_environment_secrets_are_not_readable(tmp_path, monkeypatch):
    secret = "env-secret-" + uuid.uuid4().hex
    monkeypatch.setenv("TOOLGAUGE_API_KEY", secret)
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    private = tmp_path / "private"
    private.mkdir()
    private.chmod(0o755)
    token = "file-secret-" + uuid.uuid4().hex
    (private / "id_rsa").write_text(token)
    (private / "id_rsa").chmod(0o644)  # world-readable: only the mount isolation hides it
    checkout = REPO
    reads = [
        private / "id_rsa",
        Path("/etc/shadow"),
        Path("/etc/gshadow"),
        Path("/proc/1/environ"),
        checkout / "README.md",
    ]
    lists = [Path("/root"), Path("/home"), Path.home() / ".cache", checkout]
    args = [x for p in reads for x in ("--read", str(p))] + [x for p in lists for x in ("--list", str(p))]
    files = await hostile("read_files.py", tmp_path, *args)
    env = await hostile("env_secret.py", tmp_path)
    readme_line = (checkout / "README.md").read_text().splitlines()[0]
    for result in (files, env):
        assert secret not in result.stdout + result.stderr
        assert token not in result.stdout + result.stderr
        assert readme_line not in result.stdout
        assert result.reason is not None
    for path in reads:
        assert f"refused {path}:" in files.stdout, (path, files.stdout)
    for path in lists:
        # Absent, or (like /root here, which holds the interpreter) only the way to a bound interpreter path.
        listed = re.search(rf"^listed {re.escape(str(path))}: (.*)$", files.stdout, flags=re.M)
        if listed is None:
            assert f"refused {path}:" in files.stdout, (path, files.stdout)
        else:
            assert set(ast.literal_eval(listed.group(1))) <= bound_children(path), (path, files.stdout)
    seen = {line.split("=", 1)[0] for line in env.stdout.splitlines()}
    assert seen <= ALLOWED_ENV, seen


@needs_bwrap
async def test_hostname_change_stays_inside(tmp_path):
    before = socket.gethostname()
    name = "pwned-" + uuid.uuid4().hex[:8]
    result = await hostile("set_hostname.py", tmp_path, "--name", name)
    assert socket.gethostname() == before
    # Refused (an unprivileged uid), or done inside the sandbox's own UTS namespace: either way not the host.
    assert "refused sethostname" in result.stdout or f"set hostname {name}" in result.stdout, result.stdout
    assert result.reason and "hostname attack:" in result.reason


@needs_bwrap
async def test_a_hard_link_in_the_workdir_is_refused(tmp_path):
    outside = tmp_path / "outside-secret"
    outside.write_text("secret-" + uuid.uuid4().hex)
    workdir = tmp_path / "work"
    workdir.mkdir()
    os.link(outside, workdir / "linked.txt")
    result = await run_sandboxed([sandbox_python(), "-c", "print(open('linked.txt').read())"], workdir, SMALL)
    assert outside.read_text() not in result.stdout
    assert result.reason and result.reason.startswith("sandbox failed to start:") and "hard link" in result.reason


@needs_bwrap
async def test_huge_stdout_is_capped_and_stopped(tmp_path):
    limits = SMALL.model_copy(update={"output_bytes": 100_000})
    result = await hostile("huge_stdout.py", tmp_path, limits=limits)
    assert len(result.stdout) <= 100_000
    assert not result.timed_out
    assert result.reason == "output limit: more than 100000 bytes written"


@needs_bwrap
async def test_orphaned_children_are_dead_after(tmp_path):
    tag = uuid.uuid4().hex
    result = await hostile("orphan.py", tmp_path, "--tag", tag)
    assert result.stdout == "orphan started\n", result
    assert result.reason == "exited with code 1: orphan started"
    assert wait_gone(tag) == []


@needs_bwrap
async def test_killing_the_parent_and_kill_minus_one_are_contained(tmp_path):
    sentinel = subprocess.Popen(["sleep", "60"])
    try:
        result = await hostile("kill_parent.py", tmp_path)
        assert sentinel.poll() is None, "a host process was killed"
    finally:
        sentinel.kill()
        sentinel.wait()
    assert "refused kill parent" in result.stdout, result.stdout
    if IS_ROOT:
        # The sandbox runs as an unprivileged uid, so the program did try kill -9 -1 (in its own pid
        # namespace there may be nothing else to signal: "No such process").
        assert re.search(r"sent kill -9 -1|refused kill -9 -1: No such process", result.stdout), result.stdout
    assert result.reason and "kill attack:" in result.reason


@needs_bwrap
async def test_big_file_hits_the_file_size_limit(tmp_path):
    result = await hostile("big_file.py", tmp_path, limits=SMALL.model_copy(update={"file_size_mb": 8}))
    assert "ESCAPED" not in result.stdout
    assert result.reason and result.reason.startswith("file size limit"), result


@needs_bwrap
async def test_open_files_limit(tmp_path):
    result = await hostile("fd_exhaust.py", tmp_path, limits=SMALL.model_copy(update={"open_files": 64}))
    assert "ESCAPED" not in result.stdout
    assert result.reason and result.reason.startswith("open files limit"), result


@needs_bwrap
@pytest.mark.skipif(not IS_ROOT, reason="per-sandbox uids are used only when launched by root")
async def test_parallel_sandboxes_do_not_share_the_process_limit(tmp_path):
    # Each sandbox runs as its own uid, so a bomb exhausting its 16 processes leaves the other's 16 intact.
    limits = SMALL.model_copy(update={"processes": 16})
    workdir = tmp_path / "forker"
    workdir.mkdir()
    code = (
        "import os, time\ntime.sleep(1.0)\npids = []\nfor _ in range(8):\n"
        "    pid = os.fork()\n    if pid == 0:\n        time.sleep(1.0)\n        os._exit(0)\n    pids.append(pid)\n"
        "for pid in pids:\n    os.waitpid(pid, 0)\nprint('forked 8')\n"
    )
    (workdir / "forker.py").write_text(code)
    bomb, forker = await asyncio.gather(
        hostile("fork_bomb.py", tmp_path, limits=limits),
        run_sandboxed([sandbox_python(), "forker.py"], workdir, limits),
    )
    assert "fork refused" in bomb.stdout
    assert forker.stdout == "forked 8\n", forker


@needs_bwrap
@pytest.mark.skipif(not IS_ROOT, reason="the user-namespace mode is the fallback of a root harness")
def test_bwrap_in_a_user_namespace_still_isolates_network_and_files(tmp_path):
    # The mode used when root may not create namespaces directly (e.g. a default Docker container).
    tag = uuid.uuid4().hex
    canary = tmp_path / "canary"
    canary.mkdir()
    canary.chmod(0o777)
    markers = scratch_markers(tag)
    targets = [canary / "pwned", *markers]
    workdir = stage("write_outside.py", tmp_path)
    argv = [sandbox_python(), "server.py", "--once", *[x for t in targets for x in ("--target", str(t))]]
    try:
        done = subprocess.run(
            _command(argv, workdir, SMALL, "bwrap", userns=True), capture_output=True, text=True, timeout=60
        )
        assert f"refused {canary / 'pwned'}" in done.stdout, done
        assert not any(t.exists() for t in targets), done
    finally:
        for marker in markers:
            marker.unlink(missing_ok=True)
    workdir = stage("net_egress.py", tmp_path)
    cmd = _command([sandbox_python(), "server.py", "--once"], workdir, SMALL, "bwrap", userns=True)
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert done.stdout.count("contained") == 4 and "ESCAPED" not in done.stdout, done


# --- the fallbacks ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["namespaces", "rlimits"])
async def test_fallbacks_contain_cpu_memory_time_and_fork(kind):
    if kind == "namespaces" and (problem := probe_sandbox("namespaces")) is not None:
        pytest.skip(f"unshare namespaces not usable here: {problem}")
    # A world-readable interpreter lets the fallback drop to an unprivileged uid (the one under /root does not).
    python = "/usr/bin/python3" if Path("/usr/bin/python3").exists() else sandbox_python()
    can_drop = not IS_ROOT or accessible_to_others(python)
    root = Path(tempfile.mkdtemp(prefix="toolgauge-fallback-"))
    root.chmod(0o755)
    try:
        dirs = {}
        for name in ("cpu_spin.py", "memory_bomb.py", "sleep_forever.py", "fork_bomb.py"):
            dirs[name] = stage(name, root)
            dirs[name].chmod(0o755)
            (dirs[name] / "server.py").chmod(0o644)
        tag = uuid.uuid4().hex

        def run(name, **update):
            argv = [python, "server.py", "--once", "--tag", tag]
            return run_sandboxed(argv, dirs[name], SMALL.model_copy(update=update), kind=kind)

        jobs = [
            run("cpu_spin.py", cpu_seconds=1),
            run("memory_bomb.py", memory_mb=256),
            run("sleep_forever.py", wall_seconds=1.5),
        ]
        if can_drop:
            jobs.append(run("fork_bomb.py", processes=16))
        results = await asyncio.gather(*jobs)
    finally:
        shutil.rmtree(root)
    cpu, memory, sleep = results[:3]
    assert cpu.reason and cpu.reason.startswith("CPU limit"), cpu
    assert memory.reason == "memory limit: MemoryError", memory
    assert sleep.timed_out and sleep.reason == "timed out after 1.5 s (wall clock)"
    if can_drop:
        fork = results[3]
        match = re.search(r"fork refused after (\d+) children", fork.stdout)
        assert match and int(match.group(1)) <= 15, fork
        assert fork.reason and "fork refused" in fork.reason
    assert wait_gone(tag) == []


# --- the MCP path: sandboxed_command as the command of stdio_client --------------------------------------


async def mcp_session_tools(workdir: Path, limits: SandboxLimits, call: tuple[str, dict] | None = None):
    cmd = sandboxed_command([sandbox_python(), "server.py"], workdir, limits)
    params = StdioServerParameters(command=cmd[0], args=cmd[1:])
    with open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            with anyio.fail_after(60):
                await session.initialize()
                tools = [tool.name for tool in (await session.list_tools()).tools]
                text = None
                if call:
                    result = await session.call_tool(*call)
                    text = result.content[0].text
    return tools, text


@needs_bwrap
async def test_mcp_server_initialises_and_lists_tools_through_the_sandbox(tmp_path):
    workdir = stage("benign_echo.py", tmp_path)
    tools, text = await mcp_session_tools(workdir, SandboxLimits(), ("echo", {"text": "héllo"}))
    assert tools == ["echo"]
    assert text == "héllo"


@needs_bwrap
async def test_hostile_mcp_server_orphan_dies_with_the_session(tmp_path):
    # orphan.py serves MCP while its escaped grandchild sleeps; closing the session must end both.
    tag = uuid.uuid4().hex
    workdir = stage("orphan.py", tmp_path)
    cmd = sandboxed_command([sandbox_python(), "server.py", "--tag", tag], workdir, SandboxLimits())
    params = StdioServerParameters(command=cmd[0], args=cmd[1:])
    with open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            with anyio.fail_after(60):
                await session.initialize()
                assert tagged_pids(tag), "the orphan should be alive while the session is"
                report = await session.call_tool("attack_report", {})
                assert report.content[0].text == "orphan started"
    assert wait_gone(tag) == []


@needs_bwrap
async def test_mcp_server_that_never_starts_is_killed(tmp_path):
    tag = uuid.uuid4().hex
    workdir = stage("sleep_forever.py", tmp_path)
    cmd = sandboxed_command([sandbox_python(), "server.py", "--tag", tag], workdir, SandboxLimits())
    params = StdioServerParameters(command=cmd[0], args=cmd[1:])
    with pytest.raises(BaseException) as caught, open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            with anyio.fail_after(1):
                await session.initialize()
    # anyio task groups may wrap the timeout in an exception group.
    assert caught.type is TimeoutError or caught.group_contains(TimeoutError), caught.value
    assert wait_gone(tag, seconds=10) == []


@needs_bwrap
def test_sigterm_to_the_sandbox_group_ends_everything(tmp_path):
    # What a caller that only has the Popen does: kill the process group the trampoline leads.
    tag = uuid.uuid4().hex
    workdir = stage("orphan.py", tmp_path)
    cmd = sandboxed_command([sandbox_python(), "server.py", "--tag", tag], workdir, SMALL)
    process = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert process.stdout is not None
        assert LineReader(process.stdout).until(lambda _: True, timeout=60) == ["orphan started\n"]
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=10)
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=60)
    assert wait_gone(tag) == []
