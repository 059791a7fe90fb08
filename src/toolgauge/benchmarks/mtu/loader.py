"""MTU-Bench eval items and prediction files.

An item is one line ``{"id", "question", "answer"}`` of ``<split>_eval.jsonl``. ``answer`` maps tool
names to their arguments in gold call order; OOD stores each argument object as a JSON-encoded
string, which is decoded here so every split has the same shape. Predictions are lines
``{"id", "response", ...}`` (the shape of MTU-Bench's ``responses/*_gpt4_response.jsonl``). The
records themselves are in ``toolgauge.benchmarks.mtu.records``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from toolgauge.benchmarks.mtu.records import (
    MTU_SPLITS,
    MULTI_TURN_SPLITS,
    SINGLE_TOOL_SPLITS,
    MtuItem,
    MtuPrediction,
    MtuSplit,
)
from toolgauge.errors import DataError
from toolgauge.jsonl import JsonProblem, parse_json, read_jsonl_objects


def load_mtu(data_dir: Path, splits: Sequence[str] | None = None) -> list[MtuItem]:
    """Load MTU-Bench eval items from ``<data_dir>/<split>_eval.jsonl``.

    Args:
        data_dir: Directory holding the eval files.
        splits: Which splits to load, in that order; all five (in ``MTU_SPLITS`` order) when None.

    Returns:
        The items, split by split, each split in file order.

    Raises:
        DataError: An unknown split, a missing or unreadable file, or a line that is not a valid item.
    """
    wanted: list[MtuSplit] = []
    for split in MTU_SPLITS if splits is None else splits:
        if split not in MTU_SPLITS:
            raise DataError(
                str(data_dir), f"unknown MTU-Bench split {split!r} (expected one of {', '.join(MTU_SPLITS)})"
            )
        wanted.append(_as_split(split))
    items: list[MtuItem] = []
    for split in wanted:
        path = data_dir / f"{split}_eval.jsonl"
        for line_no, record in read_jsonl_objects(path, what="samples"):
            items.append(_parse_item(record, split, str(path), line_no))
    return items


def load_mtu_predictions(path: Path) -> list[MtuPrediction]:
    """Load predictions from one JSONL file, or from every ``<split>_*.jsonl`` file of a directory.

    Each line needs a string ``id`` and a string ``response``; other keys (``model``...) are ignored.
    Directory files are read split by split in ``MTU_SPLITS`` order, then by name.

    Raises:
        DataError: A missing path, a directory with no ``<split>_*.jsonl`` file, or a bad line.
    """
    if path.is_dir():
        files = [file for split in MTU_SPLITS for file in sorted(path.glob(f"{split}_*.jsonl"))]
        if not files:
            raise DataError(str(path), "no prediction files named <split>_*.jsonl in this directory")
    elif path.exists():
        files = [path]
    else:
        raise DataError(str(path), "prediction file or directory not found")
    predictions: list[MtuPrediction] = []
    for file in files:
        for line_no, record in read_jsonl_objects(file, what="predictions"):
            predictions.append(
                MtuPrediction(
                    id=_string_field(record, "id", str(file), line_no),
                    response=_string_field(record, "response", str(file), line_no),
                    path=str(file),
                    line=line_no,
                )
            )
    return predictions


def pair_predictions(
    items: Sequence[MtuItem], predictions: Sequence[MtuPrediction]
) -> tuple[list[str | None], list[str]]:
    """Match predictions to items by id.

    Where an id repeats, the k-th prediction with that id answers the k-th item with that id
    (items and predictions each in their own order). Nothing here is fatal: leftovers are
    reported as warnings.

    Returns:
        The response for each item (None where the item has no prediction; score it as an empty
        reply), and the warnings: predictions whose id no item has, predictions beyond the number
        of items sharing their id, and how many items have no prediction.
    """
    by_id: dict[str, list[MtuPrediction]] = defaultdict(list)
    for prediction in predictions:
        by_id[prediction.id].append(prediction)
    seen: dict[str, int] = defaultdict(int)
    responses: list[str | None] = []
    missing: list[str] = []
    for item in items:
        k = seen[item.id]
        seen[item.id] += 1
        candidates = by_id.get(item.id, [])
        if k < len(candidates):
            responses.append(candidates[k].response)
        else:
            responses.append(None)
            missing.append(item.id)
    warnings: list[str] = []
    for pred_id, candidates in by_id.items():
        if pred_id not in seen:
            for prediction in candidates:
                warnings.append(f"{prediction.path}:{prediction.line}: prediction id {pred_id!r} matches no item")
        else:
            for prediction in candidates[seen[pred_id] :]:
                warnings.append(
                    f"{prediction.path}:{prediction.line}: duplicate prediction id {pred_id!r} "
                    f"({len(candidates)} predictions for {seen[pred_id]} item(s)); ignored"
                )
    if missing:
        shown = ", ".join(missing[:10]) + (", ..." if len(missing) > 10 else "")
        warnings.append(f"{len(missing)} item(s) have no prediction and are scored as empty replies: {shown}")
    return responses, warnings


def _as_split(name: str) -> MtuSplit:
    for split in MTU_SPLITS:
        if split == name:
            return split
    raise ValueError(name)


def _string_field(record: dict[str, Any], field: str, path: str, line: int) -> str:
    if field not in record:
        raise DataError(path, "missing field", line=line, field=field)
    value = record[field]
    if not isinstance(value, str):
        raise DataError(path, f"expected a string, got {type(value).__name__}", line=line, field=field)
    return value


def _parse_item(record: dict[str, Any], split: MtuSplit, path: str, line: int) -> MtuItem:
    item_id = _string_field(record, "id", path, line)
    question = _string_field(record, "question", path, line)
    if not item_id:
        raise DataError(path, "empty id", line=line, field="id")
    if split in MULTI_TURN_SPLITS:
        head, _, turn = item_id.rpartition("_")
        if not head or not turn.isdigit():
            raise DataError(path, f"multi-turn id {item_id!r} must end in _<turn number>", line=line, field="id")
    if "answer" not in record:
        raise DataError(path, "missing field", line=line, field="answer")
    raw_answer = record["answer"]
    if not isinstance(raw_answer, dict):
        raise DataError(
            path, f"expected an object of tool calls, got {type(raw_answer).__name__}", line=line, field="answer"
        )
    answer: dict[str, dict[str, Any]] = {}
    for name, arguments in raw_answer.items():
        field = f"answer.{name}"
        if isinstance(arguments, str) and split == "OOD":
            # OOD encodes each argument object as a JSON string.
            try:
                arguments = parse_json(arguments)
            except JsonProblem as problem:
                reason = problem.message.removeprefix("invalid JSON: ")
                raise DataError(path, f"arguments are not valid JSON: {reason}", line=line, field=field) from None
        if not isinstance(arguments, dict):
            raise DataError(
                path, f"expected an argument object, got {type(arguments).__name__}", line=line, field=field
            )
        answer[name] = arguments
    if split in SINGLE_TOOL_SPLITS and len(answer) != 1:
        raise DataError(path, f"{split} answers hold exactly one tool, got {len(answer)}", line=line, field="answer")
    return MtuItem(id=item_id, split=split, question=question, answer=answer, line=line, path=path)
