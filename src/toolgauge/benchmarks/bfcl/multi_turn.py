"""BFCL multi-turn categories: BFCL's inference loop on its own backends, scored with its checkers.

The loop is bfcl-eval 2026.3.23's ``inference_multi_turn_FC`` (``native``) and ``inference_multi_turn_prompting``
(``prompt``): the involved classes' function docs as tools, or in BFCL's system prompt; the held-back
``missed_function`` docs added at their turn, with BFCL's user message for it; user turns in order; in a turn
the model is asked until a reply has no decodable call; each reply's calls run on the sample's own backend
instances and their results go back (tool messages, or one user message in prompting mode, as BFCL does);
more than 20 steps with calls in a turn is a forced end, and the conversation stops there (BFCL then fails
it as force-terminated).
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from toolgauge.benchmarks.bfcl.backends import BfclBackends
from toolgauge.benchmarks.bfcl.decoders.call_types import BfclDecodeError
from toolgauge.benchmarks.bfcl.decoders.python_calls import decode_python_calls, render_python_calls
from toolgauge.benchmarks.bfcl.io import bfcl_prompt_messages, bfcl_tools
from toolgauge.benchmarks.bfcl.loader import BfclEntry
from toolgauge.benchmarks.bfcl.metrics import BfclTally, tally_verdict
from toolgauge.benchmarks.bfcl.multi_turn_check import Call, MultiTurnEntry, MultiTurnVerdict, check_multi_turn
from toolgauge.benchmarks.bfcl.protocol import BfclRunBase, entry_score, missing_predictions_warning
from toolgauge.engine import EpisodeContext, SampleOutcome, in_step
from toolgauge.errors import UsageError
from toolgauge.records import AssistantTurn, Message, ToolCall, ToolSpec
from toolgauge.results import EvalResults, Metric, SampleScore, ScoredRun
from toolgauge.settings import CallSettings

BfclMultiTurnMode = Literal["native", "prompt", "replay"]

MAXIMUM_STEP_LIMIT = 20
"""BFCL's cap: a turn is force-ended once more than this many steps made calls."""

INFERENCE_ERROR = "Error during inference phase. Model did not output a list of model responses."
"""BFCL's message for a multi-turn result that is not a list of turns (``multi_turn:inference_error``)."""

ADDITIONAL_FUNCTION_PROMPT = "I have updated some more functions you can choose from. What about now?"
"""BFCL's user message at the turn where held-back functions are added (function-calling mode)."""


class BfclMultiTurnResult(BaseModel):
    """One conversation: per turn, the steps that made calls, each step's calls in order.

    ``forced_end`` says the step cap ended the conversation early (its ``turns`` are then fewer than
    the entry's). ``tool_results`` are what the model read, in the same turn -> step -> call layout
    (empty for a replayed result file, which records no results). ``raw`` is BFCL's ``result`` field for
    the conversation (turn -> every step's output, as ``bfcl generate`` writes it, or the recorded one) and
    ``style`` how BFCL decodes it (``fc``: ``{name: json-args}`` lists, ``prompt``: call text); None in
    results stored before they were kept.
    """

    turns: list[list[list[ToolCall]]] = Field(default_factory=list)
    tool_results: list[list[list[str]]] = Field(default_factory=list)
    forced_end: bool = False
    raw: Any = None
    style: Literal["fc", "prompt"] | None = None
    # Replay only: the result files had no line for the entry, or its result was not a list of turns.
    missing: bool = False
    not_a_list: bool = False

    def calls(self) -> list[list[list[Call]]]:
        """The trajectory as the checker takes it: turn -> step -> (name, arguments)."""
        return [[[(c.name, c.arguments) for c in step] for step in turn] for turn in self.turns]


