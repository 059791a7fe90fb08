"""MCP runtime: launch, list and call through the sandbox; the class-shape shim; the reference server.

Real launches cost a second or more each, so each launch test checks several things on one server.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest

from helpers.paths import FIXTURE_ROOT
from toolgauge.benchmarks.tool_genesis.gold import write_gold_server, write_reference_server
from toolgauge.benchmarks.tool_genesis.loader import load_genesis
from toolgauge.benchmarks.tool_genesis.replay_server import Recordings, arguments_key
from toolgauge.sandbox import detect_sandbox
from toolgauge.tools import ServerLaunchError, detect_server_shape, launch_server
from toolgauge.tools.mcp_server import stage_server_files
from toolgauge.tools.shim import build_server, find_server_class
from toolgauge.tools.staging import MAX_COPIED_FILES, OWNER_FILE, STAGE_PREFIX, new_staging_dir, sweep_stale_staging

FIXTURES = FIXTURE_ROOT / "genesis"
HOSTILE = FIXTURE_ROOT / "hostile"
# Generated code runs only under bubblewrap; elsewhere a launch is refused (tested in test_sandbox.py).
needs_bwrap = pytest.mark.skipif(detect_sandbox() != "bwrap", reason="bubblewrap sandbox not available here")

PROBE = '''
import json, os, time
from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("probe")

@server.tool()
def add(a: int, b: int) -> str:
    """Add."""
    return json.dumps({"sum": a + b})

@server.tool()
def refuse(why: str) -> str:
    """Fail with a message the caller sees."""
    raise ToolError(why)

@server.tool()
def nap(seconds: float) -> str:
    """Sleep."""
    time.sleep(seconds)
    return "awake"

@server.tool()
def where() -> str:
    """Working directory and its files."""
    return json.dumps({"cwd": os.getcwd(), "files": sorted(os.listdir("."))})

@server.tool()
def die() -> str:
    """Kill the server process."""
    os._exit(7)

if __name__ == "__main__":
    server.run()
'''


# -- shape detection and shim (no launch) --------------------------------------------------------
@pytest.mark.parametrize(
    ("source", "shape"),
    [
        ("class A:\n    def _initialize_mcp_server(self):\n        return None\n", "class"),
        ("class A:\n    def _initialize_mcp_server(self): ...\nif __name__ == '__main__':\n    A()\n", "script"),
        ("if '__main__' == __name__:\n    pass\n", "script"),
        ("from mcp.server import MCPServer\nMCPServer('x').run()\n", "script"),
        ("def broken(:\n", "script"),
    ],
)
def test_detect_server_shape(source: str, shape: str) -> None:
    assert detect_server_shape(source) == shape


def test_shim_finds_and_builds_the_class_shape() -> None:
    spec = importlib.util.spec_from_file_location("class_shape_env", FIXTURES / "class_shape" / "env.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    from toolgauge.tools.shim import install_fastmcp_alias

    install_fastmcp_alias()  # the fixture imports mcp.server.fastmcp (mcp 1.x)
    spec.loader.exec_module(module)
    cls = find_server_class(module)
    assert cls.__name__ == "CounterApp"
    server = build_server(cls)
    assert callable(server.run)

    class NoRun:
        def _initialize_mcp_server(self) -> object:
            return object()

    with pytest.raises(RuntimeError, match="has no run"):
        build_server(NoRun)


# -- reference server matching (no launch) -----------------------------------------------------
def test_reference_matching_rule() -> None:
    schema = {"properties": {"a": {"type": "integer"}, "b": {"anyOf": [{"type": "string"}, {"type": "null"}],
                                                             "default": None}}}  # fmt: skip
    spec = {
        "tools": [{"name": "get", "description": "", "inputSchema": schema}],
        "recordings": {"get": [
            {"arguments": {"a": 1}, "output": "first"},
            {"arguments": {"a": 1, "b": None}, "output": "shadowed: same key as the first"},
            {"arguments": {"a": 2, "b": "x"}, "output": "Error: bad", "is_error": True},
            {"arguments": "not an object", "output": "sent as {}"},
        ]},
    }  # fmt: skip
    rec = Recordings(spec)
    assert rec.answer("get", {"a": 1}) == ("first", False)
    assert rec.answer("get", {"a": 1.0, "b": None}) == ("first", False)  # default filled, 1.0 == 1
    assert rec.answer("get", {"a": 2, "b": "x"}) == ("Error: bad", True)
    assert rec.answer("get", {}) == ("sent as {}", False)
    assert rec.answer("get", {"a": True}) == ('Error: no recorded answer for get({"a": true})', True)
    assert rec.answer("nope", {}) == ("Error: unknown tool: nope", True)
    # Explicit defaults in the spec win over the listed schema's (the gold's strict schema has none).
    assert arguments_key({}, {"b": None}) == json.dumps({"b": None})


# -- launches --------------------------------------------------------------------------------
@needs_bwrap
def test_plain_script_server_through_the_sandbox(tmp_path: Path) -> None:
    (tmp_path / "server.py").write_text(PROBE)
    (tmp_path / "data.txt").write_text("a file of the server's own")

    async def scenario() -> None:
        async with launch_server(tmp_path / "server.py") as session:
            assert session.shape == "script"
            assert session.tool_names == ["add", "refuse", "nap", "where", "die"]
            assert session.tools[0]["inputSchema"]["required"] == ["a", "b"]

            ok = await session.call("add", {"a": 2, "b": 3})
            assert (ok.text, ok.is_error, ok.failure) == ('{"sum": 5}', False, None)
            assert ok.content == [{"type": "text", "text": '{"sum": 5}', "annotations": None}]

            refused = await session.call("refuse", {"why": "not today"})
            assert refused.is_error and "not today" in refused.text

            unknown = await session.call("missing", {})
            assert unknown.is_error and unknown.failure is None

            where = json.loads((await session.call("where", {})).text)
            # The sandbox runs the server in a private copy of its folder (plus the shim).
            assert {"server.py", "data.txt"} <= set(where["files"])
            assert where["cwd"] != str(tmp_path)

            slow = await session.call("nap", {"seconds": 5}, timeout=0.5)
            assert slow.failure == "timed out after 0.5 s" and session.alive

            dead = await session.call("die", {})
            assert dead.failure is not None and dead.failure.startswith("server died")
            assert not session.alive
            after = await session.call("add", {"a": 1, "b": 1})
            assert after.failure is not None and after.failure.startswith("server not running")

    asyncio.run(scenario())


@needs_bwrap
def test_class_shape_server_with_mcp1_import(tmp_path: Path) -> None:
    shutil.copy2(FIXTURES / "class_shape" / "env.py", tmp_path / "env.py")

    async def scenario() -> None:
        async with launch_server(tmp_path / "env.py") as session:
            assert session.shape == "class" and session.tool_names == ["increment"]
            # The import-time print went to stderr, not into the JSON-RPC stream; state lives in the instance.
            assert (await session.call("increment", {})).text == "1"
            assert (await session.call("increment", {"by": 2})).text == "3"

    asyncio.run(scenario())


@needs_bwrap
def test_launch_failures_are_launch_errors(tmp_path: Path) -> None:
    (tmp_path / "crash").mkdir()
    (tmp_path / "crash" / "server.py").write_text("raise SystemExit('missing backend: acme')\n")
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "server.py").write_text("from mcp.server import MCPServer\nMCPServer('none').run()\n")

    async def scenario() -> None:
        with pytest.raises(ServerLaunchError) as crash:
            async with launch_server(tmp_path / "crash" / "server.py"):
                pass
        assert crash.value.stage == "initialize" and "missing backend: acme" in crash.value.reason
        with pytest.raises(ServerLaunchError) as empty:
            async with launch_server(tmp_path / "empty" / "server.py"):
                pass
        assert empty.value.stage == "list_tools" and "lists no tools" in empty.value.reason
        with pytest.raises(ServerLaunchError) as missing:
            async with launch_server(tmp_path / "nowhere" / "server.py"):
                pass
        assert missing.value.stage == "prepare"

    asyncio.run(scenario())


@needs_bwrap
def test_gold_and_reference_servers_answer_recorded_outputs(tmp_path: Path) -> None:
    server = load_genesis_fixture(tmp_path)
    gold = write_gold_server(server, tmp_path / "gold")
    oracle = write_reference_server(server, tmp_path / "oracle")
    gold_tools = json.loads(gold.schema_path.read_text())["tools"]
    # The gold schema file is strictly compliant: greeting's anyOf [string, null] became string.
    assert gold_tools[1]["inputSchema"]["properties"]["greeting"]["type"] == "string"
    assert gold_tools[1]["inputSchema"]["additionalProperties"] is False

    async def scenario() -> None:
        async with launch_server(gold.code_path) as session:
            assert session.tools == gold_tools  # lists exactly the schema file's tools
            assert (await session.call("add", {"a": 2, "b": 3})).text == '{"sum": 5}'
            # greet(name="Ada") was recorded without greeting; its default (null) fills both sides.
            assert (await session.call("greet", {"name": "Ada", "greeting": None})).text == "Hello, Ada!"
            error = await session.call("add", {"a": 1})
            assert error.is_error and error.text == "Error: b is required"  # a recorded error
            none = await session.call("add", {"a": 7, "b": 7})
            assert none.is_error and none.text == 'Error: no recorded answer for add({"a": 7, "b": 7})'
        async with launch_server(oracle.code_path) as session:
            # The oracle lists the data's own schemas (anyOf kept).
            assert "anyOf" in session.tools[1]["inputSchema"]["properties"]["greeting"]
            assert (await session.call("greet", {"name": "Bo", "greeting": "Hi"})).text == "Hi, Bo!"

    asyncio.run(scenario())


def load_genesis_fixture(tmp_path: Path):  # type: ignore[no-untyped-def]
    path = tmp_path / "data.json"
    path.write_text("[" + (FIXTURES / "spec.json").read_text() + "]")
    return load_genesis(path)[0]


# -- staging: never follow a link ---------------------------------------------------------------
def _server_folder(root: Path) -> Path:
    folder = root / "server"
    folder.mkdir()
    shutil.copy2(FIXTURES / "correct" / "server.py", folder / "server.py")
    return folder


def _plant_secret(root: Path) -> tuple[Path, str]:
    secret = "planted-secret-" + uuid.uuid4().hex
    path = root / "secret.txt"
    path.write_text(secret)
    return path, secret


UNSAFE_CASES = {
    "symlink to a file": lambda folder, secret: (folder / "notes.txt").symlink_to(secret),
    "symlink to /proc/self/environ": lambda folder, secret: (folder / "env.txt").symlink_to("/proc/self/environ"),
    "symlink to a folder": lambda folder, secret: (folder / "data").symlink_to(secret.parent),
    "hard link": lambda folder, secret: os.link(secret, folder / "notes.txt"),
    "fifo": lambda folder, secret: os.mkfifo(folder / "pipe"),
    "nested symlink": lambda folder, secret: ((folder / "sub").mkdir(), (folder / "sub" / "x").symlink_to(secret)),
}


@pytest.mark.parametrize("case", sorted(UNSAFE_CASES))
def test_staging_refuses_links_and_special_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str) -> None:
    secret_path, secret = _plant_secret(tmp_path)
    monkeypatch.setenv("TOOLGAUGE_API_KEY", secret)  # what /proc/self/environ would hand over
    folder = _server_folder(tmp_path)
    UNSAFE_CASES[case](folder, secret_path)
    workdir = tmp_path / "work"
    workdir.mkdir()
    with pytest.raises(ServerLaunchError) as caught:
        stage_server_files(folder / "server.py", workdir)
    assert caught.value.stage == "prepare"
    assert caught.value.reason.startswith("unsafe file: "), caught.value.reason
    assert secret not in caught.value.reason
    copied = [p.read_bytes() for p in workdir.rglob("*") if p.is_file() and not p.is_symlink()]
    assert not any(secret.encode() in data for data in copied)


def test_staging_refuses_a_symlinked_code_file_and_launch_reports_it(tmp_path: Path) -> None:
    folder = _server_folder(tmp_path)
    (folder / "link.py").symlink_to(folder / "server.py")

    async def scenario() -> None:
        with pytest.raises(ServerLaunchError) as caught:
            async with launch_server(folder / "link.py"):
                pass
        assert caught.value.stage == "prepare"
        assert "unsafe file: link.py: a symbolic link" in caught.value.reason

    asyncio.run(scenario())


def test_staging_copies_only_the_code_file_of_a_large_folder(tmp_path: Path) -> None:
    folder = _server_folder(tmp_path)
    for number in range(MAX_COPIED_FILES + 1):
        (folder / f"data{number}.txt").write_text("x")
    workdir = tmp_path / "work"
    workdir.mkdir()
    staged = stage_server_files(folder / "server.py", workdir)
    assert staged == workdir / "server.py"
    assert sorted(p.name for p in workdir.iterdir()) == ["_toolgauge_shim.py", "server.py"]


def test_stale_staging_folders_are_swept(tmp_path: Path) -> None:
    mine = new_staging_dir(tmp_path)
    finished = subprocess.run(["true"], check=True)  # a process that has ended: its pid is a dead owner
    dead = tmp_path / f"{STAGE_PREFIX}dead"
    (dead / "work").mkdir(parents=True)
    (dead / OWNER_FILE).write_text(f"{os.getpid() + 10**6} 0\n")  # beyond pid_max: never alive
    garbled = tmp_path / f"{STAGE_PREFIX}garbled"
    garbled.mkdir()
    (garbled / OWNER_FILE).write_text("not a pid\n")
    unrelated = tmp_path / "someone-else"
    unrelated.mkdir()
    removed = sweep_stale_staging(tmp_path)
    assert finished.returncode == 0
    assert sorted(removed) == sorted([dead, garbled])
    assert mine.is_dir() and unrelated.is_dir() and not dead.exists() and not garbled.exists()


# -- invalid UTF-8 on the MCP channel ----------------------------------------------------------
GARBLE = """
import os
from mcp.server import MCPServer

