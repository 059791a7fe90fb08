"""WildToolBench scoring: task labels from task logs, then accuracy, OP, AP, breakdowns and the error taxonomy.

``reference`` reproduces the official ``eval_runner.params_checker`` and ``calc_accuracy``
(qgpmztmf/WildToolBench) rule for rule, except that a task the official scorer would crash on (a step
without ``inference_answer``, as after an empty or unparsable reply) is scored as an action error.
``strict`` drops the quirks a user may not want (see ``docs/metrics/wildtoolbench.md`` for every
difference): no deleted log entry and no forced action-name label after an argument error, Accomplish
Progress as the mean of per-task ratios of *completed gold nodes* (the failing step not counted), and no
rate at all (None) for an empty group.

Everything here is pure: task logs (:mod:`toolgauge.benchmarks.wildtoolbench.log`) and :class:`WildTaskFacts` in,
pydantic task scores and typed run metrics (:class:`toolgauge.results.Metric`) out. Fractions are in [0, 1].
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from itertools import pairwise
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

from toolgauge.benchmarks.wildtoolbench.args import (
    CORRECT,
    ERROR_ARGS_JSON_DECODE,
    ERROR_CALL_COUNT,
    ERROR_NAME_MISMATCH,
    ERROR_TOOL_UNDEFINED,
    check_step,
    squash,
)
from toolgauge.benchmarks.wildtoolbench.graph import PSEUDO_ANSWER, PSEUDO_CLARIFY, PSEUDO_TOOLS
from toolgauge.benchmarks.wildtoolbench.log import Label, WildStepLog, WildTaskLog
from toolgauge.benchmarks.wildtoolbench.records import (
    FIRST_TURN,
    MAX_TASKS,
    TASK_TYPES,
    TURN_SUBTYPES,
    TaskType,
    TurnSubtype,
)
from toolgauge.results import Metric, MetricKind

# TASK_TYPES, TURN_SUBTYPES, TaskType and TurnSubtype belong to the session records; re-exported for scorers.
__all__ = [
    "BY_ERROR_CLASS",
    "BY_TASK_ORDER",
    "BY_TASK_TYPE",
    "BY_TRANSITIONS",
    "BY_TURN_SUBTYPE",
    "FAILURE_CLASSES",
    "MULTI_TOOL",
    "MULTI_TOOL_TYPES",
    "OPTIMAL_PATH_TYPES",
    "PROGRESS_TYPES",
    "SUBSEQUENT_TURN",
    "TASK_TYPES",
    "TURN_SUBTYPES",
    "FailureClass",
    "TaskType",
    "TurnSubtype",
    "WildTaskFacts",
    "WildTaskScore",
    "WildVariant",
    "classify_failure",
    "score_task_log",
    "summarise_wild",
    "transitions_so_far",
]

WildVariant = Literal["reference", "strict"]
FailureClass = Literal[
    "refusal",
    "wrong_name",
    "missing_info",
    "wrong_refusal",
    "redundant_call",
    "call_error",
    "early_termination",
    "param_type_error",
    "param_hallucination",
    "param_value_error",
]

MULTI_TOOL_TYPES: frozenset[str] = frozenset({"Parallel Multi-Tool", "Sequential Multi-Tool", "Mixed Multi-Tool"})
#: Table 4 order: action errors, then parameter errors.
FAILURE_CLASSES: tuple[FailureClass, ...] = get_args(FailureClass)

#: The breakdowns (``Metric.by``) of a run's metrics.
BY_TASK_TYPE = "task_type"
BY_TASK_ORDER = "task_order"
BY_TURN_SUBTYPE = "turn_subtype"
BY_TRANSITIONS = "transitions"
BY_ERROR_CLASS = "error_class"
#: The ``task_type`` group of the three multi-tool types together.
MULTI_TOOL = "Multi-Tool"
#: The ``turn_subtype`` group of every task after the first.
SUBSEQUENT_TURN = "Subsequent Turn"

OPTIMAL_PATH_TYPES: tuple[TaskType, ...] = ("Parallel Multi-Tool", "Mixed Multi-Tool")
PROGRESS_TYPES: tuple[TaskType, ...] = ("Sequential Multi-Tool", "Mixed Multi-Tool")
_TURN_KEYS = (FIRST_TURN, SUBSEQUENT_TURN, *TURN_SUBTYPES)
_TOTAL = "Total"
# Paper §4.4 counts transitions between the four policies g_single, g_multi, g_chat, g_clarify.
_POLICY = {
    "Single-Tool": "single",
    "Parallel Multi-Tool": "multi",
    "Sequential Multi-Tool": "multi",
    "Mixed Multi-Tool": "multi",
    "Clarify": "clarify",
    "Chat": "chat",
}
_QUESTION = re.compile(r"[?？]")


class WildTaskFacts(BaseModel):
    """What scoring needs to know about one task besides its log (built by the protocol from its sessions).

    Attributes:
        session_id: the session's id (``wild_tool_bench_<k>``).
        task_index: the task's position in the session, from 0.
        task_type: the official task type.
        turn_subtype: the official subtype of tasks 2-4 (``english_turn_subtypes[i - 1]``); None for task 1.
        n_gold_nodes: number of gold nodes of the task, pseudo-tool nodes included (AP's denominator).
        context: optional text in which the taxonomy looks for predicted argument values; when None it uses
            the messages logged at the failing step (system date, earlier tasks, tool results, the task).
    """

    model_config = ConfigDict(frozen=True)

    session_id: str
    task_index: int = Field(ge=0)
    task_type: TaskType
    turn_subtype: TurnSubtype | None = None
    n_gold_nodes: int = Field(ge=0)
    context: str | None = None


class WildTaskScore(BaseModel):
    """The verdict on one task log.

    Attributes:
        label: ``correct`` iff the action names and all checked arguments are correct.
        action_name_label: after the variant's handling (``reference`` forces ``correct`` after an argument
            error when a later step entry exists, as the official scorer does).
        is_optimal: Optimal Path verdict, turned off by an argument error.
        complete_step: AP numerator. ``reference``: step entries left after the official deletion (the failing
            step counted); ``strict``: gold nodes completed before the first failing step.
        step_checks: per logged step, the official per-call check results (None for steps not checked:
            pseudo-tool steps, the failing-name step and everything after the walk stopped).
        failing_step: index of the step where the task failed (None when correct).
        first_argument_error: the first argument check result that was not ``correct``.
        deleted_step: ``reference`` only: the step entry the official scorer deletes after an argument error.
        official_crash: why the official scorer would have crashed on this log (then scored an action error).
        failure_class: the taxonomy class of a failed task (None when correct).
    """

    session_id: str
    task_index: int
    variant: WildVariant
    label: Label
    action_name_label: Label
    action_arguments_label: Label
    is_optimal: bool
    complete_step: int
    logged_steps: int
    step_checks: list[list[str] | None] = Field(default_factory=list)
    failing_step: int | None = None
    first_argument_error: str | None = None
    deleted_step: int | None = None
    official_crash: str | None = None
    failure_class: FailureClass | None = None


# --------------------------------------------------------------------------------------------------
# Per-task scoring (params_checker)
# --------------------------------------------------------------------------------------------------


def _official_crash(step: WildStepLog) -> str | None:
    """Why the official params_checker would raise on this step before judging it, in its order of access."""
    if step.inference_answer is None:
        return "KeyError: 'inference_answer'"
    label = step.inference_output.current_action_name_label
    if label is None:
        return "KeyError: 'current_action_name_label'"
    if label == "error":
        return None
    answer = step.inference_answer
    if "candidate_0_answer_function_list" not in answer:
        return "KeyError: 'candidate_0_answer_function_list'"
    if "candidate_1_answer_function_list" in answer:
        return "AssertionError: candidate_1_answer_function_list on a correct step"
    actions = answer["candidate_0_answer_function_list"].action
    if not actions:
        return "IndexError: empty gold action list"
    if actions[0].name in PSEUDO_TOOLS:
        return None
    calls = step.inference_output.tool_calls
    if calls is None:
        return "TypeError: tool_calls is not a list"
    if len(calls) != len(actions):
        return "AssertionError: number of predicted calls differs from the gold step"
    return None


def score_task_log(log: WildTaskLog, facts: WildTaskFacts, variant: WildVariant = "reference") -> WildTaskScore:
    """Score one task log as the official ``params_checker`` does (``reference``) or without its quirks.

    Walks the step entries in order: stops at the first step whose action-name label is ``error``, skips
    pseudo-tool steps, checks the arguments of real tool steps with :func:`~.args.check_step`.
    After the first argument error, ``reference`` deletes the next step entry (one entry only, as the official
    code does), forces ``action_name_label`` to ``correct`` and stops; ``strict`` just stops. A step the official
    scorer would crash on (no ``inference_answer``, as after an empty or unparsable reply) is an action error.

    Args:
        log: the task's log in the official shape.
        facts: the task's facts (type, gold node count...).
        variant: ``reference`` or ``strict``.

    Returns:
        The task's score, with its failure class when it failed.
    """
    steps = log.steps
    checks: list[list[str] | None] = [None] * len(steps)
    name_label: Label = log.action_name_label
    argument_error_step: int | None = None
    first_argument_error: str | None = None
    failing_step: int | None = None
    deleted_step: int | None = None
    crash: str | None = None if steps else "no step logged"
    completed_nodes = 0

    for index, step in enumerate(steps):
        if argument_error_step is not None:
            if variant == "reference":
                name_label = "correct"  # official: the action sequence is taken as right once arguments failed
                deleted_step = index
            break
        crash = _official_crash(step)
        if crash is not None:
            failing_step = index
            break
        if step.inference_output.current_action_name_label == "error":
            failing_step = index
            break
        gold = step.candidates()[0].action
        if gold[0].name in PSEUDO_TOOLS:
            completed_nodes += len(gold)
            continue
        results = check_step(step.inference_input.tools, step.inference_output.tool_calls or [], gold)
        checks[index] = results
        if ERROR_NAME_MISMATCH in results or ERROR_CALL_COUNT in results:
            crash = "AssertionError: predicted and gold names differ after sorting"
            failing_step = index
            break
        wrong = [result for result in results if result != CORRECT]
        if wrong:
            argument_error_step = failing_step = index
            first_argument_error = wrong[0]
        else:
            completed_nodes += len(gold)

    if crash is not None:
        name_label = "error"
    arguments_label: Label = "error" if argument_error_step is not None else "correct"
    label: Label = "correct" if name_label == "correct" and arguments_label == "correct" else "error"
    if failing_step is None and label == "error" and steps:
        failing_step = len(steps) - 1  # a log whose label says error without an error step: blame the last one
    is_optimal = log.is_optimal and crash is None
    if arguments_label == "error" and (variant == "strict" or name_label == "correct"):
        is_optimal = False
    if variant == "reference":
        complete_step = len(steps) - (1 if deleted_step is not None else 0)
    else:
        complete_step = min(completed_nodes, facts.n_gold_nodes)

    score = WildTaskScore(
        session_id=facts.session_id,
        task_index=facts.task_index,
        variant=variant,
        label=label,
        action_name_label=name_label,
        action_arguments_label=arguments_label,
        is_optimal=is_optimal,
        complete_step=complete_step,
        logged_steps=len(steps),
        step_checks=checks,
        failing_step=failing_step,
        first_argument_error=first_argument_error,
        deleted_step=deleted_step,
        official_crash=crash,
    )
    if label == "error":
        score.failure_class = classify_failure(log, facts, score)
    return score


# --------------------------------------------------------------------------------------------------
# Error taxonomy (paper Table 4)
# --------------------------------------------------------------------------------------------------


def _canonical_arguments(arguments: Any) -> str:
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError:
            return str(arguments)
    return json.dumps(arguments, sort_keys=True, ensure_ascii=False)


def _earlier_calls(log: WildTaskLog, failing_step: int) -> set[tuple[str, str]]:
    """Calls made before the failing step: in the history sent with it and in this task's earlier steps."""
    made: set[tuple[str, str]] = set()
    step = log.steps[failing_step]
    for message in step.inference_input.messages:
        for call in message.get("tool_calls") or []:
            function = call.get("function") if isinstance(call, dict) else None
            if isinstance(function, dict) and isinstance(function.get("name"), str):
                made.add((function["name"], _canonical_arguments(function.get("arguments", ""))))
    for earlier in log.steps[:failing_step]:
        for tool_call in earlier.inference_output.tool_calls or []:
            made.add((tool_call.function.name, _canonical_arguments(tool_call.function.arguments)))
    return made