class BfclMultiTurnBenchmark(BfclRunBase[MultiTurnEntry]):
    """BFCL's four multi-turn categories, in function-calling (``native``) or prompting (``prompt``) mode."""

    result_type = BfclMultiTurnResult

    async def episode(self, sample: MultiTurnEntry, ctx: EpisodeContext) -> BfclMultiTurnResult:
        """Run the conversation on fresh backend instances of this sample (and this epoch).

        ``replay`` asks no model: the entry's recorded BFCL result, decoded as ``bfcl evaluate`` decodes it.
        """
        if self.mode == "replay":
            if self.recorded is None:
                raise UsageError("mode replay scores recorded results: build the benchmark with predictions")
            if sample.id not in self.recorded:
                return BfclMultiTurnResult(missing=True)
            return decode_recorded(self.recorded[sample.id])
        backends = sample.backends()
        return await converse(sample, backends, ctx, self.mode, self.settings, sample.ground_truth_calls(backends))

    def score(
        self, samples: Sequence[tuple[str, MultiTurnEntry]], outcomes: Sequence[SampleOutcome[BfclMultiTurnResult]]
    ) -> ScoredRun:
        """Score every entry with BFCL's checkers (a failed sample has no turns: force-terminated)."""
        judged = list(self.judged(samples, outcomes))
        missing = [v.id for v, r, _, _ in judged if r is not None and r.missing]
        warning = missing_predictions_warning(missing, len(judged))
        tally = BfclTally()
        credit: dict[str, list[float]] = defaultdict(list)
        for verdict, _, _, _ in judged:
            tally.add(tally_verdict(verdict))
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
            settings={"mode": self.mode, "data": self.data_label},
            metrics=metrics,
            details=tally.details(),
            warnings=[*self.warnings, *([warning] if warning else [])],
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
            if result is not None and result.not_a_list:
                verdict = MultiTurnVerdict(
                    id=entry.id,
                    category=entry.category,
                    valid=False,
                    error_type="multi_turn:inference_error",
                    error_message=INFERENCE_ERROR,
                    turn_matched=[False] * len(entry.question),
                    first_failing_turn=0,
                )
            else:
                verdict = check_multi_turn(entry, result.calls() if result is not None else [])
            yield verdict, result, (mine.error if mine is not None else "not run"), entry

    def replay_table(self, path: Path) -> dict[str, list[AssistantTurn]]:
        """Recorded multi-turn results are scored by ``score bfcl --predictions``, not replayed to a model."""
        raise UsageError(f"{path}: BFCL multi-turn result files are scored with `score bfcl --predictions`")


async def converse(
    entry: MultiTurnEntry,
    backends: BfclBackends,
    ctx: EpisodeContext,
    mode: BfclMultiTurnMode,
    settings: CallSettings,
    gold_turns: Sequence[list[Call]],
    gold_answer: str = "",
) -> BfclMultiTurnResult:
    """BFCL's multi-turn inference loop over ``entry``'s turns, every call run on ``backends``.

    ``gold_turns`` are the ground truth's calls per turn and ``gold_answer`` its closing text (what the
    ``gold`` model replies).
    """
    chat = _Conversation(entry, mode)
    options = settings.options_for([]).model_copy(update={"tool_choice": None})
    result = BfclMultiTurnResult(raw=[], style="prompt" if mode == "prompt" else "fc")
    for index, user_messages in enumerate(entry.question):
        held = entry.held_back.get(str(index))
        chat.open_turn(index, user_messages, held)
        steps: list[list[ToolCall]] = []
        step_results: list[list[str]] = []
        raw_steps: list[Any] = []
        result.raw.append(raw_steps)
        while True:
            gold = chat.gold(gold_turns[index] if not steps else [], gold_answer)
            turn = await ctx.generate(list(chat.messages), chat.tools, options, gold=gold)
            raw_steps.append(_raw_step(turn, mode))
            calls = chat.reply(turn)
            # BFCL ends the turn on a reply that does not decode to calls (text, or undecodable arguments).
            if not calls:
                break
            outputs = [backends.execute(c.name, c.arguments) for c in calls]
            chat.results(index, len(steps), calls, outputs)
            steps.append(calls)
            step_results.append(outputs)
            if len(steps) > MAXIMUM_STEP_LIMIT:
                result.forced_end = True
                break
        result.turns.append(steps)
        result.tool_results.append(step_results)
        if result.forced_end:
            break
    return result


