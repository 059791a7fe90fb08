"""BFCL multi-turn on the real v4 data: gold through the loop, refusal of non-methods, parity with bfcl-eval's checker.

The differential tests run bfcl-eval's own ``multi_turn_checker`` (which ``eval``s call text against its module
globals) in this process on perturbed ground-truth trajectories and assert toolgauge's verdict equal on each.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from toolgauge.benchmarks.bfcl.decoders.python_calls import render_python_calls
from toolgauge.benchmarks.bfcl.multi_turn import (
    ADDITIONAL_FUNCTION_PROMPT,
    BfclMultiTurnBenchmark,
    BfclMultiTurnMode,
    decode_recorded,
)
from toolgauge.benchmarks.bfcl.multi_turn_check import (
    BFCL_MULTI_TURN_CATEGORIES,
    Call,
    MultiTurnEntry,
    check_multi_turn,
    load_multi_turn,
)
from toolgauge.benchmarks.bfcl.options import BfclOptions
from toolgauge.records import AssistantTurn, GenerateOptions, Message, ToolCall, ToolSpec

checker = pytest.importorskip(
    "bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker",
    reason="bfcl-eval is not installed (make setup-dev installs it with --no-deps)",
)
utils = pytest.importorskip("bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils")

# The default tier checks the first entries of each category; the slow tier all of them.
FAST_N = 12
Trajectory = list[list[list[Call]]]


@pytest.fixture(scope="module")
def by_category(bfcl_dir: Path) -> dict[str, list[MultiTurnEntry]]:
    return {c: load_multi_turn(bfcl_dir, c) for c in BFCL_MULTI_TURN_CATEGORIES}


def gold_trajectory(entry: MultiTurnEntry) -> Trajectory:
    return [[calls] if calls else [] for calls in entry.ground_truth_calls(entry.backends())]


class GoldContext:
    """Answers every model step with the protocol's gold turn (or a fixed ``reply``); records what was shown."""

    def __init__(self, reply: AssistantTurn | None = None) -> None:
        self.asked: list[tuple[list[Message], list[str]]] = []
        self.reply = reply

    async def generate(
        self,
        messages: list[Message],
        tools: list[ToolSpec] | None = None,
        options: GenerateOptions | None = None,
        *,
        gold: AssistantTurn | None = None,
        role: str = "model",
    ) -> AssistantTurn:
        self.asked.append((messages, [t.name for t in tools or []]))
        assert gold is not None
        return self.reply or gold


def run_gold(entry: MultiTurnEntry, mode: BfclMultiTurnMode = "native") -> tuple[Any, GoldContext]:
    ctx = GoldContext()
    bench = BfclMultiTurnBenchmark([entry], BfclOptions(data=Path("test"), mode=mode))
    return asyncio.run(bench.episode(entry, ctx)), ctx  # type: ignore[arg-type]


def run_scripted(entry: MultiTurnEntry, reply: AssistantTurn) -> tuple[Any, GoldContext]:
    ctx = GoldContext(reply)
    bench = BfclMultiTurnBenchmark([entry], BfclOptions(data=Path("test")))
    return asyncio.run(bench.episode(entry, ctx)), ctx  # type: ignore[arg-type]


def test_a_model_that_never_stops_calling_is_force_ended_after_21_steps(
    by_category: dict[str, list[MultiTurnEntry]],
) -> None:
    entry = next(e for e in by_category["multi_turn_base"] if "GorillaFileSystem" in e.involved_classes)
    result, ctx = run_scripted(entry, AssistantTurn(tool_calls=[ToolCall(name="pwd", arguments={})]))
    # BFCL's cap: the step counter must exceed MAXIMUM_STEP_LIMIT (20), so the 21st step with calls ends it.
    assert result.forced_end and len(result.turns) == 1 and len(result.turns[0]) == 21
    assert len(ctx.asked) == 21
    verdict = check_multi_turn(entry, result.calls())
    assert verdict.error_type == "multi_turn:force_terminated"
    assert verdict.turn_matched[1:] == [False] * (len(entry.question) - 1)


