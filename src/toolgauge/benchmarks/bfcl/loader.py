"""Load BFCL v4 single-turn data (questions, function docs, possible answers) and result files.

Data files are JSONL despite their ``.json`` names: ``BFCL_v4_<category>.json`` holds
``{"id", "question", "function"}`` lines and ``possible_answer/BFCL_v4_<category>.json`` holds
``{"id", "ground_truth"}`` lines. Relevance categories have no possible answers by design.
Result files (``BFCL_v4_<category>_result.json``, as ``bfcl generate`` writes them under
``result/<model>/<group>/``) hold ``{"id", "result", ...}`` lines where ``result`` is the raw
text (prompting models) or a list of ``{name: json_arguments}`` (function-calling models).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from toolgauge.benchmarks.bfcl.decoders.call_types import Language
from toolgauge.errors import DataError
from toolgauge.jsonl import read_jsonl_objects

BFCL_AST_CATEGORIES: tuple[str, ...] = (
    "simple_python",
    "simple_java",
    "simple_javascript",
    "multiple",
    "parallel",
    "parallel_multiple",
    "live_simple",
    "live_multiple",
    "live_parallel",
    "live_parallel_multiple",
    "irrelevance",
    "live_irrelevance",
    "live_relevance",
)
"""Single-turn categories BFCL scores by decoding the reply (AST checker or relevance rule)."""

BFCL_RELEVANCE_CATEGORIES: frozenset[str] = frozenset({"irrelevance", "live_irrelevance", "live_relevance"})
"""Categories without possible answers: scored only on whether the reply contains a call."""

BfclOutput = str | list[dict[str, Any]]
"""A model's output for one entry in BFCL's result form: prompting text, or ``[{name: arguments}]``."""

_RESULT_FILE = re.compile(r"^BFCL_v4_(?P<category>.+)_result\.json$")
_ANY_VERSION_RESULT_FILE = re.compile(r"BFCL_v\d+_(?P<category>.+)_result\.json$")


def is_irrelevance(category: str) -> bool:
    """Whether the category is an irrelevance one (``irrelevance``, ``live_irrelevance``): right is no call."""
    return "irrelevance" in category


def bfcl_language(category: str) -> Language:
    """The language a category's functions are written in, by BFCL's rule on the category name.

    ``javascript`` when the name contains it, else ``java`` when the name contains that, else
    ``python``. Both sides use it: the hints and source rendering of what the model sees, and
    the decoder and type converters of the checker.
    """
    if "javascript" in category:
        return "javascript"
    if "java" in category:
        return "java"
    return "python"


class BfclEntry(BaseModel):
    """One BFCL test entry with its possible answer (``None`` for relevance categories)."""

    id: str
    category: str
    question: list[list[dict[str, Any]]]
    functions: list[dict[str, Any]]
    ground_truth: list[dict[str, Any]] | None
    path: str
    line: int


class BfclResultLine(BaseModel):
    """One line of a BFCL result file: the model's raw output for one entry, and where it was read."""

    id: str
    category: str
    result: BfclOutput
    path: str
    line: int


def load_bfcl(data_dir: Path, categories: Sequence[str]) -> list[BfclEntry]:
    """Load the entries of the given BFCL categories, in file order.

    Args:
        data_dir: Directory holding ``BFCL_v4_<category>.json`` and ``possible_answer/``.
        categories: Category names from :data:`BFCL_AST_CATEGORIES`.

    Returns:
        The entries of every category, category by category.

    Raises:
        DataError: Unknown category, missing or unreadable file, malformed line, or an entry
            without a possible answer.
    """
    entries: list[BfclEntry] = []
    for category in categories:
        if category not in BFCL_AST_CATEGORIES:
            raise DataError(
                str(data_dir), f"unknown BFCL category {category!r}; known: {', '.join(BFCL_AST_CATEGORIES)}"
            )
        question_path = data_dir / f"BFCL_v4_{category}.json"
        answers: dict[str, list[dict[str, Any]]] | None = None
        if category not in BFCL_RELEVANCE_CATEGORIES:
            answers = _load_answers(data_dir / "possible_answer" / f"BFCL_v4_{category}.json")
        for line_number, record in read_jsonl_objects(question_path, what="samples"):
            entries.append(_entry(record, category, question_path, line_number, answers))
    return entries


def result_files(path: Path, categories: Sequence[str] | None = None) -> list[Path]:
    """The result files ``path`` names: itself, or the ``BFCL_v4_<category>_result.json`` under a folder.

    Args:
        path: A result file, or a directory searched recursively (``result/<model>/<group>/``).
        categories: Only these categories' files from a folder (default: every category's).

    Raises:
        DataError: Missing path, or a folder without such files.
    """
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise DataError(str(path), "result path does not exist")
    if categories is None:
        files = sorted(p for p in path.rglob("BFCL_v4_*_result.json") if p.is_file())
        missing = "no BFCL_v4_<category>_result.json files found"
    else:
        files = sorted(f for c in categories for f in path.rglob(f"BFCL_v4_{c}_result.json") if f.is_file())
        missing = f"no BFCL_v4_<category>_result.json for {', '.join(categories)}"
    if not files:
        raise DataError(str(path), missing)
    return files


