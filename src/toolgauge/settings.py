"""Generation settings a user chooses on the command line, shared by the calling protocols."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel

from toolgauge.records import GenerateOptions, ToolCall

ToolChoiceMode = Literal["auto", "none", "expected"]
ReasoningEffort = Literal["minimal", "low", "medium", "high"]


class CallSettings(BaseModel):
    """Sampling settings plus how tool choice is set.

    ``expected`` forces the first expected tool by name (and ``none`` where no call is
    expected): it isolates argument filling and makes small local models deterministic.
    """

    temperature: float = 0.0
    max_tokens: int = 512
    tool_choice: ToolChoiceMode = "auto"
    top_p: float | None = None
    seed: int | None = None
    stop: tuple[str, ...] | None = None
    reasoning_effort: ReasoningEffort | None = None
    thinking_budget: int | None = None
    extra_body: dict[str, Any] | None = None
    # Send no sampling option (temperature, top_p): each provider's defaults, the WildToolBench paper's setting.
    provider_defaults: bool = False

    def options_for(self, expected: list[ToolCall]) -> GenerateOptions:
        """Return the request options for a step whose reference calls are ``expected``."""
        choice: str | None
        if self.tool_choice == "expected":
            choice = expected[0].name if expected else "none"
        elif self.tool_choice == "none":
            choice = "none"
        else:
            choice = None
        return GenerateOptions(
            temperature=None if self.provider_defaults else self.temperature,
            top_p=None if self.provider_defaults else self.top_p,
            max_tokens=self.max_tokens,
            tool_choice=choice,
            seed=self.seed,
            stop=self.stop,
            reasoning_effort=self.reasoning_effort,
            thinking_budget=self.thinking_budget,
            extra_body=self.extra_body,
        )