def test_a_reply_with_undecodable_arguments_ends_the_turn_without_running_anything(
    by_category: dict[str, list[MultiTurnEntry]],
) -> None:
    entry = by_category["multi_turn_base"][0]
    bad = ToolCall(name="mkdir", arguments={}, raw="{dir_name: ", parse_error="invalid JSON")
    result, ctx = run_scripted(entry, AssistantTurn(tool_calls=[bad]))
    assert result.turns == [[] for _ in entry.question] and not result.forced_end
    assert len(ctx.asked) == len(entry.question)  # one step per turn
    assert check_multi_turn(entry, result.calls()).error_type == "multi_turn:empty_turn_model_response"


@pytest.mark.parametrize("mode", ["native", "prompt"])
@pytest.mark.parametrize("category", BFCL_MULTI_TURN_CATEGORIES)
def test_gold_through_the_loop_scores_100_percent(
    by_category: dict[str, list[MultiTurnEntry]], category: str, mode: BfclMultiTurnMode
) -> None:
    for entry in by_category[category][:FAST_N]:
        result, _ = run_gold(entry, mode)
        assert not result.forced_end
        verdict = check_multi_turn(entry, result.calls())
        assert verdict.valid, (entry.id, verdict.error_type, verdict.error_message)
        assert verdict.turn_credit == 1.0
        assert verdict.first_failing_turn is None


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["native", "prompt"])
def test_gold_through_the_loop_scores_100_percent_on_all_800(
    by_category: dict[str, list[MultiTurnEntry]], mode: BfclMultiTurnMode
) -> None:
    entries = [e for c in BFCL_MULTI_TURN_CATEGORIES for e in by_category[c]]
    assert len(entries) == 800
    failing = [e.id for e in entries if not check_multi_turn(e, run_gold(e, mode)[0].calls()).valid]
    assert failing == []


def test_held_back_functions_are_offered_from_their_turn_with_bfcls_message(
    by_category: dict[str, list[MultiTurnEntry]],
) -> None:
    entry = by_category["multi_turn_miss_func"][0]
    (turn, docs), *_ = entry.held_back.items()
    held = {d["name"] for d in docs}
    assert held and not held & {d["name"] for d in entry.functions}
    _, ctx = run_gold(entry)
    for messages, tools in ctx.asked:
        users = [m for m in messages if m.role == "user"]
        offered = held <= set(tools)
        assert offered == (len(users) > int(turn)), (len(users), turn, tools)
    assert any(m.content == ADDITIONAL_FUNCTION_PROMPT for m in ctx.asked[-1][0] if m.role == "user")


def test_prompt_mode_shows_the_functions_in_the_system_prompt_and_results_as_a_user_message(
    by_category: dict[str, list[MultiTurnEntry]],
) -> None:
    entry = by_category["multi_turn_miss_func"][0]
    (turn, docs), *_ = entry.held_back.items()
    _, ctx = run_gold(entry, "prompt")
    first, tools = ctx.asked[0]
    assert tools == [] and first[0].role == "system"
    assert all(f'"name": "{d["name"]}"' in (first[0].content or "") for d in entry.functions)
    assert not any(f'"name": "{d["name"]}"' in (first[0].content or "") for d in docs)
    last = ctx.asked[-1][0]
    assert all(m.role in ("system", "user", "assistant") for m in last)
    # The step's results come back as BFCL's repr of tool entries named by the call text.
    assert any(
        (m.content or "").startswith("[{'role': 'tool', 'name': \"cd(folder='document')\", 'content': ") for m in last
    )
    added = [m.content or "" for m in last if m.role == "user" and ADDITIONAL_FUNCTION_PROMPT in (m.content or "")]
    assert added == [f"{docs}\n{ADDITIONAL_FUNCTION_PROMPT}"], turn


def test_an_empty_model_fails_on_the_first_turn_with_ground_truth(
    by_category: dict[str, list[MultiTurnEntry]],
) -> None:
    entry = by_category["multi_turn_base"][0]
    verdict = check_multi_turn(entry, [[] for _ in entry.question])
    assert not verdict.valid
    assert verdict.error_type == "multi_turn:empty_turn_model_response"
    assert verdict.error_message == "Model response list is empty for turn 0"
    assert verdict.turn_credit < 1.0