def load_bfcl_results(path: Path) -> dict[str, BfclResultLine]:
    """Read BFCL result lines from one file or every ``BFCL_v4_*_result.json`` under a directory.

    Args:
        path: A result file, or a directory searched recursively (``result/<model>/<group>/``).

    Returns:
        Results keyed by entry id.

    Raises:
        DataError: Missing path, malformed line, or an id seen twice.
    """
    results: dict[str, BfclResultLine] = {}
    for file in result_files(path):
        match = _RESULT_FILE.match(file.name)
        for line_number, record in read_jsonl_objects(file, what="results"):
            result = _result(record, file, line_number, match.group("category") if match else None)
            if result.id in results:
                first = results[result.id]
                raise DataError(
                    str(file),
                    f"duplicate id {result.id!r} (first at {first.path}:{first.line})",
                    line=line_number,
                    field="id",
                )
            results[result.id] = result
    return results


def categories_with_results(path: Path) -> list[str]:
    """Categories that have a ``BFCL_v<N>_<category>_result.json`` at or under ``path``, in path order.

    Raises:
        DataError: ``path`` does not exist, or holds no result file.
    """
    if not path.exists():
        raise DataError(str(path), "no such file or folder")
    files = [path] if path.is_file() else sorted(path.rglob("*_result.json"))
    found: list[str] = []
    for f in files:
        m = _ANY_VERSION_RESULT_FILE.search(f.name)
        if m and m.group("category") not in found:
            found.append(m.group("category"))
    if not found:
        raise DataError(str(path), "no BFCL result files (BFCL_v4_<category>_result.json) found")
    return found


def _require_id(record: dict[str, Any], path: Path, line: int) -> str:
    value = record.get("id")
    if not isinstance(value, str) or not value:
        raise DataError(str(path), "missing or non-string id", line=line, field="id")
    return value


def _load_answers(path: Path) -> dict[str, list[dict[str, Any]]]:
    answers: dict[str, list[dict[str, Any]]] = {}
    for line_number, record in read_jsonl_objects(path, what="possible answers"):
        entry_id = _require_id(record, path, line_number)
        truth = record.get("ground_truth")
        if not isinstance(truth, list) or not all(
            isinstance(call, dict) and len(call) == 1 and isinstance(next(iter(call.values())), dict) for call in truth
        ):
            raise DataError(
                str(path),
                "expected a list of {function: {param: [options]}}",
                line=line_number,
                field="ground_truth",
            )
        answers[entry_id] = truth
    return answers


def _entry(
    record: dict[str, Any],
    category: str,
    path: Path,
    line: int,
    answers: dict[str, list[dict[str, Any]]] | None,
) -> BfclEntry:
    entry_id = _require_id(record, path, line)
    question = record.get("question")
    if (
        not isinstance(question, list)
        or not question
        or not all(isinstance(turn, list) and all(isinstance(m, dict) for m in turn) for turn in question)
    ):
        raise DataError(str(path), "expected a non-empty list of turns of messages", line=line, field="question")
    functions = record.get("function")
    if not isinstance(functions, list):
        raise DataError(str(path), "expected a list of function docs", line=line, field="function")
    for index, doc in enumerate(functions):
        parameters = doc.get("parameters") if isinstance(doc, dict) else None
        if (
            not isinstance(doc, dict)
            or not isinstance(doc.get("name"), str)
            or not isinstance(parameters, dict)
            or not isinstance(parameters.get("properties", {}), dict)
        ):
            raise DataError(
                str(path), "expected {name, parameters: {properties}}", line=line, field=f"function[{index}]"
            )
    ground_truth = None
    if answers is not None:
        if entry_id not in answers:
            raise DataError(str(path), f"no possible answer for {entry_id!r}", line=line, field="id")
        ground_truth = answers[entry_id]
    return BfclEntry(
        id=entry_id,
        category=category,
        question=question,
        functions=functions,
        ground_truth=ground_truth,
        path=str(path),
        line=line,
    )


def _result(record: dict[str, Any], path: Path, line: int, category: str | None) -> BfclResultLine:
    entry_id = _require_id(record, path, line)
    if "result" not in record:
        raise DataError(str(path), "missing result", line=line, field="result")
    value = record["result"]
    if isinstance(value, list):
        for index, call in enumerate(value):
            if not isinstance(call, dict):
                raise DataError(
                    str(path),
                    "expected {name: arguments} objects (multi-turn results are not supported)",
                    line=line,
                    field=f"result[{index}]",
                )
    elif not isinstance(value, str):
        raise DataError(str(path), "expected a string or a list of calls", line=line, field="result")
    return BfclResultLine(
        id=entry_id, category=category or entry_id.rsplit("_", 1)[0], result=value, path=str(path), line=line
    )
