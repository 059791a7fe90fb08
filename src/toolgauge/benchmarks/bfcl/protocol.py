"""BFCL AST categories: one model step per entry, scored with BFCL's checker rules."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from toolgauge.benchmarks.bfcl.io import (
    assistant_turn_to_bfcl_output,
    bfcl_gold_turn,
    bfcl_native_messages,
    bfcl_prompt_messages,
    bfcl_tools,
)
from toolgauge.benchmarks.bfcl.loader import BfclEntry, load_bfcl_results
from toolgauge.benchmarks.bfcl.metrics import check_bfcl_entry, score_bfcl, summarise_bfcl
from toolgauge.driver import ScoredRun
from toolgauge.engine import EpisodeContext, SampleOutcome
from toolgauge.errors import DataError
from toolgauge.records import AssistantTurn, ToolCall
from toolgauge.settings import CallSettings

BfclMode = Literal["prompt", "native", "replay"]
_RESULT_FILE = re.compile(r"BFCL_v\d+_(?P<category>.+)_result\.json$")


class BfclResult(BaseModel):
    """The model's output for one entry, in BFCL's result form (text, or ``[{name: args}]``)."""

    output: str | list[dict[str, Any]] = ""
    content: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)


def categories_with_results(path: Path) -> list[str]:
    """Categories that have a ``BFCL_v4_<category>_result.json`` at or under ``path``."""
    if not path.exists():
        raise DataError(str(path), "no such file or folder")
    files = [path] if path.is_file() else sorted(path.rglob("*_result.json"))
    found = []
    for f in files:
        m = _RESULT_FILE.search(f.name)
        if m and m.group("category") not in found:
            found.append(m.group("category"))
    if not found:
        raise DataError(str(path), "no BFCL result files (BFCL_v4_<category>_result.json) found")
    return found


class BfclBenchmark:
    """BFCL's AST categories."""

    name = "bfcl"
    result_type = BfclResult

    def __init__(
        self,
        entries: Sequence[BfclEntry],
        *,
        data_label: str,
        mode: BfclMode = "native",
        underscore_to_dot: bool | None = None,
        settings: CallSettings | None = None,
    ):
        self.entries = list(entries)
        self.data_label = data_label
        self.mode: BfclMode = mode
        self.underscore_to_dot_override = underscore_to_dot
        self.settings = settings or CallSettings()
        self._replayed: dict[str, str | list[dict[str, Any]]] = {}

    def _underscore_to_dot(self, output: str | list[dict[str, Any]] | None = None) -> bool:
        # BFCL decides by the model's registry entry; we decide by the output style unless told.
        if self.underscore_to_dot_override is not None:
            return self.underscore_to_dot_override
        if self.mode == "replay":
            return isinstance(output, list)
        return self.mode == "native"

    def samples(self) -> list[tuple[str, BfclEntry]]:
        """Entries keyed by BFCL id."""
        return [(e.id, e) for e in self.entries]

    def config(self) -> dict[str, Any]:
        """Settings that define the run."""
        return {
            "data": self.data_label,
            "mode": self.mode,
            "underscore_to_dot": self.underscore_to_dot_override,
            "categories": sorted({e.category for e in self.entries}),
            "n": len(self.entries),
            **self.settings.model_dump(),
        }

    async def episode(self, sample: BfclEntry, ctx: EpisodeContext) -> BfclResult:
        """Ask once, as BFCL's FC or prompting handlers would."""
        if self.mode == "replay":
            turn = await ctx.generate([], None, None)
            recorded = self._replayed.get(sample.id, "")
            return BfclResult(output=recorded, content=turn.content, tool_calls=turn.tool_calls)
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
        """Score every entry; a failed sample is an empty reply."""
        by_key = {o.key: o for o in outcomes}
        entries = [e for _, e in samples]
        outputs: dict[str, str | list[dict[str, Any]]] = {}
        for key, _entry in samples:
            outcome = by_key.get(key)
            if outcome is not None and outcome.result is not None:
                outputs[key] = outcome.result.output
        if self.mode == "replay" and self.underscore_to_dot_override is None:
            # Recorded outputs: function-calling lists are checked with underscore_to_dot, text without.
            ordered = [
                check_bfcl_entry(e, outputs.get(e.id, ""), underscore_to_dot=isinstance(outputs.get(e.id), list))
                for e in entries
            ]
            summary = summarise_bfcl(ordered, underscore_to_dot=any(isinstance(v, list) for v in outputs.values()))
            summary["underscore_to_dot"] = "by output style"
        else:
            scored = score_bfcl(entries, outputs, underscore_to_dot=self._underscore_to_dot())
            ordered, summary = scored.verdicts, scored.summary
        summary = {**summary, "benchmark": self.name, "mode": self.mode, "data": self.data_label}
        missing = self.missing_predictions_warning()
        if missing:
            summary["warnings"] = [*summary.get("warnings", []), missing]
        rows = []
        for (key, _entry), verdict in zip(samples, ordered, strict=True):
            outcome = by_key.get(key)
            rows.append(
                {
                    **verdict.model_dump(mode="json"),
                    "output": outputs.get(key),
                    "sample_error": outcome.error if outcome else "not run",
                }
            )
        return ScoredRun(summary=summary, rows=rows)

    def missing_predictions_warning(self) -> str | None:
        """In replay mode, say how many entries have no recorded result (they are scored as wrong)."""
        if self.mode != "replay":
            return None
        missing = [e.id for e in self.entries if e.id not in self._replayed]
        if not missing:
            return None
        return (
            f"predictions missing for {len(missing)} of {len(self.entries)} samples (scored as wrong); "
            f"first missing: {missing[0]}"
        )

    def replay_table(self, path: Path) -> Mapping[str, Sequence[AssistantTurn]]:
        """BFCL result files as turns (text as content, FC lists as tool calls).

        ``score bfcl`` (mode ``replay``) checks the recorded result itself, untouched, so odd
        shapes fail exactly as they fail in BFCL; the turns serve ``eval bfcl --model replay:``.
        """
        results = load_bfcl_results(path)
        wanted = {e.id for e in self.entries}
        self._replayed.update({rid: r.result for rid, r in results.items() if rid in wanted})
        return {rid: [_recorded_turn(r.result)] for rid, r in results.items()}


def _recorded_turn(result: str | list[dict[str, Any]]) -> AssistantTurn:
    if isinstance(result, str):
        return AssistantTurn(content=result)
    calls = []
    for item in result:
        if isinstance(item, dict) and item:
            name, args = next(iter(item.items()))
            raw = args if isinstance(args, str) else json.dumps(args)
            calls.append(ToolCall(name=str(name), raw=raw, arguments=args if isinstance(args, dict) else {}))
    return AssistantTurn(tool_calls=calls)
