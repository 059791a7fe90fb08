"""BFCL's score-file lines for the memory categories, as ``bfcl evaluate`` writes them (bfcl-eval 2026.3.23).

``eval_checker/eval_runner.py::_evaluate_single_agentic_entry``: a result that is not one turn is an
``inference_error`` (with the raw ``model_result``); one whose every step made calls is ``no_last_message``
(with the decoded steps); a wrong answer carries the agentic checker's result as ``error``, the question as
``prompt``, the raw result and the answer it judged (``last_non_fc_message``). Every line ends with
``inference_log`` (empty: toolgauge keeps its transcripts in the store).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from toolgauge.benchmarks.bfcl.backends import bfcl_module
from toolgauge.benchmarks.bfcl.export_multi_turn import decoded_step, json_safe
from toolgauge.benchmarks.bfcl.memory import MemoryData, MemoryEntry, check_memory, load_memory
from toolgauge.benchmarks.bfcl.multi_turn import BfclMultiTurnResult, decode_step
from toolgauge.export.source import RunSource, transcript_key
from toolgauge.jsonl import read_jsonl_objects
from toolgauge.results import SampleScore


def memory_lines(
    source: RunSource, data: Path, category: str, units: Sequence[SampleScore], model_name: str
) -> list[dict[str, Any]]:
    """The failed questions' lines of one memory category of a stored run, in ``units`` order.

    Raises:
        DataError: the memory data files are missing or malformed.
    """
    memory = load_memory(data, category)
    entries = {e.id: e for e in memory.entries}
    prompts = bfcl_prompts(memory)
    keys = {transcript_key(u.sample, u.epoch): u.id for u in units if u.value != 1.0}
    stored = {keys[key]: text for key, text in source.store.sample_results(source.run.id, list(keys))}
    lines = []
    for unit in units:
        if unit.value == 1.0:
            continue
        text = stored.get(unit.id)
        result = BfclMultiTurnResult.model_validate_json(text) if text else None
        lines.append(json_safe(_failed_line(entries[unit.id], result, prompts[unit.id], model_name)))
    return lines


def bfcl_prompts(memory: MemoryData) -> dict[str, dict[str, Any]]:
    """Each question as BFCL's runner loads it: its data line with BFCL's id, dependencies, class and answer format."""
    answer_format = bfcl_module("constants.default_prompts").ADDITIONAL_SYSTEM_PROMPT_FOR_AGENTIC_RESPONSE_FORMAT
    category = memory.entries[0].category if memory.entries else ""
    by_raw_id = {e.id.replace(category, "memory", 1): e for e in memory.entries}
    prompts: dict[str, dict[str, Any]] = {}
    for _, line in read_jsonl_objects(Path(memory.folder) / "BFCL_v4_memory.json", what="samples"):
        entry = by_raw_id.get(str(line.get("id")))
        if entry is None:
            continue
        question = [list(turn) for turn in line["question"]]
        question[0].insert(0, {"role": "system", "content": answer_format})
        prompts[entry.id] = {
            **line,
            "id": entry.id,
            "question": question,
            "involved_classes": [entry.backend_class],
            "depends_on": [c.id for c in memory.prerequisites[entry.scenario]],
        }
    return prompts


def _failed_line(
    entry: MemoryEntry, result: BfclMultiTurnResult | None, prompt: dict[str, Any], model: str
) -> dict[str, Any]:
    head = {"id": entry.id, "model_name": model, "test_category": entry.category, "valid": False}
    verdict = check_memory(entry, result)
    raw = result.raw if result is not None else None
    if verdict.error_type == "agentic:inference_error":
        return {**head, "error": {"error_message": [verdict.error_message], "error_type": verdict.error_type},
                "prompt": prompt, "model_result": raw, "possible_answer": entry.ground_truth,
                "inference_log": ""}  # fmt: skip
    assert result is not None and isinstance(raw, list)
    if verdict.error_type == "agentic:no_last_message":
        fc = result.style != "prompt"
        decoded = [decoded_step(calls, result.style) for calls in (decode_step(s, fc) for s in raw[0]) if calls]
        return {**head, "error": {"error_message": [verdict.error_message], "error_type": verdict.error_type},
                "prompt": prompt, "model_result": raw, "model_result_decoded": decoded,
                "possible_answer": entry.ground_truth, "inference_log": ""}  # fmt: skip
    checked = bfcl_module("eval_checker.agentic_eval.agentic_checker").agentic_checker(
        verdict.answer, entry.ground_truth
    )
    error = {k: v for k, v in checked.items() if k != "valid"}
    return {**head, "error": error, "prompt": prompt["question"], "model_result_raw": raw,
            "last_non_fc_message": verdict.answer, "possible_answer": entry.ground_truth,
            "inference_log": ""}  # fmt: skip
