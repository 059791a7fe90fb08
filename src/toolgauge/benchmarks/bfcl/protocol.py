"""BFCL AST categories: one model step per entry, scored with BFCL's checker rules."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar

from pydantic import BaseModel, Field

from toolgauge.benchmark import BenchmarkBase
from toolgauge.benchmarks.bfcl.io import (
    assistant_turn_to_bfcl_output,
    bfcl_gold_turn,
    bfcl_native_messages,
    bfcl_prompt_messages,
    bfcl_tools,
)
from toolgauge.benchmarks.bfcl.loader import BfclEntry, BfclOutput, is_irrelevance, load_bfcl_results
from toolgauge.benchmarks.bfcl.metrics import BfclTally, BfclVerdict, check_bfcl_entry, entry_weight
from toolgauge.benchmarks.bfcl.options import BfclOptions
from toolgauge.engine import EpisodeContext, SampleOutcome, in_step
from toolgauge.errors import UsageError
from toolgauge.parsing.call_rate import few_calls_warning
from toolgauge.records import AssistantTurn, ToolCall
from toolgauge.results import EvalResults, SampleScore, ScoredRun

BfclMode = Literal["prompt", "native", "replay"]


class BfclResult(BaseModel):
    """What one episode produced: the model's output for the entry in BFCL's result form.

    ``output`` is what the checker reads (text, or ``[{name: args}]``). In ``replay`` mode it is
    the recorded result, untouched, and ``missing`` says the result files had none for the entry
    (it is then scored as an empty reply).
    """

    output: BfclOutput = ""
    content: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    missing: bool = False


@dataclass(frozen=True, slots=True)
class JudgedEntry:
    """One scored entry: BFCL's verdict, the output it was given, and the run error of its sample."""

    verdict: BfclVerdict
    output: BfclOutput | None
    missing: bool
    sample_error: str | None
    # Entries of its category in the run: its weight in the overall accuracy is 1 / this.
    category_size: int = 1
    # The entry's possible answer as calls (``gold_calls``); None where BFCL has none to show (live_relevance).
    gold: list[dict[str, Any]] | None = None

    def sample_score(self) -> SampleScore:
        """The entry's score: 1.0 when BFCL's checker accepts it, with its error type and message."""
        v = self.verdict
        explanation = None if v.valid else ": ".join(x for x in (v.error_type, *v.errors[:1]) if x)
        metadata: dict[str, Any] = {
            "category": v.category,
            "output": self.output,
            "decoded": v.decoded,
            "errors": v.errors,
        }
        if v.wrong_shape is not None:
            metadata["wrong_shape"] = v.wrong_shape
        if self.gold is not None:
            metadata["gold"] = self.gold
        if self.missing:
            metadata["missing_prediction"] = True
        return entry_score(
            v.id,
            v.valid,
            v.error_type,
            self.category_size,
            checks={"unsatisfiable": v.unsatisfiable, "unparsable": v.unparsable},
            explanation=explanation,
            error=self.sample_error,
            metadata=metadata,
        )


def entry_score(
    entry_id: str,
    valid: bool,
    error_type: str | None,
    category_size: int,
    *,
    explanation: str | None,
    error: str | None,
    metadata: dict[str, Any],
    checks: Mapping[str, bool] | None = None,
    turn_credit: float | None = None,
) -> SampleScore:
    """One entry's row, of any kind of run: 1.0 when BFCL accepts it, weighing 1 / its category's size in accuracy.

    Its scores, in this order: ``valid``, ``error_type``, the AST checker's ``checks`` (``unsatisfiable``,
    ``unparsable``), ``accuracy`` and a multi-turn entry's ``turn_credit``.
    """
    accuracy = 1.0 if valid else 0.0
    scores: dict[str, Any] = {"valid": valid, "error_type": error_type, **(checks or {}), "accuracy": accuracy}
    if turn_credit is not None:
        scores["turn_credit"] = turn_credit
    return SampleScore(
        id=entry_id,
        sample=entry_id,
        value=accuracy,
        scores=scores,
        weights={"accuracy": entry_weight(category_size)},
        explanation=explanation,
        error=error,
        metadata=metadata,
    )


