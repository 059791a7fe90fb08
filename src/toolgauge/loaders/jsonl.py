"""Reading text and JSON-lines files, with every problem reported as a one-line DataError."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def read_text(path: Path) -> str:
    """Return a UTF-8 file's text (a leading BOM is dropped).

    Raises:
        DataError: the file is missing or unreadable, or not UTF-8 (with the failing line).
    """
    from toolgauge.errors import DataError

    shown = str(path)
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise DataError(shown, "file not found") from None
    except OSError as exc:
        raise DataError(shown, f"cannot read the file: {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise DataError(shown, "not valid UTF-8 text", line=line) from None


def text_lines(text: str) -> list[str]:
    """Split on newlines only: ``str.splitlines`` would also split on U+2028 inside JSON strings."""
    return [line.removesuffix("\r") for line in text.split("\n")]


def read_jsonl_objects(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """Return ``(line number, object)`` for every non-blank line of a JSON-lines file.

    Raises:
        DataError: unreadable file, malformed JSON, or a line that is not a JSON object.
    """
    from toolgauge.errors import DataError

    records: list[tuple[int, dict[str, Any]]] = []
    for line_no, line in enumerate(text_lines(read_text(path)), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataError(str(path), f"invalid JSON: {exc.msg} (column {exc.colno})", line=line_no) from None
        if not isinstance(record, dict):
            raise DataError(str(path), f"expected a JSON object, got {type(record).__name__}", line=line_no)
        records.append((line_no, record))
    return records
