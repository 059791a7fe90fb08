"""MTU-Bench's paper analyses on small hand-computed cases: hard set, Figure 5, error patterns, average, feedback."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from toolgauge import api
from toolgauge.benchmark import stored_config
from toolgauge.benchmarks.mtu.analyses import (
    averaged_score,
    error_patterns,
    judged_turn,
    paper_metrics,
    setting_average,
    stored_turns,
)
from toolgauge.benchmarks.mtu.feedback import FEEDBACK_TEXT, feedback_kind
from toolgauge.benchmarks.mtu.metrics import judge_mtu_item
from toolgauge.benchmarks.mtu.options import MtuOptions
from toolgauge.benchmarks.mtu.paper import paper_blocks
from toolgauge.benchmarks.mtu.protocol import MtuBenchmark
from toolgauge.benchmarks.mtu.react import render_react
from toolgauge.benchmarks.mtu.records import MtuItem, MtuSplit
from toolgauge.models.offline import ScriptedClient
from toolgauge.records import AssistantTurn, ModelRequest, ToolCall
from toolgauge.report.paper_tables import PaperBlock, PaperRun
from toolgauge.results import EvalResults, Metric


def item(item_id: str, split: MtuSplit, answer: dict[str, dict[str, Any]]) -> MtuItem:
    return MtuItem(id=item_id, split=split, question=f"question of {item_id}", answer=answer, line=1, path="x.jsonl")


def call(name: str, **arguments: Any) -> ToolCall:
    return ToolCall(name=name, arguments=arguments)


def calls_of(names: str) -> dict[str, dict[str, Any]]:
    return {name: {"v": name} for name in names}


def metric(metrics: list[Metric], name: str, group: str, by: str) -> Metric:
    return next(m for m in metrics if m.name == name and m.group == group and m.by == by)


# S-M: a 5-call item right, a 6-call item with only its first two calls, a 2-call item right; an M-S dialogue.
SM_HARD_RIGHT = item("S-M_1", "S-M", calls_of("abcde"))
SM_HARD_SHORT = item("S-M_2", "S-M", calls_of("fghijk"))
SM_EASY = item("S-M_3", "S-M", calls_of("xy"))
MS_TURNS = [
    item("M-S_7_0", "M-S", {"Search": {"city": "paris"}}),
    item("M-S_7_1", "M-S", {"Book": {"hotel_name": "ritz"}}),
    item("M-S_7_2", "M-S", {"": {}}),
]


def test_hard_set_and_figure5_breakdowns_hand_computed() -> None:
    items = [SM_HARD_RIGHT, SM_HARD_SHORT, SM_EASY, *MS_TURNS]
    predicted = [
        [call(n, v=n) for n in "abcde"],
        [call("f", v="f"), call("g", v="g")],
        [call("x", v="x"), call("y", v="y")],
        [call("Search", city="paris")],
        [call("Search", city="paris")],  # the turn wants Book: wrong
        [],
    ]
    verdicts = [judge_mtu_item(i, p) for i, p in zip(items, predicted, strict=True)]
    metrics = paper_metrics(items, verdicts)
    # Hard set: items 1 and 2. Item 2's TN = |{f,g}| / |{f..k}| = 2/6; TO = cos(0) * 2/6.
    assert metric(metrics, "n", "hard", "set").value == 2
    assert metric(metrics, "tool_number_accuracy", "hard", "set").value == pytest.approx((1 + 2 / 6) / 2)
    assert metric(metrics, "tool_order_accuracy", "hard", "set").value == pytest.approx((1 + 2 / 6) / 2)
    assert metric(metrics, "item_accuracy", "hard", "set").value == 0.5
    # By turns (M-S only): turn 1 right, turn 2 wrong, turn 3 right.
    assert [m.group for m in metrics if m.by == "turns" and m.name == "item_accuracy"] == ["1", "2", "3"]
    assert [m.value for m in metrics if m.by == "turns" and m.name == "item_accuracy"] == [1.0, 0.0, 1.0]
    assert metric(metrics, "tool_accuracy", "2", "turns").value == 0.0
    # By tools: 0 (the no-call turn), 1 (two M-S turns, one right), 2, 5, 6 gold calls, in numeric order.
    tools = [m for m in metrics if m.by == "tools" and m.name == "item_accuracy"]
    assert [(m.group, m.value, m.n) for m in tools] == [
        ("0", 1.0, 1), ("1", 0.5, 2), ("2", 1.0, 1), ("5", 1.0, 1), ("6", 0.0, 1)
    ]  # fmt: skip
    assert metric(metrics, "tool_number_accuracy", "6", "tools").value == pytest.approx(2 / 6)


def test_error_patterns_hand_computed() -> None:
    cases = [
        # S-S: wrong tool -> action; Book omitted, Find hallucinated.
        (item("S-S_1", "S-S", {"Book": {"x": "1"}}), [call("Find", x="1")]),
        # S-S: arguments that could not be decoded -> format, no call pattern.
        (item("S-S_2", "S-S", {"Book": {"x": "1"}}), [ToolCall(name="Book", parse_error="bad json")]),
        # S-S: right tool, one wrong value -> parameter; misaligned.
        (item("S-S_3", "S-S", {"Book": {"x": "1", "y": "2"}}), [call("Book", x="1", y="3")]),
        # S-S right: no pattern.
        (item("S-S_4", "S-S", {"Book": {"x": "1"}}), [call("Book", x="1")]),
        # M-S: turn 1 right; turn 2 repeats turn 1's gold call instead of Book -> action; omitted + inherited.
        (MS_TURNS[0], [call("Search", city="paris")]),
        (MS_TURNS[1], [call("Search", city="paris")]),
        (MS_TURNS[2], []),
    ]
    judged = [judged_turn(i, judge_mtu_item(i, p)) for i, p in cases]
    found = error_patterns(judged)
    assert (found.items, found.wrong) == (7, 4)
    assert dict(found.classes) == {"action": 2, "format": 1, "parameter": 1}
    assert dict(found.patterns) == {"omitted": 2, "hallucinated": 1, "misaligned": 1, "inherited": 1}
    # One dialogue, first wrong at its turn 2.
    assert dict(found.first_error_turn) == {2: 1} and found.error_free == 0
    assert found.mean_first_error_turn() == 2.0


def test_repeated_call_is_an_action_error_under_strict_only() -> None:
    mm = item("M-M_1_0", "M-M", {"A": {"x": "1"}})
    twice = [call("A", x="1"), call("A", x="2")]
    strict = error_patterns([judged_turn(mm, judge_mtu_item(mm, twice, "strict"))], "strict")
    assert dict(strict.classes) == {"action": 1} and dict(strict.patterns) == {"repeated": 1}
    # The released scorer collapses repeats (the last call's values): a parameter error; the second call repeats.
    reference = error_patterns([judged_turn(mm, judge_mtu_item(mm, twice))])
    assert dict(reference.classes) == {"parameter": 1} and dict(reference.patterns) == {"repeated": 1}


def test_averaged_score_fixes_the_scaling_bug() -> None:
    # GPT-4's published S-S: 88.46 and 57.69 percent. The released scorer prints (88.46 + 57.69) / 2 * 100.
    ss = setting_average({"tool_accuracy": 0.8846, "parameter_accuracy": 0.5769}, "S-S")
    assert ss == pytest.approx(0.73075)
    assert setting_average({"tool_accuracy": 0.5}, "S-S") is None
    averages = {"S-S": ss, "S-M": 0.5, "M-S": 0.25, "M-M": 1.0}
    assert averaged_score(averages) == pytest.approx((0.73075 + 0.5 + 0.25 + 1.0) / 4)
    assert averaged_score({**averages, "M-M": None}) is None


def test_feedback_kinds_follow_the_error_and_the_setting() -> None:
    assert feedback_kind("unparsable", "all") == "parse"
    assert feedback_kind("wrong_tool", "tool") == "tool" and feedback_kind("no_call", "all") == "tool"
    assert feedback_kind("wrong_parameters", "param") == "param"
    assert feedback_kind("wrong_parameters", "tool") is None
    assert feedback_kind(None, "all") is None and feedback_kind("wrong_tool", "none") is None


SS_ITEMS = [
    item("S-S_1", "S-S", {"Book": {"x": "1"}}),  # first wrong tool, then right
    item("S-S_2", "S-S", {"Book": {"x": "2"}}),  # right at once
    item("S-S_3", "S-S", {"Book": {"x": "3"}}),  # wrong value twice
]


def scripted(request: ModelRequest) -> AssistantTurn:
    """First attempts: S-S_1 calls the wrong tool, S-S_3 gives a wrong value; second attempts: S-S_1 is right."""
    assert request.gold is not None
    right = AssistantTurn(content=request.gold.content)
    if request.sample_key == "S-S_1":
        return right if request.step == 1 else AssistantTurn(content=render_react([call("Find", x="1")]))
    if request.sample_key == "S-S_3":
        return AssistantTurn(content=render_react([call("Book", x="9")]))
    return right


def run_with_feedback(tmp_path: Path, feedback: str) -> tuple[api.Evaluation, ScriptedClient]:
    bench = MtuBenchmark(SS_ITEMS, options=MtuOptions(feedback=feedback), data_label="hand")
    client = ScriptedClient(policy=scripted, record_requests=True)
    done = api.evaluate(bench, client, store=tmp_path / "store.db", use_cache=False, keep_samples=True, concurrency=1)
    return done, client


def test_feedback_all_gives_one_more_attempt_and_reports_recovery(tmp_path: Path) -> None:
    done, client = run_with_feedback(tmp_path, "all")
    results = done.results
    # The first attempt is what the released metrics score: unchanged by feedback.
    assert results.value("tool_accuracy", "S-S", "split") == pytest.approx(2 / 3)
    assert results.value("parameter_accuracy", "S-S", "split") == pytest.approx(1 / 3)
    assert results.value("accuracy_without_feedback") == pytest.approx(1 / 3)
    assert results.value("accuracy_with_feedback") == pytest.approx(2 / 3)
    assert results.value("recovery_rate") == 0.5 and results.value("feedback_given") == 2
    assert results.value("recovery_rate", "tool", "feedback") == 1.0
    assert results.value("recovery_rate", "param", "feedback") == 0.0
    # Two items wrong at first: five requests; the retry carries the reply and the feedback, never the gold.
    assert client.request_count == 5
    retries = [r for r in client.requests if r.step == 1]
    assert {r.sample_key for r in retries} == {"S-S_1", "S-S_3"}
    tool_retry = next(r for r in retries if r.sample_key == "S-S_1")
    assert [m.role for m in tool_retry.messages] == ["user", "assistant", "user"]
    last = tool_retry.messages[-1].content or ""
    assert last.startswith("Observation: Incorrect tool selection") and "Book" not in last
    units = {u.id: u for u in done.samples}
    assert units["S-S_1"].scores["feedback"] == "tool" and units["S-S_1"].scores["recovered"] is True
    assert "feedback" not in units["S-S_2"].scores


def test_feedback_param_only_answers_parameter_errors(tmp_path: Path) -> None:
    done, client = run_with_feedback(tmp_path, "param")
    assert client.request_count == 4  # only S-S_3 (a parameter error) gets a second attempt
    assert done.results.value("feedback_given") == 1 and done.results.value("recovery_rate") == 0.0
    assert done.results.metric("recovery_rate", "tool", "feedback") is None


def test_no_feedback_keeps_the_released_protocol(tmp_path: Path) -> None:
    done, client = run_with_feedback(tmp_path, "none")
    assert client.request_count == 3
    assert done.results.metric("recovery_rate") is None
    # Stored as the options model's field (issue 23), "none" when off: the protocol is the released one.
    assert stored_config(MtuBenchmark(SS_ITEMS, options=MtuOptions(), data_label="hand"))["feedback"] == "none"


def paper_run(done: api.Evaluation, results: EvalResults | None = None, **config: Any) -> PaperRun:
    return PaperRun(id=done.run_id, benchmark="mtu-bench", model="scripted", config=config,
                    results=results or done.results, scores=done.samples)  # fmt: skip


def block(blocks: list[PaperBlock], ref: str, title_start: str = "") -> PaperBlock:
    return next(b for b in blocks if b.ref == ref and b.title.startswith(title_start))


def test_paper_blocks_from_stored_verdicts(tmp_path: Path) -> None:
    items = [SM_HARD_RIGHT, SM_HARD_SHORT, SM_EASY, *MS_TURNS]
    wrong = {"S-M_2": [call("f", v="f"), call("g", v="g")], "M-S_7_1": [call("Search", city="paris")]}

    def policy(request: ModelRequest) -> AssistantTurn:
        assert request.gold is not None
        if request.sample_key in wrong:
            return AssistantTurn(content=render_react(wrong[request.sample_key]))
        return AssistantTurn(content=request.gold.content)

    done = api.evaluate(MtuBenchmark(items, options=MtuOptions(), data_label="hand"), ScriptedClient(policy=policy),
                        store=tmp_path / "store.db", use_cache=False, keep_samples=True)  # fmt: skip
    # A run stored before the hard set existed: its stored results lack it, its verdicts give it.
    old = done.results.model_copy(update={"metrics": [m for m in done.results.metrics if m.by in (None, "split")]})
    blocks = paper_blocks([paper_run(done, old, name="mine")])
    sm = block(blocks, "Tables 2-4", "S-M")
    assert sm.columns == ["Model", "TN", "TO", "Avg", "TN (hard)", "TO (hard)", "Avg (hard)"]
    row = sm.rows[0]
    assert row.label == "mine"
    tn = (1 + 2 / 6 + 1) / 3
    assert [c.value for c in row.cells] == pytest.approx([tn, tn, tn, 2 / 3, 2 / 3, 2 / 3])
    assert block(blocks, "Tables 2-4", "S-S").missing is not None  # no S-S item in this run
    average = block(blocks, "Average (A7)")
    assert average.rows[0].cells[1].value == pytest.approx(tn) and average.rows[0].cells[-1].value is None
    assert any(note.startswith("Average needs") for note in average.notes)
    turns = block(blocks, "Figure 5", "Accuracy by number of dialogue turns")
    assert turns.columns == ["Model", "turn 1", "turn 2", "turn 3"]
    assert [c.value for c in turns.rows[0].cells] == [1.0, 0.0, 1.0]
    patterns = block(blocks, "Tables 13-16")
    assert patterns.columns[1:] == ["items", "wrong", "format", "action", "parameter",
                                    "omitted", "misaligned", "repeated", "hallucinated", "inherited"]  # fmt: skip
    by_label = {r.label: [c.value for c in r.cells] for r in patterns.rows}
    assert by_label["mine · S-M"] == [3, 1, 0, 1, 0, 4, 0, 0, 0, 0]  # h, i, j, k omitted
    assert by_label["mine · M-S"] == [3, 1, 0, 1, 0, 1, 0, 0, 0, 1]
    first = block(blocks, "Error turn positions (line 398)")
    assert [c.value for c in first.rows[0].cells] == [1, 0.0, 2.0, 0, 1]
    assert block(blocks, "A2").missing is not None  # made without feedback
    assert stored_turns(done.samples)[0].expected == SM_HARD_RIGHT.gold_calls()


def test_paper_feedback_block(tmp_path: Path) -> None:
    done, _ = run_with_feedback(tmp_path, "all")
    a2 = block(paper_blocks([paper_run(done, feedback="all")]), "A2")
    assert a2.missing is None
    assert [c.value for c in a2.rows[0].cells] == pytest.approx(["all", 1 / 3, 2 / 3, 0.5, None, 1.0, 0.0])


def test_feedback_messages_answer_every_native_call_or_follow_a_text_reply() -> None:
    from toolgauge.benchmarks.mtu.protocol import _with_feedback

    native = AssistantTurn(content=None, tool_calls=[call("Find", x="1"), ToolCall(name="Book", id="c9")])
    reply, *results = _with_feedback(native, "tool")
    assert reply.role == "assistant" and [c.id for c in reply.tool_calls] == ["call_1", "c9"]
    assert [(m.role, m.tool_call_id, m.name) for m in results] == [("tool", "call_1", "Find"), ("tool", "c9", "Book")]
    assert all((m.content or "").startswith("Incorrect tool selection") for m in results)
    text = _with_feedback(AssistantTurn(content="Action: X"), "parse")
    assert [(m.role, m.content) for m in text] == [
        ("assistant", "Action: X"),
        ("user", "Observation: " + FEEDBACK_TEXT["parse"]),
    ]


def test_a_second_attempt_that_fails_keeps_the_first_reply(tmp_path: Path) -> None:
    # A replay has one recorded reply per item: the retry fails for good, the first attempt's verdict stands.
    bench = MtuBenchmark(SS_ITEMS[:1], options=MtuOptions(feedback="all"), data_label="hand")
    recorded = {"S-S_1": [AssistantTurn(content=render_react([call("Find", x="1")]))]}
    from toolgauge.models.offline import ReplayClient

    done = api.evaluate(bench, ReplayClient(recorded), store=tmp_path / "s.db", use_cache=False, keep_samples=True)
    (unit,) = done.samples
    assert unit.error is None and unit.explanation == "wrong_tool"
    assert (unit.scores["feedback"], unit.scores["recovered"]) == ("tool", False)
    assert done.results.value("tool_accuracy", "S-S", "split") == 0.0
    assert done.results.value("recovery_rate", "tool", "feedback") == 0.0
