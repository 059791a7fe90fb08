"""Generation settings a user chooses on the command line, shared by the calling protocols."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from toolgauge.records import GenerateOptions, ToolCall

ToolChoiceMode = Literal["auto", "none", "expected"]


class CallSettings(BaseModel):
    """Sampling settings plus how tool choice is set.

    ``expected`` forces the first expected tool by name (and ``none`` where no call is
    expected): it isolates argument filling and makes small local models deterministic.
    """

    temperature: float = 0.0
    max_tokens: int = 512
    tool_choice: ToolChoiceMode = "auto"

    def options_for(self, expected: list[ToolCall]) -> GenerateOptions:
        """Return the request options for a step whose reference calls are ``expected``."""
        choice: str | None
        if self.tool_choice == "expected":
            choice = expected[0].name if expected else "none"
        elif self.tool_choice == "none":
            choice = "none"
        else:
            choice = None
        return GenerateOptions(temperature=self.temperature, max_tokens=self.max_tokens, tool_choice=choice)
