"""BFCL multi-turn categories: BFCL's inference loop on its own backends, scored with its checkers.

The loop is bfcl-eval 2026.3.23's ``inference_multi_turn_FC``: the involved classes' function docs as tools
(the held-back ``missed_function`` docs added at their turn, with BFCL's user message for it); user turns in
order; in a turn the model is asked until a reply has no decodable call, each reply's calls run on the
sample's own backend instances and go back as tool messages; more than 20 steps with calls in a turn is a
forced end, and the conversation stops there (BFCL then fails it as force-terminated).
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from toolgauge.benchmarks.bfcl.io import bfcl_tools
from toolgauge.benchmarks.bfcl.loader import BfclEntry
from toolgauge.benchmarks.bfcl.metrics import BfclTally, BfclVerdict, entry_weight
from toolgauge.benchmarks.bfcl.multi_turn_check import Call, MultiTurnEntry, MultiTurnVerdict, check_multi_turn
from toolgauge.engine import EpisodeContext, SampleOutcome, in_step
from toolgauge.errors import UsageError
from toolgauge.records import AssistantTurn, Message, ToolCall, ToolSpec
from toolgauge.results import EvalResults, Metric, SampleScore, ScoredRun
from toolgauge.settings import CallSettings

MAXIMUM_STEP_LIMIT = 20
"""BFCL's cap: a turn is force-ended once more than this many steps made calls."""

ADDITIONAL_FUNCTION_PROMPT = "I have updated some more functions you can choose from. What about now?"
"""BFCL's user message at the turn where held-back functions are added (function-calling mode)."""


class BfclMultiTurnResult(BaseModel):
    """One conversation: per turn, the steps that made calls, each step's calls in order.

    ``forced_end`` says the step cap ended the conversation early (its ``turns`` are then fewer than
    the entry's). ``tool_results`` are what the model read, in the same turn -> step -> call layout.
    """

    turns: list[list[list[ToolCall]]] = Field(default_factory=list)
    tool_results: list[list[list[str]]] = Field(default_factory=list)
    forced_end: bool = False

    def calls(self) -> list[list[list[Call]]]:
        """The trajectory as the checker takes it: turn -> step -> (name, arguments)."""
        return [[[(c.name, c.arguments) for c in step] for step in turn] for turn in self.turns]