def test_a_shorter_trajectory_is_force_terminated(by_category: dict[str, list[MultiTurnEntry]]) -> None:
    entry = by_category["multi_turn_base"][1]
    verdict = check_multi_turn(entry, gold_trajectory(entry)[:-1])
    assert verdict.error_type == "multi_turn:force_terminated"
    assert verdict.turn_matched[-1] is False
    assert verdict.turn_matched[:-1] == [True] * (len(entry.question) - 1)


def test_names_that_are_not_public_methods_are_refused_and_change_nothing(
    by_category: dict[str, list[MultiTurnEntry]],
) -> None:
    entry = next(e for e in by_category["multi_turn_base"] if "GorillaFileSystem" in e.involved_classes)
    backends = entry.backends()
    before = repr(backends.state())
    assert backends.execute("__import__", {"name": "os"}) == "Error during execution: name '__import__' is not defined"
    assert backends.execute("eval", {"source": "1"}) == "Error during execution: name 'eval' is not defined"
    assert backends.execute("_load_scenario", {"scenario": {}}).startswith("Error during execution: name ")
    assert backends.execute("kill", {}) == "Error during execution: Function call kill is not allowed."
    assert backends.execute("mkdir", {"dir_name": "x", "bogus": 1}).startswith("Error during execution: ")
    assert repr(backends.state()) == before
    assert not backends.execute("mkdir", {"dir_name": "made_here"}).startswith("Error")
    assert repr(backends.state()) != before


def test_each_sample_has_its_own_instances(by_category: dict[str, list[MultiTurnEntry]]) -> None:
    entry = next(e for e in by_category["multi_turn_base"] if "GorillaFileSystem" in e.involved_classes)
    first, second = entry.backends(), entry.backends()
    first.execute("mkdir", {"dir_name": "only_in_first"})
    assert "only_in_first" in repr(first.state())
    assert "only_in_first" not in repr(second.state())


# --- differential test against bfcl-eval's multi_turn_checker ---------------------------------------------


def call_text(name: str, arguments: dict[str, Any]) -> str:
    return f"{name}({', '.join(f'{k}={v!r}' for k, v in arguments.items())})"


def changed(arguments: dict[str, Any]) -> dict[str, Any]:
    out = dict(arguments)
    for key, value in out.items():
        if isinstance(value, str):
            out[key] = value + "_x"
            return out
        if isinstance(value, bool):
            out[key] = not value
            return out
        if isinstance(value, int | float):
            out[key] = value + 1
            return out
    return out


def perturbations(gold: Trajectory) -> dict[str, Trajectory]:
    """Named variants of a gold trajectory: each touches the first turn with calls (or every turn)."""
    with_calls = [i for i, turn in enumerate(gold) if turn and turn[0]]
    t = with_calls[0]
    calls = gold[t][0]

    def at(turn: list[list[Call]]) -> Trajectory:
        return [turn if i == t else steps for i, steps in enumerate(gold)]

    variants: dict[str, Trajectory] = {
        "gold": gold,
        "dropped_last": at([calls[:-1]] if len(calls) > 1 else []),
        "dropped_first": at([calls[1:]] if len(calls) > 1 else []),
        "changed_first": at([[(calls[0][0], changed(calls[0][1])), *calls[1:]]]),
        "changed_last": at([[*calls[:-1], (calls[-1][0], changed(calls[-1][1]))]]),
        "repeated": at([[*calls, calls[-1]]]),
        "reordered": at([list(reversed(calls))]),
        "split": at([[c] for c in calls]),
        "empty_turn": at([]),
        "all_empty": [[] for _ in gold],
        "unknown_name": at([[("no_such_function", {}), *calls]]),
        "late_turns_empty": [steps if i <= t else [] for i, steps in enumerate(gold)],
        "moved_to_next_turn": (
            [[] if i == t else (steps + gold[t] if i == t + 1 else steps) for i, steps in enumerate(gold)]
            if t + 1 < len(gold)
            else at([])
        ),
    }
    return variants


