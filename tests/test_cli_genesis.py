"""CLI: genesis evaluate and eval tool-genesis (bad input is one line + exit 2; gold end to end)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from typer.testing import CliRunner

from proc_tree import descendants, survivors
from toolgauge.cli import app
from toolgauge.sandbox import SandboxStatus, detect_sandbox, policy

runner = CliRunner()
FIXTURES = Path(__file__).parent / "fixtures" / "genesis"
SRC = Path(__file__).resolve().parents[1] / "src"
# Generated code runs only under bubblewrap; elsewhere a launch is refused (tested below).
needs_bwrap = pytest.mark.skipif(detect_sandbox() != "bwrap", reason="bubblewrap sandbox not available here")
KEYS = [
    "compliance", "compliance_mcp_valid", "server_execution", "schema_f1", "schema_f1_live", "ut_soft", "ut_hard",
    "sr_soft", "sr_hard", "sr_oracle_normalized", "cascade", "servers",
]  # fmt: skip


def invoke(*args: str):  # type: ignore[no-untyped-def]
    return runner.invoke(app, list(args), catch_exceptions=False)


@pytest.fixture()
def data(tmp_path: Path) -> Path:
    path = tmp_path / "data.json"
    path.write_text("[" + (FIXTURES / "spec.json").read_text() + "]")
    return path


@pytest.fixture()
def registry(tmp_path: Path) -> Path:
    folder = tmp_path / "pred"
    shutil.copytree(FIXTURES / "correct", folder / "mini-calc")
    reg = folder / "registry.json"
    reg.write_text(json.dumps({"mini-calc": {"json_schema_path": "mini-calc/tools.json",
                                             "env_code_path": "mini-calc/server.py"}}))  # fmt: skip
    return reg


def one_error_line(result) -> str:  # type: ignore[no-untyped-def]
    assert result.exit_code == 2, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    return lines[0]


def test_bad_data_file(tmp_path: Path, registry: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('[{"server_slug": "x"}]')
    line = one_error_line(invoke("genesis", "evaluate", "--data", str(bad), "--pred", str(registry)))
    assert f"{bad}:1:" in line and "agent_input_prompt" in line


def test_registry_pointing_at_a_missing_file(data: Path, registry: Path) -> None:
    (registry.parent / "mini-calc" / "server.py").unlink()
    line = one_error_line(invoke("genesis", "evaluate", "--data", str(data), "--pred", str(registry.parent)))
    assert "mini-calc.env_code_path: file not found" in line


def test_schema_file_that_is_not_json(data: Path, registry: Path) -> None:
    (registry.parent / "mini-calc" / "tools.json").write_text("tools: [add, greet]\n")
    line = one_error_line(invoke("genesis", "evaluate", "--data", str(data), "--pred", str(registry)))
    assert "tools.json:1: invalid JSON" in line


def test_missing_registry(data: Path, tmp_path: Path) -> None:
    line = one_error_line(invoke("genesis", "evaluate", "--data", str(data), "--pred", str(tmp_path)))
    assert "registry.json: file not found" in line


@needs_bwrap
def test_gold_end_to_end_then_evaluate_its_registry(data: Path, tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'store.db'}"
    out = tmp_path / "gold"
    res = invoke("eval", "tool-genesis", "--model", "gold", "--data", str(data), "--out", str(out),
                 "--limit", "1", "--store", store, "--json", "-q")  # fmt: skip
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)
    assert all(key in summary for key in KEYS)
    # The gold server: compliant, running, every tool and argument matched; the recorded answers pass the
    # official error-word check (the recorded error "Error: b is required" was expected to say "error").
    assert (summary["compliance"], summary["server_execution"], summary["schema_f1"], summary["ut_hard"]) == (
        1.0, 1.0, 1.0, 1.0,
    )  # fmt: skip
    assert summary["l4"].startswith("skipped: no agent model")
    # No task was rated, so the L4 rates are unknown rather than 0.
    assert (summary["sr_soft"], summary["sr_hard"], summary["over_reached"]["sr_soft"]) == (None, None, None)
    assert summary["cascade"]["L3"]["servers"] == 1
    assert (out / "registry.json").is_file()

    # The registry it wrote evaluates the same way; the terminal output has the table and the cascade.
    res = invoke("genesis", "evaluate", "--data", str(data), "--pred", str(out), "--store", store, "-q")
    assert res.exit_code == 0, res.output
    assert "Schema-F1 (schema file)" in res.stdout
    assert "cascade: Start 1 (100.00%) → L1 1 (100.00%) → L2 1 (100.00%) → L3 1 (100.00%) → L4 0" in res.stdout


@needs_bwrap
def test_eval_generates_then_evaluates_in_one_run(data: Path, tmp_path: Path) -> None:
    """A scripted model answers with the correct fixture server; generation and L1-L3 run in one episode."""
    schema = (FIXTURES / "correct" / "tools.json").read_text()
    code = (FIXTURES / "correct" / "server.py").read_text()
    script = tmp_path / "script.json"
    script.write_text(json.dumps([f"Schema:\n```json\n{schema}\n```\nServer:\n```python\n{code}```\n"]))
    out = tmp_path / "gen"
    res = invoke("eval", "tool-genesis", "--model", f"scripted:{script}", "--data", str(data), "--out", str(out),
                 "--store", f"sqlite:///{tmp_path / 'store.db'}", "--skip-l4", "--json", "-q")  # fmt: skip
    assert res.exit_code == 0, res.output
    row = json.loads(res.stdout)["servers"]["mini-calc"]
    # The generated files are the correct fixture: compliant, running, exact names and descriptions
    # (Schema-F1 1 with the real embedder too: identical texts), no unexpected error word in any answer.
    assert (row["compliance"], row["server_execution"], row["schema_f1"], row["ut_hard"]) == (1.0, 1.0, 1.0, 1.0)
    assert row["failures"] == {"L4": "tasks not run"}
    assert (out / "mini-calc" / "server.py").read_text() == code
    assert "mini-calc" in json.loads((out / "registry.json").read_text())


# -- isolation is required -------------------------------------------------------------------------
@pytest.fixture()
def no_bwrap(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pretend bubblewrap is unavailable: detection found only the ``namespaces`` fallback."""
    status = SandboxStatus(kind="namespaces", why="bwrap failed: bwrap not found")
    monkeypatch.setattr(policy, "sandbox_status", lambda: status)
    monkeypatch.delenv(policy.UNSAFE_ENV, raising=False)