class BfclMultiTurnBenchmark:
    """BFCL's four multi-turn categories, function-calling (``native``) mode."""

    name = "bfcl"
    result_type = BfclMultiTurnResult

    def __init__(
        self,
        entries: Sequence[MultiTurnEntry],
        *,
        data_label: str,
        settings: CallSettings | None = None,
        limit: int | None = None,
    ):
        self.entries = list(entries)
        self.data_label = data_label
        self.settings = settings or CallSettings()
        self.limit = limit

    def samples(self) -> list[tuple[str, MultiTurnEntry]]:
        """Entries keyed by BFCL id."""
        return [(e.id, e) for e in self.entries]

    def config(self) -> dict[str, Any]:
        """Settings that define the run (``limit`` is per category)."""
        return {
            "data": self.data_label,
            "mode": "native",
            "categories": sorted({e.category for e in self.entries}),
            "limit": self.limit,
            "n": len(self.entries),
            **self.settings.model_dump(),
        }

    async def episode(self, sample: MultiTurnEntry, ctx: EpisodeContext) -> BfclMultiTurnResult:
        """Run the conversation on fresh backend instances of this sample (and this epoch)."""
        backends = sample.backends()
        gold_turns = sample.ground_truth_calls(backends)
        functions = list(sample.functions)
        tools = _tools(sample, functions)
        options = self.settings.options_for([]).model_copy(update={"tool_choice": None})
        messages: list[Message] = []
        result = BfclMultiTurnResult()
        for index, user_messages in enumerate(sample.question):
            if str(index) in sample.held_back:
                functions += sample.held_back[str(index)]
                tools = _tools(sample, functions)
                user_messages = [{"role": "user", "content": ADDITIONAL_FUNCTION_PROMPT}]
            messages += [Message(role=m["role"], content=m.get("content")) for m in user_messages]
            steps: list[list[ToolCall]] = []
            step_results: list[list[str]] = []
            while True:
                gold = _gold_turn(gold_turns[index] if not steps else [])
                turn = await ctx.generate(list(messages), tools, options, gold=gold)
                messages.append(Message(role="assistant", content=turn.content or "", tool_calls=turn.tool_calls))
                # BFCL ends the turn on a reply that does not decode to calls (text, or undecodable arguments).
                if not turn.tool_calls or any(c.parse_error for c in turn.tool_calls):
                    break
                outputs = [backends.execute(c.name, c.arguments) for c in turn.tool_calls]
                for number, (call, output) in enumerate(zip(turn.tool_calls, outputs, strict=True)):
                    call_id = call.id or f"call_{index}_{len(steps)}_{number}"
                    messages.append(Message(role="tool", content=output, tool_call_id=call_id, name=call.name))
                steps.append(list(turn.tool_calls))
                step_results.append(outputs)
                if len(steps) > MAXIMUM_STEP_LIMIT:
                    result.forced_end = True
                    break
            result.turns.append(steps)
            result.tool_results.append(step_results)
            if result.forced_end:
                break
        return result

    def score(
        self, samples: Sequence[tuple[str, MultiTurnEntry]], outcomes: Sequence[SampleOutcome[BfclMultiTurnResult]]
    ) -> ScoredRun:
        """Score every entry with BFCL's checkers (a failed sample has no turns: force-terminated)."""
        judged = list(self.judged(samples, outcomes))
        tally = BfclTally()
        credit: dict[str, list[float]] = defaultdict(list)
        for verdict, _, _, _ in judged:
            tally.add(_as_bfcl_verdict(verdict))
            credit[verdict.category].append(verdict.turn_credit)
        metrics = tally.metrics()
        for category, values in credit.items():
            metrics.append(
                Metric(
                    name="turn_credit", value=sum(values) / len(values), group=category, by="category", n=len(values)
                )
            )
        if credit:
            means = [sum(v) / len(v) for v in credit.values()]
            metrics.append(Metric(name="turn_credit", value=sum(means) / len(means), n=len(judged)))
        results = EvalResults(
            benchmark=self.name,
            settings={"mode": "native", "data": self.data_label},
            metrics=metrics,
            details=tally.details(),
        )
        sizes = Counter(entry.category for _, entry in samples)
        # The verdicts are kept: judging re-runs every call on the backends, too slow to do twice.
        return ScoredRun(results, lambda: (_sample_score(v, r, e, sizes[v.category]) for v, r, e, _ in judged))

    def judged(
        self,
        samples: Iterable[tuple[str, MultiTurnEntry]],
        outcomes: Iterable[SampleOutcome[BfclMultiTurnResult]],
    ) -> Iterator[tuple[MultiTurnVerdict, BfclMultiTurnResult | None, str | None, MultiTurnEntry]]:
        """Yield (verdict, result, sample error, entry) for every entry, in input order."""
        for _, entry, mine in in_step(samples, outcomes):
            result = mine.result if mine is not None else None
            verdict = check_multi_turn(entry, result.calls() if result is not None else [])
            yield verdict, result, (mine.error if mine is not None else "not run"), entry

    def replay_table(self, path: Path) -> dict[str, list[AssistantTurn]]:
        """Multi-turn result files are not read yet."""
        raise UsageError(f"{path}: replaying BFCL multi-turn result files is not supported yet")


def _tools(entry: MultiTurnEntry, functions: list[dict[str, Any]]) -> list[ToolSpec]:
    # The AST side's converter: BFCL's language hint and OpenAPI types are the same for multi-turn docs.
    shown = BfclEntry(
        id=entry.id, category=entry.category, question=[], functions=functions, ground_truth=None, path="", line=0
    )
    return bfcl_tools(shown, underscore_to_dot=True)


def _gold_turn(calls: list[Call]) -> AssistantTurn:
    """The ground truth's reply at a step: the turn's calls at its first step, then (and in empty turns) text."""
    if not calls:
        return AssistantTurn(content="", finish_reason="stop")
    return AssistantTurn(
        tool_calls=[ToolCall(name=n, arguments=a, raw=json.dumps(a)) for n, a in calls], finish_reason="tool_calls"
    )


def _as_bfcl_verdict(v: MultiTurnVerdict) -> BfclVerdict:
    return BfclVerdict(
        id=v.id,
        category=v.category,
        valid=v.valid,
        error_type=v.error_type,
        errors=[v.error_message] if v.error_message else [],
        decoded=None,
        unsatisfiable=False,
        unparsable=False,
    )


def _sample_score(v: MultiTurnVerdict, result: BfclMultiTurnResult | None, error: str | None, size: int) -> SampleScore:
    metadata: dict[str, Any] = {
        "category": v.category,
        "turn_matched": v.turn_matched,
        "first_failing_turn": v.first_failing_turn,
        "state_difference": v.state_difference,
        "forced_end": result.forced_end if result is not None else False,
        "errors": [v.error_message] if v.error_message else [],
    }
    return SampleScore(
        id=v.id,
        sample=v.id,
        value=1.0 if v.valid else 0.0,
        scores={
            "valid": v.valid,
            "error_type": v.error_type,
            "accuracy": 1.0 if v.valid else 0.0,
            "turn_credit": v.turn_credit,
        },
        weights={"accuracy": entry_weight(size)},
        explanation=None if v.valid else f"{v.error_type}: {v.error_message}",
        error=error,
        metadata=metadata,
    )
