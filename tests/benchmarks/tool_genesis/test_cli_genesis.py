"""CLI: genesis evaluate and eval tool-genesis (bad input is one line + exit 2; gold end to end)."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from click.testing import Result

from helpers.child_process import sigint_restored
from helpers.cli_helpers import invoke, results_of, sample_rows
from helpers.genesis_stage import stage_server
from helpers.paths import FIXTURE_ROOT, SRC
from helpers.proc_tree import descendants, survivors
from helpers.secret_scan import file_bytes, leaks, store_values
from toolgauge.sandbox import SandboxStatus, detect_sandbox, policy

FIXTURES = FIXTURE_ROOT / "genesis"
# Generated code runs only under bubblewrap; elsewhere a launch is refused (tested below).
needs_bwrap = pytest.mark.skipif(detect_sandbox() != "bwrap", reason="bubblewrap sandbox not available here")
METRICS = [
    "compliance", "compliance_mcp_valid", "server_execution", "schema_f1", "schema_f1_live", "ut_soft", "ut_hard",
    "sr_soft", "sr_hard", "sr_oracle_normalized",
]  # fmt: skip


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


def one_error_line(result: Result) -> str:
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
    results = results_of(res)
    assert all(results.metric(key) is not None for key in METRICS)
    assert results.groups("cascade") == ["Start", "L1", "L2", "L3", "L4"]
    # The gold server: compliant, running, every tool and argument matched; the recorded answers pass the
    # official error-word check (the recorded error "Error: b is required" was expected to say "error").
    assert [results.value(k) for k in ("compliance", "server_execution", "schema_f1", "ut_hard")] == [1.0] * 4
    assert results.details["l4"].startswith("skipped: no agent model")
    # No task was rated, so the L4 rates are unknown rather than 0.
    assert (results.value("sr_soft"), results.value("sr_hard"), results.value("sr_soft", "L4", by="reached")) == (
        None, None, None,
    )  # fmt: skip
    assert results.value("servers", "L3", by="cascade") == 1
    assert results.settings == {"variant": "reference", "source": "gold", "data": str(data)}
    assert (out / "registry.json").is_file()

    # The registry it wrote evaluates the same way; the terminal output has the table and the cascade.
    res = invoke("genesis", "evaluate", "--data", str(data), "--pred", str(out), "--store", store, "-q")
    assert res.exit_code == 0, res.output
    assert "Schema-F1 (schema file)" in res.stdout
    assert "cascade: Start 1 (100.00%) → L1 1 (100.00%) → L2 1 (100.00%) → L3 1 (100.00%) → L4 0" in res.stdout
    found = re.search(r"^run (\S+) · 1 servers · 0 failed", res.stdout, re.MULTILINE)
    assert found, res.stdout  # the run line, with the unit of the registry
    run_id = found.group(1)

    # The stored run is shown again, and rescored from its stored per-server results (no launch, no model).
    shown = invoke("report", run_id, "--store", store)
    assert shown.exit_code == 0, shown.output
    assert "cascade: Start 1 (100.00%) → L1 1 (100.00%) → L2 1 (100.00%) → L3 1 (100.00%) → L4 0" in shown.stdout
    stored = results_of(invoke("report", run_id, "--store", store, "--json"))
    rows = tmp_path / "rescored.jsonl"
    again = invoke("rescore", run_id, "--store", store, "--json", "--samples", rows)
    assert again.exit_code == 0, again.output
    rescored = results_of(again)
    assert rescored.metrics == stored.metrics and rescored.details == stored.details
    assert [r["id"] for r in sample_rows(rows)] == ["mini-calc"]
    other = invoke("rescore", run_id, "--store", store, "--variant", "strict")
    assert other.exit_code == 2 and "needs the servers run again" in other.stderr


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
    results = results_of(res)
    assert results.details["stopped"] == {"mini-calc": {"level": "L4", "reason": "tasks not run"}}
    # The generated files are the correct fixture: compliant, running, exact names and descriptions
    # (Schema-F1 1 with the real embedder too: identical texts), no unexpected error word in any answer.
    assert [results.value(k) for k in ("compliance", "server_execution", "schema_f1", "ut_hard")] == [1.0] * 4
    assert (out / "mini-calc" / "server.py").read_text() == code
    assert "mini-calc" in json.loads((out / "registry.json").read_text())


@needs_bwrap
def test_gold_with_two_epochs_scores_each_try_from_its_own_folder(data: Path, tmp_path: Path) -> None:
    """eval tool-genesis --epochs 2: two folders and two registry entries; its registry evaluates each try."""
    store = f"sqlite:///{tmp_path / 'store.db'}"
    out, rows = tmp_path / "gold", tmp_path / "rows.jsonl"
    args = ["eval", "tool-genesis", "--model", "gold", "--data", str(data), "--out", str(out), "--skip-l4",
            "--epochs", "2", "--store", store, "--json", "-q"]  # fmt: skip
    res = invoke(*args, "--samples", str(rows))
    assert res.exit_code == 0, res.output
    results = results_of(res)
    assert results.run is not None and (results.run.epochs, results.run.samples) == (2, 1)
    assert [results.value(k) for k in ("compliance", "server_execution", "schema_f1", "ut_hard")] == [1.0] * 4
    # One server: one cluster, both tries of it resampled together.
    assert {(s.epochs, s.n) for s in results.summary.values()} == {(2, 1)}
    assert results.pass_at_k == results.pass_hat_k == {"1": 1.0, "2": 1.0}
    assert [(r["id"], r["epoch"], r["cluster"], r["value"]) for r in sample_rows(rows)] == [
        ("mini-calc", 1, "mini-calc", 1.0),
        ("mini-calc", 2, "mini-calc", 1.0),
    ]
    registry = json.loads((out / "registry.json").read_text())
    assert sorted(registry) == ["mini-calc", "mini-calc@e2"]
    for folder in ("mini-calc", "mini-calc@e2"):
        assert (out / folder / "server.py").is_file() and (out / folder / "tools.json").is_file()
    assert {Path(e["env_code_path"]).parent.name for e in registry.values()} == {"mini-calc", "mini-calc@e2"}

    # Its registry evaluates each try as a server of its own, clustered by the server.
    rows2 = tmp_path / "rows2.jsonl"
    ev = invoke("genesis", "evaluate", "--data", str(data), "--pred", str(out), "--store", store, "--json", "-q",
                "--samples", str(rows2))  # fmt: skip
    assert ev.exit_code == 0, ev.output
    evaluated = results_of(ev)
    assert evaluated.warnings == [] and evaluated.value("ut_hard") == 1.0
    assert {s.n for s in evaluated.summary.values()} == {1}
    assert [(r["id"], r["epoch"], r["cluster"]) for r in sample_rows(rows2)] == [
        ("mini-calc", 1, "mini-calc"),
        ("mini-calc@e2", 1, "mini-calc"),
    ]
    assert evaluated.run is not None
    again = invoke("rescore", evaluated.run.id, "--store", store, "--json")
    assert again.exit_code == 0, again.output
    assert results_of(again).metrics == evaluated.metrics

    # Resumed, the eval run repeats no try and leaves both folders as they are.
    for folder in ("mini-calc", "mini-calc@e2"):
        (out / folder / "mark").write_text(folder)
    resumed = invoke(*args, "--resume", results.run.id)
    assert resumed.exit_code == 0, resumed.output
    run = results_of(resumed).run
    assert run is not None and run.resumed_samples == 2
    assert all((out / folder / "mark").is_file() for folder in ("mini-calc", "mini-calc@e2"))
    assert sorted(json.loads((out / "registry.json").read_text())) == ["mini-calc", "mini-calc@e2"]


@needs_bwrap
def test_eval_names_the_folder_of_its_servers_last(data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without --out the servers go to .toolgauge/genesis/<model>-<strategy>: the last line says where."""
    monkeypatch.chdir(tmp_path)  # the default folder is relative to the working directory
    res = invoke("eval", "tool-genesis", "--model", "gold", "--data", str(data), "--skip-l4",
                 "--store", f"sqlite:///{tmp_path / 'store.db'}", "-q")  # fmt: skip
    assert res.exit_code == 0, res.output
    last = res.stdout.strip().splitlines()[-1]
    found = re.fullmatch(r"generated servers: (\S+) \(registry: (\S+)\)", last)
    assert found, res.stdout
    folder, registry = Path(found.group(1)), Path(found.group(2))
    assert folder == tmp_path.resolve() / ".toolgauge" / "genesis" / "gold-gold"
    assert registry == folder / "registry.json"
    assert list(json.loads(registry.read_text())) == ["mini-calc"]
    assert (folder / "mini-calc" / "server.py").is_file() and (folder / "mini-calc" / "tools.json").is_file()


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
    assert results_of(res).value("server_execution") == 0.0
    rows = {row["id"]: row for row in sample_rows(samples)}
    assert set(rows) == set(links)
    for slug in links:
        assert rows[slug]["scores"]["server_execution"] == 0.0
        assert "unsafe file:" in rows[slug]["metadata"]["failures"]["L1"], rows[slug]
        assert rows[slug]["explanation"].startswith("passed no level; stopped at L1:")
    assert "a hard link" in rows["hardlinked"]["metadata"]["failures"]["L1"]
    assert "a symbolic link" in rows["environ"]["metadata"]["failures"]["L1"]
    written = [samples.read_bytes(), *(p.read_bytes() for p in tmp_path.glob("store.db*"))]
    for blob in [res.stdout.encode(), res.stderr.encode(), *written]:
        assert secret.encode() not in blob


