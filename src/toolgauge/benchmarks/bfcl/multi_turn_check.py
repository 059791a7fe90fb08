"""BFCL multi-turn entries and their scoring: BFCL's verdict, and per-turn credit beside it.

The official verdict follows bfcl-eval 2026.3.23's ``_evaluate_single_multi_turn_entry`` and
``multi_turn_checker``: a trajectory with fewer turns than the ground truth was force-terminated; then, turn
by turn, every step's calls run on fresh model-side instances and the turn's ground-truth calls on fresh
ground-truth instances; a turn with ground truth and no model call fails as an empty turn; turns without
ground truth are not checked (their calls still run); BFCL's own ``state_checker`` and ``response_checker``
judge the rest. Error types and messages are BFCL's.

Per-turn credit is toolgauge's: each turn is judged from the ground-truth state before it (the model's calls
of that turn on a copy of it), so an early error does not zero the turns after it.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from toolgauge.benchmarks.bfcl.backends import BfclBackends, bfcl_module, parse_call_text
from toolgauge.benchmarks.bfcl.loader import result_files
from toolgauge.errors import DataError
from toolgauge.jsonl import read_jsonl_objects

BFCL_MULTI_TURN_CATEGORIES: tuple[str, ...] = (
    "multi_turn_base",
    "multi_turn_miss_func",
    "multi_turn_miss_param",
    "multi_turn_long_context",
)
"""Multi-turn categories run on BFCL's executable backends."""

FUNC_DOC_FILES: dict[str, str] = {
    "GorillaFileSystem": "gorilla_file_system.json",
    "MathAPI": "math_api.json",
    "MessageAPI": "message_api.json",
    "TwitterAPI": "posting_api.json",
    "TicketAPI": "ticket_api.json",
    "TradingBot": "trading_bot.json",
    "TravelAPI": "travel_booking.json",
    "VehicleControlAPI": "vehicle_control.json",
}
"""The function-doc file of each multi-turn backend class under ``multi_turn_func_doc/``."""

# Printed differences are cut: a long-context file system is megabytes of repr.
_DIFF_CHARS = 400

Call = tuple[str, dict[str, Any]]
"""One call as executed: method name and keyword arguments."""


class MultiTurnEntry(BaseModel):
    """One multi-turn entry: the user turns, the backends' setup, the docs shown and the ground truth per turn.

    ``functions`` are the involved classes' docs minus the ``missed_function`` ones, which
    ``held_back`` maps to the turn (as a string, BFCL's key) where they are added.
    """

    id: str
    category: str
    question: list[list[dict[str, Any]]]
    involved_classes: list[str]
    initial_config: dict[str, Any]
    functions: list[dict[str, Any]]
    held_back: dict[str, list[dict[str, Any]]] = Field(default_factory=dict)
    ground_truth: list[list[str]]
    path: str
    line: int

    @property
    def long_context(self) -> bool:
        """Whether the backends load BFCL's long-context state (BFCL's rule on the category name)."""
        return "long_context" in self.category or "composite" in self.category

    def backends(self) -> BfclBackends:
        """Fresh instances of the involved classes in the entry's initial state."""
        return BfclBackends(self.involved_classes, self.initial_config, long_context=self.long_context)

    def ground_truth_calls(self, backends: BfclBackends) -> list[list[Call]]:
        """The ground truth as calls, positional arguments named by the methods' signatures."""
        turns: list[list[Call]] = []
        for text_calls in self.ground_truth:
            turn: list[Call] = []
            for text in text_calls:
                name, args, kwargs = parse_call_text(text)
                turn.append((name, backends.bind_arguments(name, args, kwargs)))
            turns.append(turn)
        return turns


class MultiTurnVerdict(BaseModel):
    """BFCL's verdict on one multi-turn entry, with toolgauge's per-turn credit beside it.

    ``turn_matched`` has one flag per ground-truth turn (the model's state after it equal to the ground
    truth's, judged from the ground-truth state before it); a turn the model never reached is False.
    ``first_failing_turn`` and ``state_difference`` (attribute -> expected / got, cut) locate the first
    turn that did not match.
    """

    id: str
    category: str
    valid: bool
    error_type: str | None = None
    error_message: str | None = None
    turn_matched: list[bool] = Field(default_factory=list)
    first_failing_turn: int | None = None
    state_difference: dict[str, dict[str, str]] | None = None
    # BFCL's checker result without ``valid`` (details, execution results), for its score files; only when asked.
    bfcl_error: dict[str, Any] | None = Field(default=None, exclude=True)

    @property
    def turn_credit(self) -> float:
        """The share of turns whose state matched."""
        return sum(self.turn_matched) / len(self.turn_matched) if self.turn_matched else 0.0


