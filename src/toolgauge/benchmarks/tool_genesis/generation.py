"""What one server's generation produced: the server record plus the model's steps (the stored episode result)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from toolgauge.benchmarks.tool_genesis.records import GeneratedServer
from toolgauge.records import ToolCall

Strategy = Literal["direct", "code-agent"]


class GenerationStep(BaseModel):
    """One model step of a generation: what the model said or called, and what it observed."""

    step: int
    content: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    observations: list[str] = Field(default_factory=list)


class GenerationResult(BaseModel):
    """One server's generation: the files (or the error) plus the model's raw outputs."""

    server: GeneratedServer
    strategy: Strategy
    gold: bool = False
    steps: list[GenerationStep] = Field(default_factory=list)
    finished: bool = False
    model_error: str | None = None

    @property
    def raw_outputs(self) -> list[str]:
        """The model's text output per step."""
        return [s.content or "" for s in self.steps]
