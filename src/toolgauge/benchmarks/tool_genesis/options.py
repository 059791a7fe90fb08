"""The options of a Tool-Genesis run (``eval tool-genesis``) and of scoring a registry (``genesis evaluate``).

One model, :class:`GenesisOptions`, defines every Tool-Genesis run and is what a run stores: ``eval tool-genesis``
generates the servers with the evaluated model (``model``, set from ``--model``), ``genesis evaluate`` scores a
registry (``pred``), and ``genesis generate`` only writes servers (``generate``). The hidden fields are set by the
command that makes the run, or by ``build`` with what it found (the registry's tries), so ``rescore`` rebuilds
the run from its stored options alone.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field

from toolgauge.options import Cli, LimitOptions, OptionsModel

DATA_HELP = "Tool-Genesis data file (tool_genesis_v3.json or a subset; default: the cached official file)."
PRED_HELP = "registry.json, or a folder holding one (official layout)."
UNSAFE_HELP = (
    "DANGEROUS: run generated code even without bubblewrap (it can then read and write your files and secrets). "
    "Without it, generated code runs only under bubblewrap. See docs/sandbox.md."
)
GENERATE_MAX_TOKENS = 4096
MAX_STEPS = 10
"""Model steps of the code agent (the paper's limit)."""


class GenerateRun(OptionsModel):
    """What a ``genesis generate`` run (servers written, not scored) is asked with."""

    gold: bool = Field(False, description="Write the reference servers instead of asking the model.")
    max_steps: int = Field(MAX_STEPS, ge=1, description="Model steps of the code agent.")
    temperature: float = Field(0.0, ge=0.0, description="Sampling temperature.")
    max_tokens: int = Field(GENERATE_MAX_TOKENS, ge=1, description="Max tokens per model reply.")


class _ScoringOptions(LimitOptions):
    """The options of scoring servers on L1–L4, whoever generated them."""

    data: Path | None = Field(None, description=DATA_HELP)
    variant: Literal["reference", "strict"] = Field(
        "reference", description="reference (the official code, quirks included) or strict"
    )
    agent_model: str | None = Field(None, description="Model spec of the L4 proxy agent (default: see docs/cli.md).")
    judge_model: str | None = Field(None, description="Model spec of the L4 judge (L4 needs one).")
    skip_l4: bool = Field(False, description="Do not run L4 (task success); recorded as skipped.")
    call_timeout: float = Field(30.0, ge=0.1, description="Seconds per MCP tool call.")
    # How the run may run generated code, not what defines it: not stored with the run.
    unsafe_no_sandbox: bool = Field(False, exclude=True, description=UNSAFE_HELP)


class GenesisEvaluateOptions(_ScoringOptions):
    """Score generated MCP servers (toolgauge's or the official pipeline's registry.json) on L1–L4."""

    pred: Path = Field(description=PRED_HELP)


class GenesisOptions(_ScoringOptions):
    """Generate a server per requirement with a model (or the gold servers), then score them on L1–L4."""

    strategy: Literal["direct", "code-agent"] = Field(
        "direct", description="direct (one pass) or code-agent (ReAct, at most 10 steps)"
    )
    out: Path | None = Field(
        None, description="Folder for the generated servers (default .toolgauge/genesis/<model>-<strategy>)"
    )
    model: Annotated[str | None, Cli(hidden=True)] = Field(
        None, description="The evaluated model's spec, which generates the servers (gold: the reference servers)."
    )
    pred: Annotated[Path | None, Cli(hidden=True)] = Field(
        None, description=f"Score this registry instead of generating servers: {PRED_HELP}"
    )
    registry_tries: Annotated[list[tuple[str, str]] | None, Cli(hidden=True)] = Field(
        None, description="The registry's samples as (key, server) where it holds tries (<slug>@e<e>); set by the run."
    )
    generate: Annotated[GenerateRun | None, Cli(hidden=True)] = Field(
        None, description="Only write the servers (genesis generate), asked with these options."
    )
