"""Reading candidate pools (JSONL, one :class:`~toolgauge.benchmarks.toolgate.records.Candidate` per line).

Every problem of a ``--candidates`` file is one :class:`~toolgauge.errors.DataError` rendered
``path:line: field: what is wrong`` (``pool.jsonl:3: options: expected exactly 4 options, got 3``). Inside
``gate run`` the same checks make a malformed proposal a recorded rejection: :func:`candidate_problem`
returns the problem as one line instead of raising.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from toolgauge.benchmarks.toolgate.records import LETTERS, Candidate, options_problem
from toolgauge.errors import DataError
from toolgauge.jsonl import UniqueIds, json_type, read_jsonl_objects
from toolgauge.unknown_fields import unknown_field

FIELDS = ("id", "domain", "question", "options", "answer", "solution", "meta")
_TEXT_FIELDS = ("id", "domain", "question")


class CandidateProblem(ValueError):
    """What is wrong with one candidate: the field (None for the whole line) and the message."""

    def __init__(self, field: str | None, message: str):
        super().__init__(f"{field}: {message}" if field else message)
        self.field = field
        self.message = message


def _text(data: dict[str, Any], field: str) -> str:
    if field not in data:
        raise CandidateProblem(field, "missing required field")
    value = data[field]
    if not isinstance(value, str):
        raise CandidateProblem(field, f"expected a string, got {json_type(value)}")
    if not value.strip():
        raise CandidateProblem(field, "must not be empty")
    return value


def validate_candidate(data: object, *, domain: str | None = None) -> Candidate:
    """Check one candidate (a decoded JSON value) field by field and build it.

    Args:
        data: the decoded JSON line.
        domain: when given, the ``domain`` field must equal it.

    Raises:
        CandidateProblem: the first thing wrong, with its field.
    """
    if not isinstance(data, dict):
        raise CandidateProblem(None, f"expected a JSON object (one candidate per line), got {json_type(data)}")
    unknown = [key for key in data if key not in FIELDS]
    if unknown:
        raise CandidateProblem(str(unknown[0]), unknown_field(str(unknown[0]), FIELDS))
    for field in _TEXT_FIELDS:
        _text(data, field)
    if domain is not None and data["domain"] != domain:
        raise CandidateProblem("domain", f"expected {domain!r}, got {data['domain']!r}")
    if "options" not in data:
        raise CandidateProblem("options", "missing required field")
    options = data["options"]
    if not isinstance(options, list):
        raise CandidateProblem("options", f"expected an array of 4 strings, got {json_type(options)}")
    for index, option in enumerate(options):
        if not isinstance(option, str):
            raise CandidateProblem(f"options[{index}]", f"expected a string, got {json_type(option)}")
    problem = options_problem(options)
    if problem is not None:
        raise CandidateProblem("options", problem)
    if "answer" not in data:
        raise CandidateProblem("answer", "missing required field")
    answer = data["answer"]
    if answer not in LETTERS:
        shown = repr(answer) if isinstance(answer, str) else json_type(answer)
        raise CandidateProblem("answer", f"expected one of A, B, C, D, got {shown}")
    _text(data, "solution")
    meta = data.get("meta", {})
    if not isinstance(meta, dict):
        raise CandidateProblem("meta", f"expected an object, got {json_type(meta)}")
    return Candidate.model_validate(data)


def candidate_problem(data: object, *, domain: str | None = None) -> str | None:
    """Return what is wrong with a proposed candidate as one line (``field: what is wrong``), or None.

    This is the ``detail`` of a ``malformed`` rejection inside ``gate run``.
    """
    try:
        validate_candidate(data, domain=domain)
    except CandidateProblem as problem:
        return str(problem)
    return None


def load_candidates(path: Path, *, domain: str | None = None) -> list[Candidate]:
    """Read a candidates JSONL file (blank lines skipped); ids must be unique.

    Args:
        path: the file.
        domain: when given, every candidate's ``domain`` must equal it.

    Raises:
        DataError: the first problem, as ``path:line: field: what is wrong`` (unreadable or empty file,
            malformed JSON, a malformed candidate, a repeated id).
    """
    shown = str(path)
    candidates: list[Candidate] = []
    ids = UniqueIds(shown)
    for line, data in read_jsonl_objects(Path(path), what="candidates"):
        try:
            candidate = validate_candidate(data, domain=domain)
        except CandidateProblem as problem:
            raise DataError(shown, problem.message, line=line, field=problem.field) from None
        ids.add(candidate.id, line)
        candidates.append(candidate)
    return candidates
