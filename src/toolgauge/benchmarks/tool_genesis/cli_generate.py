"""``genesis generate``: turn each requirement into an MCP server (direct or code-agent)."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from toolgauge.benchmarks.tool_genesis.cli import UnsafeNoSandboxOpt, check_isolation, genesis_app
from toolgauge.cli import (
    ConcurrencyOpt,
    JsonOpt,
    LimitOpt,
    ModelOpt,
    NoCacheOpt,
    QuietOpt,
    ResumeOpt,
    RetriesOpt,
    SamplesOpt,
    StoreOpt,
    TempOpt,
    TimeoutOpt,
    _limit,
    execute,
    guarded,
    run_options,
)


class StrategyChoice(StrEnum):
    """How the model builds a server."""

    direct = "direct"
    code_agent = "code-agent"


@genesis_app.command("generate")
def genesis_generate(
    model: ModelOpt,
    data: Annotated[Path, typer.Option("--data", help="Tool-Genesis data file (a JSON array of servers).")],
    out: Annotated[Path, typer.Option("--out", help="Folder for <slug>/tools.json, <slug>/server.py, registry.json")],
    strategy: Annotated[
        StrategyChoice,
        typer.Option("--strategy", help="direct (one pass) or code-agent (write, launch, test; at most --max-steps)"),
    ] = StrategyChoice.direct,
    max_steps: Annotated[int, typer.Option("--max-steps", min=1, help="Model steps of the code agent.")] = 10,
    unsafe_no_sandbox: UnsafeNoSandboxOpt = False,
    store: StoreOpt = None,
    concurrency: ConcurrencyOpt = 2,
    timeout: TimeoutOpt = 600.0,
    max_retries: RetriesOpt = 4,
    no_cache: NoCacheOpt = False,
    resume: ResumeOpt = None,
    as_json: JsonOpt = False,
    samples: SamplesOpt = None,
    limit: LimitOpt = None,
    quiet: QuietOpt = False,
    temperature: TempOpt = 0.0,
    max_tokens: Annotated[int, typer.Option("--max-tokens", min=1, help="Max tokens per model reply.")] = 4096,
) -> None:
    """Generate an MCP server (schema + Python code) for each requirement of a Tool-Genesis data file."""

    def body() -> None:
        from toolgauge.benchmarks.tool_genesis.generate import GenesisGenerateBenchmark
        from toolgauge.benchmarks.tool_genesis.loader import load_genesis
        from toolgauge.records import GenerateOptions

        servers = _limit(load_genesis(data), limit)
        if strategy == StrategyChoice.code_agent and model != "gold":
            check_isolation(unsafe_no_sandbox)  # the code agent launches what it writes
        bench = GenesisGenerateBenchmark(
            servers,
            out_dir=out,
            strategy=strategy.value,
            data_label=str(data),
            gold=model == "gold",
            options=GenerateOptions(temperature=temperature, max_tokens=max_tokens),
            max_steps=max_steps,
        )
        opts = run_options(
            store=store, concurrency=concurrency, timeout=timeout, max_retries=max_retries,
            no_cache=no_cache, resume=resume, quiet=quiet,
        )  # fmt: skip
        execute(bench, model, opts, as_json=as_json, samples=samples)

    guarded(body)