def _context_text(log: WildTaskLog, failing_step: int) -> str:
    """The text the model could see at the failing step: every message content and earlier call argument."""
    parts: list[str] = [json.dumps(log.inference_log.begin_of_current_task, ensure_ascii=False)]
    for message in log.steps[failing_step].inference_input.messages:
        parts.append(json.dumps(message, ensure_ascii=False))
    return "\n".join(parts)


def _found_in(value: Any, context: str) -> bool:
    """Whether a predicted scalar appears in the context (strings compared without whitespace, lowercased)."""
    if isinstance(value, bool) or value is None:
        return True  # true/false/null carry no information that could be invented
    if isinstance(value, int | float):
        forms = {str(value)}
        if isinstance(value, float) and value.is_integer():
            forms.add(str(int(value)))
        return any(form in context for form in forms)
    if isinstance(value, str):
        return squash(value) in squash(context)
    return True


def _differing_leaves(predicted: Any, gold: Any) -> list[Any]:
    """Scalars of the prediction that are absent from or different in the gold, depth first."""
    if isinstance(predicted, dict):
        gold_dict = gold if isinstance(gold, dict) else {}
        leaves: list[Any] = []
        for key, value in predicted.items():
            leaves.extend(_differing_leaves(value, gold_dict.get(key, _ABSENT)))
        return leaves
    if isinstance(predicted, list):
        gold_list = gold if isinstance(gold, list) else []
        leaves = []
        for index, value in enumerate(predicted):
            leaves.extend(_differing_leaves(value, gold_list[index] if index < len(gold_list) else _ABSENT))
        return leaves
    if gold is not _ABSENT and type(predicted) is type(gold) and predicted == gold:
        return []
    return [predicted]


