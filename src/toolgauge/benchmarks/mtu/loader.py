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


def prediction_split(prediction_id: str) -> str:
    """The split an MTU-Bench id names: its part before the first ``_`` (``S-S_3`` -> ``S-S``)."""
    return prediction_id.split("_", 1)[0]


def pair_predictions(
    items: Sequence[MtuItem], predictions: Sequence[MtuPrediction]
) -> tuple[list[str | None], list[str]]:
    """Match predictions to items by id.

    Where an id repeats, the k-th prediction with that id answers the k-th item with that id
    (items and predictions each in their own order). Nothing here is fatal: leftovers are
    reported as warnings, one line per file and kind, never one per prediction.

    Returns:
        The response for each item (None where the item has no prediction; score it as an empty
        reply), and the warnings: per file, the predictions whose id no item has and those beyond
        the number of items sharing their id; then how many items have no prediction. Predictions
        of a split that none of the items is in (``--splits S-S`` given a folder of every split's
        replies) were not asked for: they are left out without a word.
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
    selected = {item.split for item in items}
    unmatched: dict[str, list[MtuPrediction]] = defaultdict(list)
    repeated: dict[str, list[MtuPrediction]] = defaultdict(list)
    position: dict[str, int] = defaultdict(int)  # how many earlier predictions have the same id
    for prediction in predictions:
        taken = seen.get(prediction.id)
        if taken is None:
            split = prediction_split(prediction.id)
            if split not in MTU_SPLITS or split in selected:
                unmatched[prediction.path].append(prediction)
        elif position[prediction.id] >= taken:
            repeated[prediction.path].append(prediction)
        position[prediction.id] += 1
    warnings: list[str] = []
    for path in dict.fromkeys(p.path for p in predictions):
        if unmatched[path]:
            warnings.append(
                f"{path}: {len(unmatched[path])} prediction(s) match no item and are ignored: "
                f"{_listed(unmatched[path])}"
            )
        if repeated[path]:
            warnings.append(
                f"{path}: {len(repeated[path])} duplicate prediction(s) ignored (more predictions than items "
                f"with that id): {_listed(repeated[path])}"
            )
    if missing:
        shown = ", ".join(missing[:10]) + (", ..." if len(missing) > 10 else "")
        warnings.append(f"{len(missing)} item(s) have no prediction and are scored as empty replies: {shown}")
    return responses, warnings


def _listed(predictions: Sequence[MtuPrediction], most: int = 5) -> str:
    """``S-M_23 (line 27), S-M_30 (line 35)``: the first ``most`` predictions, then ``...``."""
    shown = ", ".join(f"{p.id} (line {p.line})" for p in predictions[:most])
    return shown + (", ..." if len(predictions) > most else "")


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