@pytest.mark.usefixtures("no_bwrap")
def test_generated_servers_are_refused_without_bubblewrap(data: Path, registry: Path, tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'store.db'}"
    for args in (
        ("genesis", "evaluate", "--data", str(data), "--pred", str(registry), "--store", store),
        (
            "eval",
            "tool-genesis",
            "--model",
            "gold",
            "--data",
            str(data),
            "--out",
            str(tmp_path / "g"),
            "--store",
            store,
        ),
    ):
        line = one_error_line(invoke(*args))
        assert line == (
            "error: generated servers run only under bubblewrap: apt-get install bubblewrap "
            "(or pass --unsafe-no-sandbox to run them unisolated)"
        )
    assert not (tmp_path / "store.db").exists()  # refused before any run started


# -- links in a server's folder never hand a host file to the server -------------------------------
@needs_bwrap
def test_linked_files_never_leak_secrets_into_store_samples_or_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "planted-secret-" + uuid.uuid4().hex
    monkeypatch.setenv("TOOLGAUGE_API_KEY", secret)  # what a link to /proc/self/environ would read
    secret_file = tmp_path / "secret.txt"
    secret_file.write_text(secret)
    pred = tmp_path / "pred"
    links = {
        "symlinked": lambda folder: (folder / "notes.txt").symlink_to(secret_file),
        "environ": lambda folder: (folder / "env.txt").symlink_to("/proc/self/environ"),
        "hardlinked": lambda folder: os.link(secret_file, folder / "notes.txt"),
    }
    entries = {}
    for slug, plant in links.items():
        shutil.copytree(FIXTURES / "correct", pred / slug)
        plant(pred / slug)
        entries[slug] = {"json_schema_path": f"{slug}/tools.json", "env_code_path": f"{slug}/server.py"}
    (pred / "registry.json").write_text(json.dumps(entries))
    spec = json.loads((FIXTURES / "spec.json").read_text())
    data = tmp_path / "data.json"
    data.write_text(json.dumps([{**spec, "server_slug": slug, "server_name": slug} for slug in links]))
    samples = tmp_path / "samples.jsonl"
    res = invoke("genesis", "evaluate", "--data", str(data), "--pred", str(pred), "--store",
                 f"sqlite:///{tmp_path / 'store.db'}", "--samples", str(samples), "--json", "-q")  # fmt: skip
    assert res.exit_code == 0, res.output
    rows = json.loads(res.stdout)["servers"]
    for slug in links:
        assert rows[slug]["server_execution"] == 0.0
        assert "unsafe file:" in rows[slug]["failures"]["L1"], rows[slug]
    assert "a hard link" in rows["hardlinked"]["failures"]["L1"]
    assert "a symbolic link" in rows["environ"]["failures"]["L1"]
    assert samples.read_bytes().strip()
    written = [samples.read_bytes(), *(p.read_bytes() for p in tmp_path.glob("store.db*"))]
    for blob in [res.stdout.encode(), res.stderr.encode(), *written]:
        assert secret.encode() not in blob


