"""WildToolBench task-log records, params_checker scoring, run summary and error taxonomy.

Logs are written by hand in the official result-file shape (base_handler.py). Expected values are derived
by hand from the official params_checker / calc_accuracy rules and from the taxonomy rules in
docs/metrics/wildtoolbench.md; the comments show the arithmetic.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from toolgauge.benchmarks.wildtoolbench.io import read_official
from toolgauge.benchmarks.wildtoolbench.log import WildSessionResult, WildTaskLog
from toolgauge.benchmarks.wildtoolbench.metrics import (
    BY_ERROR_CLASS,
    BY_TASK_ORDER,
    BY_TASK_TYPE,
    BY_TRANSITIONS,
    BY_TURN_SUBTYPE,
    FAILURE_CLASSES,
    WildTaskFacts,
    WildTaskScore,
    WildVariant,
    score_task_log,
    summarise_wild,
    transitions_so_far,
)
from toolgauge.errors import DataError
from toolgauge.results import EvalResults


def tool(name: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    parameters = {"type": "object", "properties": properties, "required": required}
    return {"type": "function", "function": {"name": name, "description": "", "parameters": parameters}}


TOOLS = [
    tool("get_weather", {"city": {"type": "string"}, "days": {"type": "integer"}}, ["city"]),
    tool("get_time", {"city": {"type": "string"}}, ["city"]),
    tool("book_hotel", {"city": {"type": "string"}, "nights": {"type": "integer"}}, ["city"]),
]
HISTORY = [
    {"role": "system", "content": "Current Date: 2024-05-01"},
    {"role": "user", "content": "I am travelling from Paris to Berlin next week."},
]


def gold_list(*calls: tuple[str, dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"action": [{"arguments": json.dumps(args), "name": name} for name, args in calls], **extra}


PREPARE = gold_list(("prepare_to_answer", {"answer_type": "tool"}), observation="Here you go.")
ASK = gold_list(("ask_user_for_required_parameters", {}), observation="Which city?", user_input="Berlin")


def step(
    *,
    calls: list[tuple[str, dict[str, Any] | str]] | None = None,
    content: str | None = None,
    label: str = "correct",
    answer: list[dict[str, Any]] | None = None,
    error_reason: str | None = None,
    messages: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """One step_k entry exactly as base_handler.py writes it."""
    tool_calls = None
    if calls is not None:
        tool_calls = [
            {
                "id": f"call_{i}",
                "type": "function",
                "function": {"name": name, "arguments": args if isinstance(args, str) else json.dumps(args)},
            }
            for i, (name, args) in enumerate(calls)
        ]
    output: dict[str, Any] = {"reasoning_content": None, "content": content, "tool_calls": tool_calls}
    output["current_action_name_label"] = label
    if error_reason is not None:
        output["error_reason"] = error_reason
    entry: dict[str, Any] = {
        "inference_input": {"messages": messages if messages is not None else list(HISTORY), "tools": TOOLS},
        "inference_output": output,
    }
    if answer is not None:
        entry["inference_answer"] = {f"candidate_{i}_answer_function_list": a for i, a in enumerate(answer)}
    return entry


def task_log(steps: list[dict[str, Any]], *, label: str, optimal: bool = False, task_idx: int = 0) -> dict[str, Any]:
    log: dict[str, Any] = {"task_idx": task_idx, "begin_of_current_task": {"role": "user", "content": "task"}}
    for index, entry in enumerate(steps):
        log[f"step_{index}"] = entry
    n = len(steps)
    return {
        "action_name_label": label,
        "is_optimal": optimal,
        "inference_log": log,
        "latency": [0.5] * n,
        "input_token_count": [10] * n,
        "output_token_count": [5] * n,
    }


def facts(task_type: str = "Sequential Multi-Tool", n_gold: int = 3, index: int = 0, **kw: Any) -> WildTaskFacts:
    return WildTaskFacts(
        session_id=kw.pop("session", "s"), task_index=index, task_type=task_type, n_gold_nodes=n_gold, **kw
    )


def score(log: dict[str, Any], fact: WildTaskFacts, variant: WildVariant = "reference") -> WildTaskScore:
    return score_task_log(WildTaskLog.model_validate(log), fact, variant)


WEATHER_BERLIN = ("get_weather", {"city": "Berlin"})
TIME_BERLIN = ("get_time", {"city": "Berlin"})
HOTEL_BERLIN = ("book_hotel", {"city": "Berlin", "nights": 2})

# Sequential: weather, then time (wrong arguments), then the final answer; the names were all right online.
SEQ_ARG_ERROR = task_log(
    [
        step(calls=[WEATHER_BERLIN], answer=[gold_list(WEATHER_BERLIN)]),
        step(calls=[("get_time", {"city": "Tokyo"})], answer=[gold_list(TIME_BERLIN)]),
        step(content="Sunny, 10:00.", answer=[PREPARE]),
    ],
    label="correct",
)
# Mixed: weather and time in parallel, then hotel, then the answer: perfect and optimal.
MIXED_PERFECT = task_log(
    [
        step(calls=[TIME_BERLIN, WEATHER_BERLIN], answer=[gold_list(WEATHER_BERLIN, TIME_BERLIN)]),
        step(calls=[HOTEL_BERLIN], answer=[gold_list(HOTEL_BERLIN)]),
        step(content="Booked.", answer=[PREPARE]),
    ],
    label="correct",
    optimal=True,
    task_idx=1,
)


# ---- records ---------------------------------------------------------------------------------------


def test_official_line_round_trips(tmp_path: Path) -> None:
    line = {"id": "wild_tool_bench_7", "result": [SEQ_ARG_ERROR, MIXED_PERFECT]}
    path = tmp_path / "Wild-Tool-Bench_result.jsonl"
    path.write_text(json.dumps(line) + "\n", encoding="utf-8")
    (session,) = read_official(path).values()
    assert isinstance(session, WildSessionResult)
    assert session.model_dump(mode="json") == line
    assert [len(task.steps) for task in session.result] == [3, 3]
    assert session.result[0].steps[1].candidates()[0].action[0].name == "get_time"
    # exclude_none drops the always-written nulls, which the official eval_runner never reads
    dumped = session.model_dump(mode="json", exclude_none=True)
    assert "reasoning_content" not in dumped["result"][0]["inference_log"]["step_0"]["inference_output"]


def test_steps_are_read_in_numeric_order() -> None:
    log = task_log([step(content=str(i), answer=[PREPARE]) for i in range(12)], label="correct")
    shuffled = dict(reversed(list(log["inference_log"].items())))
    parsed = WildTaskLog.model_validate({**log, "inference_log": shuffled})
    assert [s.inference_output.content for s in parsed.steps] == [str(i) for i in range(12)]


def test_malformed_tool_calls_are_kept_verbatim() -> None:
    entry = step(content=None, label="error", error_reason="parse tool_calls failed, error: 'id'")
    entry["inference_output"]["tool_calls"] = [{"function": {"name": "get_time"}}]
    log = task_log([entry], label="error")
    parsed = WildTaskLog.model_validate(log)
    assert parsed.steps[0].inference_output.tool_calls is None
    assert parsed.model_dump(mode="json") == log


def test_reader_reports_line_and_field(tmp_path: Path) -> None:
    good = json.dumps({"id": "wild_tool_bench_0", "result": [MIXED_PERFECT]})
    bad = dict(MIXED_PERFECT, inference_log={**MIXED_PERFECT["inference_log"], "task_idx": "first"})
    path = tmp_path / "r.jsonl"
    path.write_text(good + "\n\n" + json.dumps({"id": "wild_tool_bench_1", "result": [bad]}) + "\n", encoding="utf-8")
    with pytest.raises(DataError) as caught:
        read_official(path)
    assert caught.value.line == 3
    assert caught.value.field == "result[0].inference_log.task_idx"
    path.write_text("{not json\n", encoding="utf-8")
    with pytest.raises(DataError, match="invalid JSON"):
        read_official(path)


def test_session_result_model_accepts_scored_fields() -> None:
    # the official scorer later adds "label" and "action_arguments_label"; they are kept as extras
    scored = dict(MIXED_PERFECT, label="correct", action_arguments_label="correct")
    session = WildSessionResult.model_validate({"id": "x", "result": [scored]})
    assert session.model_dump(mode="json")["result"][0]["label"] == "correct"


# ---- params_checker ----------------------------------------------------------------------------------


def test_argument_error_deletes_one_step_and_turns_off_optimal() -> None:
    log = dict(SEQ_ARG_ERROR, is_optimal=True)
    got = score(log, facts())
    # step 1 fails ("Tokyo" vs the 6-char gold "Berlin": no shared character, difflib 0.00); step 2 deleted
    assert got.step_checks == [
        ["correct"],
        ["error_match: string similarity too low at 'city' (edit score: 0.00)"],
        None,
    ]
    assert (got.label, got.action_name_label, got.action_arguments_label) == ("error", "correct", "error")
    assert got.deleted_step == 2 and got.complete_step == 2 and got.failing_step == 1
    assert got.is_optimal is False


def test_argument_error_forces_the_name_label_in_reference_only() -> None:
    # step 0: right name, wrong arguments; step 1: wrong name (logged as an online name error)
    log = task_log(
        [
            step(calls=[("get_weather", {"city": "Tokyo"})], answer=[gold_list(WEATHER_BERLIN)]),
            step(calls=[HOTEL_BERLIN], label="error", answer=[gold_list(TIME_BERLIN)]),
        ],
        label="error",
    )
    reference = score(log, facts())
    assert reference.action_name_label == "correct"  # forced, as params_checker does
    assert reference.deleted_step == 1 and reference.complete_step == 1  # 2 entries - 1 deleted
    strict = score(log, facts(), "strict")
    assert strict.action_name_label == "error" and strict.deleted_step is None
    assert strict.complete_step == 0  # the failing step is not counted
    assert reference.label == strict.label == "error"


def test_pseudo_tool_steps_are_not_argument_checked() -> None:
    log = task_log(
        [
            step(content="Which city?", answer=[ASK]),
            step(calls=[WEATHER_BERLIN], answer=[gold_list(WEATHER_BERLIN)]),
            step(content="Sunny.", answer=[PREPARE]),
        ],
        label="correct",
    )
    got = score(log, facts("Clarify"))
    assert got.label == "correct" and got.step_checks == [None, ["correct"], None]
    assert got.failure_class is None


def test_empty_reply_is_an_action_error_not_a_crash() -> None:
    # the official scorer raises KeyError: 'inference_answer' on this log
    log = task_log(
        [step(content=None, label="error", error_reason="tool_calls and content are None")],
        label="error",
    )
    got = score(log, facts())
    assert got.label == "error" and got.action_name_label == "error"
    assert got.official_crash == "KeyError: 'inference_answer'"
    assert got.failure_class == "call_error"


def test_online_name_error_stops_the_walk() -> None:
    log = task_log(
        [
            step(calls=[WEATHER_BERLIN], answer=[gold_list(WEATHER_BERLIN)]),
            step(calls=[HOTEL_BERLIN], label="error", answer=[gold_list(TIME_BERLIN)]),
        ],
        label="error",
    )
    got = score(log, facts())
    assert got.step_checks == [["correct"], None]
    assert got.failing_step == 1 and got.complete_step == 2  # both entries stay (the failing step counted)
    assert score(log, facts(), "strict").complete_step == 1  # one gold node done before the failure


# ---- summary: OP, AP, accuracies --------------------------------------------------------------------


def summary(scores: list[WildTaskScore], all_facts: list[WildTaskFacts], variant: WildVariant) -> EvalResults:
    return EvalResults(benchmark="wildtoolbench", metrics=summarise_wild(scores, all_facts, variant))


def accuracy_row(results: EvalResults, by: str, group: str) -> dict[str, Any]:
    """A breakdown group as {accuracy, correct, total} (total is the accuracy's n)."""
    accuracy = results.metric("task_accuracy", group, by)
    assert accuracy is not None
    return {"accuracy": accuracy.value, "correct": results.value("correct_tasks", group, by), "total": accuracy.n}


def small_run(variant: WildVariant) -> EvalResults:
    # session a: Sequential (3 gold nodes) with an argument error, Mixed (4 gold nodes) perfect and optimal
    # session b: Parallel task done correctly but not optimally (two steps instead of one)
    parallel_slow = task_log(
        [
            step(calls=[WEATHER_BERLIN], answer=[gold_list(WEATHER_BERLIN)]),
            step(calls=[TIME_BERLIN], answer=[gold_list(TIME_BERLIN)]),
            step(content="Done.", answer=[PREPARE]),
        ],
        label="correct",
        optimal=False,
    )
    all_facts = [
        facts("Sequential Multi-Tool", 3, 0, session="a"),
        facts("Mixed Multi-Tool", 4, 1, session="a", turn_subtype="Partial Information"),
        facts("Parallel Multi-Tool", 3, 0, session="b"),
    ]
    logs = [SEQ_ARG_ERROR, MIXED_PERFECT, parallel_slow]
    scores = [score(log, fact, variant) for log, fact in zip(logs, all_facts, strict=True)]
    return summary(scores, all_facts, variant)


def test_reference_pooled_progress_and_optimal_path() -> None:
    results = small_run("reference")
    # AP pooled: Sequential 3 entries - 1 deleted = 2 of 3; Mixed 3 entries of 4 nodes -> (2 + 3) / (3 + 4)
    assert results.value("accomplish_progress_rate") == pytest.approx(5 / 7)
    assert (results.value("complete_steps"), results.value("total_steps")) == (5, 7)
    mixed = ("Mixed Multi-Tool", BY_TASK_TYPE)
    assert results.value("accomplish_progress_rate", *mixed) == 0.75
    assert (results.value("complete_steps", *mixed), results.value("total_steps", *mixed)) == (3, 4)
    # OP over Parallel + Mixed: Mixed optimal, Parallel not -> 1 / 2
    assert results.value("optimal_path_rate") == 0.5
    optimal = results.metric("optimal_path_rate")
    assert optimal is not None and optimal.n == 2 and results.value("optimal_tasks") == 1
    assert results.value("task_accuracy") == pytest.approx(2 / 3)
    assert results.value("session_accuracy") == 0.5  # b all correct, a not
    assert results.value("tasks") == 3 and results.value("correct_sessions") == 1


def test_strict_progress_is_the_mean_of_per_task_node_ratios() -> None:
    results = small_run("strict")
    # Sequential: 1 node done before the failing step -> 1/3; Mixed: 2 + 1 + 1 nodes -> 4/4; mean 2/3
    assert results.value("accomplish_progress_rate") == pytest.approx(2 / 3)
    assert results.value("optimal_path_rate") == 0.5


def test_breakdowns() -> None:
    results = small_run("reference")
    assert accuracy_row(results, BY_TASK_TYPE, "Multi-Tool") == {"accuracy": pytest.approx(2 / 3), "correct": 2,
                                                                 "total": 3}  # fmt: skip
    assert accuracy_row(results, BY_TASK_TYPE, "Sequential Multi-Tool")["correct"] == 0
    assert accuracy_row(results, BY_TASK_TYPE, "Chat")["total"] == 0
    assert results.value("task_accuracy", "Chat", BY_TASK_TYPE) == 0.0  # empty group: 0.0 as the official code prints
    assert accuracy_row(results, BY_TASK_ORDER, "1") == {"accuracy": 0.5, "correct": 1, "total": 2}
    assert accuracy_row(results, BY_TASK_ORDER, "2") == {"accuracy": 1.0, "correct": 1, "total": 1}
    assert accuracy_row(results, BY_TURN_SUBTYPE, "First Turn")["total"] == 2
    assert accuracy_row(results, BY_TURN_SUBTYPE, "Subsequent Turn")["total"] == 1
    assert accuracy_row(results, BY_TURN_SUBTYPE, "Partial Information") == {"accuracy": 1.0, "correct": 1, "total": 1}
    assert small_run("strict").value("task_accuracy", "Chat", BY_TASK_TYPE) is None
    # Every declared group is there, empty ones included, in the official table order.
    assert results.groups(BY_TASK_TYPE) == ["Single-Tool", "Multi-Tool", "Parallel Multi-Tool",
                                            "Sequential Multi-Tool", "Mixed Multi-Tool", "Clarify", "Chat"]  # fmt: skip
    assert results.groups(BY_TASK_ORDER) == ["1", "2", "3", "4"]
    assert results.groups(BY_TRANSITIONS) == ["0", "1", "2", "3"]


def test_transitions_count_policy_changes_so_far() -> None:
    # Chat -> Single (1) -> Single (no change) -> Clarify (2)
    types = ["Chat", "Single-Tool", "Single-Tool", "Clarify"]
    assert [transitions_so_far(types, i) for i in range(4)] == [0, 1, 1, 2]
    # the three multi-tool types are one policy (g_multi)
    multi = ["Single-Tool", "Parallel Multi-Tool", "Sequential Multi-Tool", "Mixed Multi-Tool"]
    assert [transitions_so_far(multi, i) for i in range(4)] == [0, 1, 1, 1]


def test_summary_by_transitions_and_missing_tasks() -> None:
    chat_ok = task_log([step(content="Hello!", answer=[PREPARE])], label="correct")
    session = [
        facts("Chat", 1, 0, session="t"),
        facts("Single-Tool", 2, 1, session="t", turn_subtype="Coreferential Reference"),
        facts("Chat", 1, 2, session="t", turn_subtype="Long-Range Dependency"),
    ]
    # task 1 has no log at all (its sample failed): an error of class call_error
    scores = [score(chat_ok, session[0]), score(chat_ok, session[2])]
    results = summary(scores, session, "reference")
    # transitions so far: 0, 1, 2
    assert accuracy_row(results, BY_TRANSITIONS, "0") == {"accuracy": 1.0, "correct": 1, "total": 1}
    assert accuracy_row(results, BY_TRANSITIONS, "1") == {"accuracy": 0.0, "correct": 0, "total": 1}
    assert accuracy_row(results, BY_TRANSITIONS, "2") == {"accuracy": 1.0, "correct": 1, "total": 1}
    assert results.value("tasks_without_log") == 1
    assert results.value("failed_tasks", "call_error", BY_ERROR_CLASS) == 1 and results.value("failed_tasks") == 1
    assert results.value("failure_share", "call_error", BY_ERROR_CLASS) == 1.0
    assert results.value("session_accuracy") == 0.0


# ---- taxonomy ------------------------------------------------------------------------------------------


def failure(steps: list[dict[str, Any]], task_type: str = "Single-Tool", **kw: Any) -> str | None:
    return score(task_log(steps, label="error"), facts(task_type, 2, **kw)).failure_class


def test_taxonomy_action_classes() -> None:
    due_weather = [gold_list(WEATHER_BERLIN)]
    # text where a call was due, no question -> refusal; with a question -> wrong_refusal
    assert failure([step(content="I cannot do that.", label="error", answer=due_weather)]) == "refusal"
    assert failure([step(content="Which city do you mean?", label="error", answer=due_weather)]) == "wrong_refusal"
    # another offered tool than the gold step's -> wrong_name
    assert failure([step(calls=[TIME_BERLIN], label="error", answer=due_weather)]) == "wrong_name"
    # a call where the gold step asks the user -> missing_info
    assert failure([step(calls=[WEATHER_BERLIN], label="error", answer=[ASK])], "Clarify") == "missing_info"
    # a tool that is not offered -> call_error
    assert failure([step(calls=[("get_news", {})], label="error", answer=due_weather)]) == "call_error"
    # the text answer after one of two required calls -> early_termination
    early = [
        step(calls=[WEATHER_BERLIN], answer=due_weather),
        step(content="It is sunny.", label="error", answer=[gold_list(TIME_BERLIN)]),
    ]
    assert failure(early, "Sequential Multi-Tool") == "early_termination"


def test_taxonomy_redundant_call() -> None:
    # the same call (same name, same decoded arguments) was already made in the history
    earlier_call = {"id": "x", "type": "function", "function": {"name": "get_time", "arguments": '{"city": "Berlin"}'}}
    history = [
        *HISTORY,
        {"role": "assistant", "content": "", "tool_calls": [earlier_call]},
        {"role": "tool", "content": "10:00", "tool_call_id": "x"},
        {"role": "user", "content": "and the weather?"},
    ]
    repeat = step(calls=[TIME_BERLIN], label="error", answer=[gold_list(WEATHER_BERLIN)], messages=history)
    assert failure([repeat]) == "redundant_call"
    # more steps than any gold path has (the official "idx_list is None")
    beyond = [
        step(calls=[WEATHER_BERLIN], answer=[gold_list(WEATHER_BERLIN)]),
        step(calls=[HOTEL_BERLIN], label="error", error_reason="current step: 1, idx_list is None"),
    ]
    assert failure(beyond) == "redundant_call"
    # the same situation logged without the official reason: no gold candidate is left for the step
    beyond[1] = step(
        calls=[HOTEL_BERLIN], label="error", error_reason="action name not in candidate_answer_function_list"
    )
    assert failure(beyond) == "redundant_call"


def test_taxonomy_unparsable_calls_are_call_errors() -> None:
    entry = step(content=None, label="error", error_reason="parse tool_calls failed, error: 'id'")
    entry["inference_output"]["tool_calls"] = [{"function": {"name": "get_time"}}]
    assert failure([entry]) == "call_error"


def test_taxonomy_parameter_classes() -> None:
    def wrong_args(arguments: dict[str, Any] | str, **kw: Any) -> str | None:
        entry = step(calls=[("get_weather", arguments)], answer=[gold_list(WEATHER_BERLIN)])
        return score(task_log([entry, step(content="x", answer=[PREPARE])], label="correct"), facts(**kw)).failure_class

    assert wrong_args('{"city": ') == "call_error"  # arguments are not JSON
    assert wrong_args({"city": 5}) == "param_type_error"  # nested args type inconsistent
    assert wrong_args({"city": "Berlin", "country": "DE"}) == "param_hallucination"  # key not in the schema
    # "Tokyo" appears nowhere in the conversation -> hallucinated; "Paris" does -> wrong value
    assert wrong_args({"city": "Tokyo"}) == "param_hallucination"
    assert wrong_args({"city": "Paris"}) == "param_value_error"
    # an optional key the gold omits, with a value from the context ("2024" is in the date) -> value error
    assert wrong_args({"city": "Berlin", "days": 2024}) == "param_value_error"
    # the facts' context, when given, replaces the logged messages
    assert wrong_args({"city": "Tokyo"}, context="flying to tokyo") == "param_value_error"


def test_summary_error_table_has_every_class_in_table_order() -> None:
    results = small_run("reference")
    assert results.groups(BY_ERROR_CLASS) == list(FAILURE_CLASSES)
    counts = [m for m in results.metrics if m.by == BY_ERROR_CLASS and m.name == "failed_tasks"]
    assert all(m.kind == "count" and m.n == 1 for m in counts)
    # the only failure is the Sequential task's "Tokyo" argument, absent from the context
    assert results.value("failed_tasks", "param_hallucination", BY_ERROR_CLASS) == 1
    assert results.value("failed_tasks") == 1


def test_argument_error_on_the_last_logged_step_deletes_nothing() -> None:
    # params_checker only deletes (and forces the name label) when a step entry follows the failing one
    log = task_log(
        [step(calls=[("get_weather", {"city": "Tokyo"})], answer=[gold_list(WEATHER_BERLIN)])], label="error"
    )
    got = score(log, facts())
    assert got.deleted_step is None and got.action_name_label == "error" and got.complete_step == 1


def test_strict_rates_of_empty_groups_are_none() -> None:
    chat = task_log([step(content="Hi!", answer=[PREPARE])], label="correct")
    fact = facts("Chat", 1)
    strict = summary([score(chat, fact, "strict")], [fact], "strict")
    assert strict.value("optimal_path_rate") is None and strict.value("accomplish_progress_rate") is None
    assert strict.value("failure_share", "refusal", BY_ERROR_CLASS) is None  # no failed task
    reference = summary([score(chat, fact)], [fact], "reference")
    assert reference.value("optimal_path_rate") == 0.0 and reference.value("accomplish_progress_rate") == 0.0