def load_multi_turn(data_dir: Path, category: str) -> list[MultiTurnEntry]:
    """Load one multi-turn category with its function docs and ground truth, in file order.

    Raises:
        DataError: a file is missing or malformed, a class has no function docs, or an entry has no answer.
    """
    docs: dict[str, list[dict[str, Any]]] = {}
    question_path = data_dir / f"BFCL_v4_{category}.json"
    answer_path = data_dir / "possible_answer" / f"BFCL_v4_{category}.json"
    answers: dict[str, list[list[str]]] = {}
    for line, record in read_jsonl_objects(answer_path, what="possible answers"):
        truth = record.get("ground_truth")
        if not isinstance(record.get("id"), str) or not (
            isinstance(truth, list) and all(isinstance(t, list) and all(isinstance(c, str) for c in t) for t in truth)
        ):
            raise DataError(str(answer_path), "expected {id, ground_truth: [[call text]]}", line=line)
        answers[record["id"]] = truth
    entries = []
    for line, record in read_jsonl_objects(question_path, what="samples"):
        entry_id = record.get("id")
        if not isinstance(entry_id, str) or entry_id not in answers:
            raise DataError(str(question_path), f"no possible answer for {entry_id!r}", line=line, field="id")
        classes = record.get("involved_classes")
        if not isinstance(classes, list) or not all(isinstance(c, str) for c in classes):
            raise DataError(str(question_path), "expected a list of class names", line=line, field="involved_classes")
        functions: list[dict[str, Any]] = []
        for class_name in classes:
            if class_name not in docs:
                docs[class_name] = _func_docs(data_dir, class_name, question_path, line)
            functions.extend(docs[class_name])
        held_back: dict[str, list[dict[str, Any]]] = {}
        for turn, names in dict(record.get("missed_function") or {}).items():
            # As BFCL's populate_test_cases_with_predefined_functions: the first doc of each name moves out.
            moved: list[dict[str, Any]] = []
            for name in names:
                found = next((i for i, doc in enumerate(functions) if doc["name"] == name), None)
                if found is not None:
                    moved.append(functions.pop(found))
            held_back[str(turn)] = moved
        try:
            entries.append(
                MultiTurnEntry(
                    id=entry_id,
                    category=category,
                    question=record.get("question"),
                    involved_classes=classes,
                    initial_config=record.get("initial_config") or {},
                    functions=functions,
                    held_back=held_back,
                    ground_truth=answers[entry_id],
                    path=str(question_path),
                    line=line,
                )
            )
        except ValueError as exc:
            raise DataError(str(question_path), str(exc).splitlines()[0], line=line) from None
        if len(entries[-1].ground_truth) != len(entries[-1].question):
            raise DataError(str(answer_path), f"{entry_id}: ground truth and question differ in turns", field="id")
    return entries


def load_multi_turn_results(path: Path, categories: Sequence[str]) -> dict[str, Any]:
    """The raw ``result`` of every multi-turn result line (turn -> step -> output), by entry id.

    ``path`` is one result file, or a folder searched recursively for ``BFCL_v4_<category>_result.json`` of
    the given categories. The results are kept as written: a malformed one is BFCL's verdict to give.

    Raises:
        DataError: no such path or no result file, a line without id or result, or an id seen twice.
    """
    results: dict[str, Any] = {}
    for file in result_files(path, categories):
        for line, record in read_jsonl_objects(file, what="results"):
            entry_id = record.get("id")
            if not isinstance(entry_id, str) or not entry_id:
                raise DataError(str(file), "missing or non-string id", line=line, field="id")
            if "result" not in record:
                raise DataError(str(file), "missing result", line=line, field="result")
            if entry_id in results:
                raise DataError(str(file), f"duplicate id {entry_id!r}", line=line, field="id")
            results[entry_id] = record["result"]
    return results


def _func_docs(data_dir: Path, class_name: str, where: Path, line: int) -> list[dict[str, Any]]:
    file_name = FUNC_DOC_FILES.get(class_name)
    if file_name is None:
        raise DataError(str(where), f"no multi-turn backend {class_name!r}", line=line, field="involved_classes")
    return [doc for _, doc in read_jsonl_objects(data_dir / "multi_turn_func_doc" / file_name, what="function docs")]