# -- Ctrl-C ends every sandbox -----------------------------------------------------------------------
@needs_bwrap
def test_ctrl_c_during_evaluate_ends_every_sandbox(tmp_path: Path) -> None:
    """SIGINT to ``genesis evaluate`` while its server hangs: the CLI exits and no sandbox process survives.

    The exit time is measured by benchmarks/sandbox_interrupt.py (docs/benchmarks/sandbox-safety.md); here
    a generous deadline only guards against a hang.
    """
    pred = tmp_path / "pred"
    shutil.copytree(FIXTURES / "hang_on_call", pred / "mini-calc")
    (pred / "registry.json").write_text(json.dumps(
        {"mini-calc": {"json_schema_path": "mini-calc/tools.json", "env_code_path": "mini-calc/server.py"}}
    ))  # fmt: skip
    data = tmp_path / "data.json"
    data.write_text("[" + (FIXTURES / "spec.json").read_text() + "]")
    cli = subprocess.Popen(
        [sys.executable, "-m", "toolgauge.cli", "genesis", "evaluate", "--data", str(data), "--pred", str(pred),
         "--skip-l4", "--call-timeout", "600", "--store", f"sqlite:///{tmp_path / 'store.db'}", "-q"],
        cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(SRC)}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    sandbox: dict[int, tuple[int, str]] = {}
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and cli.poll() is None:
            sandbox = descendants(cli.pid)
            # The server itself (inside bubblewrap) is up: the shim's own interpreter, not bwrap's command line.
            if any("_toolgauge_shim.py" in cmd and not cmd.startswith("/usr/bin/bwrap") for _, cmd in sandbox.values()):
                break
            time.sleep(0.05)
        assert cli.poll() is None, "the CLI ended before its server started"
        assert sandbox, "no sandbox process appeared"
        cli.send_signal(signal.SIGINT)
        try:
            _, stderr = cli.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            pytest.fail(f"no exit within 30 s of SIGINT; sandbox alive: {survivors(set(sandbox), set())}")
    finally:
        if cli.poll() is None:
            cli.kill()
            cli.wait()
    assert cli.returncode == 130, stderr
    assert b"interrupted" in stderr
    pids, groups = set(sandbox), {pgid for pgid, _ in sandbox.values()}
    # The kernel reaps a killed namespace asynchronously: poll (bounded) until nothing of it is left.
    end = time.monotonic() + 10
    while survivors(pids, groups) and time.monotonic() < end:
        time.sleep(0.05)
    assert survivors(pids, groups) == []
