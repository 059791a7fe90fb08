"""WildToolBench loader: the official format (en/zh), toolgauge's session format, and one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers.paths import FIXTURE_ROOT
from toolgauge.benchmarks.wildtoolbench.graph import PSEUDO_ANSWER, PSEUDO_CLARIFY
from toolgauge.benchmarks.wildtoolbench.loader import builtin_wild_path, load_wild
from toolgauge.errors import DataError

FIXTURES = FIXTURE_ROOT / "wildtoolbench"
SESSIONS = FIXTURES / "sessions.jsonl"
BAD = FIXTURES / "bad"


def test_official_english_half():
    sessions = load_wild(SESSIONS, "en")
    assert [s.id for s in sessions] == ["wild_tool_bench_0", "wild_tool_bench_1", "wild_tool_bench_2"]
    first = sessions[0]
    assert first.language == "en"
    assert first.env_info == "2026-03-02 08:00 Monday"
    assert first.task_types == ["Parallel Multi-Tool", "Clarify", "Chat", "Sequential Multi-Tool"]
    assert first.turn_subtypes == ["Partial Information", "Coreferential Reference", "Long-Range Dependency"]
    assert first.subtype_of(0) == "First Turn" and first.subtype_of(2) == "Coreferential Reference"
    assert first.tasks[1].user == "Book me a taxi to the airport."
    clarify = first.tasks[1].nodes[0]
    assert clarify.action.name == PSEUDO_CLARIFY and clarify.user_input == "From Central Station at 07:30."
    assert [n.dependency_list for n in first.tasks[0].nodes] == [[], [], [0, 1]]
    assert first.tool_names() == ["get_weather", "get_air_quality", "book_taxi"]


def test_official_chinese_half_reads_the_unprefixed_fields_and_the_english_labels():
    sessions = load_wild(SESSIONS, "zh")
    first = sessions[0]
    assert first.language == "zh"
    assert first.env_info == "2026-03-02 08:00 星期一"
    assert first.tasks[0].user.startswith("奥斯陆")
    assert first.tasks[0].nodes[0].action.arguments == {"city": "奥斯陆", "date": "2026-03-03"}
    # Task types are labels: the official scorer reads english_task_types for both languages.
    assert first.task_types == ["Parallel Multi-Tool", "Clarify", "Chat", "Sequential Multi-Tool"]


def test_float_is_rewritten_to_number_as_the_official_handler_does():
    session = load_wild(SESSIONS)[1]
    convert = next(t for t in session.tool_specs() if t.name == "convert_currency")
    assert convert.parameters["properties"]["amount"]["type"] == "number"
    assert '"float"' not in json.dumps(session.tools)


def test_builtin_sample_in_toolgauge_format():
    sessions = load_wild(builtin_wild_path())
    assert [s.id for s in sessions] == ["trip-weather", "team-calendar", "running-shoes", "zh-weather"]
    assert [s.language for s in sessions] == ["en", "en", "en", "zh"]
    all_types = {t for s in sessions for t in s.task_types}
    assert all_types == {
        "Single-Tool", "Parallel Multi-Tool", "Sequential Multi-Tool", "Mixed Multi-Tool", "Clarify", "Chat"
    }  # fmt: skip
    trip = sessions[0]
    # Two independent calls, then the answer, which waits for every entry nothing else waits for.
    parallel = trip.tasks[0].nodes
    assert [n.action.name for n in parallel] == ["get_weather", "get_weather", PSEUDO_ANSWER]
    assert parallel[2].dependency_list == [0, 1]
    assert parallel[2].action.arguments == {"answer_type": "tool"}
    # A clarifying entry becomes the pseudo-tool node with the question as observation.
    clarify = trip.tasks[2].nodes
    assert clarify[0].action.name == PSEUDO_CLARIFY
    assert clarify[0].observation.startswith("Sure, how much")
    assert clarify[0].user_input == "It is 1200 US dollars."
    assert clarify[2].dependency_list == [1]
    # A chat task is just the answer, of answer_type chat.
    chat = trip.tasks[3].nodes
    assert len(chat) == 1 and chat[0].action.arguments == {"answer_type": "chat"} and chat[0].dependency_list == []
    # The Mixed task: two independent lookups, a call after both, then the answer after it.
    mixed = sessions[1].tasks[2].nodes
    assert [n.dependency_list for n in mixed] == [[], [], [0, 1], [2]]


BAD_CASES = {
    "malformed_json.jsonl": (None, "invalid JSON"),
    "cycle.jsonl": ("english_answer_list[1][0].dependency_list", "dependency cycle 0 -> 1 -> 0"),
    "dangling.jsonl": ("english_answer_list[3][1].dependency_list", "dependency 7 is not a node"),
    "answer_not_last.jsonl": ("english_answer_list[3][1].dependency_list", "must be the last step"),
    "clarify_without_user_input.jsonl": ("english_answer_list[1][0].user_input", "needs the user's reply"),
    "pseudo_tool_offered.jsonl": ("english_tools[3].function.name", "pseudo-tool"),
    "unknown_tool.jsonl": ("english_answer_list[0][1].action.name", "'get_pollen_count', which is not among"),
    "task_types_length.jsonl": ("english_task_types", "has 3 entries but english_tasks has 4"),
    "unknown_task_type.jsonl": ("english_task_types[2]", "unknown task type 'Small Talk'"),
    "missing_answer.jsonl": ("english_answer_list[2]", "at least one node"),
}


@pytest.mark.parametrize("name", sorted(BAD_CASES))
def test_bad_official_files_name_line_and_field(name):
    field, message = BAD_CASES[name]
    with pytest.raises(DataError) as info:
        load_wild(BAD / name)
    err = info.value
    # Line 1 of every bad file is a valid session; the defect is on line 2.
    assert err.line == 2
    assert err.field == field
    assert message in err.message
    assert "\n" not in err.render()


def write_lines(tmp_path: Path, *objects: object) -> Path:
    path = tmp_path / "sessions.jsonl"
    path.write_text("".join(json.dumps(o, ensure_ascii=False) + "\n" for o in objects), encoding="utf-8")
    return path


def session(**changes: object) -> dict[str, object]:
    base: dict[str, object] = {
        "id": "s1",
        "env_info": "2026-01-01",
        "tools": [
            {"name": "lookup", "description": "Look a thing up.", "parameters": {"type": "object", "properties": {}}}
        ],
        "tasks": [
            {
                "user": "Look up a and b.",
                "type": "Sequential Multi-Tool",
                "calls": [
                    {"name": "lookup", "arguments": {"q": "a"}, "observation": "A"},
                    {"name": "lookup", "arguments": {"q": "b"}, "observation": "B", "after": [0]},
                ],
                "answer": "A then B.",
            }
        ],
    }
    base.update(changes)
    return base


def task_with(**changes: object) -> dict[str, object]:
    task = dict(session()["tasks"][0])  # type: ignore[index]
    task.update(changes)
    return task


def test_bare_tool_entries_are_wrapped_in_openai_shape(tmp_path):
    [loaded] = load_wild(write_lines(tmp_path, session()))
    assert loaded.tools[0] == {
        "type": "function",
        "function": {
            "name": "lookup",
            "description": "Look a thing up.",
            "parameters": {"type": "object", "properties": {}},
        },
    }
    assert [n.dependency_list for n in loaded.tasks[0].nodes] == [[], [0], [1]]


@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        ({"colour": "red"}, "colour", "unknown field (allowed: env_info, id, language, tasks, tools)"),
        ({"taks": []}, "taks", "unknown field; did you mean 'tasks'? (allowed: env_info, id, language, tasks, tools)"),
        ({"tasks": []}, "tasks", "has 0 tasks"),
        ({"tasks": [task_with()] * 5}, "tasks", "has 5 tasks"),
        ({"language": "fr"}, "language", 'must be "en" or "zh"'),
        ({"tasks": [task_with(type="Banter")]}, "tasks[0].type", "unknown task type"),
        ({"tasks": [task_with(subtype="Partial Information")]}, "tasks[0].subtype", "first task has no subtype"),
        ({"tasks": [task_with(), task_with()]}, "tasks[1].subtype", "missing"),
        ({"tasks": [task_with(), task_with(subtype="Vague")]}, "tasks[1].subtype", "unknown turn subtype"),
        (
            {"tasks": [task_with(calls=[{"name": "lookup", "observation": "A", "after": [3]}])]},
            "tasks[0].calls[0].after",
            "dependency 3 is not a node",
        ),
        (
            {"tasks": [task_with(calls=[{"name": "lookup", "observation": "A", "after": [0]}])]},
            "tasks[0].calls[0].after",
            "depends on itself",
        ),
        (
            {
                "tasks": [
                    task_with(
                        calls=[
                            {"name": "lookup", "observation": "A", "after": [1]},
                            {"name": "lookup", "observation": "B", "after": [0]},
                        ]
                    )
                ]
            },
            "tasks[0].calls[0].after",
            "dependency cycle",
        ),
        (
            {"tasks": [task_with(calls=[{"name": "prepare_to_answer", "observation": "x"}])]},
            "tasks[0].calls[0].name",
            'as a task\'s "answer"',
        ),
        (
            {"tasks": [task_with(calls=[{"clarify": "Which one?"}])]},
            "tasks[0].calls[0].user_input",
            "missing",
        ),
        (
            {"tasks": [task_with(calls=[{"name": "search", "observation": "x"}])]},
            "tasks[0].calls[0].name",
            "not among the session's tools",
        ),
        ({"tasks": [task_with(calls=[{"name": "lookup"}])]}, "tasks[0].calls[0].observation", "missing"),
        ({"tasks": [task_with(answer="")]}, "tasks[0].answer", "must not be empty"),
        (
            {"tasks": [task_with(calls=[{"name": "lookup", "observation": 1, "after": ["0"]}])]},
            "tasks[0].calls[0].after[0]",
            "must be a node index",
        ),
        (
            {
                "tasks": [
                    task_with(
                        type="Clarify",
                        calls=[{"clarify": "Which one?", "user_input": "a"}, {"name": "lookup", "observation": "A"}],
                    )
                ]
            },
            "tasks[0].calls[0].after",
            "node 1 could run in the same step as this clarifying question",
        ),
        (
            {"tools": [{"name": "lookup"}, {"name": "lookup"}]},
            "tools[1].name",
            "listed twice",
        ),
    ],
)
def test_bad_toolgauge_sessions(tmp_path, changes, field, message):
    path = write_lines(tmp_path, session(id="ok"), session(**changes))
    with pytest.raises(DataError) as info:
        load_wild(path)
    assert info.value.line == 2
    assert info.value.field == field
    assert message in info.value.message


def test_duplicate_ids_and_empty_files(tmp_path):
    with pytest.raises(DataError, match=r"duplicate session id 's1' \(first on line 1\)"):
        load_wild(write_lines(tmp_path, session(), session()))
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n\n")
    with pytest.raises(DataError, match="no sessions"):
        load_wild(empty)
    with pytest.raises(DataError, match="file not found"):
        load_wild(tmp_path / "absent.jsonl")


def test_official_arguments_given_as_json_text_are_decoded(tmp_path):
    line = json.loads(SESSIONS.read_text(encoding="utf-8").splitlines()[2])
    line["english_answer_list"][1][0]["action"]["arguments"] = json.dumps({"symbol": "AAPL"})
    [loaded] = load_wild(write_lines(tmp_path, line))
    assert loaded.tasks[1].nodes[0].action.arguments == {"symbol": "AAPL"}
