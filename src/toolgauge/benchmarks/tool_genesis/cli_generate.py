"""``genesis generate``: turn each requirement into an MCP server (direct or code-agent).

``add_generate_command`` mounts the command on the ``genesis`` group (made in ``tool_genesis/cli.py``);
``build_generate`` makes the run (a :class:`~.options.GenesisOptions` with ``generate`` set, made by ``build``);
a stored run is rebuilt from its options as any Tool-Genesis run is (``benchmark.rebuild``). The final
``registry.json`` is the command's explicit output step (``registry_file.registry_writer``); scoring writes nothing.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from toolgauge.benchmarks.tool_genesis.generation import Strategy
from toolgauge.benchmarks.tool_genesis.options import MAX_STEPS, GenerateRun, GenesisOptions
from toolgauge.benchmarks.tool_genesis.registry_file import registry_writer
from toolgauge.cli.common import (
    EngineDefaults,
    RunFlags,
    UnsafeNoSandboxOpt,
    execute,
    resolved_model,
    run_command,
)

if TYPE_CHECKING:
    from toolgauge.benchmarks.tool_genesis.generate import GenesisGenerateBenchmark

GENERATE_DEFAULTS = EngineDefaults(concurrency=2, timeout=600.0, max_tokens=4096)


class StrategyChoice(StrEnum):
    """How the model builds a server."""

    direct = "direct"
    code_agent = "code-agent"


def build_generate(options: GenesisOptions) -> GenesisGenerateBenchmark:
    """The generation run of ``options`` (``generate`` set): servers written into ``out`` (``build`` makes it)."""
    from toolgauge.benchmarks.tool_genesis.build import build
    from toolgauge.benchmarks.tool_genesis.generate import GenesisGenerateBenchmark

    bench = build(options)
    assert isinstance(bench, GenesisGenerateBenchmark)
    return bench


def genesis_generate(
    data: Annotated[Path, typer.Option("--data", help="Tool-Genesis data file (a JSON array of servers).")],
    out: Annotated[Path, typer.Option("--out", help="Folder for <slug>/tools.json, <slug>/server.py, registry.json")],
    strategy: Annotated[
        StrategyChoice,
        typer.Option("--strategy", help="direct (one pass) or code-agent (write, launch, test; at most --max-steps)"),
    ] = StrategyChoice.direct,
    max_steps: Annotated[int, typer.Option("--max-steps", min=1, help="Model steps of the code agent.")] = MAX_STEPS,
    unsafe_no_sandbox: UnsafeNoSandboxOpt = False,
    *,
    flags: RunFlags,
) -> None:
    """Generate an MCP server (schema + Python code) for each requirement of a Tool-Genesis data file."""
    from toolgauge.benchmarks.tool_genesis.plan import is_gold

    settings = flags.call_settings()
    generate = GenerateRun(gold=is_gold(flags.model_spec), max_steps=max_steps, temperature=settings.temperature,
                           max_tokens=settings.max_tokens)  # fmt: skip
    chosen: Strategy = "code-agent" if strategy is StrategyChoice.code_agent else "direct"
    options = GenesisOptions(data=data, out=out, strategy=chosen, limit=flags.limit, generate=generate,
                             unsafe_no_sandbox=unsafe_no_sandbox)  # fmt: skip
    bench = build_generate(options)
    shown, client = resolved_model(bench, flags.model_spec, flags.timeout)
    outputs = {"registry": (bench.registry_path, registry_writer(bench.out_dir))}
    execute(bench, shown, flags, client=client, outputs=outputs, unit="server")


def add_generate_command(genesis_app: typer.Typer) -> None:
    """Mount ``genesis generate`` on the ``genesis`` group."""
    genesis_app.command("generate")(run_command(engine=GENERATE_DEFAULTS)(genesis_generate))