_ABSENT = object()


def _argument_class(log: WildTaskLog, score: WildTaskScore, context: str | None) -> FailureClass:
    """Class of a task that failed on its arguments (rules in docs/metrics/wildtoolbench.md)."""
    assert score.failing_step is not None and score.first_argument_error is not None
    error = score.first_argument_error
    if error in (ERROR_ARGS_JSON_DECODE, ERROR_TOOL_UNDEFINED):
        return "call_error"
    if "type inconsistent" in error:
        return "param_type_error"
    if error.endswith("args not defined"):
        return "param_hallucination"
    step = log.steps[score.failing_step]
    results = score.step_checks[score.failing_step] or []
    calls = sorted(step.inference_output.tool_calls or [], key=lambda c: (c.function.name, c.function.arguments))
    gold = sorted(step.candidates()[0].action, key=lambda a: (a.name, a.arguments))
    seen = context if context is not None else _context_text(log, score.failing_step)
    for result, call, action in zip(results, calls, gold, strict=False):
        if result == CORRECT:
            continue
        try:
            predicted, expected = json.loads(call.function.arguments), json.loads(action.arguments)
        except json.JSONDecodeError:
            return "param_value_error"
        if any(not _found_in(leaf, seen) for leaf in _differing_leaves(predicted, expected)):
            return "param_hallucination"
        return "param_value_error"
    return "param_value_error"