def gold_calls(entry: BfclEntry) -> list[dict[str, Any]] | None:
    """The entry's possible answer as ``[{"name", "arguments"}]``: each argument the list of values BFCL accepts.

    BFCL's ground truth is ``[{name: {param: [accepted values]}}]`` (``""`` in a list: the parameter may be
    left out); kept as is, only put in the call shape the viewer shows beside the model's. Irrelevance
    entries have no answer because the right reply is no call: ``[]``. ``live_relevance`` accepts any call:
    None (nothing to show).
    """
    if entry.ground_truth is None:
        return [] if is_irrelevance(entry.category) else None
    calls: list[dict[str, Any]] = []
    for item in entry.ground_truth:
        for name, arguments in item.items():
            calls.append({"name": str(name), "arguments": arguments})
    return calls


class BfclEntryLike(Protocol):
    """What the runs read of an entry of any kind (AST, multi-turn, memory): its BFCL id and category."""

    @property
    def id(self) -> str: ...  # noqa: D102 - a field of the entry models

    @property
    def category(self) -> str: ...  # noqa: D102 - a field of the entry models


E = TypeVar("E", bound=BfclEntryLike)


def missing_predictions_warning(missing: Sequence[str], total: int) -> str | None:
    """The warning for a replay where ``missing`` of ``total`` entries have no recorded result (None if none)."""
    if not missing:
        return None
    return f"predictions missing for {len(missing)} of {total} samples (scored as wrong); first missing: {missing[0]}"


def ids_without_result(mode: str, ids: Sequence[str], recorded: Mapping[str, Any] | None) -> list[str]:
    """In replay mode, the ``ids`` that ``recorded`` has no result for, in order (none in other modes)."""
    if mode != "replay" or recorded is None:
        return []
    return [i for i in ids if i not in recorded]


def recorded_turns(results: Mapping[str, BfclOutput]) -> dict[str, list[AssistantTurn]]:
    """BFCL results as one model turn each: text as content, function-calling lists as tool calls."""
    return {rid: [_recorded_turn(result)] for rid, result in results.items()}


class BfclRunBase(BenchmarkBase[E, BfclOptions]):
    """What BFCL's three kinds of run (AST, multi-turn, memory) keep besides their entries, keyed by BFCL id.

    The run is made from its options, as stored: ``mode`` (how the model is asked; ``replay``: ``recorded``, entry
    id -> BFCL result, is what the episodes return), the call settings of its sampling options and the data folder,
    which the results name. ``warnings``: said with the results (categories left out of the run, web search without
    SerpAPI).
    """

    name = "bfcl"

    def __init__(
        self,
        entries: Sequence[E],
        options: BfclOptions,
        *,
        recorded: Mapping[str, Any] | None = None,
        warnings: Sequence[str] = (),
    ):
        self.mode: BfclMode = options.mode
        self.settings = options.call_settings()
        self.recorded = recorded
        keys = [e.id for e in entries]
        super().__init__(entries, keys=keys, data_label=str(options.data), options=options, warnings=warnings)

    def missing_predictions(self) -> list[str]:
        """In replay mode, the ids of the entries ``recorded`` has no result for, in entry order."""
        return ids_without_result(self.mode, self.keys, self.recorded)


