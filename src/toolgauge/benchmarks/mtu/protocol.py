"""MTU-Bench: one model step per item, prompt (ReAct text) or native tool calls."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from toolgauge.benchmarks.mtu.loader import (
    MTU_SPLITS,
    MtuItem,
    MtuPrediction,
    load_mtu_predictions,
    mtu_native_request,
    pair_predictions,
)
from toolgauge.benchmarks.mtu.metrics import MtuVariant, score_mtu
from toolgauge.driver import ScoredRun
from toolgauge.engine import EpisodeContext, SampleOutcome
from toolgauge.parsing.react import parse_mtu_response, render_react
from toolgauge.records import AssistantTurn, Message, ToolCall
from toolgauge.settings import CallSettings

MtuMode = Literal["prompt", "native"]


class MtuResult(BaseModel):
    """The model's reply to one MTU-Bench item."""

    content: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    finish_reason: str | None = None


def item_keys(items: Sequence[MtuItem]) -> list[str]:
    """Unique sample keys: the id, with ``~k`` for its k-th repeat (M-M and OOD repeat ids)."""
    seen: dict[str, int] = {}
    keys = []
    for item in items:
        k = seen.get(item.id, 0)
        seen[item.id] = k + 1
        keys.append(item.id if k == 0 else f"{item.id}~{k}")
    return keys


def splits_with_predictions(predictions: Sequence[MtuPrediction]) -> list[str]:
    """The splits whose ids occur among the predictions, in MTU-Bench order."""
    found = {p.id.split("_", 1)[0] for p in predictions}
    return [s for s in MTU_SPLITS if s in found]


class MtuBenchmark:
    """MTU-Bench's eval split, scored by the reference (or strict) metrics."""

    name = "mtu-bench"
    result_type = MtuResult

    def __init__(
        self,
        items: Sequence[MtuItem],
        *,
        data_label: str,
        mode: MtuMode = "prompt",
        variant: MtuVariant = "reference",
        settings: CallSettings | None = None,
    ):
        self.items = list(items)
        self.keys = item_keys(self.items)
        self.data_label = data_label
        self.mode: MtuMode = mode
        self.variant: MtuVariant = variant
        self.settings = settings or CallSettings()
        self.warnings: list[str] = []

    def samples(self) -> list[tuple[str, MtuItem]]:
        """Items keyed by id (repeats get ``~k``)."""
        return list(zip(self.keys, self.items, strict=True))

    def config(self) -> dict[str, Any]:
        """Settings that define the run."""
        return {
            "data": self.data_label,
            "mode": self.mode,
            "variant": self.variant,
            "splits": sorted({i.split for i in self.items}),
            "n": len(self.items),
            **self.settings.model_dump(),
        }

    async def episode(self, sample: MtuItem, ctx: EpisodeContext) -> MtuResult:
        """Ask once: the item's question as the prompt, or the native conversion of it."""
        gold_calls = sample.gold_calls()
        if self.mode == "prompt":
            turn = await ctx.generate(
                [Message(role="user", content=sample.question)],
                None,
                self.settings.options_for([]).model_copy(update={"tool_choice": None}),
                gold=AssistantTurn(content=render_react(gold_calls), finish_reason="stop"),
            )
        else:
            tools, messages = mtu_native_request(sample)
            turn = await ctx.generate(
                messages,
                tools,
                self.settings.options_for(gold_calls),
                gold=AssistantTurn(
                    content=None if gold_calls else "",
                    tool_calls=gold_calls,
                    finish_reason="tool_calls" if gold_calls else "stop",
                ),
            )
        return MtuResult(content=turn.content, tool_calls=turn.tool_calls, finish_reason=turn.finish_reason)

    def predicted_calls(self, item: MtuItem, result: MtuResult | None) -> list[ToolCall]:
        """The calls a reply makes: parsed from ReAct text, or the native tool calls."""
        if result is None:
            return parse_mtu_response("", item.split, multi=item.multi_call)
        if self.mode == "prompt":
            return parse_mtu_response(result.content or "", item.split, multi=item.multi_call)
        return list(result.tool_calls)

    def score(self, samples: Sequence[tuple[str, MtuItem]], outcomes: Sequence[SampleOutcome[MtuResult]]) -> ScoredRun:
        """Score with the MTU-Bench metrics; a failed sample is an empty reply."""
        by_key = {o.key: o for o in outcomes}
        predicted = []
        for key, item in samples:
            outcome = by_key.get(key)
            predicted.append(self.predicted_calls(item, outcome.result if outcome else None))
        result = score_mtu([item for _, item in samples], predicted, self.variant)
        rows = []
        for (key, _item), verdict in zip(samples, result.verdicts, strict=True):
            outcome = by_key.get(key)
            rows.append(
                {
                    "key": key,
                    **verdict.model_dump(mode="json"),
                    "response": outcome.result.content if outcome and outcome.result else None,
                    "sample_error": outcome.error if outcome else "not run",
                }
            )
        summary: dict[str, Any] = {
            "benchmark": self.name,
            "variant": self.variant,
            "mode": self.mode,
            "data": self.data_label,
            "splits": result.splits,
        }
        if self.warnings:
            summary["warnings"] = list(self.warnings)
        return ScoredRun(summary=summary, rows=rows)

    def replay_table(self, path: Path) -> Mapping[str, Sequence[AssistantTurn]]:
        """Recorded ``{"id", "response"}`` lines, paired k-th with k-th by id."""
        predictions = load_mtu_predictions(path)
        responses, warnings = pair_predictions(self.items, predictions)
        self.warnings.extend(warnings)
        return {
            key: [AssistantTurn(content=text, finish_reason="stop")]
            for key, text in zip(self.keys, responses, strict=True)
            if text is not None
        }