def classify_failure(log: WildTaskLog | None, facts: WildTaskFacts, score: WildTaskScore) -> FailureClass:
    """Return the one primary error class of a failed task (paper Table 4); the first rule that applies wins.

    Argument failures (the action names were right): unparsable arguments -> ``call_error``; a type
    error -> ``param_type_error``; a key the schema does not define -> ``param_hallucination``; a wrong value
    that appears nowhere in the context -> ``param_hallucination``; any other wrong, missing or extra value ->
    ``param_value_error``.

    Action failures, judged at the failing step: no log, an empty reply or unparsable tool calls ->
    ``call_error``; a call to a tool that is not offered -> ``call_error``; a call when no gold step is left
    (more steps than any gold path has) -> ``redundant_call``; a call identical (name and arguments) to one
    already made -> ``redundant_call``; a call where the gold step asks the user -> ``missing_info``; any other
    call -> ``wrong_name``; text where calls were due after this task already made calls ->
    ``early_termination``; text with a question mark -> ``wrong_refusal``; other text -> ``refusal``.

    Args:
        log: the task's log (None when the task has no log at all).
        facts: the task's facts; ``facts.context`` overrides the context used for hallucination.
        score: the task's score from :func:`score_task_log`.
    """
    if log is None or not log.steps or score.failing_step is None:
        return "call_error"
    if score.first_argument_error is not None and score.official_crash is None:
        return _argument_class(log, score, facts.context)

    step = log.steps[score.failing_step]
    output = step.inference_output
    reason = output.error_reason or ""
    if output.unparsed_tool_calls is not None or reason.startswith("parse tool_calls failed"):
        return "call_error"
    calls = output.tool_calls or []
    content = (output.content or "").strip()
    if not calls and not content:
        return "call_error"
    if calls:
        offered = {
            tool["function"].get("name")
            for tool in step.inference_input.tools
            if isinstance(tool, dict) and isinstance(tool.get("function"), dict)
        }
        if offered and any(call.function.name not in offered for call in calls):
            return "call_error"
        if "idx_list is None" in reason or not step.candidates():
            return "redundant_call"  # no gold step is left: the calls go past the end of every gold path
        made = _earlier_calls(log, score.failing_step)
        if any((call.function.name, _canonical_arguments(call.function.arguments)) in made for call in calls):
            return "redundant_call"
        due = {action.name for candidate in step.candidates() for action in candidate.action}
        if PSEUDO_CLARIFY in due:
            return "missing_info"
        return "wrong_name"
    earlier_tool_steps = any(earlier.inference_output.tool_calls for earlier in log.steps[: score.failing_step])
    due = {action.name for candidate in step.candidates() for action in candidate.action}
    if earlier_tool_steps and PSEUDO_ANSWER not in due:
        return "early_termination"
    if _QUESTION.search(content):
        return "wrong_refusal"
    return "refusal"