def decode_recorded(result: Any) -> BfclMultiTurnResult:
    """A BFCL multi-turn ``result`` (turn -> step -> raw output) as ``bfcl evaluate`` decodes it.

    Function-calling results (any step a list or object of ``{name: arguments}``) are decoded as
    ``convert_to_function_call`` does, prompting results (every step text) as BFCL's Python-call decoder
    does; a step that does not decode, or decodes to no call, is left out, as ``bfcl evaluate`` does.
    """
    if not isinstance(result, list):
        return BfclMultiTurnResult(not_a_list=True, raw=result)
    steps = [step for turn in result if isinstance(turn, list) for step in turn]
    function_calling = any(isinstance(step, list | dict) for step in steps)
    turns: list[list[list[ToolCall]]] = []
    for turn in result:
        decoded = [decode_step(step, function_calling) for step in (turn if isinstance(turn, list) else [])]
        turns.append([calls for calls in decoded if calls])
    return BfclMultiTurnResult(turns=turns, raw=result, style="fc" if function_calling else "prompt")


def _raw_step(turn: AssistantTurn, mode: BfclMultiTurnMode) -> Any:
    """A reply as BFCL's handlers record it: ``[{name: arguments text}]`` for calls (FC), else the text."""
    if mode == "native" and turn.tool_calls:
        return [{c.name: c.raw if c.raw is not None else json.dumps(c.arguments)} for c in turn.tool_calls]
    return turn.content or ""


def decode_step(step: Any, function_calling: bool) -> list[ToolCall]:
    """One recorded step's calls as ``decode_execute`` finds them; none when it does not decode (BFCL skips it)."""
    if function_calling:
        items = [step] if isinstance(step, dict) else step
        if not isinstance(items, list):
            return []
        calls: list[ToolCall] = []
        for item in items:
            if not isinstance(item, dict):
                return []
            for name, arguments in item.items():
                if isinstance(arguments, str):
                    try:
                        arguments = json.loads(arguments)
                    except ValueError:
                        return []
                if not isinstance(arguments, dict):
                    return []
                calls.append(ToolCall(name=str(name), arguments=arguments))
        return calls
    if not isinstance(step, str):
        return []
    try:
        decoded = decode_python_calls(step)
    except BfclDecodeError:
        return []
    return [ToolCall(name=name, arguments=args) for call in decoded for name, args in call.items()]