server = MCPServer("garble")
# The SDK diverts fd 1 to stderr once it serves; a copy taken now still writes into the JSON-RPC channel.
WIRE = os.dup(1)

@server.tool()
def garble() -> str:
    \"\"\"Write bytes that are not UTF-8 into the channel, then answer.\"\"\"
    os.write(WIRE, b"\\xff\\xfe\\n")
    return "ok"

if __name__ == "__main__":
    server.run()
"""


@needs_bwrap
def test_invalid_utf8_on_stdout_is_a_recorded_failure(tmp_path: Path) -> None:
    (tmp_path / "start").mkdir()
    shutil.copy2(HOSTILE / "invalid_utf8.py", tmp_path / "start" / "server.py")
    (tmp_path / "call").mkdir()
    (tmp_path / "call" / "server.py").write_text(GARBLE)

    async def scenario() -> None:
        with pytest.raises(ServerLaunchError) as at_start:
            async with launch_server(tmp_path / "start" / "server.py", startup_timeout=30):
                pass
        assert "invalid UTF-8 on the server's stdout" in at_start.value.reason
        async with launch_server(tmp_path / "call" / "server.py") as session:
            outcome = await session.call("garble", {}, timeout=20)
            assert outcome.failure is not None and "invalid UTF-8" in outcome.failure, outcome
            assert not session.alive

    asyncio.run(scenario())
