"""What keeps a long suite run's memory flat: lean dialogues, a scripted client that keeps no
requests, and scoring that judges each turn once. The figures are in docs/benchmarks/memory.md."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from toolgauge.benchmarks.mtu.metrics import (
    DialogueTurnTally,
    TurnOutcome,
    dialogue_metrics,
    judge_turn,
    score_dialogue_turns,
)
from toolgauge.benchmarks.suite.loader import SuiteDialogue, SuiteTurn, load_suite, turn_histories, turn_history
from toolgauge.benchmarks.suite.options import SuiteOptions
from toolgauge.benchmarks.suite.protocol import SuiteBenchmark, SuiteResult, SuiteTurnResult
from toolgauge.engine import SampleOutcome
from toolgauge.errors import DataError
from toolgauge.models.offline import ScriptedClient
from toolgauge.records import AssistantTurn, Message, ModelRequest, ToolCall, ToolSpec

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_forecast",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "days": {"type": "number"}},
                "required": ["city"],
            },
        },
    },
    {"type": "function", "function": {"name": "ping"}},
]


def line(dialogue_id: str, *, tools: list[dict[str, object]] | None = None, user: str = "Weather in Lyon?") -> str:
    return json.dumps(
        {
            "id": dialogue_id,
            "system": "Be brief.",
            "tools": TOOLS if tools is None else tools,
            "turns": [
                {
                    "user": user,
                    "expected_calls": [{"name": "get_forecast", "arguments": {"city": "Lyon", "days": 1.0}}],
                    "tool_results": ['{"sky": "rain"}'],
                    "assistant": "Rain.",
                },
                {"user": "Thanks \u2028 bye", "expected_calls": [], "assistant": "You're welcome."},
                {"user": "Ping it.", "expected_calls": [{"name": "ping"}], "tool_results": ["pong"]},
            ],
        },
        ensure_ascii=False,
    )


def write(tmp_path: Path, text: str, *, name: str = "suite.jsonl") -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8"))
    return path


def loosen(schema_tools: list[dict[str, object]]) -> list[dict[str, object]]:
    tools = json.loads(json.dumps(schema_tools))
    tools[0]["function"]["parameters"]["additionalProperties"] = True
    return tools


# --- the scripted client -------------------------------------------------------------------------


def request(n: int) -> ModelRequest:
    return ModelRequest(messages=[Message(role="user", content=f"question {n}")], sample_key=f"s{n}")


def test_scripted_client_counts_requests_without_keeping_them() -> None:
    client = ScriptedClient(["a", "b"], cycle=True)
    answers = [asyncio.run(client.generate(request(n))).content for n in range(5)]
    assert answers == ["a", "b", "a", "b", "a"]
    assert client.request_count == 5
    with pytest.raises(RuntimeError, match="record_requests=True"):
        _ = client.requests


def test_scripted_client_keeps_requests_in_order_when_asked() -> None:
    client = ScriptedClient(policy=lambda r: AssistantTurn(content=r.sample_key), record_requests=True)
    for n in range(3):
        asyncio.run(client.generate(request(n)))
    assert [r.sample_key for r in client.requests] == ["s0", "s1", "s2"]
    assert client.request_count == 3


# --- lean dialogues --------------------------------------------------------------------------------


def test_dialogues_with_the_same_tools_share_one_tuple(tmp_path: Path) -> None:
    text = "\n".join([line("a"), line("b"), line("c", tools=loosen(TOOLS)), line("d")]) + "\n"
    a, b, c, d = load_suite(write(tmp_path, text))
    assert a.tools is b.tools and a.tools is d.tools
    assert c.tools is not a.tools
    assert c.tools[0].parameters["additionalProperties"] is True
    assert "additionalProperties" not in a.tools[0].parameters


def test_a_shared_tool_list_is_still_checked_against_each_dialogue(tmp_path: Path) -> None:
    bad = json.loads(line("b"))
    bad["turns"][0]["expected_calls"][0]["arguments"] = {"city": 3}
    path = write(tmp_path, line("a") + "\n" + json.dumps(bad) + "\n")
    with pytest.raises(DataError, match=r":2: turns\[0\]\.expected_calls\[0\]\.arguments\.city: expected string"):
        load_suite(path)


def test_turns_round_trip_exactly(tmp_path: Path) -> None:
    [loaded] = load_suite(write(tmp_path, line("a")))
    source = json.loads(line("a"))["turns"]
    turns = loaded.turns
    assert loaded.n_turns == len(turns) == 3
    assert turns[0].expected_calls == [ToolCall(name="get_forecast", arguments={"city": "Lyon", "days": 1.0})]
    assert isinstance(turns[0].expected_calls[0].arguments["days"], float)
    assert turns[1].user == source[1]["user"] and "\u2028" in turns[1].user
    assert (turns[1].tool_results, turns[2].assistant) == ([], None)


def test_dialogues_are_read_only_and_turns_are_fresh_copies() -> None:
    dialogue = SuiteDialogue(id="x", tools=[ToolSpec(name="f")], turns=[SuiteTurn(user="u")])
    with pytest.raises(AttributeError, match="read-only"):
        dialogue.id = "y"  # type: ignore[misc]
    dialogue.turns.append(SuiteTurn(user="lost"))
    dialogue.turns[0].user = "changed"
    assert [t.user for t in dialogue.turns] == ["u"]
    assert isinstance(dialogue.tools, tuple)


def test_replace_keeps_or_repacks_the_turns() -> None:
    dialogue = SuiteDialogue(id="x", system="s", tools=[ToolSpec(name="f")], turns=[SuiteTurn(user="u")])
    renamed = dialogue.replace(id="y", system=None)
    assert (renamed.id, renamed.system, renamed.turns, renamed.tools) == ("y", None, dialogue.turns, dialogue.tools)
    longer = dialogue.replace(turns=[*dialogue.turns, SuiteTurn(user="v")])
    assert [t.user for t in longer.turns] == ["u", "v"] and longer.n_turns == 2
    assert dialogue.replace() == dialogue and renamed != dialogue
    with pytest.raises(TypeError, match="no field 'colour'"):
        dialogue.replace(colour="red")


def test_a_dialogue_needs_turns_with_json_values() -> None:
    with pytest.raises(ValueError, match="at least one turn"):
        SuiteDialogue(id="x", tools=[], turns=[])
    odd = SuiteTurn(user="u", expected_calls=[ToolCall(name="f", arguments={"at": object()})], tool_results=["r"])
    with pytest.raises(ValueError, match="JSON values"):
        SuiteDialogue(id="x", tools=[], turns=[odd])


def test_turn_histories_match_turn_history(tmp_path: Path) -> None:
    [loaded] = load_suite(write(tmp_path, line("a")))
    for index, (turn, history) in enumerate(turn_histories(loaded)):
        assert turn == loaded.turns[index]
        assert history == turn_history(loaded, index)


def test_reads_crlf_lines_a_bom_and_a_missing_final_newline(tmp_path: Path) -> None:
    path = write(tmp_path, "\ufeff" + line("a") + "\r\n\r\n" + line("b"))
    assert [(d.id, d.line) for d in load_suite(path)] == [("a", 1), ("b", 3)]


# --- scoring ---------------------------------------------------------------------------------------


def outcome(key: str, *turns: list[ToolCall], error: str | None = None) -> SampleOutcome[SuiteResult]:
    result = SuiteResult(turns=[SuiteTurnResult(tool_calls=calls) for calls in turns]) if turns else None
    return SampleOutcome(key, result, error, 0.0)


def test_score_pairs_outcomes_in_order_and_marks_missing_ones(tmp_path: Path) -> None:
    text = "\n".join(line(i) for i in ("a", "b", "c")) + "\n"
    bench = SuiteBenchmark(load_suite(write(tmp_path, text)), options=SuiteOptions(), data_label="t")
    gold_a = [t.expected_calls for t in bench.items[0].turns]
    scored = bench.score(bench.samples(), [outcome("a", *gold_a), outcome("c", error="model_error: boom")])
    by_dialogue = {row.sample: row for row in scored.samples if row.metadata["turn"] == 0}
    assert by_dialogue["a"].scores["turn_correct"] is True and by_dialogue["a"].error is None
    assert by_dialogue["b"].error == "not run"
    assert by_dialogue["c"].error == "model_error: boom"
    assert scored.results.value("success_rate") == pytest.approx(1 / 3)
    assert len(scored.samples) == 9


def test_score_rejects_outcomes_out_of_order(tmp_path: Path) -> None:
    bench = SuiteBenchmark(
        load_suite(write(tmp_path, line("a") + "\n" + line("b") + "\n")), options=SuiteOptions(), data_label="t"
    )
    with pytest.raises(ValueError, match="'a' is not in sample order"):
        bench.score(bench.samples(), [outcome("b"), outcome("a")])


def test_the_tally_matches_grouping_all_verdicts_at_once() -> None:
    f, g = ToolCall(name="f", arguments={"x": 1}), ToolCall(name="g")
    turns = [
        TurnOutcome(dialogue_id="d1", turn=0, expected=[f], predicted=[f]),
        TurnOutcome(dialogue_id="d2", turn=1, expected=[g], predicted=[]),
        TurnOutcome(dialogue_id="d1", turn=1, expected=[f, g], predicted=[g, f]),
        TurnOutcome(dialogue_id="d2", turn=0, expected=[], predicted=[g]),
        TurnOutcome(dialogue_id="d1", turn=1, expected=[g], predicted=[g]),  # overwrites d1's turn 1
    ]
    tally = DialogueTurnTally()
    verdicts = [judge_turn(turn, "strict") for turn in turns]
    for turn, verdict in zip(turns, verdicts, strict=True):
        tally.add(turn.dialogue_id, turn.turn, verdict)
    summary = tally.summary()
    assert summary == score_dialogue_turns(turns, "strict")
    assert summary["tool_accuracy"] == sum(1 for v in verdicts if v.tool_correct) / 5
    assert summary["tool_number_accuracy"] == sum(v.tool_number_accuracy or 0.0 for v in verdicts) / 5
    expected_dialogues = dialogue_metrics([[verdicts[0].turn_correct, True], [False, False]])
    assert {k: summary[k] for k in expected_dialogues} == expected_dialogues
    assert DialogueTurnTally().summary() == {"n_turns": 0, "n_dialogues": 0}
