"""toolgauge's own multi-turn format: one model step per turn on gold history, MTU strict metrics."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, Field

from toolgauge.benchmark import BenchmarkBase
from toolgauge.benchmarks.suite.loader import SuiteDialogue, turn_histories
from toolgauge.benchmarks.suite.options import SuiteOptions
from toolgauge.engine import EpisodeContext, SampleOutcome, in_step
from toolgauge.metrics.calls import (
    DialogueTurnTally,
    MtuItemVerdict,
    MtuVariant,
    TurnOutcome,
    judge_turn,
    one_dialogue_scores,
    tally_metrics,
    unit_scores_row,
)
from toolgauge.recordings import read_recorded_turns
from toolgauge.records import AssistantTurn, ToolCall
from toolgauge.results import EvalResults, SampleScore, ScoredRun


class SuiteTurnResult(BaseModel):
    """What the model did in one turn."""

    content: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    finish_reason: str | None = None


class SuiteResult(BaseModel):
    """One dialogue's model turns."""

    turns: list[SuiteTurnResult]


@dataclass(frozen=True, slots=True)
class JudgedTurn:
    """One turn of a scored dialogue: its verdict and what the ``--samples`` row shows."""

    dialogue_id: str
    turn: int
    verdict: MtuItemVerdict
    content: str | None
    sample_error: str | None
    # On the dialogue's last turn: the dialogue's SR, ATS, SATS and TPR (each dialogue metric is their mean).
    dialogue_scores: dict[str, float] | None = None

    def sample_score(self) -> SampleScore:
        """The turn's per-unit score: 1.0 when the turn is right (tool and parameters), with every verdict field.

        ``scores`` also holds the turn metrics named as the metrics and, on the last turn, the dialogue
        metrics; the cluster is the dialogue.
        """
        verdict = self.verdict.model_dump(mode="json", exclude={"id", "split"})
        return SampleScore(
            id=f"{self.dialogue_id}#{self.turn}",
            sample=self.dialogue_id,
            value=1.0 if self.verdict.turn_correct else 0.0,
            explanation=self.verdict.error_type,
            scores=unit_scores_row(verdict, self.verdict, self.dialogue_scores),
            error=self.sample_error,
            cluster=self.dialogue_id,
            metadata={"dialogue": self.dialogue_id, "turn": self.turn, "content": self.content,
                      **{k: v for k, v in verdict.items() if isinstance(v, list | dict)}},
        )  # fmt: skip


class SuiteBenchmark(BenchmarkBase[SuiteDialogue, SuiteOptions]):
    """Runs dialogues in toolgauge's JSONL format, keyed by id (ids are unique in a valid file).

    The call settings and the metric variant are read from ``options`` (stored as the run's config).
    """

    name = "suite"
    result_type = SuiteResult

    def __init__(self, dialogues: Sequence[SuiteDialogue], *, options: SuiteOptions, data_label: str):
        self.settings = options.call_settings(options.tool_choice)
        self.variant: MtuVariant = options.variant
        super().__init__(dialogues, keys=[d.id for d in dialogues], data_label=data_label, options=options)

    async def episode(self, sample: SuiteDialogue, ctx: EpisodeContext) -> SuiteResult:
        """Ask the model once per turn, on the gold history."""
        results: list[SuiteTurnResult] = []
        tools = list(sample.tools)
        for turn, history in turn_histories(sample):
            gold = AssistantTurn(
                content=None if turn.expected_calls else (turn.assistant or ""),
                tool_calls=list(turn.expected_calls),
                finish_reason="tool_calls" if turn.expected_calls else "stop",
            )
            answer = await ctx.generate(
                history,
                tools,
                self.settings.options_for(list(turn.expected_calls)),
                gold=gold,
            )
            results.append(
                SuiteTurnResult(
                    content=answer.content, tool_calls=answer.tool_calls, finish_reason=answer.finish_reason
                )
            )
        return SuiteResult(turns=results)

    def score(
        self, samples: Sequence[tuple[str, SuiteDialogue]], outcomes: Sequence[SampleOutcome[SuiteResult]]
    ) -> ScoredRun:
        """Score every turn with the MTU-Bench metrics (failed dialogues count as empty replies).

        One pass over the samples and their outcomes (both in input order, as the engine returns
        them; samples that did not run have no outcome): each turn is judged once and counted. The
        rows are made by a second pass when they are asked for.

        Raises:
            ValueError: an outcome is out of order or belongs to no sample.
        """
        tally = DialogueTurnTally()
        for judged in self.judged_turns(samples, outcomes):
            tally.add(judged.dialogue_id, judged.turn, judged.verdict)
        results = EvalResults(
            benchmark=self.name,
            settings={"variant": self.variant, "mode": "native", "data": self.data_label},
            metrics=tally_metrics(tally.summary()),
        )
        # A second pass, made only when --samples is written: no score per turn is held in the meantime.
        return ScoredRun(results, lambda: (j.sample_score() for j in self.judged_turns(samples, outcomes)))

    def judged_turns(
        self, samples: Iterable[tuple[str, SuiteDialogue]], outcomes: Iterable[SampleOutcome[SuiteResult]]
    ) -> Iterator[JudgedTurn]:
        """Yield every turn of every sample judged, one dialogue in memory at a time.

        ``samples`` and ``outcomes`` are read once, in step; see :meth:`score` for the order.

        Raises:
            ValueError: an outcome is out of order or belongs to no sample.
        """
        for _, dialogue, mine in in_step(samples, outcomes):
            yield from self._judged_dialogue(dialogue, mine)

    def _judged_dialogue(self, dialogue: SuiteDialogue, mine: SampleOutcome[SuiteResult] | None) -> list[JudgedTurn]:
        """Every turn of one dialogue judged; the last carries the dialogue's own scores."""
        judged = list(self._judged_turns_of(dialogue, mine))
        if judged:
            last = judged[-1]
            scores = one_dialogue_scores([j.verdict.turn_correct for j in judged])
            judged[-1] = JudgedTurn(last.dialogue_id, last.turn, last.verdict, last.content, last.sample_error, scores)
        return judged

    def _judged_turns_of(
        self, dialogue: SuiteDialogue, mine: SampleOutcome[SuiteResult] | None
    ) -> Iterator[JudgedTurn]:
        got = mine.result.turns if mine and mine.result else []
        error = mine.error if mine else "not run"
        for index, turn in enumerate(dialogue.turns):
            answer = got[index] if index < len(got) else None
            verdict = judge_turn(
                TurnOutcome(
                    dialogue_id=dialogue.id,
                    turn=index,
                    expected=turn.expected_calls,
                    predicted=answer.tool_calls if answer else [],
                ),
                self.variant,
            )
            yield JudgedTurn(dialogue.id, index, verdict, answer.content if answer else None, error)

    def replay_table(self, path: Path) -> Mapping[str, Sequence[AssistantTurn]]:
        """Read step-level recordings: JSONL lines ``{"id", "turn", "content", "tool_calls"}``."""
        return read_recorded_turns(path, index_field="turn", what="recorded turn")
