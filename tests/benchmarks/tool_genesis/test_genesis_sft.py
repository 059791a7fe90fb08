"""``genesis export-sft`` (paper App. E.1): the filters, Direct and Repair examples, server-disjoint splits."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers.cli_helpers import invoke
from helpers.paths import FIXTURE_ROOT
from toolgauge.benchmarks.tool_genesis.records import GenesisServer
from toolgauge.benchmarks.tool_genesis.sft import ModelStep, examples_of, keep_reason, split_of
from toolgauge.records import AssistantTurn, Message, ToolCall
from toolgauge.results import SampleScore
from toolgauge.sandbox import detect_sandbox

FIXTURES = FIXTURE_ROOT / "genesis"
SERVER = GenesisServer(**json.loads((FIXTURES / "spec.json").read_text()))
SCHEMA = (FIXTURES / "correct" / "tools.json").read_text()
CODE = (FIXTURES / "correct" / "server.py").read_text()
BROKEN = (FIXTURES / "no_start" / "server.py").read_text()
needs_bwrap = pytest.mark.skipif(detect_sandbox() != "bwrap", reason="bubblewrap sandbox not available here")


def write(path: str, content: str) -> ToolCall:
    return ToolCall(name="write_file", arguments={"path": path, "content": content}, id=f"w-{path}")


def verdict(**scores: float | int) -> SampleScore:
    base: dict[str, float | int] = {"compliance": 1.0, "server_execution": 1.0, "ut_hard": 1.0, "unit_tests_counted": 5}
    return SampleScore(id="mini-calc", sample="mini-calc", scores={**base, **scores})


def test_the_e1_filters() -> None:
    assert keep_reason(verdict(), SERVER, ["plain text"]) is None
    assert keep_reason(verdict(compliance=0.0), SERVER, []) == "schema file not compliant"
    assert keep_reason(verdict(server_execution=0.0), SERVER, []) == "server did not launch"
    assert keep_reason(verdict(ut_hard=0.8), SERVER, []) == "unit tests fail (UT_hard 0.80)"
    assert keep_reason(verdict(ut_hard=0.8), SERVER, [], min_ut_hard=0.5) is None
    assert keep_reason(verdict(ut_hard=0.0, unit_tests_counted=0), SERVER, []) is None  # no test counted: none fail
    needs_key = SERVER.model_copy(update={"requires_api": True})
    assert keep_reason(verdict(), needs_key, []) == "the server needs external credentials (requires_api)"
    leaked = "headers = {'Authorization': 'Bearer abcdefgh12345678'}"
    assert keep_reason(verdict(), SERVER, [leaked]) == "a credential in the trajectory"


def test_direct_and_repair_examples_by_hand() -> None:
    opening = [Message(role="system", content="sys"), Message(role="user", content="requirement")]
    first = AssistantTurn(tool_calls=[write("tools.json", SCHEMA), write("server.py", BROKEN)])
    launch = AssistantTurn(tool_calls=[ToolCall(name="launch_server", id="l1")])
    fix = AssistantTurn(content="fixing the import", tool_calls=[write("server.py", CODE)])
    failure = "Launch failed (initialize): " + "x" * 300
    steps = [
        ModelStep(messages=opening, response=first),
        ModelStep(
            messages=[*opening, first.as_message(), Message(role="tool", content="Wrote tools.json")], response=launch
        ),
        ModelStep(
            messages=[*opening, first.as_message(), launch.as_message(), Message(role="tool", content=failure)],
            response=fix,
        ),
    ]
    direct, repair = examples_of(SERVER, steps, feedback_chars=100)
    # Direct: the direct strategy's request, answered with the final files (the fixed server.py).
    assert direct.kind == "direct" and direct.messages[-1]["role"] == "assistant"
    assert direct.messages[-1]["content"] == f"```json\n{SCHEMA.strip()}\n```\n\n```python\n{CODE.rstrip()}\n```"
    assert "Design and implement an MCP server" in direct.messages[1]["content"] and not direct.tools
    # Repair: only step 2 follows failing feedback and writes a file; the files as they were, feedback cut at 100.
    assert (repair.kind, repair.step) == ("repair", 2)
    context = repair.messages[2]["content"]
    assert "mini_calc_backend_that_does_not_exist" in context  # the broken server.py it repairs
    assert failure[:100] + "\n... [" + str(len(failure) - 100) + " more characters]" in context
    target = repair.messages[-1]
    assert target["content"] == "fixing the import"
    assert json.loads(target["tool_calls"][0]["function"]["arguments"]) == {"path": "server.py", "content": CODE}
    assert {t["function"]["name"] for t in repair.tools} >= {"write_file", "launch_server", "finish"}
    # The launch step follows no failure: no example of its own.
    assert [e.kind for e in examples_of(SERVER, steps[:2])] == ["direct"]


def test_splits_are_server_disjoint_and_seeded() -> None:
    servers = [f"s{i}" for i in range(10)]
    chosen = [s for s in servers if split_of(s, servers, 0.2, seed=0) == "validation"]
    assert len(chosen) == 2  # ceil(0.2 * 10)
    assert chosen == [s for s in servers if split_of(s, servers, 0.2, seed=0) == "validation"]  # stable
    assert split_of("s0", ["s0"], 0.5, seed=0) == "train"  # one server: nothing to hold out
    assert sum(split_of(s, servers[:2], 0.9, seed=1) == "validation" for s in servers[:2]) == 1  # never all


@needs_bwrap
def test_export_sft_from_a_code_agent_run(tmp_path: Path) -> None:
    """A scripted code agent writes a broken server, sees the launch fail, fixes it and finishes."""

    def tool_calls(*calls: ToolCall) -> dict[str, object]:
        return {"tool_calls": [c.model_dump(mode="json") for c in calls]}

    script = tmp_path / "script.json"
    script.write_text(json.dumps([
        tool_calls(write("tools.json", SCHEMA), write("server.py", BROKEN)),
        tool_calls(ToolCall(name="launch_server")),
        tool_calls(write("server.py", CODE)),
        tool_calls(ToolCall(name="launch_server")),
        tool_calls(ToolCall(name="finish")),
    ]))  # fmt: skip
    data = tmp_path / "data.json"
    data.write_text("[" + (FIXTURES / "spec.json").read_text() + "]")
    store = f"sqlite:///{tmp_path / 'store.db'}"
    res = invoke("eval", "tool-genesis", "--model", f"scripted:{script}", "--data", data, "--strategy", "code-agent",
                 "--out", tmp_path / "gen", "--store", store, "--skip-l4", "--json", "-q")  # fmt: skip
    assert res.exit_code == 0, res.output
    run_id = json.loads(res.stdout)["run"]["id"]
    out = tmp_path / "sft"
    exported = invoke("genesis", "export-sft", run_id, "--out", out, "--store", store)
    assert exported.exit_code == 0, exported.output
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["servers_kept"] == 1 and manifest["dropped"] == {}
    assert manifest["kinds"]["train"] == {"direct": 1, "repair": 1}
    lines = [json.loads(line) for line in (out / "train.jsonl").read_text().splitlines()]
    assert [len(line["messages"]) for line in lines] == [3, 4]
    assert "Launch failed" in lines[1]["messages"][2]["content"]
    assert (out / "validation.jsonl").read_text() == ""  # one server: all of it trains

    direct_run = invoke("eval", "tool-genesis", "--model", "gold", "--data", data, "--out", tmp_path / "gold",
                        "--store", store, "--skip-l4", "--json", "-q")  # fmt: skip
    gold_id = json.loads(direct_run.stdout)["run"]["id"]
    refused = invoke("genesis", "export-sft", gold_id, "--out", tmp_path / "x", "--store", store)
    assert refused.exit_code == 2 and "not an eval tool-genesis run that generated its servers" in refused.stderr
    assert not (tmp_path / "x").exists()