class BfclBenchmark(BfclRunBase[BfclEntry]):
    """BFCL's AST categories.

    ``mode`` ``native`` and ``prompt`` ask the model, as BFCL's function-calling and prompting
    handlers do. ``replay`` scores recorded BFCL results: ``recorded`` (entry id -> result) is
    what the episodes return, checked untouched, so odd shapes fail exactly as they fail in BFCL. The options'
    ``underscore_to_dot`` overrides the choice by output style.
    """

    result_type = BfclResult

    def _underscore_to_dot(self, output: BfclOutput | None = None) -> bool:
        # BFCL decides by the model's registry entry; we decide by the output style unless told.
        if self.options.underscore_to_dot is not None:
            return self.options.underscore_to_dot
        if self.mode == "replay":
            return isinstance(output, list)
        return self.mode == "native"

    async def episode(self, sample: BfclEntry, ctx: EpisodeContext) -> BfclResult:
        """Ask once, as BFCL's FC or prompting handlers would (replay: return the recorded result)."""
        if self.mode == "replay":
            if self.recorded is None:
                raise UsageError("mode replay scores recorded results: build the benchmark with predictions")
            turn = await ctx.generate([], None, None)
            recorded = self.recorded.get(sample.id)
            return BfclResult(
                output=recorded if recorded is not None else "",
                content=turn.content,
                tool_calls=turn.tool_calls,
                missing=recorded is None,
            )
        u2d = self._underscore_to_dot()
        style: Literal["prompt", "native"] = "native" if self.mode == "native" else "prompt"
        gold = bfcl_gold_turn(sample, style=style, underscore_to_dot=u2d)
        if style == "native":
            messages, tools = bfcl_native_messages(sample), bfcl_tools(sample, underscore_to_dot=u2d)
        else:
            messages, tools = bfcl_prompt_messages(sample), []
        options = self.settings.options_for([]).model_copy(update={"tool_choice": None})
        turn = await ctx.generate(messages, tools, options, gold=gold)
        return BfclResult(
            output=assistant_turn_to_bfcl_output(turn, style), content=turn.content, tool_calls=turn.tool_calls
        )

    def score(
        self, samples: Sequence[tuple[str, BfclEntry]], outcomes: Sequence[SampleOutcome[BfclResult]]
    ) -> ScoredRun:
        """Score every entry with BFCL's checker; a failed or missing sample is an empty reply.

        One pass over the samples and their outcomes (both in input order, as the engine returns
        them) adds the verdicts up; the per-entry scores are made by a second pass when asked for.
        In replay mode the results warn about entries that had no recorded result.

        Raises:
            ValueError: an outcome is out of order or belongs to no sample.
        """
        tally = BfclTally()
        missing: list[str] = []
        replies = with_call = 0  # prompt mode: replies to entries that need a call, and those the decoder read one in
        for judged in self.judged_entries(samples, outcomes):
            tally.add(judged.verdict)
            if judged.missing:
                missing.append(judged.verdict.id)
            if judged.sample_error is None and judged.gold != []:  # irrelevance entries need no call
                replies += 1
                with_call += bool(judged.verdict.decoded)
        by_output_style = self.mode == "replay" and self.options.underscore_to_dot is None
        warnings = [missing_predictions_warning(missing, len(samples))]
        if self.mode == "prompt":
            warnings.append(few_calls_warning(with_call, replies))
        results = EvalResults(
            benchmark=self.name,
            settings={
                "mode": self.mode,
                "underscore_to_dot": "by output style" if by_output_style else self._underscore_to_dot(),
                "data": self.data_label,
            },
            metrics=tally.metrics(),
            details=tally.details(),
            warnings=[*self.warnings, *(warning for warning in warnings if warning)],
        )
        return ScoredRun(results, lambda: (j.sample_score() for j in self.judged_entries(samples, outcomes)))

    def judged_entries(
        self, samples: Iterable[tuple[str, BfclEntry]], outcomes: Iterable[SampleOutcome[BfclResult]]
    ) -> Iterator[JudgedEntry]:
        """Yield every entry judged, one at a time; ``samples`` and ``outcomes`` are read once, in step.

        Raises:
            ValueError: an outcome is out of order or belongs to no sample.
        """
        samples = list(samples)
        sizes = Counter(entry.category for _, entry in samples)
        for _, entry, mine in in_step(samples, outcomes):
            result = mine.result if mine is not None else None
            output = result.output if result is not None else None
            # Recorded outputs: function-calling lists are checked with underscore_to_dot, text without.
            verdict = check_bfcl_entry(
                entry, output if output is not None else "", underscore_to_dot=self._underscore_to_dot(output)
            )
            error = mine.error if mine is not None else "not run"
            missing = result is not None and result.missing
            yield JudgedEntry(verdict, output, missing, error, sizes[entry.category], gold_calls(entry))

    def replay_table(self, path: Path) -> Mapping[str, Sequence[AssistantTurn]]:
        """BFCL result files at ``path`` as turns, for ``--model replay:PATH`` (pure: reads and returns)."""
        return recorded_turns({rid: line.result for rid, line in load_bfcl_results(path).items()})


def _recorded_turn(result: BfclOutput) -> AssistantTurn:
    if isinstance(result, str):
        return AssistantTurn(content=result)
    calls = []
    for item in result:
        if isinstance(item, dict) and item:
            name, args = next(iter(item.items()))
            raw = args if isinstance(args, str) else json.dumps(args)
            calls.append(ToolCall(name=str(name), raw=raw, arguments=args if isinstance(args, dict) else {}))
    return AssistantTurn(tool_calls=calls)