# --------------------------------------------------------------------------------------------------
# Run summary (calc_accuracy)
# --------------------------------------------------------------------------------------------------


def transitions_so_far(task_types: Sequence[str], task_index: int) -> int:
    """Instruction transitions up to and including task ``task_index`` (paper §4.4).

    A transition is a change of policy type between two consecutive tasks of a session, the policy types being
    single tool, multi tool (Parallel, Sequential and Mixed together), chat and clarify.
    """
    policies = [_POLICY.get(task_type, task_type) for task_type in task_types[: task_index + 1]]
    return sum(1 for before, after in pairwise(policies) if before != after)


class _Tally:
    """Correct/total counters per key, in the order keys were declared."""

    def __init__(self, keys: Iterable[str]):
        self.correct: dict[str, int] = dict.fromkeys(keys, 0)
        self.total: dict[str, int] = dict.fromkeys(self.correct, 0)

    def add(self, key: str, correct: bool) -> None:
        self.total[key] = self.total.get(key, 0) + 1
        self.correct[key] = self.correct.get(key, 0) + int(correct)


def _rate(numerator: int, denominator: int, empty: float | None) -> float | None:
    return numerator / denominator if denominator else empty


def _metric(name: str, value: float | None, n: int | None, kind: MetricKind = "rate", *,
            group: str | None = None, by: str | None = None) -> Metric:  # fmt: skip
    return Metric(name=name, value=value, n=n, kind=kind, group=group, by=by)