def check_multi_turn(
    entry: MultiTurnEntry, turns: Sequence[Sequence[Sequence[Call]]], *, bfcl_error: bool = False
) -> MultiTurnVerdict:
    """Judge a trajectory (turn -> steps -> calls; steps without calls left out) as BFCL does, plus turn credit.

    ``turns`` shorter than the ground truth is a force-terminated run. One pass: the ground-truth instances
    advance turn by turn and serve both the official check and the per-turn credit (a turn whose calls are
    exactly the ground truth's matches without being run again). With ``bfcl_error`` a failed checker's
    result is kept as BFCL's runner writes it (``MultiTurnVerdict.bfcl_error``). Raises nothing for anything
    the model did; a malformed ground truth raises ``DataError``.
    """
    checker = bfcl_module("eval_checker.multi_turn_eval.multi_turn_checker")
    gold, model = entry.backends(), entry.backends()
    gold_calls = entry.ground_truth_calls(gold)
    official = _force_terminated(len(turns), len(gold_calls))
    all_model_results: list[str] = []
    # BFCL's execution_result: per turn checked so far, the model's results per step and the ground truth's.
    execution: list[dict[str, Any]] = []
    verdict = MultiTurnVerdict(id=entry.id, category=entry.category, valid=True)
    for index, calls in enumerate(gold_calls):
        steps = turns[index] if index < len(turns) else None
        made = [call for step in steps or [] for call in step]
        # The per-turn credit judges the model's calls from the ground-truth state before the turn.
        twin = gold.clone() if steps is not None and made != calls else None
        step_results: list[list[str]] = []
        if official is None:
            for step in steps or []:
                step_results.append([model.execute(name, args) for name, args in step])
                all_model_results.extend(step_results[-1])
        gold_results = [gold.execute(name, args) for name, args in calls]
        difference: dict[str, dict[str, str]] = {}
        if steps is None:
            difference = {"(turn)": {"expected": "the turn", "got": "not reached (force-terminated)"}}
        elif twin is not None:
            for name, args in made:
                twin.execute(name, args)
            difference = _state_difference(gold, twin)
        verdict.turn_matched.append(not difference)
        if difference and verdict.first_failing_turn is None:
            verdict.first_failing_turn, verdict.state_difference = index, difference
        if official is None:
            execution.append({"model": step_results, "ground_truth": gold_results})
        if official is None and calls:
            failure = _turn_failure(checker, index, steps or [], model, gold, all_model_results, gold_results)
            if failure is not None:
                official = str(failure["error_type"]), str(failure["error_message"])
                if bfcl_error:
                    if failure["error_type"] != "multi_turn:execution_response_mismatch":
                        _attach_execution(failure, execution)
                    # A copy now: the states it quotes are the live instances, and the ground truth goes on.
                    verdict.bfcl_error = copy.deepcopy(failure)
    if official is not None:
        verdict.valid = False
        verdict.error_type, verdict.error_message = official
    return verdict


def _attach_execution(failure: dict[str, Any], execution: list[dict[str, Any]]) -> None:
    """Where BFCL's checker puts the execution results: in ``details`` of an empty turn, beside a state mismatch."""
    if failure["error_type"] == "multi_turn:empty_turn_model_response":
        failure["details"] = {"execution_result": execution}
    else:
        failure["execution_result"] = execution


def _force_terminated(model_turns: int, truth_turns: int) -> tuple[str, str] | None:
    if model_turns == truth_turns:
        return None
    return (
        "multi_turn:force_terminated",
        "Model was force-terminated during inference phase. The length of the model result turns "
        f"({model_turns}) does not match the length of the ground truth turns ({truth_turns}).",
    )


def _turn_failure(
    checker: Any,
    index: int,
    steps: Sequence[Sequence[Call]],
    model: BfclBackends,
    gold: BfclBackends,
    all_model_results: list[str],
    gold_results: list[str],
) -> dict[str, Any] | None:
    """BFCL's checks after a turn with ground truth (the empty-turn rule, its state and response checkers).

    A failure is the checker's result without ``valid``: ``error_message``, ``error_type``, ``details``.
    """
    if not steps:
        return {
            "error_message": f"Model response list is empty for turn {index}",
            "error_type": "multi_turn:empty_turn_model_response",
        }
    state = checker.state_checker(model.instances, gold.instances)
    if not state["valid"]:
        return {k: v for k, v in state.items() if k != "valid"}
    response = checker.response_checker(all_model_results, gold_results, index)
    if not response["valid"]:
        return {k: v for k, v in response.items() if k != "valid"}
    return None


def _state_difference(expected: BfclBackends, got: BfclBackends) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    got_state = got.state()
    for class_name, attributes in expected.state().items():
        for attribute, value in attributes.items():
            other = got_state[class_name].get(attribute)
            if other != value:
                out[f"{class_name}.{attribute}"] = {"expected": _short(value), "got": _short(other)}
    return out


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _DIFF_CHARS else text[:_DIFF_CHARS] + f"... [{len(text) - _DIFF_CHARS} more]"