_counter = itertools.count()


def bfcl_verdict(entry: MultiTurnEntry, trajectory: Trajectory) -> dict[str, Any]:
    """bfcl-eval's own checker on the trajectory as call text, with a model name never used before."""
    decoded = [[[call_text(n, a) for n, a in step] for step in turn] for turn in trajectory]
    model_name = f"tgdiff{next(_counter)}"
    test_entry = {"id": entry.id, "initial_config": entry.initial_config, "involved_classes": entry.involved_classes}
    try:
        return dict(checker.multi_turn_checker(decoded, entry.ground_truth, test_entry, entry.category, model_name))
    finally:
        # Its instances live in module globals forever: drop this run's.
        for key in [k for k in vars(utils) if k.startswith(model_name)]:
            delattr(utils, key)


def assert_same_verdicts(entries: list[MultiTurnEntry], make: Callable[[Trajectory], dict[str, Trajectory]]) -> int:
    compared = 0
    for entry in entries:
        for name, trajectory in make(gold_trajectory(entry)).items():
            ours = check_multi_turn(entry, trajectory)
            theirs = bfcl_verdict(entry, trajectory)
            assert ours.valid == theirs["valid"], (entry.id, name, theirs)
            assert ours.error_type == theirs.get("error_type"), (entry.id, name)
            assert ours.error_message == theirs.get("error_message"), (entry.id, name)
            compared += 1
    return compared


@pytest.mark.parametrize("category", BFCL_MULTI_TURN_CATEGORIES)
def test_verdicts_equal_bfcl_evals_checker_on_perturbed_trajectories(
    by_category: dict[str, list[MultiTurnEntry]], category: str
) -> None:
    compared = assert_same_verdicts(by_category[category][:3], perturbations)
    assert compared == 3 * 13


@pytest.mark.slow
def test_verdicts_equal_bfcl_evals_checker_on_over_1000_perturbed_trajectories(
    by_category: dict[str, list[MultiTurnEntry]],
) -> None:
    entries = [e for c in BFCL_MULTI_TURN_CATEGORIES for e in by_category[c][:25]]
    assert assert_same_verdicts(entries, perturbations) >= 1000


# --- the command line ---------------------------------------------------------------------------------------


