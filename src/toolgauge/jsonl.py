"""Reading text and JSON files safely: every problem becomes a one-line DataError, never a traceback.

Hostile or broken input must not crash a loader: deeply nested JSON (``RecursionError``), integers past
Python's digit limit (``ValueError``), binary files, ``NaN``/``Infinity`` (not JSON) and empty files
are all reported as ``path:line: what is wrong``. A JSON Lines file that was pretty-printed (an object spread
over many lines) gets a hint saying so (:func:`jsonl_values`), whichever loader reads it.
"""

from __future__ import annotations

import json
import math
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

from toolgauge.errors import DataError, UsageError

PairsHook = Callable[[list[tuple[str, Any]]], Any]

MAX_INPUT_ENV = "TOOLGAUGE_MAX_INPUT_BYTES"
# The most bytes one input file may hold (data, predictions, scripts, sweep files): /dev/zero or a runaway
# file is refused in one line instead of ending in MemoryError. The real data files are a few MB.
DEFAULT_MAX_INPUT_BYTES = 512 * 1024 * 1024

PRETTY_PRINTED = "each line must be one JSON object (JSON Lines); this file looks pretty-printed"


class JsonProblem(ValueError):
    """Text that is not acceptable JSON; ``message`` is the one-line reason (no path, no line).

    ``unfinished``: the text stops in the middle of a value (``{`` alone, ``{"id": 1,``): in a JSON Lines file,
    the first line of a pretty-printed object.
    """

    def __init__(self, message: str, *, line: int | None = None, unfinished: bool = False):
        super().__init__(message)
        self.message = message
        self.line = line
        self.unfinished = unfinished


