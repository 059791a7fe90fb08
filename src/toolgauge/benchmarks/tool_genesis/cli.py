"""``genesis evaluate`` and ``eval tool-genesis``; ``genesis generate`` lives in ``genesis_generate``."""

from __future__ import annotations

import re
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

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
    TimeoutOpt,
    Variant,
    _limit,
    app,
    eval_app,
    execute,
    guarded,
    out,
    run_options,
)

if TYPE_CHECKING:
    from toolgauge.benchmarks.tool_genesis.protocol import L4Settings
    from toolgauge.models.base import ModelClient

genesis_app = typer.Typer(
    help="Tool-Genesis: generate MCP servers from requirements and evaluate them.", no_args_is_help=True
)
app.add_typer(genesis_app, name="genesis")


class GenStrategy(StrEnum):
    """How the evaluated model builds a server."""

    direct = "direct"
    code_agent = "code-agent"


DataOpt = Annotated[Path, typer.Option("--data", help="Tool-Genesis data file (tool_genesis_v3.json or a subset).")]
AgentOpt = Annotated[
    str | None, typer.Option("--agent-model", help="Model spec of the L4 proxy agent (default: see docs/cli.md).")
]
JudgeOpt = Annotated[str | None, typer.Option("--judge-model", help="Model spec of the L4 judge (L4 needs one).")]
SkipL4Opt = Annotated[bool, typer.Option("--skip-l4", help="Do not run L4 (task success); recorded as skipped.")]
VariantOpt = Annotated[
    Variant, typer.Option("--variant", help="reference (the official code, quirks included) or strict")
]
CallTimeoutOpt = Annotated[float, typer.Option("--call-timeout", min=0.1, help="Seconds per MCP tool call.")]
UnsafeNoSandboxOpt = Annotated[
    bool,
    typer.Option(
        "--unsafe-no-sandbox",
        help="DANGEROUS: run generated servers even without bubblewrap (they can then read and write your "
        "files and secrets). Without it, generated code runs only under bubblewrap. See docs/sandbox.md.",
    ),
]


def check_isolation(unsafe_no_sandbox: bool) -> None:
    """Refuse to run generated code without bubblewrap unless the opt-out was given (one line, exit 2).

    With the opt-out a loud warning is printed on stderr, and the rest of the run may launch servers
    without isolation.
    """
    from toolgauge.sandbox import allow_unisolated, require_isolation

    if unsafe_no_sandbox:
        allow_unisolated(True)
    require_isolation(allow_unsafe=unsafe_no_sandbox)


def _l4_settings(
    *, skip: bool, agent: str | None, judge: str | None, default_agent: str | None
) -> tuple[L4Settings, str | None, str | None]:
    from toolgauge.benchmarks.tool_genesis.protocol import L4Settings

    agent = agent or default_agent
    if skip:
        return L4Settings(skip_reason="--skip-l4 given"), None, None
    if agent is None:
        return L4Settings(skip_reason="no agent model (give --agent-model)"), None, None
    if judge is None:
        return L4Settings(skip_reason="no judge model (give --judge-model)"), None, None
    return L4Settings(), agent, judge


def _roles(
    agent: str | None, judge: str | None, evaluated: ModelClient, evaluated_spec: str, timeout: float
) -> dict[str, ModelClient]:
    from toolgauge.models.spec import resolve_model

    clients: dict[str, ModelClient] = {evaluated_spec: evaluated}
    roles: dict[str, ModelClient] = {}
    for role, spec in (("agent", agent), ("judge", judge)):
        if spec is None:
            continue
        if spec not in clients:
            clients[spec] = resolve_model(spec, timeout=timeout)
        roles[role] = clients[spec]
    return roles


def _check_embeddings() -> None:
    from toolgauge.embeddings.minilm import load_embedder

    load_embedder()  # a UsageError with the install hint when the extra is missing