def test_eval_bfcl_runs_the_multi_turn_categories_with_gold(bfcl_dir: Path, tmp_path: Path) -> None:
    from helpers.cli_helpers import invoke, results_of, sample_rows

    store, samples = f"sqlite:///{tmp_path / 'runs.db'}", tmp_path / "samples.jsonl"
    res = invoke(
        "eval", "bfcl", "--data", bfcl_dir, "--categories", "multi_turn_base,multi_turn_miss_func",
        "--limit", "2", "--model", "gold", "--store", store, "--samples", samples, "--json", "-q",
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    results = results_of(res)
    assert results.metric("accuracy") is not None and results.value("accuracy") == 1.0
    assert results.value("turn_credit") == 1.0
    rows = sample_rows(samples)
    assert len(rows) == 4 and all(r["scores"]["turn_credit"] == 1.0 for r in rows)


def test_eval_bfcl_refuses_mixed_runs_and_a_folder_without_result_files_in_one_line(
    bfcl_dir: Path, tmp_path: Path
) -> None:
    from helpers.cli_helpers import invoke

    store = f"sqlite:///{tmp_path / 'runs.db'}"
    base = ["eval", "bfcl", "--data", str(bfcl_dir), "--model", "gold", "--store", store]
    mixed = invoke(*base, "--categories", "simple_python,multi_turn_base")
    assert mixed.exit_code == 2
    assert "separate runs" in mixed.output and "Traceback" not in mixed.output
    replay = invoke(
        "score", "bfcl", "--data", bfcl_dir, "--categories", "multi_turn_base", "--predictions", tmp_path,
        "--store", store,
    )  # fmt: skip
    assert replay.exit_code == 2
    assert "BFCL_v4_<category>_result.json" in replay.output and "Traceback" not in replay.output


def test_eval_bfcl_prompt_mode_with_gold(bfcl_dir: Path, tmp_path: Path) -> None:
    from helpers.cli_helpers import invoke, results_of

    res = invoke(
        "eval", "bfcl", "--data", bfcl_dir, "--categories", "multi_turn_miss_param", "--mode", "prompt",
        "--limit", "2", "--model", "gold", "--store", f"sqlite:///{tmp_path / 'runs.db'}", "--json", "-q",
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert results_of(res).value("accuracy") == 1.0


def test_export_bfcl_writes_multi_turn_score_files_with_bfcls_fields(bfcl_dir: Path, tmp_path: Path) -> None:
    from helpers.cli_helpers import invoke, results_of

    entries = load_multi_turn(bfcl_dir, "multi_turn_base")[:3]
    lines: list[dict[str, Any]] = [{"id": entries[0].id, "result": fc_result(entries[0])}]
    broken = fc_result(entries[1])
    first = next(i for i, turn in enumerate(broken) if isinstance(turn[0], list))
    broken[first] = ["I will not do that."]  # an empty turn where the ground truth has calls
    lines += [{"id": entries[1].id, "result": broken}, {"id": entries[2].id, "result": "Error: crashed"}]
    write_results(tmp_path, "multi_turn_base", lines)
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    res = invoke(
        "score", "bfcl", "--data", bfcl_dir, "--categories", "multi_turn_base", "--predictions", tmp_path / "result",
        "--store", store, "--json", "-q",
    )  # fmt: skip
    assert res.exit_code in (0, 1), res.output
    run = results_of(res).run
    assert run is not None
    out = tmp_path / "export"
    exported = invoke("export", run.id, "--format", "bfcl", "--out", out, "--store", store, "--model-name", "m")
    assert exported.exit_code == 0, exported.output
    score = [json.loads(x) for x in (out / "m" / "multi_turn" / "BFCL_v4_multi_turn_base_score.json").open()]
    n = len(load_multi_turn(bfcl_dir, "multi_turn_base"))
    assert score[0] == {"accuracy": 1 / n, "correct_count": 1, "total_count": n}
    empty, crashed, missing = score[1:4]
    assert list(empty) == ["id", "model_name", "test_category", "valid", "error", "prompt", "model_result_raw",
                           "model_result_decoded", "possible_answer", "inference_log"]  # fmt: skip
    assert empty["error"]["error_type"] == "multi_turn:empty_turn_model_response"
    assert empty["error"]["error_message"] == f"Model response list is empty for turn {first}"
    # BFCL's execution results: per turn up to the failing one, the model's per step and the ground truth's.
    assert len(empty["error"]["details"]["execution_result"]) == first + 1
    assert empty["model_result_raw"] == broken
    assert empty["possible_answer"] == entries[1].ground_truth
    assert "function" not in empty["prompt"] and empty["prompt"]["id"] == entries[1].id
    assert list(crashed) == ["id", "model_name", "test_category", "valid", "error", "prompt", "model_result",
                             "possible_answer", "inference_log"]  # fmt: skip
    assert crashed["error"]["error_type"] == "multi_turn:inference_error"
    assert crashed["model_result"] == "Error: crashed"
    # An entry without a result line counts as a conversation of no turns.
    assert missing["error"]["error_type"] == "multi_turn:force_terminated" and missing["model_result"] == []
    row = (out / "data_multi_turn.csv").read_text().splitlines()[1].split(",")
    assert row[3:] == ["0.50%", "N/A", "N/A", "N/A"]  # base, then the three categories not run


# --- BFCL result files (score bfcl --predictions) ------------------------------------------------------------


def write_results(folder: Path, category: str, lines: list[dict[str, Any]]) -> Path:
    path = folder / "result" / "m" / "multi_turn" / f"BFCL_v4_{category}_result.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def fc_result(entry: MultiTurnEntry) -> list[list[Any]]:
    """A function-calling model's result: per turn, a step of {name: json args}, then its closing text."""
    return [
        [[{n: json.dumps(a)} for n, a in calls], "Done."] if calls else ["I cannot do that."]
        for calls in entry.ground_truth_calls(entry.backends())
    ]


def prompt_result(entry: MultiTurnEntry) -> list[list[Any]]:
    """A prompting model's result: per turn, the calls as Python text, then an empty reply."""
    return [
        [render_python_calls(calls), ""] if calls else ["I need more information."]
        for calls in entry.ground_truth_calls(entry.backends())
    ]


def test_decode_recorded_skips_steps_bfcl_skips() -> None:
    fc = decode_recorded([[[{"cd": '{"folder": "a"}'}], "text", [{"ls": "not json"}], [], [{"pwd": {}}]]])
    assert [[c.name for c in step] for step in fc.turns[0]] == [["cd"], ["pwd"]]
    assert fc.turns[0][0][0].arguments == {"folder": "a"}
    text = decode_recorded([["[cd(folder='a')]", "I am done", "[]", "ls(a=True)"]])
    assert [[c.name for c in step] for step in text.turns[0]] == [["cd"], ["ls"]]
    assert decode_recorded("not a list").not_a_list


@pytest.mark.parametrize("style", ["fc", "prompt"])
def test_score_bfcl_reads_multi_turn_result_files(
    by_category: dict[str, list[MultiTurnEntry]], bfcl_dir: Path, tmp_path: Path, style: str
) -> None:
    from helpers.cli_helpers import invoke, results_of, sample_rows

    entries = by_category["multi_turn_miss_func"][:4]
    make = fc_result if style == "fc" else prompt_result
    lines: list[dict[str, Any]] = [{"id": e.id, "result": make(e)} for e in entries[:2]]
    lines.append({"id": entries[2].id, "result": "Error: the model crashed"})  # not a list of turns
    write_results(tmp_path, "multi_turn_miss_func", lines)  # entries[3] and the rest have no line
    samples = tmp_path / "samples.jsonl"
    res = invoke(
        "score", "bfcl", "--data", bfcl_dir, "--predictions", tmp_path / "result",
        "--store", f"sqlite:///{tmp_path / 'runs.db'}", "--samples", samples, "--json", "-q",
    )  # fmt: skip
    assert res.exit_code in (0, 1), res.output
    results = results_of(res)
    assert results.value("correct", "multi_turn_miss_func", by="category") == 2
    n = len(by_category["multi_turn_miss_func"])
    assert results.warnings == [
        f"predictions missing for {n - 3} of {n} samples (scored as wrong); first missing: {entries[3].id}"
    ]
    rows = {r["id"]: r for r in sample_rows(samples)}
    assert rows[entries[2].id]["scores"]["error_type"] == "multi_turn:inference_error"
    assert rows[entries[3].id]["scores"]["error_type"] == "multi_turn:force_terminated"
    assert rows[entries[3].id]["metadata"]["missing_prediction"] is True
    # A stored multi-turn run rescores from its stored results (the result files are not needed).
    run = results.run
    assert run is not None
    again = invoke("rescore", run.id, "--store", f"sqlite:///{tmp_path / 'runs.db'}", "--json")
    assert again.exit_code in (0, 1), again.output
    assert results_of(again).value("correct", "multi_turn_miss_func", by="category") == 2


def test_without_bfcl_eval_a_multi_turn_run_says_how_to_install_it(
    bfcl_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from helpers.cli_helpers import invoke

    # A None entry in sys.modules makes the import fail as if the package were not installed.
    monkeypatch.setitem(sys.modules, "bfcl_eval.constants.executable_backend_config", None)
    res = invoke(
        "eval", "bfcl", "--data", bfcl_dir, "--categories", "multi_turn_base", "--model", "gold",
        "--store", f"sqlite:///{tmp_path / 'runs.db'}",
    )  # fmt: skip
    assert res.exit_code == 2
    assert "pip install --no-deps bfcl-eval==2026.3.23 mpmath" in res.output
    assert "Traceback" not in res.output
