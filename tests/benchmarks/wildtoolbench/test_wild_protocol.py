"""WildToolBench protocol: gold history, the online matching branches, replay layout, and scoring of the logs.

Expected values are derived by hand from the official rules (``base_handler.inference_and_eval_multi_step``
online, ``eval_runner.params_checker`` / ``calc_accuracy`` offline); each test says how.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from helpers.paths import FIXTURE_ROOT
from toolgauge.benchmarks.wildtoolbench.args import MATCH_ERROR_STR_SIMILARITY, SCHEMA_ERROR_NESTED_TYPE
from toolgauge.benchmarks.wildtoolbench.io import read_official, read_steps, steps_from_results, write_official_results
from toolgauge.benchmarks.wildtoolbench.loader import builtin_wild_path, load_wild
from toolgauge.benchmarks.wildtoolbench.log import WildSessionResult
from toolgauge.benchmarks.wildtoolbench.metrics import BY_ERROR_CLASS, BY_TASK_TYPE
from toolgauge.benchmarks.wildtoolbench.options import WildOptions
from toolgauge.benchmarks.wildtoolbench.protocol import WildBenchmark, WildScoredRun, history_messages, task_graphs
from toolgauge.benchmarks.wildtoolbench.records import WildSession
from toolgauge.driver import RunOptions, RunResult, run_benchmark
from toolgauge.engine import EngineConfig
from toolgauge.errors import DataError, ModelError
from toolgauge.models.offline import NoModel, ScriptedClient
from toolgauge.records import AssistantTurn, ModelRequest
from toolgauge.results import EvalResults, RunStats, SampleScore

FIXTURES = FIXTURE_ROOT / "wildtoolbench"
SESSIONS = FIXTURES / "sessions.jsonl"
SCENARIO = FIXTURES / "steps_scenario.jsonl"
OFFICIAL = FIXTURES / "official_result.jsonl"


class Ran:
    """A finished run: its results, one score per task, and the session logs (read while the store was open)."""

    def __init__(self, scored: WildScoredRun, logs: list[WildSessionResult]):
        self.results: EvalResults = scored.results
        self.samples: list[SampleScore] = scored.samples
        self.logs = logs

    @property
    def run(self) -> RunStats:
        assert self.results.run is not None
        return self.results.run


def run(bench: WildBenchmark, spec: str = "gold", client: Any = None) -> Ran:
    options = RunOptions(store_url="sqlite://", engine=EngineConfig(show_progress=False, concurrency=1))
    logs: list[WildSessionResult] = []

    def keep_logs(result: RunResult[Any]) -> None:  # as the output writers do: while the store is open
        assert isinstance(result.scored, WildScoredRun)
        logs.extend(result.scored.session_logs())

    result = asyncio.run(run_benchmark(bench, spec, options, client=client, on_scored=keep_logs))
    assert isinstance(result.scored, WildScoredRun)
    return Ran(result.scored, logs)


def rows_by_id(ran: Ran) -> dict[str, SampleScore]:
    return {row.id: row for row in ran.samples}


def session(k: int, language: str = "en") -> WildSession:
    return load_wild(SESSIONS, language)[k]  # type: ignore[arg-type]


def replay(tmp_path: Path, sessions: list[WildSession], lines: list[dict[str, Any]], variant: str = "reference"):
    path = tmp_path / "steps.jsonl"
    path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")
    bench = WildBenchmark(sessions, WildOptions(variant=variant), data_label="test")  # type: ignore[arg-type]
    return run(bench, f"replay:{path}"), bench


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def step(sid: str, task: int, k: int, content: str | None = None, *calls: dict[str, Any]) -> dict[str, Any]:
    return {"session": sid, "task": task, "step": k, "content": content, "tool_calls": list(calls)}


# --- gold -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "language"),
    [(SESSIONS, "en"), (SESSIONS, "zh"), (builtin_wild_path(), "en")],
    ids=["official-en", "official-zh", "builtin-toolgauge-format"],
)
@pytest.mark.parametrize("variant", ["reference", "strict"])
def test_gold_scores_every_task_and_session(path, language, variant):
    sessions = load_wild(path, language)
    scored = run(WildBenchmark(sessions, WildOptions(language=language, variant=variant), data_label="gold"))
    results = scored.results
    assert results.value("task_accuracy") == 1.0
    assert results.value("session_accuracy") == 1.0
    # Gold follows the first optimal path, so every Parallel/Mixed task takes the fewest steps.
    assert results.value("optimal_path_rate") == 1.0
    n_tasks = sum(len(s.tasks) for s in sessions)
    assert results.value("tasks") == n_tasks
    assert results.settings == {"variant": variant, "language": language, "data": "gold"}
    assert len(scored.samples) == n_tasks
    assert all(row.value == 1.0 and row.scores["label"] == "correct" and row.explanation is None
               for row in scored.samples)  # fmt: skip


def test_gold_accomplish_progress_follows_the_official_pooled_step_count():
    # Reference AP = sum(steps logged) / sum(gold nodes) over Sequential and Mixed tasks. Gold on the
    # fixture: session 0 task 3 (Sequential) takes 3 steps for 3 nodes; session 1 task 1 (Mixed: two
    # same-name lookups together, the reservation, the answer) takes 3 steps for 4 nodes -> 6/7.
    scored = run(WildBenchmark(load_wild(SESSIONS), WildOptions(), data_label="gold"))
    assert (scored.results.value("complete_steps"), scored.results.value("total_steps")) == (6, 7)
    assert scored.results.value("accomplish_progress_rate") == pytest.approx(6 / 7)


# --- what the model sees ------------------------------------------------------------------------------


def test_history_replays_earlier_tasks_from_gold_as_the_official_handler_does():
    s = session(2)
    messages = history_messages(s, 2, task_graphs(s))
    shown = [(m.role, m.content, [c.name for c in m.tool_calls], m.tool_call_id) for m in messages]
    assert shown == [
        ("system", "Current Date: 2026-09-15 10:00 Tuesday", [], None),
        ("user", "Hi! What can you help me with?", [], None),
        ("assistant", "I can look up stock prices and company news for you.", [], None),
        ("user", "What's Apple trading at?", [], None),
        ("assistant", "", ["get_stock_price"], None),
        # _convert_to_tool_calls json.dumps every history tool content, so a string arrives quoted.
        ("tool", '"AAPL 231.50 USD"', [], "call_h1_0_0"),
        ("assistant", "Apple (AAPL) trades at 231.50 USD.", [], None),
        ("user", "Compare it with Microsoft and Nvidia.", [], None),
    ]
    assert messages[4].tool_calls[0].id == "call_h1_0_0"
    assert messages[4].tool_calls[0].arguments == {"symbol": "AAPL"}


def test_the_model_gets_live_observations_and_never_sees_the_pseudo_tools():
    requests: list[ModelRequest] = []

    def gold_policy(request: ModelRequest) -> AssistantTurn:
        requests.append(request)
        assert request.gold is not None
        return request.gold

    s = session(0)
    scored = run(WildBenchmark([s], WildOptions(), data_label="t"), "scripted", ScriptedClient(policy=gold_policy))
    assert scored.results.value("task_accuracy") == 1.0
    for request in requests:
        assert {t.name for t in request.tools} == {"get_weather", "get_air_quality", "book_taxi"}
    # Task 1 step 1: after the clarifying question the gold user_input is the next user message.
    clarify_followup = [r for r in requests if r.messages[-1].content == "From Central Station at 07:30."]
    assert len(clarify_followup) == 1
    # Task 0 step 1: the live tool messages carry the observations (JSON text of the object, not re-quoted),
    # each answering the call of the same name.
    second = requests[1]
    tool_messages = [m for m in second.messages if m.role == "tool"]
    calls = {c.id: c.name for c in second.messages[-3].tool_calls}
    assert {calls[m.tool_call_id]: m.content for m in tool_messages if m.tool_call_id} == {  # type: ignore[index]
        "get_weather": '{"condition": "snow", "high_c": -1}',
        "get_air_quality": '{"aqi": 35, "level": "good"}',
    }


# --- online branches ----------------------------------------------------------------------------------

OSLO = call("get_weather", city="Oslo", date="2026-03-03")
AIR = call("get_air_quality", city="Oslo")


def test_parallel_in_one_step_is_optimal_and_split_is_not(tmp_path):
    # Task 0 of session 0: weather and air quality are independent, then the answer. min_steps = 2.
    # One step with both calls + the answer at step 1 = min_steps - 1 -> optimal. Split over two steps,
    # the answer comes at step 2 -> still correct (the split path is a valid path) but not optimal.
    s = session(0)
    together, _ = replay(tmp_path, [s], [step(s.id, 0, 0, None, OSLO, AIR), step(s.id, 0, 1, "Snow; good air.")])
    split, _ = replay(
        tmp_path, [s], [step(s.id, 0, 0, None, AIR), step(s.id, 0, 1, None, OSLO), step(s.id, 0, 2, "Snow.")]
    )
    one = rows_by_id(together)[f"{s.id}#0"].scores
    two = rows_by_id(split)[f"{s.id}#0"].scores
    assert (one["label"], one["is_optimal"], one["steps"]) == ("correct", True, 2)
    assert (two["label"], two["is_optimal"], two["steps"]) == ("correct", False, 3)
    # OP counts the session's Parallel/Mixed tasks: only task 0 here, so 1/1 against 0/1.
    assert optimal_path(together) == {"accuracy": 1.0, "correct": 1, "total": 1}
    assert optimal_path(split) == {"accuracy": 0.0, "correct": 0, "total": 1}


def test_same_name_parallel_calls_may_be_taken_together_or_one_by_one_but_not_in_part(tmp_path):
    # Session 2 task 2: two get_stock_price nodes form a same-name group: the official DFS offers them
    # together (2 steps to the answer, optimal) or one per step (3 steps). Three calls never match.
    s = session(2)
    msft, nvda = call("get_stock_price", symbol="MSFT"), call("get_stock_price", symbol="NVDA")
    base = [step(s.id, 0, 0, "Hi."), step(s.id, 1, 0, None, call("get_stock_price", symbol="AAPL")),
            step(s.id, 1, 1, "231.50.")]  # fmt: skip
    together, _ = replay(tmp_path, [s], [*base, step(s.id, 2, 0, None, nvda, msft), step(s.id, 2, 1, "Done.")])
    apart, _ = replay(
        tmp_path, [s], [*base, step(s.id, 2, 0, None, msft), step(s.id, 2, 1, None, nvda), step(s.id, 2, 2, "Ok.")]
    )
    calls = [msft, nvda, msft, msft, msft, msft]
    looping, _ = replay(tmp_path, [s], [*base, *(step(s.id, 2, k, None, c) for k, c in enumerate(calls))])
    got = {name: rows_by_id(r)[f"{s.id}#2"].scores for name, r in (("together", together), ("apart", apart))}
    assert (got["together"]["label"], got["together"]["is_optimal"]) == ("correct", True)
    # One at a time: the arguments are checked pairwise after sorting, so MSFT then NVDA still match.
    assert (got["apart"]["label"], got["apart"]["is_optimal"]) == ("correct", False)
    # A model that keeps calling the tool: steps 0 and 1 match the two nodes, step 2 matches no
    # candidate (only the answer is left), and the task ends there although six steps were recorded.
    loop = rows_by_id(looping)[f"{s.id}#2"]
    assert (loop.scores["label"], loop.scores["steps"], loop.scores["failing_step"]) == ("error", 3, 2)
    assert loop.metadata["error_reason"] == "action name not in candidate_answer_function_list"
    assert loop.explanation == "redundant_call: action name not in candidate_answer_function_list"


def test_same_name_calls_pair_by_the_models_own_argument_text(tmp_path):
    # The official scorer sorts a step's same-name calls by their raw argument text and pairs them with the
    # sorted gold calls. Written without the space, MSFT's text sorts after NVDA's ('"' > ' '), so the
    # official pairing gives MSFT's gold to the NVDA call: an argument error. Re-encoding the parsed arguments
    # would have hidden that and scored the task correct.
    s = session(2)
    base = [step(s.id, 0, 0, "Hi."), step(s.id, 1, 0, None, call("get_stock_price", symbol="AAPL")),
            step(s.id, 1, 1, "231.50.")]  # fmt: skip

    def raw(text: str) -> dict[str, Any]:
        return {"name": "get_stock_price", "arguments": text}

    spaced = [raw('{"symbol": "NVDA"}'), raw('{"symbol": "MSFT"}')]
    unspaced_msft = [raw('{"symbol": "NVDA"}'), raw('{"symbol":"MSFT"}')]
    rows = {}
    for name, calls in (("spaced", spaced), ("unspaced", unspaced_msft)):
        scored, _ = replay(tmp_path, [s], [*base, step(s.id, 2, 0, None, *calls), step(s.id, 2, 1, "Done.")])
        rows[name] = rows_by_id(scored)[f"{s.id}#2"].scores
    assert rows["spaced"]["label"] == "correct"
    assert rows["unspaced"]["label"] == "error"
    assert rows["unspaced"]["failing_step"] == 0


def test_clarify_answered_with_a_question_or_skipped(tmp_path):
    # Session 0 task 1: gold asks first. Text at step 0 is accepted (a candidate holds the clarify
    # pseudo-tool), the user's reply follows, then book_taxi, then the answer: correct in 3 steps.
    # Calling book_taxi at once matches no candidate (step 0 only offers the question): action error,
    # classed missing_info (a call where the gold step asks the user).
    s = session(0)
    taxi = call("book_taxi", pickup="Central Station", destination="airport", time="07:30")
    asked, _ = replay(
        tmp_path, [s], [step(s.id, 1, 0, "From where, and when?"), step(s.id, 1, 1, None, taxi),
                        step(s.id, 1, 2, "Booked.")],
    )  # fmt: skip
    skipped, _ = replay(tmp_path, [s], [step(s.id, 1, 0, None, taxi), step(s.id, 1, 1, "Booked.")])
    good, bad = rows_by_id(asked)[f"{s.id}#1"].scores, rows_by_id(skipped)[f"{s.id}#1"].scores
    assert (good["label"], good["steps"]) == ("correct", 3)
    assert (bad["label"], bad["steps"], bad["failing_step"], bad["failure_class"]) == ("error", 1, 0, "missing_info")


def test_chat_wrong_name_and_empty_replies(tmp_path):
    # Session 1: task 3 is Chat (text at step 0 -> correct); task 0 wants search_restaurants, so
    # get_restaurant_details at step 0 is a wrong name; task 2 has no recorded step: an empty reply.
    s = session(1)
    scored, _ = replay(
        tmp_path,
        [s],
        [step(s.id, 0, 0, None, call("get_restaurant_details", restaurant_id="r-1")), step(s.id, 3, 0, "Mar Azul.")],
    )
    rows = rows_by_id(scored)
    assert rows[f"{s.id}#3"].scores["label"] == "correct"
    wrong = rows[f"{s.id}#0"]
    assert (wrong.scores["label"], wrong.scores["failure_class"], wrong.value) == ("error", "wrong_name", 0.0)
    assert wrong.metadata["error_reason"] == "action name not in candidate_answer_function_list"
    empty = rows[f"{s.id}#2"]
    assert (empty.scores["label"], empty.scores["steps"]) == ("error", 1)
    assert empty.metadata["error_reason"] == "tool_calls and content are None"
    assert empty.scores["failure_class"] == "call_error"
    assert empty.explanation == "call_error: tool_calls and content are None"
    assert empty.metadata["official_crash"] == "KeyError: 'inference_answer'"


@pytest.mark.parametrize(
    ("content", "variant", "label"),
    [
        ("", "reference", "error"),
        ("", "strict", "error"),
        ("   ", "reference", "correct"),
        ("   ", "strict", "error"),
    ],
)
def test_empty_string_content_is_an_empty_reply(tmp_path, content, variant, label):
    # The official loop (since its commit bdc85da) takes "" like None: an empty reply, an error. Whitespace is
    # text there and, on a Chat task, matches prepare_to_answer; the strict variant counts blank text as empty.
    s = session(1)
    scored, _ = replay(tmp_path, [s], [step(s.id, 3, 0, content)], variant=variant)
    row = rows_by_id(scored)[f"{s.id}#3"]
    assert row.scores["label"] == label
    if label == "error":
        assert row.metadata["error_reason"] == "tool_calls and content are None"


def test_fuzzy_arguments_pass_and_far_ones_fail_offline(tmp_path):
    # Session 0 task 3 (Sequential). Names right at every step, so online the task is "correct".
    # "bergen" vs "Bergen" is equal after lowercasing -> correct. "Oslo" vs "Bergen": gold is under 10
    # characters and the difflib ratio is far below 0.8 -> "string similarity too low"; reference then
    # deletes the next step entry, forces the name label to correct and the task is an error.
    s = session(0)
    taxi = call("book_taxi", pickup="Bergen airport", destination="city centre", time="10:00")
    close, _ = replay(
        tmp_path, [s], [step(s.id, 3, 0, None, call("get_weather", city="bergen", date="2026-03-04")),
                        step(s.id, 3, 1, None, taxi), step(s.id, 3, 2, "Rain.")],
    )  # fmt: skip
    far, _ = replay(
        tmp_path, [s], [step(s.id, 3, 0, None, call("get_weather", city="Oslo", date="2026-03-04")),
                        step(s.id, 3, 1, None, taxi), step(s.id, 3, 2, "Rain.")],
    )  # fmt: skip
    assert rows_by_id(close)[f"{s.id}#3"].scores["label"] == "correct"
    row = rows_by_id(far)[f"{s.id}#3"]
    labels = (row.scores["label"], row.scores["action_name_label"], row.scores["action_arguments_label"])
    assert labels == ("error", "correct", "error")
    assert row.metadata["first_argument_error"].startswith(MATCH_ERROR_STR_SIMILARITY)
    assert row.explanation == f"param_value_error: {row.metadata['first_argument_error']}"
    # AP: 3 steps logged, the entry after the failing one deleted -> 2 of 3 gold nodes.
    assert far.results.value("complete_steps", "Sequential Multi-Tool", BY_TASK_TYPE) == 2
    assert row.scores["complete_step"] == 2


def test_unparsable_arguments_pass_online_and_fail_as_invalid_json(tmp_path):
    s = session(1)
    broken = {"name": "search_restaurants", "arguments": '{"city": "Lisbon", "cuisine": '}
    scored, _ = replay(tmp_path, [s], [step(s.id, 0, 0, None, broken), step(s.id, 0, 1, "Two places.")])
    row = rows_by_id(scored)[f"{s.id}#0"]
    assert (row.scores["label"], row.metadata["first_argument_error"], row.scores["failure_class"]) == (
        "error", "error: args invalid json format", "call_error"
    )  # fmt: skip
    # The model's own text is what the log keeps, as the official log does.
    logged = scored.logs[0].result[0].steps[0].inference_output.tool_calls
    assert logged is not None and logged[0].function.arguments == '{"city": "Lisbon", "cuisine": '


# --- a whole scenario, reference and strict --------------------------------------------------------------


def scenario_rows(scored: Ran) -> dict[str, tuple[Any, ...]]:
    return {r.id: (r.scores["label"], r.scores["steps"], r.scores["failure_class"]) for r in scored.samples}


def optimal_path(scored: Ran) -> dict[str, Any]:
    """The overall OP as {accuracy, correct, total}."""
    metric = scored.results.metric("optimal_path_rate")
    assert metric is not None
    return {"accuracy": metric.value, "correct": scored.results.value("optimal_tasks"), "total": metric.n}


def error_counts(scored: Ran) -> dict[str, Any]:
    return {m.group: m.value for m in scored.results.metrics if m.by == BY_ERROR_CLASS and m.name == "failed_tasks"}


# Derived by hand from steps_scenario.jsonl and the official rules:
#  s0 t0 split parallel: correct, 3 steps, not optimal.   s0 t1 clarify, fuzzy taxi args: correct.
#  s0 t2 Chat but calls get_weather(Oslo, 03-03), which the gold history already holds: redundant_call.
#  s0 t3 Sequential, weather for Oslo instead of Bergen: argument error at step 0 (param_value_error:
#        "Oslo" appears in the context), the step-1 entry deleted -> complete_step 2 of 3.
#  s1 t0 correct.  s1 t1 Mixed, both lookups in one step, party_size "4" (string): argument error at
#        step 1 (param_type_error), not optimal any more, complete_step 3 - 1 = 2 of 4.
#  s1 t2 calls convert_currency where gold asks first: missing_info.  s1 t3 no step: call_error.
#  s2: no line at all -> every task an empty reply: 4 x call_error.
EXPECTED_SCENARIO = {
    "wild_tool_bench_0#0": ("correct", 3, None),
    "wild_tool_bench_0#1": ("correct", 3, None),
    "wild_tool_bench_0#2": ("error", 1, "redundant_call"),
    "wild_tool_bench_0#3": ("error", 3, "param_value_error"),
    "wild_tool_bench_1#0": ("correct", 2, None),
    "wild_tool_bench_1#1": ("error", 3, "param_type_error"),
    "wild_tool_bench_1#2": ("error", 1, "missing_info"),
    "wild_tool_bench_1#3": ("error", 1, "call_error"),
    **{f"wild_tool_bench_2#{t}": ("error", 1, "call_error") for t in range(4)},
}


def scenario(variant: str) -> tuple[Ran, WildBenchmark]:
    bench = WildBenchmark(load_wild(SESSIONS), WildOptions(variant=variant), data_label="scenario")  # type: ignore[arg-type]
    return run(bench, f"replay:{SCENARIO}"), bench


def test_scenario_reference():
    scored, _ = scenario("reference")
    assert scenario_rows(scored) == EXPECTED_SCENARIO
    results = scored.results
    assert results.value("task_accuracy") == pytest.approx(3 / 12)
    assert results.value("session_accuracy") == 0.0
    # OP over s0t0 (split), s1t1 (argument error) and s2t2 (empty): 0 of 3.
    assert optimal_path(scored) == {"accuracy": 0.0, "correct": 0, "total": 3}
    # AP pooled: (2 + 2) / (3 + 4).
    assert results.value("accomplish_progress_rate") == pytest.approx(4 / 7)
    assert error_counts(scored) == {
        "refusal": 0, "wrong_name": 0, "missing_info": 1, "wrong_refusal": 0, "redundant_call": 1,
        "call_error": 5, "early_termination": 0, "param_type_error": 1, "param_hallucination": 0,
        "param_value_error": 1,
    }  # fmt: skip
    assert results.value("failed_tasks") == 9
    assert results.value("failure_share", "call_error", BY_ERROR_CLASS) == pytest.approx(5 / 9)
    param = rows_by_id(scored)["wild_tool_bench_1#1"]
    assert param.metadata["first_argument_error"] == SCHEMA_ERROR_NESTED_TYPE
    # Session 2 has no recorded step: each task fails on an empty reply, scored without a session error.
    missing = rows_by_id(scored)["wild_tool_bench_2#0"]
    assert missing.error is None and missing.metadata["session"] == "wild_tool_bench_2"


def test_scenario_strict_counts_completed_gold_nodes():
    # Strict AP = mean over Sequential/Mixed tasks of completed gold nodes / gold nodes, the failing step
    # not counted: s0t3 fails at step 0 -> 0/3; s1t1 completes the two lookups, fails at step 1 -> 2/4.
    scored, _ = scenario("strict")
    assert scenario_rows(scored) == EXPECTED_SCENARIO
    assert scored.results.value("accomplish_progress_rate") == pytest.approx((0 / 3 + 2 / 4) / 2)
    assert scored.results.settings["variant"] == "strict"


def test_replay_lays_each_task_out_where_the_previous_one_stopped():
    bench = WildBenchmark(load_wild(SESSIONS), WildOptions(), data_label="t")
    table = bench.replay_table(SCENARIO)
    recorded = read_steps(SCENARIO)["wild_tool_bench_0"]
    # Session 0 tasks take 3, 3, 1 and 3 steps, so task 2's step 0 is the 7th model call (index 6) and
    # task 3 starts at index 7; the recorded turns appear in that order.
    flat = table["wild_tool_bench_0"]
    assert len(flat) == 10
    assert flat[6] == recorded[(2, 0)]
    assert flat[7:] == [recorded[(3, k)] for k in range(3)]
    # Session 1 task 2 stops at its first step, so its recorded step 1 is never served.
    assert len(table["wild_tool_bench_1"]) == 2 + 3 + 1 + 1
    # A session with no lines: one empty reply per task.
    assert table["wild_tool_bench_2"] == [AssistantTurn(content=None, finish_reason="stop")] * 4


def test_replay_rejects_files_that_do_not_fit_the_data(tmp_path):
    bench = WildBenchmark(load_wild(SESSIONS), WildOptions(), data_label="t")
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps(step("elsewhere", 0, 0, "hi")) + "\n")
    with pytest.raises(DataError, match="none of its 1 sessions is in the data"):
        bench.replay_table(other)
    too_far = tmp_path / "far.jsonl"
    too_far.write_text(json.dumps(step("wild_tool_bench_0", 4, 0, "hi")) + "\n")
    with pytest.raises(DataError, match="has 4 tasks; no task 4"):
        bench.replay_table(too_far)
    twice = tmp_path / "twice.jsonl"
    twice.write_text((json.dumps(step("wild_tool_bench_0", 0, 0, "hi")) + "\n") * 2)
    with pytest.raises(DataError, match="recorded twice") as info:
        bench.replay_table(twice)
    assert info.value.line == 2


# --- the official result file -----------------------------------------------------------------------------


def test_official_result_file_scores_like_the_replay_it_came_from():
    # official_result.jsonl holds sessions 0 and 1 of the scenario in the official shape; scored directly
    # (no replay) it gives the same task verdicts as replaying the steps.
    recorded = read_official(OFFICIAL)
    sessions = [s for s in load_wild(SESSIONS) if s.id in recorded]
    scored = run(
        WildBenchmark(sessions, WildOptions(), data_label="t", recorded=recorded), "official", NoModel("official")
    )
    assert scenario_rows(scored) == {
        k: v for k, v in EXPECTED_SCENARIO.items() if not k.startswith("wild_tool_bench_2")
    }
    assert scored.results.value("task_accuracy") == pytest.approx(3 / 8)
    assert scored.results.value("accomplish_progress_rate") == pytest.approx(4 / 7)
    assert scored.run.model_calls == 0


def test_written_results_round_trip_and_replay_to_the_same_verdicts(tmp_path):
    scored, _ = scenario("reference")
    out = tmp_path / "result" / "Wild-Tool-Bench_result.jsonl"
    out.parent.mkdir()  # toolgauge makes no folder for an output file
    write_official_results(out, scored.logs, model_name="m")
    first = json.loads(out.read_text(encoding="utf-8").splitlines()[0])
    assert list(first)[:3] == ["id", "model_name", "result"]
    assert set(first["result"][0]) >= {"action_name_label", "is_optimal", "inference_log"}
    assert "step_0" in first["result"][0]["inference_log"]
    again = read_official(out)
    read_back = [r for r in again.values() if isinstance(r, WildSessionResult)]
    assert len(read_back) == len(again)
    assert [r.model_dump(mode="json", exclude={"model_name"}) for r in read_back] == [
        r.model_dump(mode="json") for r in scored.logs
    ]
    assert [r.id for r in scored.logs] == ["wild_tool_bench_0", "wild_tool_bench_1", "wild_tool_bench_2"]
    steps = tmp_path / "steps.jsonl"
    steps.write_text("".join(json.dumps(line) + "\n" for line in steps_from_results(scored.logs)))
    replayed = run(WildBenchmark(load_wild(SESSIONS), WildOptions(), data_label="t"), f"replay:{steps}")
    assert scenario_rows(replayed) == scenario_rows(scored)


def test_a_session_whose_model_fails_is_recorded_and_scored_as_empty_replies():
    def policy(request: ModelRequest) -> AssistantTurn:
        if request.sample_key == "wild_tool_bench_1":
            raise ModelError("HTTP 400: context too long")
        assert request.gold is not None
        return request.gold

    scored = run(
        WildBenchmark(load_wild(SESSIONS), WildOptions(), data_label="t"), "scripted", ScriptedClient(policy=policy)
    )
    assert scored.run.sample_errors == 1
    rows = rows_by_id(scored)
    assert all(rows[f"wild_tool_bench_1#{t}"].scores["failure_class"] == "call_error" for t in range(4))
    failed = rows["wild_tool_bench_1#0"]
    assert failed.error is not None and "context too long" in failed.error
    assert failed.explanation == "call_error: no log" and failed.scores["steps"] == 0
    assert scored.results.value("correct_tasks") == 8
    assert scored.results.value("tasks_without_log") == 4
    # The failed session has no log: the output files leave it out.
    assert [r.id for r in scored.logs] == ["wild_tool_bench_0", "wild_tool_bench_2"]


def test_official_error_lines_fail_their_session_and_malformed_lines_are_rejected(tmp_path):
    # The official generator writes {"id", "result": "Error during inference: ..."} when a session raised;
    # that session is scored as failed (4 x call_error), the other one as logged.
    lines = OFFICIAL.read_text(encoding="utf-8").splitlines()
    failed = json.dumps({"id": "wild_tool_bench_1", "result": "Error during inference: context length exceeded"})
    path = tmp_path / "result.jsonl"
    path.write_text(lines[0] + "\n" + failed + "\n", encoding="utf-8")
    recorded = read_official(path)
    assert recorded["wild_tool_bench_1"] == "Error during inference: context length exceeded"
    sessions = [s for s in load_wild(SESSIONS) if s.id in recorded]
    scored = run(
        WildBenchmark(sessions, WildOptions(), data_label="t", recorded=recorded), "official", NoModel("official")
    )
    assert scored.run.sample_errors == 1
    rows = rows_by_id(scored)
    assert [rows[f"wild_tool_bench_1#{t}"].scores["failure_class"] for t in range(4)] == ["call_error"] * 4
    assert scenario_rows(scored)["wild_tool_bench_0#3"] == EXPECTED_SCENARIO["wild_tool_bench_0#3"]

    broken = json.loads(lines[0])
    del broken["result"][1]["inference_log"]["task_idx"]
    path.write_text(json.dumps(broken) + "\n", encoding="utf-8")
    with pytest.raises(DataError) as info:
        read_official(path)
    assert (info.value.line, info.value.field) == (1, "result[1].inference_log.task_idx")
    broken = json.loads(lines[0])
    broken["result"][0]["inference_log"]["step_1"]["inference_output"]["content"] = 7
    path.write_text(json.dumps(broken) + "\n", encoding="utf-8")
    with pytest.raises(DataError) as info:
        read_official(path)
    assert info.value.field == "result[0].inference_log.step_1.inference_output.content"


def test_tool_choice_expected_forces_the_gold_tool_and_none_for_text_steps():
    seen: list[tuple[str | None, str | None]] = []

    def gold_policy(request: ModelRequest) -> AssistantTurn:
        assert request.gold is not None
        first = request.gold.tool_calls[0].name if request.gold.tool_calls else None
        seen.append((request.options.tool_choice, first))
        return request.gold

    bench = WildBenchmark([session(0)], WildOptions(tool_choice="expected"), data_label="t")
    scored = run(bench, "scripted", ScriptedClient(policy=gold_policy))
    assert scored.results.value("task_accuracy") == 1.0
    # Every call step forces the first gold call's tool; every text step (clarify, answer) forces none.
    assert seen and all(choice == (first or "none") for choice, first in seen)
    assert ("none", None) in seen and ("book_taxi", "book_taxi") in seen


# --- build and rescore (what the CLI and the Python API call) ---------------------------------------------


def test_build_takes_str_paths_and_a_result_file_and_rescore_rebuilds_the_same_sessions(tmp_path):
    from toolgauge.benchmark import build_from, rebuild, stored_config
    from toolgauge.benchmarks.registry import spec_named
    from toolgauge.benchmarks.wildtoolbench.build import build, score_run
    from toolgauge.benchmarks.wildtoolbench.options import BUILTIN, WildScoreOptions
    from toolgauge.errors import UsageError

    spec = spec_named("wildtoolbench")
    assert spec is not None and spec.options is WildOptions and spec.unit == "sessions"

    def official_run(predictions: Path | str) -> WildBenchmark:
        options = WildScoreOptions.model_validate({"predictions": str(predictions), "data": str(SESSIONS),
                                                   "format": "official"})  # fmt: skip
        bench = score_run(options).bench
        assert isinstance(bench, WildBenchmark)
        return bench

    # Options as the Python API gives them (str paths), through the registry's score spec.
    official = official_run(OFFICIAL)
    # Only the sessions of the result file, named in the config so that rescore can find them again.
    assert [key for key, _ in official.samples()] == ["wild_tool_bench_0", "wild_tool_bench_1"]
    config = stored_config(official)
    assert official.recorded is not None and config["sessions"] == ["wild_tool_bench_0", "wild_tool_bench_1"]
    again = rebuild(spec, config, "strict")
    assert isinstance(again, WildBenchmark)
    assert [key for key, _ in again.samples()] == ["wild_tool_bench_0", "wild_tool_bench_1"]
    assert again.variant == "strict" and again.recorded is None  # the logs come from the store
    # Without a result file: the first --limit sessions, and rescore keeps the number.
    first = build_from(spec, {"data": str(SESSIONS), "language": "zh", "limit": 2, "tool_choice": "expected"})
    assert stored_config(first)["sessions"] is None and stored_config(first)["n"] == 2
    rebuilt = rebuild(spec, stored_config(first))
    assert stored_config(rebuilt) == stored_config(first)
    assert build().data_label == BUILTIN and rebuild(spec, stored_config(build())).data_label == BUILTIN  # type: ignore[attr-defined]
    with pytest.raises(UsageError, match="variant: input should be 'reference' or 'strict'"):
        build_from(spec, {"variant": "loose"})
    with pytest.raises(DataError, match=r"steps_scenario\.jsonl:1: id: missing or not a string"):
        official_run(SCENARIO)  # a step file is not an official result file
    elsewhere = tmp_path / "elsewhere.jsonl"
    elsewhere.write_text(json.dumps({"id": "other_session", "result": []}) + "\n", encoding="utf-8")
    with pytest.raises(DataError, match="none of its 1 sessions is in the data") as info:
        official_run(elsewhere)
    assert info.value.field == "id"
