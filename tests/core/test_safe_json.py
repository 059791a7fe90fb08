"""The one safe JSON reader: what ``json.loads`` accepts or crashes on becomes a one-line problem."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolgauge.errors import DataError
from toolgauge.jsonl import JsonProblem, parse_json, read_json_file, read_text


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[" * 100_000, "invalid JSON: nesting too deep"),
        ("9" * 5000, "invalid JSON: integer with too many digits"),
        ('{"a": NaN}', "invalid JSON: NaN is not a JSON value"),
        ("[Infinity]", "invalid JSON: Infinity is not a JSON value"),
        ("[1e400]", "invalid JSON: number 1e400 is out of range (it would be infinite)"),
        ('{"a": 1,}', "invalid JSON: Expecting property name enclosed in double quotes (column 9)"),
    ],
)
def test_parse_json_rejects_with_one_line(text: str, message: str) -> None:
    with pytest.raises(JsonProblem) as problem:
        parse_json(text)
    assert problem.value.message == message


def test_parse_json_keeps_ordinary_numbers() -> None:
    assert parse_json('{"a": [1.5, -2e10, 12345678901234567890]}') == {"a": [1.5, -2e10, 12345678901234567890]}


def test_read_json_file_names_the_line_of_a_syntax_error(tmp_path: Path) -> None:
    path = tmp_path / "tools.json"
    path.write_text('{\n  "a": 1,\n  "b": }\n')
    with pytest.raises(DataError) as error:
        read_json_file(path)
    assert str(error.value).startswith(f"{path}:3: invalid JSON: Expecting value")


def test_read_json_file_empty_is_bad_input(tmp_path: Path) -> None:
    path = tmp_path / "tools.json"
    path.write_text("  \n")
    with pytest.raises(DataError, match="no tools: the file is empty"):
        read_json_file(path, what="tools")


def test_nul_bytes_in_valid_utf8_are_a_binary_file(tmp_path: Path) -> None:
    path = tmp_path / "data.jsonl"
    path.write_bytes(b'{"a": 1}\n\x00\x00\x00')
    with pytest.raises(DataError) as error:
        read_text(path)
    assert str(error.value) == f"{path}:2: contains NUL bytes (binary file?)"
