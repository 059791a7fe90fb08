"""CLI: genesis evaluate and eval tool-genesis (bad input is one line + exit 2; gold end to end)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from toolgauge.cli import app

runner = CliRunner()
FIXTURES = Path(__file__).parent / "fixtures" / "genesis"
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
