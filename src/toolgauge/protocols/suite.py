"""toolgauge's own multi-turn format: one model step per turn on gold history, MTU strict metrics."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from toolgauge.engine import EpisodeContext, SampleOutcome
from toolgauge.loaders.recordings import read_recorded_turns
from toolgauge.loaders.suite import SuiteDialogue, turn_history
from toolgauge.metrics.mtu import MtuVariant, TurnOutcome, judge_turn, score_dialogue_turns
from toolgauge.protocols.base import ScoredRun
from toolgauge.protocols.options import CallSettings
from toolgauge.records import AssistantTurn, ToolCall


class SuiteTurnResult(BaseModel):
    """What the model did in one turn."""

    content: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    finish_reason: str | None = None


class SuiteResult(BaseModel):
    """One dialogue's model turns."""

    turns: list[SuiteTurnResult]


class SuiteBenchmark:
    """Runs dialogues in toolgauge's JSONL format."""

    name = "suite"
    result_type = SuiteResult

    def __init__(
        self,
        dialogues: Sequence[SuiteDialogue],
        *,
        data_label: str,
        settings: CallSettings | None = None,
        variant: MtuVariant = "strict",
    ):
        self.dialogues = list(dialogues)
        self.data_label = data_label
        self.settings = settings or CallSettings()
        self.variant: MtuVariant = variant

    def samples(self) -> list[tuple[str, SuiteDialogue]]:
        """Dialogues keyed by id (ids are unique in a valid file)."""
        return [(d.id, d) for d in self.dialogues]

    def config(self) -> dict[str, Any]:
        """Settings that define the run."""
        return {
            "data": self.data_label,
            "variant": self.variant,
            "n": len(self.dialogues),
            **self.settings.model_dump(),
        }

    async def episode(self, sample: SuiteDialogue, ctx: EpisodeContext) -> SuiteResult:
        """Ask the model once per turn, on the gold history."""
        results: list[SuiteTurnResult] = []
        for index, turn in enumerate(sample.turns):
            gold = AssistantTurn(
                content=None if turn.expected_calls else (turn.assistant or ""),
                tool_calls=list(turn.expected_calls),
                finish_reason="tool_calls" if turn.expected_calls else "stop",
            )
            answer = await ctx.generate(
                turn_history(sample, index),
                sample.tools,
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
        """Score every turn with the MTU-Bench metrics (failed dialogues count as empty replies)."""
        by_key = {o.key: o for o in outcomes}
        turns: list[TurnOutcome] = []
        rows: list[dict[str, Any]] = []
        for key, dialogue in samples:
            outcome = by_key.get(key)
            got = outcome.result.turns if outcome and outcome.result else []
            for index, turn in enumerate(dialogue.turns):
                predicted = got[index].tool_calls if index < len(got) else []
                item = TurnOutcome(
                    dialogue_id=dialogue.id, turn=index, expected=list(turn.expected_calls), predicted=predicted
                )
                turns.append(item)
                verdict = judge_turn(item, self.variant)
                rows.append(
                    {
                        "id": f"{dialogue.id}#{index}",
                        "dialogue": dialogue.id,
                        "turn": index,
                        **verdict.model_dump(mode="json", exclude={"id", "split"}),
                        "content": got[index].content if index < len(got) else None,
                        "sample_error": outcome.error if outcome else "not run",
                    }
                )
        summary: dict[str, Any] = {
            "benchmark": self.name,
            "variant": self.variant,
            "mode": "native",
            "data": self.data_label,
            "scores": score_dialogue_turns(turns, self.variant),
        }
        return ScoredRun(summary=summary, rows=rows)

    def replay_table(self, path: Path) -> Mapping[str, Sequence[AssistantTurn]]:
        """Read step-level recordings: JSONL lines ``{"id", "turn", "content", "tool_calls"}``."""
        return read_recorded_turns(path, index_field="turn", what="recorded turn")