def json_type(value: Any) -> str:
    """The JSON Schema type name of a decoded JSON value, for "expected X, got Y" messages (an int is ``integer``)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _reject_constant(name: str) -> Any:
    raise JsonProblem(f"invalid JSON: {name} is not a JSON value")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise JsonProblem(f"invalid JSON: number {text[:20]} is out of range (it would be infinite)")
    return value


def parse_json(text: str, *, object_pairs_hook: PairsHook | None = None) -> Any:
    """Decode JSON text, rejecting what :func:`json.loads` accepts or crashes on.

    Raises:
        JsonProblem: malformed JSON, ``NaN``/``Infinity``, nesting too deep, or an integer with more
            digits than Python converts, or a float too large to be finite.
    """
    try:
        return json.loads(
            text, object_pairs_hook=object_pairs_hook, parse_constant=_reject_constant, parse_float=_finite_float
        )
    except json.JSONDecodeError as exc:
        unfinished = exc.pos >= len(text.rstrip())
        raise JsonProblem(
            f"invalid JSON: {exc.msg} (column {exc.colno})", line=exc.lineno, unfinished=unfinished
        ) from None
    except RecursionError:
        raise JsonProblem("invalid JSON: nesting too deep") from None
    except JsonProblem:
        raise
    except ValueError as exc:
        # int("9" * 5000) hits sys.get_int_max_str_digits(); other ValueErrors are hooks' own messages.
        if "digits" in str(exc):
            raise JsonProblem("invalid JSON: integer with too many digits") from None
        raise JsonProblem(f"invalid JSON: {str(exc).splitlines()[0] if str(exc) else 'bad value'}") from None


def jsonl_line_problem(problem: JsonProblem, line: str, *, last: bool) -> str:
    """The message for a line of a JSON Lines file that does not decode.

    A line that stops in the middle of a value while more lines follow (or ``{`` alone) is what a
    pretty-printed file gives: the message says so, instead of only "Expecting property name (column 2)".
    The last line stopping early is a file cut short, not pretty-printed: no hint.

    Args:
        problem: why the line does not decode.
        line: the line's text.
        last: no non-blank line follows it.
    """
    if problem.unfinished and (not last or line.strip() in ("{", "[")):
        return f"{problem.message}; {PRETTY_PRINTED}"
    return problem.message


def max_input_bytes() -> int:
    """The most bytes an input file may hold: ``$TOOLGAUGE_MAX_INPUT_BYTES``, else 512 MiB.

    Raises:
        UsageError: the variable is set to something other than a positive whole number.
    """
    raw = os.environ.get(MAX_INPUT_ENV, "").strip()
    if not raw:
        return DEFAULT_MAX_INPUT_BYTES
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise UsageError(f"{MAX_INPUT_ENV}={raw!r}: expected a positive number of bytes")
    return value


def too_large(limit: int, size: int | None = None) -> str:
    """The message for an input file over ``limit`` bytes (``size`` when known)."""
    held = f"holds {size} bytes" if size is not None else "holds more"
    return f"the file {held}, over the input limit of {limit} bytes (set {MAX_INPUT_ENV} to raise it)"


def _kind(mode: int) -> str:
    kinds = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
             (stat.S_ISSOCK, "a socket"))  # fmt: skip
    return next((name for test, name in kinds if test(mode)), "not a file")


def open_input(path: Path | str) -> BinaryIO:
    """Open an input file for reading in binary: a regular file within :func:`max_input_bytes`.

    A FIFO, a device (``/dev/zero``) or a socket is refused before a byte is read (opening does not wait for
    a FIFO's writer). The caller still reads at most the limit: a file may grow after this check.

    Raises:
        DataError: missing, unreadable, not a regular file, or over the limit.
    """
    shown = str(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise DataError(shown, "file not found") from None
    except OSError as exc:
        raise DataError(shown, f"cannot read the file: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise DataError(shown, "cannot read the file: Is a directory")
        if not stat.S_ISREG(info.st_mode):
            raise DataError(shown, f"not a regular file ({_kind(info.st_mode)}); give a file")
        limit = max_input_bytes()
        if info.st_size > limit:
            raise DataError(shown, too_large(limit, info.st_size))
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_input_bytes(path: Path | str) -> bytes:
    """An input file's bytes (see :func:`open_input`).

    Raises:
        DataError: missing, unreadable, not a regular file, or over the limit.
    """
    shown = str(path)
    limit = max_input_bytes()
    with open_input(path) as handle:
        try:
            data = handle.read(limit + 1)
        except OSError as exc:
            raise DataError(shown, f"cannot read the file: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise DataError(shown, too_large(limit))
    return data


def read_text(path: Path) -> str:
    """Return a UTF-8 file's text (a leading BOM is dropped).

    Raises:
        DataError: the file is missing or unreadable, not a regular file, over the input limit, or not
            UTF-8 (with the failing line).
    """
    shown = str(path)
    data = read_input_bytes(path)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise DataError(shown, "not valid UTF-8 text (binary file?)", line=line) from None
    if "\x00" in text:
        # Valid UTF-8 can still be binary (NUL bytes never occur in JSON or text data).
        line = text[: text.index("\x00")].count("\n") + 1
        raise DataError(shown, "contains NUL bytes (binary file?)", line=line)
    return text


def text_lines(text: str) -> list[str]:
    """Split on newlines only: ``str.splitlines`` would also split on U+2028 inside JSON strings."""
    return [line.removesuffix("\r") for line in text.split("\n")]


def jsonl_values(text: str, path: Path | str) -> Iterator[tuple[int, Any]]:
    """Yield ``(line number, decoded value)`` for every non-blank line of the JSON Lines text read from ``path``.

    Every JSON Lines loader reads its lines through here (or :func:`jsonl_line_problem`), so each says a
    pretty-printed file is one.

    Raises:
        DataError: a line that is not JSON (``path:line: invalid JSON: ...``), when the iteration reaches it.
    """
    lines = text_lines(text)
    last = max((index for index, line in enumerate(lines) if line.strip()), default=-1)
    for index, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            value = parse_json(line)
        except JsonProblem as problem:
            message = jsonl_line_problem(problem, line, last=index == last)
            raise DataError(str(path), message, line=index + 1) from None
        yield index + 1, value


def read_json_file(path: Path, *, what: str = "data") -> Any:
    """Return the JSON value a whole file holds.

    Raises:
        DataError: unreadable, binary, empty or malformed file (with the line of the problem).
    """
    text = read_text(path)
    if not text.strip():
        raise DataError(str(path), f"no {what}: the file is empty")
    try:
        return parse_json(text)
    except JsonProblem as problem:
        raise DataError(str(path), problem.message, line=problem.line) from None


def read_jsonl_objects(path: Path, *, what: str = "records") -> list[tuple[int, dict[str, Any]]]:
    """Return ``(line number, object)`` for every non-blank line of a JSON-lines file.

    Args:
        path: The file.
        what: What the lines are, for the message about an empty file (``"samples"``).

    Raises:
        DataError: unreadable or binary file, malformed JSON, a line that is not a JSON object, or a
            file with no records (a run on zero samples must never happen).
    """
    records: list[tuple[int, dict[str, Any]]] = []
    for line_no, record in jsonl_values(read_text(path), path):
        if not isinstance(record, dict):
            raise DataError(str(path), f"expected a JSON object, got {type(record).__name__}", line=line_no)
        records.append((line_no, record))
    if not records:
        raise DataError(str(path), f"no {what}: the file is empty")
    return records


class UniqueIds:
    """The ids a JSON-lines file has used so far, each with its first line: a repeated id is a one-line DataError.

    The message is ``duplicate <what> 'x' (<first> N)`` at the repeating line, field ``id``: with the defaults
    ``pool.jsonl:5: id: duplicate id 'q1' (first on line 1)``; a suite file says ``what="dialogue id",
    first="first used on line"``.
    """

    def __init__(self, path: Path | str, *, what: str = "id", first: str = "first on line", field: str = "id"):
        self.path = str(path)
        self.what = what
        self.first = first
        self.field = field
        self._lines: dict[str, int] = {}

    def add(self, value: str, line: int) -> None:
        """Note that ``line`` uses ``value``.

        Raises:
            DataError: an earlier line used it.
        """
        first = self._lines.get(value)
        if first is not None:
            raise DataError(
                self.path, f"duplicate {self.what} {value!r} ({self.first} {first})", line=line, field=self.field
            )
        self._lines[value] = line
