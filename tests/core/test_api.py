"""The Python API: the documented example runs, sync inside a running loop, async, score, rescore, errors."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest

import toolgauge
from helpers.paths import DOCS
from toolgauge.benchmarks.suite.loader import builtin_suite_path, load_suite
from toolgauge.errors import DataError, UsageError

DOCS = DOCS / "api.md"


def test_the_example_in_docs_api_runs(capsys: pytest.CaptureFixture[str]) -> None:
    blocks = re.findall(r"```python\n(.*?)```", DOCS.read_text(), flags=re.S)
    # The first block is the runnable example; the analysis one reads the user's store (tests/core/test_analysis.py).
    assert len(blocks) == 2 and "toolgauge.analysis" in blocks[1]
    exec(compile(blocks[0], str(DOCS), "exec"), {"__name__": "docs_api_example"})
    printed = capsys.readouterr().out
    assert "tool_accuracy=1.00" in printed
    assert "turns scored; first:" in printed


def test_evaluate_returns_typed_results_and_accepts_str_or_path(tmp_path: Path) -> None:
    first = toolgauge.evaluate("suite", "gold", store=tmp_path / "a.db", limit=2)
    second = toolgauge.evaluate("suite", "gold", store=str(tmp_path / "b.db"), limit=2, data=str(builtin_suite_path()))
    assert first.results.metrics == second.results.metrics
    assert first.results.run is not None and first.results.run.samples == 2
    assert first.samples == []  # only with keep_samples
    assert {r.id for r in toolgauge.list_runs(store=tmp_path / "a.db")} == {first.run_id}


def test_sync_evaluate_works_inside_a_running_event_loop(tmp_path: Path) -> None:
    async def notebook_cell() -> toolgauge.Evaluation:
        # What a notebook does: a loop is already running when the user calls the sync form.
        return toolgauge.evaluate("suite", "gold", store=tmp_path / "s.db", limit=1)

    run = asyncio.run(notebook_cell())
    assert run.results.value("tool_accuracy") == 1.0


def test_evaluate_async(tmp_path: Path) -> None:
    run = asyncio.run(toolgauge.evaluate_async("suite", "gold", store=tmp_path / "s.db", limit=1))
    assert run.results.benchmark == "suite"


def test_score_replays_recorded_outputs_without_a_model(tmp_path: Path) -> None:
    dialogue = load_suite(builtin_suite_path())[0]
    recorded = tmp_path / "recorded.jsonl"
    # Every turn answered with no call: right exactly on the turns that expect none.
    recorded.write_text(
        "".join(json.dumps({"id": dialogue.id, "turn": i, "content": "no"}) + "\n" for i in range(len(dialogue.turns)))
    )
    run = toolgauge.score("suite", recorded, store=tmp_path / "s.db", limit=1, keep_samples=True)
    expected = sum(1 for t in dialogue.turns if not t.expected_calls) / len(dialogue.turns)
    assert run.results.value("tool_accuracy") == pytest.approx(expected)
    assert len(run.samples) == len(dialogue.turns)
    assert run.results.run is not None and run.results.run.model == f"replay:{recorded}"


def test_bad_input_raises_the_documented_errors(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="unknown benchmark 'nope'"):
        toolgauge.evaluate("nope", "gold", store=tmp_path / "s.db")
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json\n")
    with pytest.raises(DataError):
        toolgauge.evaluate("suite", "gold", store=tmp_path / "s.db", data=bad)
    assert not (tmp_path / "s.db").exists()  # nothing stored for bad input
    with pytest.raises(UsageError, match="no store"):
        toolgauge.read_run("latest", store=tmp_path / "missing.db")
    assert "suite" in toolgauge.benchmark_names()


def test_evaluate_gives_the_extra_roles_the_cli_would() -> None:
    """``evaluate`` without ``roles`` makes the role clients ``eval tool-genesis`` would, from the options."""
    from toolgauge.benchmarks.registry import spec_named
    from toolgauge.models.spec import resolve_model
    from toolgauge.run_setup import role_clients as clients_of
    from toolgauge.run_setup import role_specs

    def role_clients(spec: Any, options: Any, model: str, client: Any, *, timeout: float) -> dict[str, Any]:
        # The one rule every run uses (run_setup), with the roles the spec asks for.
        return clients_of(role_specs(spec, options, model), model, client, lambda s: resolve_model(s, timeout=timeout))

    spec = spec_named("tool-genesis")
    assert spec is not None
    judge = "http://127.0.0.1:9/v1#judge"
    evaluated = resolve_model("http://127.0.0.1:9/v1#evaluated")
    options = {"data": "x", "judge_model": judge}
    roles = role_clients(spec, options, "http://127.0.0.1:9/v1#evaluated", evaluated, timeout=5)
    # The evaluated model is the default agent and keeps its client; the judge gets one of its own.
    assert roles["agent"] is evaluated and roles["judge"] is not evaluated and "judge" in roles["judge"].name
    same = role_clients(spec, {**options, "agent_model": judge}, "gold", evaluated, timeout=5)
    assert same["agent"] is same["judge"]  # one spec, one client
    assert role_clients(spec, {**options, "skip_l4": True}, "gold", evaluated, timeout=5) == {}
    assert role_clients(spec, {"data": "x"}, "gold", evaluated, timeout=5) == {}  # gold is no agent, no judge
    suite = spec_named("suite")
    assert suite is not None and role_clients(suite, {}, "gold", evaluated, timeout=5) == {}