@genesis_app.command("evaluate")
def genesis_evaluate(
    data: DataOpt,
    pred: Annotated[Path, typer.Option("--pred", help="registry.json, or a folder holding one (official layout).")],
    variant: VariantOpt = Variant.reference,
    agent_model: AgentOpt = None,
    judge_model: JudgeOpt = None,
    skip_l4: SkipL4Opt = False,
    call_timeout: CallTimeoutOpt = 30.0,
    unsafe_no_sandbox: UnsafeNoSandboxOpt = False,
    store: StoreOpt = None,
    concurrency: ConcurrencyOpt = 2,
    timeout: TimeoutOpt = 120.0,
    max_retries: RetriesOpt = 4,
    no_cache: NoCacheOpt = False,
    resume: ResumeOpt = None,
    as_json: JsonOpt = False,
    samples: SamplesOpt = None,
    limit: LimitOpt = None,
    quiet: QuietOpt = False,
) -> None:
    """Score generated MCP servers (toolgauge's or the official pipeline's registry.json) on L1–L4."""

    def body() -> None:
        from toolgauge.benchmarks.tool_genesis.loader import load_genesis, load_registry, registry_file
        from toolgauge.benchmarks.tool_genesis.protocol import GenesisBenchmark, pair_registry
        from toolgauge.models.offline import GoldClient

        servers = _limit(load_genesis(data), limit)
        registry = load_registry(pred)
        check_isolation(unsafe_no_sandbox)
        paired, warnings = pair_registry(servers, registry)
        l4, agent, judge = _l4_settings(skip=skip_l4, agent=agent_model, judge=judge_model, default_agent=None)
        _check_embeddings()
        bench = GenesisBenchmark(
            paired,
            data_label=str(data),
            variant=variant.value,
            source="registry",
            l4=l4,
            call_timeout=call_timeout,
            warnings=warnings,
        )
        placeholder = GoldClient()  # nothing asks the evaluated model here; only agent and judge roles
        label = f"registry:{registry_file(pred)}"
        opts = run_options(
            store=store, concurrency=concurrency, timeout=timeout, max_retries=max_retries,
            no_cache=no_cache, resume=resume, quiet=quiet,
        )  # fmt: skip
        roles = _roles(agent, judge, placeholder, label, timeout)
        execute(bench, label, opts, as_json=as_json, samples=samples, client=placeholder, roles=roles, unit="server")

    guarded(body)


def default_out_dir(model: str, strategy: str) -> Path:
    """Where ``eval tool-genesis`` writes generated servers when ``--out`` is not given."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", model).strip("_") or "model"
    return Path(".toolgauge") / "genesis" / f"{safe}-{strategy}"


@eval_app.command("tool-genesis")
def eval_tool_genesis(
    model: ModelOpt,
    data: DataOpt,
    strategy: Annotated[
        GenStrategy, typer.Option("--strategy", help="direct (one pass) or code-agent (ReAct, at most 10 steps)")
    ] = GenStrategy.direct,
    out_dir: Annotated[
        Path | None,
        typer.Option("--out", help="Folder for the generated servers (default .toolgauge/genesis/<model>-<strategy>)"),
    ] = None,
    variant: VariantOpt = Variant.reference,
    agent_model: AgentOpt = None,
    judge_model: JudgeOpt = None,
    skip_l4: SkipL4Opt = False,
    call_timeout: CallTimeoutOpt = 30.0,
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
) -> None:
    """Generate a server per requirement with a model (or the gold servers), then score them on L1–L4."""

    def body() -> None:
        from toolgauge.benchmarks.tool_genesis.loader import load_genesis
        from toolgauge.benchmarks.tool_genesis.protocol import GenesisBenchmark, GenesisSample
        from toolgauge.models.spec import resolve_model

        servers = _limit(load_genesis(data), limit)
        check_isolation(unsafe_no_sandbox)
        gold = model.strip() == "gold"
        folder = out_dir or default_out_dir(model, "gold" if gold else strategy.value)
        l4, agent, judge = _l4_settings(
            skip=skip_l4, agent=agent_model, judge=judge_model, default_agent=None if gold else model
        )
        _check_embeddings()
        bench = GenesisBenchmark(
            [GenesisSample(server=s) for s in servers],
            data_label=str(data),
            variant=variant.value,
            source="gold" if gold else "generate",
            out_dir=folder,
            strategy=strategy.value,
            l4=l4,
            call_timeout=call_timeout,
        )
        client = resolve_model(model, timeout=timeout)
        opts = run_options(
            store=store, concurrency=concurrency, timeout=timeout, max_retries=max_retries,
            no_cache=no_cache, resume=resume, quiet=quiet,
        )  # fmt: skip
        roles = _roles(agent, judge, client, model, timeout)
        execute(bench, model, opts, as_json=as_json, samples=samples, client=client, roles=roles, unit="server")
        if not as_json:
            out.print(f"generated servers: {folder} (registry: {folder / 'registry.json'})")

    guarded(body)
