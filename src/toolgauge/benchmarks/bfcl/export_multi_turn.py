"""BFCL's score-file lines for the multi-turn categories, as ``bfcl evaluate`` writes them (bfcl-eval 2026.3.23).

``eval_checker/eval_runner.py::_evaluate_single_multi_turn_entry``: a result that is not a list of turns is an
``inference_error``, one with fewer turns than the ground truth ``force_terminated`` (both with the raw
``model_result``); any other failure carries the checker's result as ``error`` (message, type, ``details``:
the state differences and both instances' public attributes, or the missing execution results, and the
execution results per turn), the raw result, the decoded calls per turn and step, and ``inference_log``.

The verdict is recomputed from the stored conversation with BFCL's own checkers (``check_multi_turn``), so the
details are BFCL's; values JSON cannot hold are written as their ``str()``, as BFCL's writer does. A result
stored before toolgauge kept BFCL's raw result is written in BFCL's function-calling form.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from toolgauge.benchmarks.bfcl.multi_turn import INFERENCE_ERROR, BfclMultiTurnResult, call_text
from toolgauge.benchmarks.bfcl.multi_turn_check import MultiTurnEntry, check_multi_turn, load_multi_turn
from toolgauge.export.source import RunSource, transcript_key
from toolgauge.records import ToolCall
from toolgauge.results import SampleScore

FORCE_TERMINATED = "multi_turn:force_terminated"


def multi_turn_lines(
    source: RunSource,
    data: Path,
    category: str,
    units: Sequence[SampleScore],
    model_name: str,
    prompts: Mapping[str, dict[str, Any]],
) -> list[dict[str, Any]]:
    """The failed entries' lines of one multi-turn category of a stored run (see :func:`multi_turn_failed_lines`).

    Raises:
        DataError: the run's data folder lacks the category's files.
    """
    entries = {e.id: e for e in load_multi_turn(data, category)}
    keys = {transcript_key(u.sample, u.epoch): u.id for u in units if u.value != 1.0}
    stored = {keys[key]: text for key, text in source.store.sample_results(source.run.id, list(keys))}
    return multi_turn_failed_lines(units, entries, stored, prompts, model_name)


def multi_turn_failed_lines(
    units: Iterable[SampleScore],
    entries: Mapping[str, MultiTurnEntry],
    stored: Mapping[str, str | None],
    prompts: Mapping[str, dict[str, Any]],
    model_name: str,
) -> list[dict[str, Any]]:
    """The failed entries' lines of one multi-turn category, in ``units`` order (BFCL's field order).

    Args:
        units: The category's verdicts (the failed ones get a line).
        entries: The category's entries by id.
        stored: The stored result (``BfclMultiTurnResult`` as JSON) by entry id; None for a failed sample.
        prompts: The category's data lines by id.
        model_name: BFCL's model folder name.
    """
    lines = []
    for unit in units:
        if unit.value == 1.0:
            continue
        text = stored.get(unit.id)
        result = BfclMultiTurnResult.model_validate_json(text) if text else BfclMultiTurnResult()
        entry = entries[unit.id]
        lines.append(json_safe(_failed_line(unit.id, entry, result, prompts.get(unit.id), model_name)))
    return lines


def _failed_line(
    entry_id: str, entry: MultiTurnEntry, result: BfclMultiTurnResult, data_line: dict[str, Any] | None, model: str
) -> dict[str, Any]:
    head = {"id": entry_id, "model_name": model, "test_category": entry.category, "valid": False}
    prompt = bfcl_prompt(data_line, entry)
    raw = result.raw if result.raw is not None else _raw_from_calls(result.turns)
    if result.not_a_list or len(result.turns) != len(entry.ground_truth):
        if result.not_a_list:
            message, error_type = INFERENCE_ERROR, "multi_turn:inference_error"
        else:
            message, error_type = (
                "Model was force-terminated during inference phase. The length of the model result turns "
                f"({len(result.turns)}) does not match the length of the ground truth turns "
                f"({len(entry.ground_truth)}).",
                FORCE_TERMINATED,
            )
        return {**head, "error": {"error_message": [message], "error_type": error_type}, "prompt": prompt,
                "model_result": raw, "possible_answer": entry.ground_truth, "inference_log": ""}  # fmt: skip
    verdict = check_multi_turn(entry, result.calls(), bfcl_error=True)
    return {
        **head,
        "error": verdict.bfcl_error or {"error_message": verdict.error_message, "error_type": verdict.error_type},
        "prompt": prompt,
        "model_result_raw": raw,
        "model_result_decoded": [[decoded_step(step, result.style) for step in turn] for turn in result.turns],
        "possible_answer": entry.ground_truth,
        "inference_log": "",
    }


def bfcl_prompt(data_line: dict[str, Any] | None, entry: MultiTurnEntry) -> dict[str, Any] | None:
    """The entry as BFCL's runner writes it: the data line, ``missed_function`` as the held-back docs."""
    if data_line is None:
        return None
    if "missed_function" not in data_line:
        return data_line
    return {**data_line, "missed_function": entry.held_back}


def decoded_step(calls: list[ToolCall], style: str | None) -> list[str]:
    """A step's calls as BFCL's ``decode_execute`` writes them (FC: ``convert_to_function_call``)."""
    if style == "prompt":
        return [call_text(c.name, c.arguments) for c in calls]
    return [f"{c.name}({','.join(f'{k}={v!r}' for k, v in c.arguments.items())})" for c in calls]


def _raw_from_calls(turns: list[list[list[ToolCall]]]) -> list[list[Any]]:
    return [[[{c.name: json.dumps(c.arguments)} for c in step] for step in turn] for turn in turns]


def json_safe(value: Any) -> Any:
    """``value`` with what JSON cannot hold as its ``str()``, going into dicts and lists (BFCL's writer rule)."""
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [json_safe(v) for v in value]
    try:
        json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(value)
    return value
