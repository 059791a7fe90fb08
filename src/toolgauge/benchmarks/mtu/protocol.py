"""MTU-Bench: one model step per item, prompt (ReAct text) or native tool calls."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from toolgauge.benchmark import BenchmarkBase
from toolgauge.benchmarks.mtu.analyses import paper_metrics
from toolgauge.benchmarks.mtu.feedback import FEEDBACK_TEXT, FeedbackKind, MtuFeedback, feedback_kind, recovery_metrics
from toolgauge.benchmarks.mtu.loader import load_mtu_predictions, pair_predictions, prediction_split
from toolgauge.benchmarks.mtu.metrics import (
    MtuItemVerdict,
    MtuVariant,
    dialogue_unit_scores,
    judge_mtu_item,
    score_mtu,
    unit_scores_row,
)
from toolgauge.benchmarks.mtu.native import mtu_native_request
from toolgauge.benchmarks.mtu.options import MtuOptions
from toolgauge.benchmarks.mtu.react import parse_mtu_response, render_react
from toolgauge.benchmarks.mtu.records import MTU_SPLITS, MULTI_TURN_SPLITS, MtuItem, MtuPrediction
from toolgauge.engine import EpisodeContext, SampleOutcome, in_step
from toolgauge.errors import ModelError
from toolgauge.parsing.call_rate import few_calls_warning
from toolgauge.records import AssistantTurn, Message, ToolCall
from toolgauge.results import EvalResults, SampleScore, ScoredRun

MtuMode = Literal["prompt", "native"]


class MtuResult(BaseModel):
    """The model's reply to one MTU-Bench item; with feedback (A2), the feedback it got and its second attempt."""

    content: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    finish_reason: str | None = None
    feedback: FeedbackKind | None = None
    retry: MtuResult | None = None
    # The second attempt failed for good (the first attempt's verdict stands; the feedback did not recover it).
    retry_error: str | None = None


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
    found = {prediction_split(p.id) for p in predictions}
    return [s for s in MTU_SPLITS if s in found]


def replay_turns(
    items: Sequence[MtuItem], predictions: Sequence[MtuPrediction]
) -> tuple[dict[str, list[AssistantTurn]], list[str]]:
    """Recorded replies as a replay table (sample key -> its one turn), and the pairing warnings.

    Predictions answer items k-th with k-th by id (see ``pair_predictions``); an item with no
    prediction has no entry, so the replay client gives it an empty reply.
    """
    responses, warnings = pair_predictions(items, predictions)
    table = {
        key: [AssistantTurn(content=text, finish_reason="stop")]
        for key, text in zip(item_keys(items), responses, strict=True)
        if text is not None
    }
    return table, warnings


@dataclass(frozen=True, slots=True)
class JudgedItem:
    """One scored item: its sample key, the verdict, and what the model replied."""

    key: str
    verdict: MtuItemVerdict
    content: str | None
    sample_error: str | None
    # The dialogue of an M-S / M-M item (its bootstrap cluster), and the dialogue metrics on its last item.
    dialogue: str | None = None
    dialogue_scores: dict[str, float] | None = None
    # The dialogue's turns before this item's (the item holding each) and this item: what its sample page shows.
    dialogue_so_far: tuple[dict[str, Any], ...] | None = None
    # With feedback (A2): the kind the first reply got and whether the second attempt was right.
    recovery: tuple[FeedbackKind, bool] | None = None

    def sample_score(self) -> SampleScore:
        """The item's score: 1.0 when it is right (every call and value), with every verdict field.

        ``scores`` also holds the metrics the item counts in, named as the metrics (see
        :func:`~toolgauge.benchmarks.mtu.metrics.unit_scores_row`), so that each overall metric is their mean.
        """
        verdict = self.verdict.model_dump(mode="json", exclude={"id", "split"})
        scores = unit_scores_row(verdict, self.verdict, self.dialogue_scores)
        if self.recovery is not None:
            scores.update({"feedback": self.recovery[0], "recovered": self.recovery[1]})
        return SampleScore(
            id=self.key,
            sample=self.key,
            value=1.0 if self.verdict.turn_correct else 0.0,
            explanation=self.verdict.error_type,
            scores=scores,
            error=self.sample_error,
            cluster=self.dialogue,
            metadata={"item_id": self.verdict.id, "split": self.verdict.split, "content": self.content,
                      **{k: v for k, v in verdict.items() if isinstance(v, list | dict)},
                      **({"dialogue_so_far": list(self.dialogue_so_far)} if self.dialogue_so_far else {})},
        )  # fmt: skip