def _accuracy_metrics(tally: _Tally, key: str, by: str, empty: float | None) -> list[Metric]:
    """``task_accuracy`` (rate) and ``correct_tasks`` (count) of group ``key`` (an empty group included)."""
    total = tally.total[key]
    return [
        _metric("task_accuracy", _rate(tally.correct[key], total, empty), total, group=key, by=by),
        _metric("correct_tasks", tally.correct[key], total, "count", group=key, by=by),
    ]


def task_unit_scores(
    facts: WildTaskFacts, score: WildTaskScore | None, variant: WildVariant = "reference"
) -> tuple[dict[str, float], dict[str, float]]:
    """The overall rates one task counts in, named as the metrics, with their weights: (scores, weights).

    Each overall rate of :func:`summarise_wild` is ``sum(score * w) / sum(w)`` over the tasks that have
    it (``w`` 1 unless given): ``task_accuracy`` (every task, 0/1); ``optimal_path_rate`` (Parallel and
    Mixed tasks, 0/1); ``accomplish_progress_rate`` (Sequential and Mixed tasks: ``complete / gold
    nodes``, with weight ``gold nodes`` in ``reference``, where AP pools steps, and weight 1 over the
    tasks with gold nodes in ``strict``, where AP is the mean of ratios). ``session_accuracy`` is not
    here: it is carried by a session's last task (see :func:`session_unit_score`). A task with no
    score (its sample failed) counts as failed, as in :func:`summarise_wild`.
    """
    correct = score is not None and score.label == "correct"
    scores: dict[str, float] = {"task_accuracy": 1.0 if correct else 0.0}
    weights: dict[str, float] = {}
    if facts.task_type in OPTIMAL_PATH_TYPES:
        scores["optimal_path_rate"] = 1.0 if score is not None and score.is_optimal else 0.0
    if facts.task_type in PROGRESS_TYPES:
        done = score.complete_step if score is not None else 0
        nodes = facts.n_gold_nodes
        if variant == "reference":
            # Pooled steps: a task adds ``done`` and ``nodes``. With no gold node (none in the data) the task
            # weighs 0; its done steps, which the pooled sum would still count, cannot be carried by a mean.
            scores["accomplish_progress_rate"] = done / nodes if nodes else 0.0
            weights["accomplish_progress_rate"] = float(nodes)
        elif nodes:
            scores["accomplish_progress_rate"] = done / nodes
    return scores, weights


def session_unit_score(task_correct: Sequence[bool]) -> dict[str, float]:
    """``session_accuracy`` of one session (1 when every task is correct), for the session's last task."""
    return {"session_accuracy": 1.0 if all(task_correct) else 0.0}


