"""MTU-Bench loading, prediction pairing and native-request conversion on small synthetic files."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import Any

import pytest

import toolgauge.benchmarks.mtu
from toolgauge.benchmarks.mtu.loader import load_mtu, load_mtu_predictions, pair_predictions
from toolgauge.benchmarks.mtu.native import NO_RESULT, mtu_native_request, read_literal
from toolgauge.benchmarks.mtu.options import MtuOptions
from toolgauge.benchmarks.mtu.protocol import MtuBenchmark, replay_turns
from toolgauge.benchmarks.mtu.records import MTU_SPLITS, MtuItem, MtuPrediction
from toolgauge.errors import DataError
from toolgauge.records import AssistantTurn

MARK = "The following is a list of APIs and their parameters that you can use:"


def write_lines(path: Path, records: list[Any]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records), encoding="utf-8")
    return path


def line(item_id: str, answer: Any, question: str = "q") -> dict[str, Any]:
    return {"id": item_id, "question": question, "answer": answer}


# --- load_mtu -------------------------------------------------------------------------------


def test_load_mtu_reads_splits_in_order_and_decodes_ood(tmp_path: Path) -> None:
    write_lines(tmp_path / "S-S_eval.jsonl", [line("S-S_0", {"Find": {"city": "Paris"}}), "", line("S-S_1", {"A": {}})])
    write_lines(tmp_path / "OOD_eval.jsonl", [line("OOD_0_0", {"get": '{"q": "snake"}', " b": {"x": 1}})])
    items = load_mtu(tmp_path, ["OOD", "S-S"])
    assert [(i.split, i.id, i.line) for i in items] == [("OOD", "OOD_0_0", 1), ("S-S", "S-S_0", 1), ("S-S", "S-S_1", 3)]
    assert items[0].answer == {"get": {"q": "snake"}, " b": {"x": 1}}
    assert items[0].path == str(tmp_path / "OOD_eval.jsonl")
    assert [(c.name, c.arguments) for c in items[0].gold_calls()] == [("get", {"q": "snake"}), (" b", {"x": 1})]


def test_mtu_splits_constant() -> None:
    assert MTU_SPLITS == ("S-S", "S-M", "M-S", "M-M", "OOD")


def test_item_helpers() -> None:
    ms = MtuItem(id="M-S_12_3", split="M-S", question="q", answer={"": {}}, line=1, path="p")
    assert (ms.dialogue_id, ms.turn_index, ms.gold_calls(), ms.multi_call) == ("M-S_12", 3, [], False)
    assert MtuItem(id="M-M_1_0", split="M-M", question="q", answer={}, line=1, path="p").multi_call
    assert not MtuItem(id="OOD_1", split="OOD", question="q", answer={"": {}}, line=1, path="p").multi_call
    assert MtuItem(id="OOD_1", split="OOD", question="q", answer={}, line=1, path="p").multi_call


def test_load_mtu_unknown_split(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="unknown MTU-Bench split 'X-X'"):
        load_mtu(tmp_path, ["X-X"])


def test_load_mtu_missing_file(tmp_path: Path) -> None:
    with pytest.raises(DataError) as error:
        load_mtu(tmp_path, ["S-M"])
    assert str(error.value) == f"{tmp_path / 'S-M_eval.jsonl'}: file not found"


@pytest.mark.parametrize(
    ("split", "record", "expected"),
    [
        ("S-S", "{not json", "2: invalid JSON: Expecting property name enclosed in double quotes (column 2)"),
        ("S-S", "[1, 2]", "2: expected a JSON object, got list"),
        ("S-S", {"question": "q", "answer": {"A": {}}}, "2: id: missing field"),
        ("S-S", {"id": 3, "question": "q", "answer": {"A": {}}}, "2: id: expected a string, got int"),
        ("S-S", {"id": "S-S_1", "answer": {"A": {}}}, "2: question: missing field"),
        ("S-S", {"id": "S-S_1", "question": "q"}, "2: answer: missing field"),
        ("S-S", line("S-S_1", ["A"]), "2: answer: expected an object of tool calls, got list"),
        ("S-S", line("S-S_1", {"A": "{}"}), "2: answer.A: expected an argument object, got str"),
        ("S-S", line("S-S_1", {"A": {}, "B": {}}), "2: answer: S-S answers hold exactly one tool, got 2"),
        ("M-S", line("M-S_1_x", {"A": {}}), "2: id: multi-turn id 'M-S_1_x' must end in _<turn number>"),
        ("OOD", line("OOD_1", {"A": "{bad"}), "2: answer.A: arguments are not valid JSON: Expecting property name"),
        ("OOD", line("OOD_1", {"A": "[1]"}), "2: answer.A: expected an argument object, got list"),
    ],
)
def test_load_mtu_bad_lines(tmp_path: Path, split: str, record: Any, expected: str) -> None:
    good = line(f"{split}_0_0" if split == "M-S" else f"{split}_0", {"A": {}})
    path = write_lines(tmp_path / f"{split}_eval.jsonl", [good, record])
    with pytest.raises(DataError) as error:
        load_mtu(tmp_path, [split])
    assert str(error.value).startswith(f"{path}:{expected}")
    assert error.value.line == 2


# --- predictions ----------------------------------------------------------------------------


def test_load_predictions_file_and_directory(tmp_path: Path) -> None:
    write_lines(tmp_path / "M-M_gpt4_response.jsonl", [{"id": "M-M_0_0", "model": "m", "response": "b"}])
    write_lines(tmp_path / "S-S_gpt4_response.jsonl", [{"id": "S-S_0", "response": "a"}])
    (tmp_path / "notes.jsonl").write_text("ignored\n")
    from_dir = load_mtu_predictions(tmp_path)
    assert [(p.id, p.response, Path(p.path).name, p.line) for p in from_dir] == [
        ("S-S_0", "a", "S-S_gpt4_response.jsonl", 1),
        ("M-M_0_0", "b", "M-M_gpt4_response.jsonl", 1),
    ]
    assert [p.id for p in load_mtu_predictions(tmp_path / "M-M_gpt4_response.jsonl")] == ["M-M_0_0"]


def test_load_predictions_errors(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="not found"):
        load_mtu_predictions(tmp_path / "nope.jsonl")
    with pytest.raises(DataError, match="no prediction files"):
        load_mtu_predictions(tmp_path)
    path = write_lines(tmp_path / "p.jsonl", [{"id": "a", "response": "x"}, {"id": "b", "response": None}])
    with pytest.raises(DataError) as error:
        load_mtu_predictions(path)
    assert str(error.value) == f"{path}:2: response: expected a string, got NoneType"


def _item(item_id: str) -> MtuItem:
    return MtuItem(id=item_id, split="M-M", question="q", answer={}, line=1, path="e")


def _prediction(pred_id: str, response: str, line_no: int) -> MtuPrediction:
    return MtuPrediction(id=pred_id, response=response, path="p.jsonl", line=line_no)


def test_pair_predictions_kth_rule_and_warnings() -> None:
    items = [_item("M-M_1_0"), _item("M-M_1_0"), _item("M-M_2_0"), _item("M-M_3_0")]
    predictions = [
        _prediction("M-M_1_0", "first", 1),
        _prediction("M-M_9_0", "stray", 2),
        _prediction("M-M_1_0", "second", 3),
        _prediction("M-M_2_0", "only", 4),
        _prediction("M-M_2_0", "extra", 5),
    ]
    responses, warnings = pair_predictions(items, predictions)
    assert responses == ["first", "second", "only", None]
    assert warnings == [
        "p.jsonl: 1 prediction(s) match no item and are ignored: M-M_9_0 (line 2)",
        "p.jsonl: 1 duplicate prediction(s) ignored (more predictions than items with that id): M-M_2_0 (line 5)",
        "1 item(s) have no prediction and are scored as empty replies: M-M_3_0",
    ]


def test_pair_predictions_warns_once_per_file_and_not_for_splits_not_selected() -> None:
    items = [_item("M-M_1_0")]
    predictions = [
        _prediction("M-M_1_0", "answer", 1),
        *(_prediction(f"M-M_{n}_0", "stray", n) for n in range(2, 9)),  # 7 of a selected split: one line
        *(_prediction(f"S-S_{n}", "other split", 10 + n) for n in range(40)),  # a split not selected: no line
        *(_prediction("M-M_1_0", "again", 60 + n) for n in range(3)),
    ]
    responses, warnings = pair_predictions(items, predictions)
    assert responses == ["answer"]
    assert warnings == [
        "p.jsonl: 7 prediction(s) match no item and are ignored: "
        "M-M_2_0 (line 2), M-M_3_0 (line 3), M-M_4_0 (line 4), M-M_5_0 (line 5), M-M_6_0 (line 6), ...",
        "p.jsonl: 3 duplicate prediction(s) ignored (more predictions than items with that id): "
        "M-M_1_0 (line 60), M-M_1_0 (line 61), M-M_1_0 (line 62)",
    ]


def test_pair_predictions_clean() -> None:
    assert pair_predictions([_item("a_0")], [_prediction("a_0", "r", 1)]) == (["r"], [])


def test_replay_table_pairs_kth_with_kth_and_keeps_nothing(tmp_path: Path) -> None:
    items = [_item("M-M_1_0"), _item("M-M_1_0"), _item("M-M_3_0")]
    path = write_lines(
        tmp_path / "M-M_mine.jsonl",
        [
            {"id": "M-M_1_0", "response": "first"},
            {"id": "M-M_1_0", "response": "second"},
            {"id": "M-M_9_0", "response": "x"},
        ],
    )
    bench = MtuBenchmark(items, options=MtuOptions(), data_label="d")
    table = bench.replay_table(path)
    # Repeated ids get sample keys of their own; the item with no prediction has no entry (an empty reply).
    assert table == {
        "M-M_1_0": [AssistantTurn(content="first", finish_reason="stop")],
        "M-M_1_0~1": [AssistantTurn(content="second", finish_reason="stop")],
    }
    # Pure: the pairing's warnings come from replay_turns, the benchmark is left as it was.
    assert bench.warnings == []
    assert bench.replay_table(path) == table
    again, warnings = replay_turns(items, load_mtu_predictions(path))
    assert again == table
    assert warnings == [
        f"{path}: 1 prediction(s) match no item and are ignored: M-M_9_0 (line 3)",
        "1 item(s) have no prediction and are scored as empty replies: M-M_3_0",
    ]


# --- native requests ------------------------------------------------------------------------

HEAD = (
    "\nPlease reply to the user. Here are the call requirements.\n"
    '1. Please provide your thought process in "Thought".\n'
    "2. When a request can be satisfied, use the following format: \n"
    "Action: The name of the API to be called.\n"
    "Action Input: The parameter information required to call the API, in Json format.\n"
    "3. If there is a lack of mandatory information, then no API call action will be made.\n"
    "4. If none of the apis provided are available, no Action is taken.\n"
    "5. Today is Monday, January 4, 2024.\n"
    "Thought: xxxx\n"
)
PY_APIS = (
    "[{'name': 'FindBus', 'description': 'Find a bus', 'required_parameters': ['origin', 'destination'], "
    "'optional_parameters': {'group_size': '1'}, 'result_parameters': ['price']}]"
)


def native_item(rest: str, split: str = "M-S") -> MtuItem:
    return MtuItem(id="M-S_0_2", split=split, question=HEAD + MARK + "\n" + rest, answer={"": {}}, line=7, path="f")


def test_native_react_history() -> None:
    history = (
        "\nHistory Dialog: \nuser: Find a bus from Vancouver.\nfunction: \nThought: Need the destination.\n"
        "observation: \nassistant: : Where to?\nuser: Seattle.\nfunction: \nThought: Search.\n"
        "Action: FindBus \nAction Input: {'origin': 'Vancouver', 'destination': 'Seattle'}\n"
        "observation: : [{'price': '28'}]\nassistant: : It costs $28.\nuser: Any other?\nfunction: \n"
        "Thought: Already answered.\nobservation: : [{'price': '28'}]\nassistant: : No.\nUser: Book it."
    )
    tools, messages = mtu_native_request(native_item(PY_APIS + history))
    assert [t.name for t in tools] == ["FindBus"]
    assert tools[0].description == "Find a bus Returns: price."
    assert tools[0].parameters == {
        "type": "object",
        "properties": {"origin": {}, "destination": {}, "group_size": {"description": "Optional. Default: 1."}},
        "required": ["origin", "destination"],
    }
    system = messages[0].content or ""
    assert messages[0].role == "system"
    assert "Today is Monday, January 4, 2024." in system
    assert "mandatory information" in system and "no tool is called" in system
    assert not re.search(r"\b(Thought|Action|format)\b", system)
    shape = [(m.role, m.content, [(c.id, c.name, c.arguments) for c in m.tool_calls], m.tool_call_id) for m in messages]
    assert shape[1:] == [
        ("user", "Find a bus from Vancouver.", [], None),
        ("assistant", "Where to?", [], None),
        ("user", "Seattle.", [], None),
        ("assistant", None, [("call_1", "FindBus", {"origin": "Vancouver", "destination": "Seattle"})], None),
        ("tool", "[{'price': '28'}]", [], "call_1"),
        ("assistant", "It costs $28.", [], None),
        ("user", "Any other?", [], None),
        ("assistant", "No.", [], None),
        ("user", "Book it.", [], None),
    ]


def test_native_dict_action_history_and_typed_parameters() -> None:
    apis = json.dumps(
        [
            {
                "name": "set_temp",
                "description": "Set it.",
                "required_parameters": [{"name": "room", "type": "string", "description": "Room."}],
                "optional_parameters": [
                    {"name": "deg", "type": "float", "description": "Degrees.", "default": 20},
                    {"name": "days", "type": "array", "items": {"type": "str"}, "description": "Days."},
                    {"name": "info", "type": "Dict", "properties": {"n": {"type": "int"}}},
                    {"name": "mode", "type": "string", "enum": ["a", "b"]},
                    {"name": "when", "format": "HH:MM"},
                ],
                "result_parameters": [{"name": "ok", "type": "boolean"}],
            }
        ]
    )
    history = (
        "\nHistory Dialog: \nUser:  Hi?\nAction: {}\nAssistant:  Hello.\n\n"
        'User:  Kitchen to 20.\nAction: {"set_temp": {"room": "kitchen", "deg": 20}, "get": {}}\n'
        "Assistant:  Done.\nAction: \n\nUser:  And the bedroom?"
    )
    tools, messages = mtu_native_request(native_item(apis + history, split="M-M"))
    properties = tools[0].parameters["properties"]
    assert properties["room"] == {"type": "string", "description": "Room."}
    assert properties["deg"] == {"type": "number", "description": "Degrees. Default: 20."}
    assert properties["days"] == {"type": "array", "description": "Days.", "items": {"type": "string"}}
    assert properties["info"] == {"type": "object", "properties": {"n": {"type": "integer"}}}
    assert properties["mode"] == {"type": "string", "enum": ["a", "b"]}
    assert properties["when"] == {"description": "Format: HH:MM."}
    assert tools[0].parameters["required"] == ["room"]
    roles = [(m.role, m.content, [c.name for c in m.tool_calls], m.tool_call_id) for m in messages[1:]]
    assert roles == [
        ("user", "Hi?", [], None),
        ("assistant", "Hello.", [], None),
        ("user", "Kitchen to 20.", [], None),
        ("assistant", None, ["set_temp", "get"], None),
        ("tool", NO_RESULT, [], "call_1"),
        ("tool", NO_RESULT, [], "call_2"),
        ("assistant", "Done.", [], None),
        ("user", "And the bedroom?", [], None),
    ]


def test_native_shared_parameter_pool_and_non_object_entries() -> None:
    apis = json.dumps(
        {
            "apis": [{"name": "order", "description": "Order."}, "junk"],
            "available_parameters": [{"name": "store", "description": "Store."}],
        }
    )
    tools, messages = mtu_native_request(native_item(apis + "\nUser: Pizza!", split="OOD"))
    assert [(t.name, t.parameters) for t in tools] == [
        ("order", {"type": "object", "properties": {"store": {"description": "Store."}}})
    ]
    assert [(m.role, m.content) for m in messages[1:]] == [("user", "Pizza!")]
    tools, _ = mtu_native_request(native_item("\n['api_descriptions']\nUser: hi", split="S-S"))
    assert tools == []


def test_native_errors_name_the_item() -> None:
    no_list = MtuItem(id="S-S_0", split="S-S", question="no list here", answer={"A": {}}, line=4, path="f.jsonl")
    with pytest.raises(DataError) as error:
        mtu_native_request(no_list)
    assert str(error.value) == "f.jsonl:4: question: no API list in the question"
    broken = MtuItem(id="S-S_0", split="S-S", question=MARK + "[{'a': 1", answer={"A": {}}, line=5, path="f.jsonl")
    with pytest.raises(DataError, match=r"f.jsonl:5: question: cannot read the API list"):
        mtu_native_request(broken)


def test_read_literal_python_and_json() -> None:
    assert read_literal(" [{'a': 'x]y', 'b': True}] tail") == ([{"a": "x]y", "b": True}], 26)
    assert read_literal('{"a": [1, 2]}\nUser:') == ({"a": [1, 2]}, 13)
    with pytest.raises(ValueError):
        read_literal("User: hi")
    with pytest.raises(ValueError):
        read_literal("[__import__('os')]")


def package_imports() -> dict[str, set[str]]:
    """Each module of the MTU package -> the modules of the package it imports (at any depth of the file)."""
    package = Path(toolgauge.benchmarks.mtu.__file__).parent
    graph: dict[str, set[str]] = {}
    for path in package.glob("*.py"):
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            found |= {name.split(".")[3] for name in names if name.startswith("toolgauge.benchmarks.mtu.")}
        graph[path.stem] = found
    return graph


def test_the_package_has_no_import_cycle_and_the_records_import_no_other_module() -> None:
    graph = package_imports()
    assert {"records", "loader", "native", "metrics", "protocol", "build", "__init__"} <= set(graph)
    # The records, loader, native conversion and metrics do not reach each other in a circle.
    assert graph["records"] == set()
    assert graph["loader"] == {"records"} and graph["native"] == {"records"}
    assert graph["metrics"] == {"records"}
    # No module reaches itself through its imports ("__init__" is the package, which every module sits in).
    for start in graph:
        seen: set[str] = set()
        todo = [name for name in graph[start] if name in graph]
        while todo:
            name = todo.pop()
            assert name != start, f"{start} imports itself through {sorted(seen)}"
            if name not in seen:
                seen.add(name)
                todo += [n for n in graph.get(name, ()) if n in graph]


def test_native_request_is_reached_from_the_native_module_only() -> None:
    from toolgauge.benchmarks.mtu import loader

    item = native_item(PY_APIS + "\nUser: Find a bus.", split="S-S")
    assert not hasattr(loader, "mtu_native_request")
    tools, messages = mtu_native_request(item)
    assert [tool.name for tool in tools] and messages[-1].content == "Find a bus."