class _Conversation:
    """What the model sees, as BFCL's FC (``native``) or prompting handler builds it, and how replies decode."""

    def __init__(self, entry: MultiTurnEntry, mode: BfclMultiTurnMode):
        self.entry = entry
        self.mode: BfclMultiTurnMode = mode
        self.messages: list[Message] = []
        self.tools: list[ToolSpec] | None = _tools(entry, entry.functions, hint=True) if mode == "native" else None

    def open_turn(self, index: int, user_messages: list[dict[str, Any]], held: list[dict[str, Any]] | None) -> None:
        """Add the turn's user messages; at a held-back turn, the functions and BFCL's message instead."""
        if held is not None:
            if self.tools is not None:
                # BFCL adds its language hints before it moves the held-back docs aside: they come without.
                self.tools = [*self.tools, *_tools(self.entry, held, hint=False)]
                self.messages.append(Message(role="user", content=ADDITIONAL_FUNCTION_PROMPT))
            else:
                self.messages.append(Message(role="user", content=f"{held}\n{ADDITIONAL_FUNCTION_PROMPT}"))
            return
        if index == 0 and self.mode == "prompt":
            first = _as_bfcl_entry(self.entry, self.entry.functions, [user_messages])
            self.messages += bfcl_prompt_messages(first)
            return
        self.messages += [Message(role=m.get("role", "user"), content=m.get("content")) for m in user_messages]

    def gold(self, calls: list[Call], answer: str = "") -> AssistantTurn:
        """The ground truth's reply at a step: the turn's calls at its first step, then (and in empty turns) text."""
        if not calls:
            return AssistantTurn(content=answer, finish_reason="stop")
        if self.mode == "prompt":
            return AssistantTurn(content=render_python_calls(calls), finish_reason="stop")
        return AssistantTurn(
            tool_calls=[ToolCall(name=n, arguments=a, raw=json.dumps(a)) for n, a in calls], finish_reason="tool_calls"
        )

    def reply(self, turn: AssistantTurn) -> list[ToolCall]:
        """Record the model's reply; return its calls, or none when it does not decode to calls."""
        if self.mode == "native":
            self.messages.append(Message(role="assistant", content=turn.content or "", tool_calls=turn.tool_calls))
            return [] if any(c.parse_error for c in turn.tool_calls) else list(turn.tool_calls)
        self.messages.append(Message(role="assistant", content=turn.content or ""))
        return decode_step(turn.content or "", function_calling=False)

    def results(self, turn: int, step: int, calls: list[ToolCall], outputs: list[str]) -> None:
        """Give the step's results back: tool messages, or (prompting) one user message as BFCL formats it."""
        if self.mode == "prompt":
            shown = [
                {"role": "tool", "name": call_text(c.name, c.arguments), "content": out}
                for c, out in zip(calls, outputs, strict=True)
            ]
            self.messages.append(Message(role="user", content=repr(shown)))
            return
        for number, (call, output) in enumerate(zip(calls, outputs, strict=True)):
            call_id = call.id or f"call_{turn}_{step}_{number}"
            self.messages.append(Message(role="tool", content=output, tool_call_id=call_id, name=call.name))


def _as_bfcl_entry(
    entry: MultiTurnEntry, functions: list[dict[str, Any]], question: list[list[dict[str, Any]]]
) -> BfclEntry:
    # The AST side's converters serve here: BFCL's language hint, OpenAPI types and system prompt are the same.
    return BfclEntry(
        id=entry.id, category=entry.category, question=question, functions=functions, ground_truth=None, path="", line=0
    )


def _tools(entry: MultiTurnEntry, functions: list[dict[str, Any]], *, hint: bool) -> list[ToolSpec]:
    return bfcl_tools(_as_bfcl_entry(entry, functions, []), underscore_to_dot=True, language_hint=hint)


def call_text(name: str, arguments: dict[str, Any]) -> str:
    """A decoded call as BFCL's ``decoded_output_to_execution_list`` writes it (the name of a prompting result)."""
    return f"{name}({', '.join(f'{k}={_value_text(v)}' for k, v in arguments.items())})"


def _value_text(value: Any) -> str:
    if isinstance(value, dict):
        if value and all(isinstance(v, dict) for v in value.values()):
            name, args = next(iter(value.items()))
            return call_text(str(name), args)
        return "{" + ", ".join(f"'{k}': {_value_text(v)}" for k, v in value.items()) + "}"
    return repr(value)


def _sample_score(v: MultiTurnVerdict, result: BfclMultiTurnResult | None, error: str | None, size: int) -> SampleScore:
    metadata: dict[str, Any] = {
        "category": v.category,
        "turn_matched": v.turn_matched,
        "first_failing_turn": v.first_failing_turn,
        "state_difference": v.state_difference,
        "forced_end": result.forced_end if result is not None else False,
        **({"missing_prediction": True} if result is not None and result.missing else {}),
        "errors": [v.error_message] if v.error_message else [],
    }
    return entry_score(
        v.id,
        v.valid,
        v.error_type,
        size,
        turn_credit=v.turn_credit,
        explanation=None if v.valid else f"{v.error_type}: {v.error_message}",
        error=error,
        metadata=metadata,
    )
