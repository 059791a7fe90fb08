"""BFCL loaders: good files load, every kind of bad input is a DataError naming path:line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolgauge.benchmarks.bfcl.loader import categories_with_results, load_bfcl, load_bfcl_results
from toolgauge.errors import DataError

QUESTION = {
    "id": "simple_python_0",
    "question": [[{"role": "user", "content": "hi"}]],
    "function": [{"name": "f", "description": "", "parameters": {"type": "dict", "properties": {}, "required": []}}],
}
ANSWER = {"id": "simple_python_0", "ground_truth": [{"f": {}}]}


def write(path: Path, *lines: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines))
    return path


@pytest.fixture
def data(tmp_path: Path) -> Path:
    write(tmp_path / "BFCL_v4_simple_python.json", QUESTION)
    write(tmp_path / "possible_answer" / "BFCL_v4_simple_python.json", ANSWER)
    write(tmp_path / "BFCL_v4_irrelevance.json", {**QUESTION, "id": "irrelevance_0"})
    return tmp_path


def test_loads_entries_with_answers(data: Path) -> None:
    entries = load_bfcl(data, ["simple_python", "irrelevance"])
    assert [(e.id, e.category, e.line) for e in entries] == [
        ("simple_python_0", "simple_python", 1),
        ("irrelevance_0", "irrelevance", 1),
    ]
    assert entries[0].ground_truth == [{"f": {}}]
    assert entries[1].ground_truth is None  # relevance categories have no possible answers


def test_unknown_category_names_the_known_ones(data: Path) -> None:
    with pytest.raises(DataError, match=r"unknown BFCL category 'simple_rust'.*simple_python"):
        load_bfcl(data, ["simple_rust"])


def test_missing_files(data: Path) -> None:
    with pytest.raises(DataError, match=r"BFCL_v4_multiple\.json: file not found"):
        load_bfcl(data, ["multiple"])
    (data / "possible_answer" / "BFCL_v4_simple_python.json").unlink()
    with pytest.raises(DataError, match=r"possible_answer/BFCL_v4_simple_python\.json: file not found"):
        load_bfcl(data, ["simple_python"])


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", r":2: invalid JSON"),
        ("[1, 2]", r":2: expected a JSON object"),
        (json.dumps({**QUESTION, "id": 7}), r":2: id: missing or non-string id"),
        (json.dumps({**QUESTION, "question": "hi"}), r":2: question: expected a non-empty list"),
        (json.dumps({**QUESTION, "function": {"name": "f"}}), r":2: function: expected a list"),
        (json.dumps({**QUESTION, "function": [{"name": "f"}]}), r":2: function\[0\]: expected"),
        (json.dumps({**QUESTION, "id": "simple_python_9"}), r":2: id: no possible answer for 'simple_python_9'"),
    ],
)
def test_bad_question_lines(data: Path, line: str, message: str) -> None:
    write(data / "BFCL_v4_simple_python.json", QUESTION, line)
    with pytest.raises(DataError, match=message) as excinfo:
        load_bfcl(data, ["simple_python"])
    assert excinfo.value.line == 2
    assert excinfo.value.path.endswith("BFCL_v4_simple_python.json")


def test_bad_possible_answer_line(data: Path) -> None:
    write(
        data / "possible_answer" / "BFCL_v4_simple_python.json",
        ANSWER,
        {"id": "simple_python_1", "ground_truth": [{"f": [1]}]},
    )
    with pytest.raises(DataError, match=r"BFCL_v4_simple_python.json:2: ground_truth:"):
        load_bfcl(data, ["simple_python"])


def test_results_file_and_directory(tmp_path: Path) -> None:
    group = tmp_path / "result" / "my-model" / "non_live"
    write(group / "BFCL_v4_simple_python_result.json", {"id": "simple_python_0", "result": "[f()]", "latency": 1})
    write(group / "BFCL_v4_multiple_result.json", {"id": "multiple_0", "result": [{"f": "{}"}]})
    results = load_bfcl_results(tmp_path / "result")
    assert results["simple_python_0"].result == "[f()]"
    assert results["multiple_0"].result == [{"f": "{}"}]
    assert results["multiple_0"].category == "multiple"
    single = load_bfcl_results(group / "BFCL_v4_multiple_result.json")
    assert list(single) == ["multiple_0"]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("nope", r":2: invalid JSON"),
        (json.dumps({"result": "x"}), r":2: id: missing"),
        (json.dumps({"id": "simple_python_1"}), r":2: result: missing result"),
        (json.dumps({"id": "simple_python_1", "result": 5}), r":2: result: expected a string"),
        (json.dumps({"id": "simple_python_1", "result": [["turn"]]}), r":2: result\[0\]: expected"),
        (json.dumps({"id": "simple_python_0", "result": "x"}), r":2: id: duplicate id 'simple_python_0'"),
    ],
)
def test_bad_result_lines(tmp_path: Path, line: str, message: str) -> None:
    path = write(tmp_path / "BFCL_v4_simple_python_result.json", {"id": "simple_python_0", "result": ""}, line)
    with pytest.raises(DataError, match=message):
        load_bfcl_results(path)


def test_missing_or_empty_result_paths(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="does not exist"):
        load_bfcl_results(tmp_path / "absent")
    with pytest.raises(DataError, match=r"no BFCL_v4_<category>_result\.json files"):
        load_bfcl_results(tmp_path)


def test_categories_with_results(tmp_path: Path) -> None:
    write(tmp_path / "result" / "m" / "non_live" / "BFCL_v4_simple_python_result.json", {"id": "x", "result": ""})
    write(tmp_path / "result" / "m" / "live" / "BFCL_v4_live_simple_result.json", {"id": "y", "result": ""})
    write(tmp_path / "result" / "m" / "notes_result.json", {"id": "z", "result": ""})  # not a BFCL file name
    assert categories_with_results(tmp_path / "result") == ["live_simple", "simple_python"]  # in path order
    single = tmp_path / "result" / "m" / "live" / "BFCL_v4_live_simple_result.json"
    assert categories_with_results(single) == ["live_simple"]
    with pytest.raises(DataError, match="no such file or folder"):
        categories_with_results(tmp_path / "absent")
    with pytest.raises(DataError, match=r"no BFCL result files"):
        categories_with_results(tmp_path / "result" / "m" / "notes_result.json")
