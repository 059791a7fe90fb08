"""Tool-Genesis data file, registry and schema-file loading: real data and every bad-input class."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from helpers.paths import FIXTURE_ROOT
from toolgauge.benchmarks.tool_genesis.loader import load_genesis, load_registry, read_schema_file, write_registry
from toolgauge.benchmarks.tool_genesis.records import GeneratedServer
from toolgauge.errors import DataError

SPEC = FIXTURE_ROOT / "genesis" / "spec.json"


def spec() -> dict[str, Any]:
    return dict(json.loads(SPEC.read_text()))


def write(path: Path, value: Any) -> Path:
    path.write_text(value if isinstance(value, str) else json.dumps(value, indent=2))
    return path


@pytest.mark.realdata
def test_shared_subset_loads(data_dir: Path) -> None:
    servers = load_genesis(data_dir / "tool-genesis" / "tool_genesis_v3_subset.json")
    # Counts from the subset's PROVENANCE.md: 20 servers, 104 tools, 2,142 unit tests, 400 task examples.
    assert len(servers) == 20
    assert sum(len(s.tool_definitions) for s in servers) == 104
    assert sum(s.n_unit_tests for s in servers) == 2142
    assert sum(len(s.task_example) for s in servers) == 400
    assert [s.server_slug for s in servers if s.stateful] == ["drawing-tool-for-ai-assistants"]
    # Eleven tests hold a malformed JSON string as arguments; the official evaluator sends {} for them.
    odd = [t for s in servers for cases in s.unit_test.values() for t in cases if isinstance(t.arguments, str)]
    assert len(odd) == 11 and all(t.arguments_dict == {} for t in odd)


def test_fixture_spec_round_trip(tmp_path: Path) -> None:
    servers = load_genesis(write(tmp_path / "d.json", [spec()]))
    server = servers[0]
    assert server.server_slug == "mini-calc" and server.tool_names == ["add", "greet"]
    assert server.unit_test["add"][2].function_output_content == "Error: b is required"
    assert server.schema_payload()["tools"][0]["name"] == "add"


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("[{]", "d.json:1: invalid JSON"),
        ('{"a": 1}', "expected a JSON array of servers, got dict"),
        ("[]", "the file holds no servers"),
        ("[\n  1\n]", "d.json:2: server #1: expected an object, got int"),
    ],
)
def test_bad_data_files(tmp_path: Path, content: str, expected: str) -> None:
    with pytest.raises(DataError) as info:
        load_genesis(write(tmp_path / "d.json", content))
    assert expected in str(info.value)
    assert "\n" not in str(info.value)


def test_malformed_entries_name_line_and_field(tmp_path: Path) -> None:
    good = spec()
    missing = {k: v for k, v in spec().items() if k != "agent_input_prompt"}
    path = write(tmp_path / "d.json", [good, missing])
    with pytest.raises(DataError) as info:
        load_genesis(path)
    # Line of the second top-level object: the second "  {" line of the indented dump.
    opening = [i for i, text in enumerate(json.dumps([good, missing], indent=2).split("\n")) if text == "  {"]
    line = opening[1] + 1
    assert str(info.value).startswith(f"{path}:{line}: agent_input_prompt: server #2:")

    wrong_args = spec()
    wrong_args["unit_test"]["add"][0]["arguments"] = 5
    with pytest.raises(DataError, match=r"unit_test\.add\[0\]\.arguments: server #1"):
        load_genesis(write(tmp_path / "d.json", [wrong_args]))

    wrong_name = spec()
    wrong_name["unit_test"]["add"][0]["function_name"] = "greet"
    with pytest.raises(DataError, match="a test of 'add' calls 'greet'"):
        load_genesis(write(tmp_path / "d.json", [wrong_name]))

    nameless = spec()
    del nameless["tool_definitions"][1]["name"]
    with pytest.raises(DataError, match=r"tool_definitions\[1\]\.name"):
        load_genesis(write(tmp_path / "d.json", [nameless]))

    with pytest.raises(DataError, match="duplicate server_slug 'mini-calc'"):
        load_genesis(write(tmp_path / "d.json", [spec(), spec()]))

    with pytest.raises(DataError, match="file not found"):
        load_genesis(tmp_path / "nope.json")


def make_registry(tmp_path: Path) -> Path:
    folder = tmp_path / "pred" / "mini-calc"
    folder.mkdir(parents=True)
    write(folder / "tools.json", {"tools": []})
    (folder / "server.py").write_text("print('x')\n")
    return write(
        tmp_path / "pred" / "registry.json",
        {"mini-calc": {"json_schema_path": "mini-calc/tools.json", "env_code_path": "mini-calc/server.py",
                       "server_id": None, "server_name": "mini-calc"}},
    )  # fmt: skip


def test_registry_paths_resolve_against_the_registry_folder(tmp_path: Path) -> None:
    reg = make_registry(tmp_path)
    for given in (reg, reg.parent):  # the file, or the folder holding it
        servers = load_registry(given)
        assert servers["mini-calc"].schema_path == tmp_path / "pred" / "mini-calc" / "tools.json"
        assert servers["mini-calc"].code_path.name == "server.py" and servers["mini-calc"].error is None


def test_registry_bad_input(tmp_path: Path) -> None:
    reg = make_registry(tmp_path)
    entry = json.loads(reg.read_text())["mini-calc"]

    write(reg, {"mini-calc": {**entry, "env_code_path": "mini-calc/missing.py"}})
    with pytest.raises(DataError, match=r"mini-calc\.env_code_path: file not found: .*missing\.py"):
        load_registry(reg)

    write(reg, {"mini-calc": {k: v for k, v in entry.items() if k != "json_schema_path"}})
    with pytest.raises(DataError, match=r"mini-calc\.json_schema_path: a path \(string\) is required"):
        load_registry(reg)

    write(reg, ["not", "an", "object"])
    with pytest.raises(DataError, match="expected an object mapping slug -> entry"):
        load_registry(reg)

    # A schema file that is not JSON is bad input for a user-supplied registry ...
    write(reg, {"mini-calc": entry})
    (tmp_path / "pred" / "mini-calc" / "tools.json").write_text("{'tools': []}")
    with pytest.raises(DataError, match=r"tools\.json:1: invalid JSON"):
        load_registry(reg)
    # ... unless the caller scores it (toolgauge's own generated servers), and a list is not a schema payload.
    assert "mini-calc" in load_registry(reg, check_schemas=False)
    with pytest.raises(DataError, match="must hold a JSON object, got list"):
        read_schema_file(write(tmp_path / "s.json", []))


def test_registry_error_entries_need_no_files(tmp_path: Path) -> None:
    reg = write(tmp_path / "registry.json", {"x": {"error": "the model returned no code"}})
    server = load_registry(reg)["x"]
    assert server.error == "the model returned no code"


def test_write_registry_round_trip(tmp_path: Path) -> None:
    reg_dir = tmp_path / "out"
    (reg_dir / "a").mkdir(parents=True)
    write(reg_dir / "a" / "tools.json", {"tools": []})
    (reg_dir / "a" / "server.py").write_text("")
    servers = [
        GeneratedServer(slug="a", schema_path=reg_dir / "a" / "tools.json", code_path=reg_dir / "a" / "server.py"),
        GeneratedServer(slug="b", schema_path=reg_dir / "b" / "tools.json", code_path=reg_dir / "b" / "server.py",
                        error="timed out"),
    ]  # fmt: skip
    path = write_registry(reg_dir, servers)
    raw = json.loads(path.read_text())
    # Official layout with relative paths; toolgauge's error key only on the failed entry.
    assert raw["a"] == {"json_schema_path": "a/tools.json", "env_code_path": "a/server.py", "server_id": None,
                        "server_name": "a"}  # fmt: skip
    assert raw["b"]["error"] == "timed out"
    loaded = load_registry(path)
    assert loaded["a"].schema_path == (reg_dir / "a" / "tools.json") and loaded["b"].error == "timed out"