def _with_feedback(turn: AssistantTurn, kind: FeedbackKind) -> list[Message]:
    """The reply and the feedback on it, as the next request's last messages.

    A reply with native tool calls gets the feedback as each call's tool result (the chat format wants every
    call answered); a text reply gets it as an ``Observation:`` line, as ReAct dialogues show tool output.
    """
    text = FEEDBACK_TEXT[kind]
    if not turn.tool_calls:
        return [
            Message(role="assistant", content=turn.content or ""),
            Message(role="user", content=f"Observation: {text}"),
        ]
    calls = [call.model_copy(update={"id": call.id or f"call_{k}"}) for k, call in enumerate(turn.tool_calls, start=1)]
    reply = Message(role="assistant", content=turn.content, tool_calls=calls)
    return [reply, *(Message(role="tool", content=text, tool_call_id=call.id, name=call.name) for call in calls)]


def _turn_entry(key: str, item: MtuItem, verdict: MtuItemVerdict) -> dict[str, Any]:
    """One turn of a dialogue as a sample page lists it: the item's key, its turn and its verdict."""
    return {"sample": key, "turn": item.turn_index, "turn_correct": verdict.turn_correct,
            "error_type": verdict.error_type}  # fmt: skip


class MtuBenchmark(BenchmarkBase[MtuItem, MtuOptions]):
    """MTU-Bench's eval split, scored by the reference (or strict) metrics; items keyed by id (repeats get ``~k``).

    The mode, the metric variant, the call settings and the feedback are read from ``options`` (stored as the config).

    ``warnings`` are said with the results: e.g. how recorded predictions paired with the items (``replay_turns``).
    """

    name = "mtu-bench"
    result_type = MtuResult

    def __init__(self, items: Sequence[MtuItem], *, options: MtuOptions, data_label: str, warnings: Sequence[str] = ()):
        self.mode: MtuMode = options.mode
        self.variant: MtuVariant = options.variant
        self.settings = options.call_settings(options.tool_choice)
        # Recovery from feedback (A2; see toolgauge.benchmarks.mtu.feedback): which kinds of error get a second try.
        self.feedback: MtuFeedback = options.feedback
        super().__init__(items, keys=item_keys(items), data_label=data_label, options=options, warnings=warnings)

    async def episode(self, sample: MtuItem, ctx: EpisodeContext) -> MtuResult:
        """Ask once: the item's question as the prompt, or the native conversion of it.

        With ``feedback`` on, a wrong reply whose kind of error is enabled gets that feedback and one more attempt
        (the reply and the feedback added to the messages, as A2 describes).
        """
        gold_calls = sample.gold_calls()
        if self.mode == "prompt":
            messages = [Message(role="user", content=sample.question)]
            tools = None
            options = self.settings.options_for([]).model_copy(update={"tool_choice": None})
            gold = AssistantTurn(content=render_react(gold_calls), finish_reason="stop")
        else:
            tools, messages = mtu_native_request(sample)
            options = self.settings.options_for(gold_calls)
            gold = AssistantTurn(
                content=None if gold_calls else "",
                tool_calls=gold_calls,
                finish_reason="tool_calls" if gold_calls else "stop",
            )
        turn = await ctx.generate(messages, tools, options, gold=gold)
        result = MtuResult(content=turn.content, tool_calls=turn.tool_calls, finish_reason=turn.finish_reason)
        if self.feedback == "none":
            return result
        verdict = judge_mtu_item(sample, self.predicted_calls(sample, result), self.variant)
        kind = feedback_kind(verdict.error_type, self.feedback)
        if kind is None:
            return result
        try:
            again = await ctx.generate([*messages, *_with_feedback(turn, kind)], tools, options, gold=gold)
        except ModelError as exc:  # the first reply is still this item's answer: keep it, and say why no retry
            return result.model_copy(update={"feedback": kind, "retry_error": str(exc)})
        retry = MtuResult(content=again.content, tool_calls=again.tool_calls, finish_reason=again.finish_reason)
        return result.model_copy(update={"feedback": kind, "retry": retry})

    def predicted_calls(self, item: MtuItem, result: MtuResult | None) -> list[ToolCall]:
        """The calls a reply makes: parsed from ReAct text, or the native tool calls."""
        if result is None:
            return parse_mtu_response("", item.split, multi=item.multi_call)
        if self.mode == "prompt":
            return parse_mtu_response(result.content or "", item.split, multi=item.multi_call)
        return list(result.tool_calls)

    def score(self, samples: Sequence[tuple[str, MtuItem]], outcomes: Sequence[SampleOutcome[MtuResult]]) -> ScoredRun:
        """Score with the MTU-Bench metrics; a failed sample (or one that did not run) is an empty reply.

        Metrics over every item (group None) and per split (``by="split"``), counts included. The
        outcomes are read in step with the samples (both in input order, as the engine returns them;
        samples that did not run have no outcome); the per-item scores read them again when asked for.

        Raises:
            ValueError: an outcome is out of order or belongs to no sample.
        """
        items = [item for _, item in samples]
        paired = list(self._paired(samples, outcomes))
        predicted = [self.predicted_calls(item, result) for _, item, result, _ in paired]
        scored = score_mtu(items, predicted, self.variant)
        warnings = list(self.warnings)
        if self.mode == "prompt":
            # Of the replies to items that need a call, how many hold one the ReAct parser reads.
            needed = [calls for (_, item, result, error), calls in zip(paired, predicted, strict=True)
                      if result is not None and error is None and item.gold_calls()]  # fmt: skip
            warning = few_calls_warning(sum(1 for calls in needed if calls), len(needed))
            warnings += [warning] if warning else []
        verdicts = scored.verdicts
        recovery = self._recovery(paired)
        metrics = scored.metrics() + paper_metrics(items, verdicts)
        if self.feedback != "none" or any(r is not None for r in recovery):
            given = [r for r in recovery if r is not None]
            metrics += recovery_metrics(given, len(items), sum(1 for v in verdicts if v.turn_correct))
        results = EvalResults(
            benchmark=self.name,
            settings={"variant": self.variant, "mode": self.mode, "data": self.data_label},
            metrics=metrics,
            warnings=warnings,
        )
        in_dialogues = [index for index, item in enumerate(items) if item.split in MULTI_TURN_SPLITS]
        dialogue_scores = {
            in_dialogues[position]: scores
            for position, scores in dialogue_unit_scores(
                [(items[i].dialogue_id, items[i].turn_index, verdicts[i].turn_correct) for i in in_dialogues]
            ).items()
        }

        # Each dialogue's turn slots (turn index -> the item holding it: the later of a repeated id), for the
        # sample page's "turns so far" (the items of M-S are not in turn order in the file).
        slots: dict[str, dict[int, dict[str, Any]]] = {}
        for index in in_dialogues:
            item = items[index]
            slots.setdefault(item.dialogue_id, {})[item.turn_index] = _turn_entry(
                samples[index][0], item, verdicts[index]
            )

        def rows() -> Iterator[SampleScore]:
            paired = zip(self._paired(samples, outcomes), verdicts, strict=True)
            for index, ((key, item, result, error), verdict) in enumerate(paired):
                content = result.content if result is not None else None
                dialogue = item.dialogue_id if item.split in MULTI_TURN_SPLITS else None
                turns = None
                if dialogue is not None:
                    held = slots[dialogue]
                    earlier = [held[turn] for turn in sorted(held) if turn < item.turn_index]
                    turns = (*earlier, _turn_entry(key, item, verdict))
                yield JudgedItem(
                    key, verdict, content, error, dialogue, dialogue_scores.get(index), turns, recovery[index]
                ).sample_score()

        return ScoredRun(results, rows)

    def _recovery(
        self, paired: Sequence[tuple[str, MtuItem, MtuResult | None, str | None]]
    ) -> list[tuple[FeedbackKind, bool] | None]:
        """Per item: the feedback its first reply got and whether the second attempt was right (None: no feedback)."""
        out: list[tuple[FeedbackKind, bool] | None] = []
        for _, item, result, _ in paired:
            if result is None or result.feedback is None:
                out.append(None)
            elif result.retry is None:  # the second attempt failed for good: given feedback, not recovered
                out.append((result.feedback, False))
            else:
                again = judge_mtu_item(item, self.predicted_calls(item, result.retry), self.variant)
                out.append((result.feedback, again.turn_correct))
        return out

    @staticmethod
    def _paired(
        samples: Iterable[tuple[str, MtuItem]], outcomes: Iterable[SampleOutcome[MtuResult]]
    ) -> Iterator[tuple[str, MtuItem, MtuResult | None, str | None]]:
        """Yield (key, item, result or None, run error) per sample, reading ``outcomes`` once, in step.

        Raises:
            ValueError: an outcome is out of order or belongs to no sample.
        """
        for key, item, outcome in in_step(samples, outcomes):
            if outcome is None:
                yield key, item, None, "not run"
            else:
                yield key, item, outcome.result, outcome.error

    def replay_table(self, path: Path) -> Mapping[str, Sequence[AssistantTurn]]:
        """Recorded ``{"id", "response"}`` lines, paired k-th with k-th by id (see ``replay_turns``)."""
        table, _ = replay_turns(self.items, load_mtu_predictions(path))
        return table