@needs_bwrap
def test_a_key_printed_on_a_servers_stderr_is_masked_everywhere(
    data: Path, registry: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "planted-stderr-" + uuid.uuid4().hex
    monkeypatch.setenv("TOOLGAUGE_API_KEY", secret)
    # A generated server that prints a key it was shown (here written into its code) and dies at start-up.
    (registry.parent / "mini-calc" / "server.py").write_text(
        f"import sys\nprint('connecting with key {secret}', file=sys.stderr, flush=True)\nsys.exit(3)\n"
    )
    store, samples = tmp_path / "store.db", tmp_path / "samples.jsonl"
    res = invoke("genesis", "evaluate", "--data", data, "--pred", registry, "--store", f"sqlite:///{store}",
                 "--samples", samples, "--json", "-q")  # fmt: skip
    assert res.exit_code == 0, res.output
    (row,) = sample_rows(samples)
    assert "stderr: connecting with key ***" in row["metadata"]["failures"]["L1"], row
    found = list(store_values(f"sqlite:///{store}"))
    outputs = [("stdout", res.stdout.encode()), ("stderr", res.stderr.encode())]
    assert leaks(iter([*found, *file_bytes(samples, *tmp_path.glob("store.db*")), *outputs]), [secret]) == []
    assert any(b"connecting with key ***" in value for where, value in found if where == "samples.result")


# -- Ctrl-C ends every sandbox -----------------------------------------------------------------------
@needs_bwrap
def test_ctrl_c_during_evaluate_ends_every_sandbox(tmp_path: Path) -> None:
    """SIGINT to ``genesis evaluate`` while its server hangs: the CLI exits and no sandbox process survives.

    The exit time is measured by benchmarks/sandbox_interrupt.py (docs/benchmarks/sandbox-safety.md); here
    a generous deadline only guards against a hang.
    """
    data, pred = stage_server(tmp_path, "hang_on_call")
    cli = subprocess.Popen(
        [sys.executable, "-m", "toolgauge.cli", "genesis", "evaluate", "--data", str(data), "--pred", str(pred),
         "--skip-l4", "--call-timeout", "600", "--store", f"sqlite:///{tmp_path / 'store.db'}", "-q"],
        cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(SRC)}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        preexec_fn=sigint_restored,  # the test sends SIGINT, also when it runs as a background job
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
            cli.wait(timeout=60)
    assert cli.returncode == 130, stderr
    assert b"interrupted" in stderr
    pids, groups = set(sandbox), {pgid for pgid, _ in sandbox.values()}
    # The kernel reaps a killed namespace asynchronously: poll (bounded) until nothing of it is left.
    end = time.monotonic() + 10
    while survivors(pids, groups) and time.monotonic() < end:
        time.sleep(0.05)
    assert survivors(pids, groups) == []
