"""What a Tool-Genesis run's options decide before anything runs: where its servers come from, and whether L4 runs.

Both the protocol (which keeps them) and :mod:`.build` (which reports and migrates them) read these.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from toolgauge.benchmarks.tool_genesis.options import GenesisOptions

Source = Literal["registry", "generate", "gold"]


@dataclass
class L4Settings:
    """Whether and how L4 runs: ``skip_reason`` set means it does not."""

    skip_reason: str | None = None
    max_steps: int = 10


@dataclass(frozen=True)
class L4Plan:
    """Whether L4 runs, and the model specs of its agent and judge (None when it does not run)."""

    settings: L4Settings
    agent: str | None = None
    judge: str | None = None


def is_gold(model: str | None) -> bool:
    """Whether ``model`` is the gold model (the reference servers, nothing generated)."""
    return model is not None and model.strip() == "gold"


def l4_plan(options: GenesisOptions) -> L4Plan:
    """L4 runs unless skipped when an agent (``agent_model``, else a generating model) and a judge are known."""
    generating = options.pred is None and options.model is not None and not is_gold(options.model)
    agent = options.agent_model or (options.model if generating else None)
    if options.skip_l4:
        return L4Plan(L4Settings(skip_reason="--skip-l4 given"))
    if agent is None:
        return L4Plan(L4Settings(skip_reason="no agent model (give --agent-model)"))
    if options.judge_model is None:
        return L4Plan(L4Settings(skip_reason="no judge model (give --judge-model)"))
    return L4Plan(L4Settings(), agent, options.judge_model)


def source_of(options: GenesisOptions) -> Source:
    """Where a run's servers come from: a registry, the gold servers, or the evaluated model."""
    return "registry" if options.pred is not None else ("gold" if is_gold(options.model) else "generate")