def summarise_wild(
    task_scores: Sequence[WildTaskScore], sessions_facts: Sequence[WildTaskFacts], variant: WildVariant = "reference"
) -> list[Metric]:
    """Summarise a run as typed metrics: accuracies, OP, AP, breakdowns and the error distribution.

    The facts define the tasks of the run; a task with no score (its sample failed) counts as a failed task of
    class ``call_error``. Scores for tasks not in the facts are ignored.

    Overall (``group`` None): the rates ``task_accuracy`` (``n`` tasks), ``session_accuracy`` (``n`` sessions),
    ``optimal_path_rate`` (``n`` Parallel and Mixed tasks) and ``accomplish_progress_rate`` (``n`` Sequential
    and Mixed tasks); the counts ``tasks``, ``correct_tasks``, ``failed_tasks``, ``sessions``,
    ``correct_sessions``, ``optimal_tasks`` (OP's numerator), ``complete_steps`` and ``total_steps`` (AP's
    pooled numerator and denominator), ``tasks_without_log`` and ``official_crashes``.

    Breakdowns (``by``), every group declared even when empty: ``task_type`` (``task_accuracy`` and
    ``correct_tasks`` per type and for ``Multi-Tool``; ``optimal_path_rate`` and ``optimal_tasks`` for Parallel
    and Mixed; ``accomplish_progress_rate``, ``complete_steps`` and ``total_steps`` for Sequential and Mixed),
    ``task_order`` (groups ``"1"``-``"4"``), ``turn_subtype`` and ``transitions`` (``"0"``-``"3"``) with
    ``task_accuracy`` and ``correct_tasks``; ``error_class`` with ``failed_tasks`` (count) and
    ``failure_share`` (of the failed tasks) per taxonomy class, in the paper's Table 4 order.

    Args:
        task_scores: one score per task, all of the same variant.
        sessions_facts: the facts of every task of every session in the run.
        variant: ``reference`` (official formulas; an empty group's rate is 0.0 as in the official code) or
            ``strict`` (AP as the mean of per-task ratios; an empty group's rate is None).

    Returns:
        The metrics, overall ones first, then each breakdown in the order above.
    """
    empty: float | None = 0.0 if variant == "reference" else None
    scores = {(score.session_id, score.task_index): score for score in task_scores}
    sessions: dict[str, list[WildTaskFacts]] = defaultdict(list)
    for facts in sessions_facts:
        sessions[facts.session_id].append(facts)

    by_type = _Tally([*TASK_TYPES[:1], MULTI_TOOL, *TASK_TYPES[1:]])
    by_order = _Tally([str(k + 1) for k in range(MAX_TASKS)])
    by_turn = _Tally(_TURN_KEYS)
    by_transitions = _Tally([str(k) for k in range(MAX_TASKS)])
    optimal = _Tally([_TOTAL, *OPTIMAL_PATH_TYPES])
    progress_tasks: Counter[str] = Counter()
    progress_done: Counter[str] = Counter()
    progress_total: Counter[str] = Counter()
    progress_ratios: dict[str, list[float]] = defaultdict(list)
    failures: Counter[str] = Counter()
    correct_tasks = correct_sessions = missing = crashes = 0

    for session_tasks in sessions.values():
        session_tasks.sort(key=lambda facts: facts.task_index)
        types = [facts.task_type for facts in session_tasks]
        session_correct = True
        for position, facts in enumerate(session_tasks):
            score = scores.get((facts.session_id, facts.task_index))
            if score is None:
                missing += 1
            elif score.official_crash is not None:
                crashes += 1
            correct = score is not None and score.label == "correct"
            correct_tasks += int(correct)
            session_correct = session_correct and correct
            if not correct:
                failures[score.failure_class if score and score.failure_class else "call_error"] += 1

            by_type.add(facts.task_type, correct)
            if facts.task_type in MULTI_TOOL_TYPES:
                by_type.add(MULTI_TOOL, correct)
            by_order.add(str(facts.task_index + 1), correct)
            if facts.task_index == 0:
                by_turn.add(FIRST_TURN, correct)
            else:
                by_turn.add(SUBSEQUENT_TURN, correct)
                if facts.turn_subtype is not None:
                    by_turn.add(facts.turn_subtype, correct)
            by_transitions.add(str(transitions_so_far(types, position)), correct)

            if facts.task_type in OPTIMAL_PATH_TYPES:
                is_optimal = score is not None and score.is_optimal
                optimal.add(_TOTAL, is_optimal)
                optimal.add(facts.task_type, is_optimal)
            if facts.task_type in PROGRESS_TYPES:
                done = score.complete_step if score is not None else 0
                for key in (_TOTAL, facts.task_type):
                    progress_tasks[key] += 1
                    progress_done[key] += done
                    progress_total[key] += facts.n_gold_nodes
                    if facts.n_gold_nodes:
                        progress_ratios[key].append(done / facts.n_gold_nodes)
        correct_sessions += int(session_correct)

    def progress_rate(key: str) -> float | None:
        if variant == "reference":
            return _rate(progress_done[key], progress_total[key], empty)
        ratios = progress_ratios[key]
        return sum(ratios) / len(ratios) if ratios else None

    def progress_metrics(key: str, group: str | None, by: str | None) -> list[Metric]:
        n = progress_tasks[key]
        return [
            _metric("accomplish_progress_rate", progress_rate(key), n, group=group, by=by),
            _metric("complete_steps", progress_done[key], n, "count", group=group, by=by),
            _metric("total_steps", progress_total[key], n, "count", group=group, by=by),
        ]

    def optimal_metrics(key: str, group: str | None, by: str | None) -> list[Metric]:
        n = optimal.total[key]
        return [
            _metric("optimal_path_rate", _rate(optimal.correct[key], n, empty), n, group=group, by=by),
            _metric("optimal_tasks", optimal.correct[key], n, "count", group=group, by=by),
        ]

    n_tasks = sum(len(tasks) for tasks in sessions.values())
    n_failed = n_tasks - correct_tasks
    n_optimal, n_progress = optimal.total[_TOTAL], progress_tasks[_TOTAL]
    metrics = [
        _metric("task_accuracy", _rate(correct_tasks, n_tasks, empty), n_tasks),
        _metric("session_accuracy", _rate(correct_sessions, len(sessions), empty), len(sessions)),
        _metric("optimal_path_rate", _rate(optimal.correct[_TOTAL], n_optimal, empty), n_optimal),
        _metric("accomplish_progress_rate", progress_rate(_TOTAL), n_progress),
        _metric("tasks", n_tasks, None, "count"),
        _metric("correct_tasks", correct_tasks, n_tasks, "count"),
        _metric("failed_tasks", n_failed, n_tasks, "count"),
        _metric("sessions", len(sessions), None, "count"),
        _metric("correct_sessions", correct_sessions, len(sessions), "count"),
        _metric("optimal_tasks", optimal.correct[_TOTAL], n_optimal, "count"),
        _metric("complete_steps", progress_done[_TOTAL], n_progress, "count"),
        _metric("total_steps", progress_total[_TOTAL], n_progress, "count"),
        _metric("tasks_without_log", missing, n_tasks, "count"),
        _metric("official_crashes", crashes, n_tasks, "count"),
    ]
    for key in by_type.total:
        metrics += _accuracy_metrics(by_type, key, BY_TASK_TYPE, empty)
        if key in OPTIMAL_PATH_TYPES:
            metrics += optimal_metrics(key, key, BY_TASK_TYPE)
        if key in PROGRESS_TYPES:
            metrics += progress_metrics(key, key, BY_TASK_TYPE)
    for tally, by in ((by_order, BY_TASK_ORDER), (by_turn, BY_TURN_SUBTYPE), (by_transitions, BY_TRANSITIONS)):
        for key in tally.total:
            metrics += _accuracy_metrics(tally, key, by, empty)
    for name in FAILURE_CLASSES:
        metrics.append(_metric("failed_tasks", failures[name], n_failed, "count", group=name, by=BY_ERROR_CLASS))
        metrics.append(_metric("failure_share", _rate(failures[name], n_failed, empty), n_failed, group=name,
                               by=BY_ERROR_CLASS))  # fmt: skip
    return metrics
