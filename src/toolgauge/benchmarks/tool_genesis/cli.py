"""``genesis evaluate`` and ``eval tool-genesis``; ``build`` makes the run for the CLI and the Python API.

``genesis generate`` lives in ``cli_generate`` and is mounted on the same ``genesis`` group here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer

from toolgauge.benchmark import CommandGroups
from toolgauge.benchmarks.tool_genesis.cli_generate import StrategyChoice, add_generate_command
from toolgauge.benchmarks.tool_genesis.cli_sft import add_sft_command
from toolgauge.cli.common import (
    EngineDefaults,
    RunFlags,
    UnsafeNoSandboxOpt,
    Variant,
    check_isolation,
    execute,
    out,
    run_command,
)
from toolgauge.datasets.resolve import data_or_official
from toolgauge.errors import UsageError
from toolgauge.selection import existing_data, limit_items

if TYPE_CHECKING:
    from toolgauge.benchmarks.tool_genesis.generate import GenesisGenerateBenchmark
    from toolgauge.benchmarks.tool_genesis.metrics.schema import GenesisVariant
    from toolgauge.benchmarks.tool_genesis.protocol import GenesisBenchmark, L4Settings, Source
    from toolgauge.embeddings.base import Embedder
    from toolgauge.models.base import ModelClient
    from toolgauge.sandbox import SandboxLimits

# Servers are slow samples: two at once, and a generation request may take minutes.
EVALUATE_ENGINE = EngineDefaults(concurrency=2, timeout=120.0)
EVAL_ENGINE = EngineDefaults(concurrency=2, timeout=600.0)


DataOpt = Annotated[
    Path | None,
    typer.Option(
        "--data", help="Tool-Genesis data file (tool_genesis_v3.json or a subset; default: the cached official file)."
    ),
]
AgentOpt = Annotated[
    str | None, typer.Option("--agent-model", help="Model spec of the L4 proxy agent (default: see docs/cli.md).")
]
JudgeOpt = Annotated[str | None, typer.Option("--judge-model", help="Model spec of the L4 judge (L4 needs one).")]
SkipL4Opt = Annotated[bool, typer.Option("--skip-l4", help="Do not run L4 (task success); recorded as skipped.")]
VariantOpt = Annotated[
    Variant, typer.Option("--variant", help="reference (the official code, quirks included) or strict")
]
CallTimeoutOpt = Annotated[float, typer.Option("--call-timeout", min=0.1, help="Seconds per MCP tool call.")]


@dataclass(frozen=True)
class L4Plan:
    """Whether L4 runs, and the model specs of its agent and judge (None when it does not run)."""

    settings: L4Settings
    agent: str | None = None
    judge: str | None = None


def l4_plan(*, skip: bool, agent: str | None, judge: str | None, default_agent: str | None) -> L4Plan:
    """L4 runs when it is not skipped and both an agent (given or ``default_agent``) and a judge are known."""
    from toolgauge.benchmarks.tool_genesis.protocol import L4Settings

    agent = agent or default_agent
    if skip:
        return L4Plan(L4Settings(skip_reason="--skip-l4 given"))
    if agent is None:
        return L4Plan(L4Settings(skip_reason="no agent model (give --agent-model)"))
    if judge is None:
        return L4Plan(L4Settings(skip_reason="no judge model (give --judge-model)"))
    return L4Plan(L4Settings(), agent, judge)


def role_specs(options: Mapping[str, Any], model: str) -> dict[str, str]:
    """The ``agent`` and ``judge`` specs of a run that ``build(**options)`` makes for ``model``: the CLI's plan.

    As ``genesis evaluate`` (``pred`` given: no default agent) and ``eval tool-genesis`` (the evaluated model
    is the default agent unless it is ``gold``) decide them; empty when L4 does not run.
    """
    registry = options.get("pred") is not None
    default_agent = None if registry or model.strip() == "gold" else model
    plan = l4_plan(
        skip=bool(options.get("skip_l4", False)), agent=options.get("agent_model"),
        judge=options.get("judge_model"), default_agent=default_agent,
    )  # fmt: skip
    return {role: spec for role, spec in (("agent", plan.agent), ("judge", plan.judge)) if spec is not None}


def default_out_dir(model: str, strategy: str) -> Path:
    """Where ``eval tool-genesis`` writes generated servers when ``--out`` is not given."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", model).strip("_") or "model"
    return Path(".toolgauge") / "genesis" / f"{safe}-{strategy}"


def _variant(value: str | Variant) -> GenesisVariant:
    if value not in ("reference", "strict"):
        raise UsageError(f"variant {value!r}: tool-genesis has the variants reference, strict")
    return "reference" if value == "reference" else "strict"


def build(
    *,
    data: str | Path | None = None,
    pred: str | Path | None = None,
    model: str | None = None,
    strategy: Literal["direct", "code-agent"] = "direct",
    out: str | Path | None = None,
    variant: GenesisVariant = "reference",
    skip_l4: bool = False,
    agent_model: str | None = None,
    judge_model: str | None = None,
    call_timeout: float = 30.0,
    limit: int | None = None,
    embedder: Embedder | None = None,
    limits: SandboxLimits | None = None,
) -> GenesisBenchmark:
    """The Tool-Genesis evaluation of the first ``limit`` servers of ``data`` (None: the cached official file).

    With ``pred`` (a ``registry.json`` or a folder holding one) it scores those servers (``genesis
    evaluate``); otherwise ``model`` generates them into ``out`` (``gold``: the reference servers) and
    they are scored in the same run (``eval tool-genesis``). L4 runs unless ``skip_l4``, when an agent
    (``agent_model``, else the evaluated model unless it is ``gold`` or a registry) and a ``judge_model``
    are given; the caller supplies their clients as the ``agent`` and ``judge`` roles.
    """
    from toolgauge.benchmarks.tool_genesis.loader import load_genesis, load_registry
    from toolgauge.benchmarks.tool_genesis.protocol import GenesisBenchmark, GenesisSample, pair_registry

    if strategy not in ("direct", "code-agent"):
        raise UsageError(f"strategy {strategy!r}: use direct or code-agent")
    data = existing_data(data_or_official("tool-genesis", data))
    servers = limit_items(load_genesis(data), limit)
    warnings: list[str] = []
    out_dir: Path | None = None
    source: Source
    if pred is not None:
        samples, warnings = pair_registry(servers, load_registry(Path(pred)))
        source, default_agent = "registry", None
    elif model is None:
        raise UsageError("give a registry to score (pred) or a model to generate the servers (model)")
    else:
        samples = [GenesisSample(server=s) for s in servers]
        gold = model.strip() == "gold"
        source, default_agent = ("gold", None) if gold else ("generate", model)
        out_dir = Path(out) if out is not None else default_out_dir(model, "gold" if gold else strategy)
    plan = l4_plan(skip=skip_l4, agent=agent_model, judge=judge_model, default_agent=default_agent)
    return GenesisBenchmark(
        samples,
        data_label=str(data),
        variant=_variant(variant),
        source=source,
        out_dir=out_dir,
        strategy=strategy,
        l4=plan.settings,
        embedder=embedder,
        limits=limits,
        call_timeout=call_timeout,
        warnings=warnings,
    )


def rescore(config: Mapping[str, Any], variant: str | None) -> GenesisBenchmark | GenesisGenerateBenchmark:
    """Rebuild a stored evaluation's benchmark from its config, to score its stored per-server results again.

    Scoring reads only the stored results (verdicts, launches, schema matches, unit-test and task
    verdicts): no server is launched and no model asked. The data file must still be there. Another
    variant cannot be rescored: it routes, runs and compares the unit tests differently (and restarts
    stateful servers), so it needs the servers run again.
    """
    from toolgauge.benchmarks.tool_genesis.loader import load_genesis
    from toolgauge.benchmarks.tool_genesis.protocol import GenesisBenchmark, GenesisSample, L4Settings

    if "source" not in config:  # a genesis generate run: its counts and failures, from the stored records
        from toolgauge.benchmarks.tool_genesis.cli_generate import rescore_generate

        return rescore_generate(config, variant)
    stored = _variant(str(config["variant"]))
    if variant is not None and variant != stored:
        raise UsageError(
            f"this run was evaluated with --variant {stored}; the {variant} variant routes, runs and compares the "
            f"unit tests differently, so it needs the servers run again: genesis evaluate --variant {variant}"
        )
    servers = load_genesis(Path(str(config["data"])))[: int(config["n"])]
    samples = [GenesisSample(server=s) for s in servers]
    if config.get("samples"):  # a registry holding tries (<slug>@e<e>): its samples by key and server
        by_slug = {s.server_slug: s for s in servers}
        samples = [
            GenesisSample(server=by_slug[slug], key=None if key == slug else key) for key, slug in config["samples"]
        ]
    source: Source = config["source"]
    if source not in ("registry", "generate", "gold"):
        raise UsageError(f"the stored run has an unknown source {source!r}")
    skipped = None if config.get("l4") else str(config.get("l4_skipped") or "L4 not run")
    out_dir = config.get("out")
    return GenesisBenchmark(
        samples,
        data_label=str(config["data"]),
        variant=stored,
        source=source,
        out_dir=Path(out_dir) if out_dir else None,
        strategy=config.get("strategy") or "direct",
        l4=L4Settings(skip_reason=skipped),
        call_timeout=float(config.get("call_timeout", 30.0)),
    )


def _roles(
    agent: str | None, judge: str | None, evaluated: ModelClient, evaluated_spec: str, timeout: float
) -> dict[str, ModelClient]:
    """The ``agent`` and ``judge`` clients; a spec equal to another role's (or the evaluated model's) shares it."""
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


def genesis_evaluate(
    pred: Annotated[Path, typer.Option("--pred", help="registry.json, or a folder holding one (official layout).")],
    data: DataOpt = None,
    variant: VariantOpt = Variant.reference,
    agent_model: AgentOpt = None,
    judge_model: JudgeOpt = None,
    skip_l4: SkipL4Opt = False,
    call_timeout: CallTimeoutOpt = 30.0,
    unsafe_no_sandbox: UnsafeNoSandboxOpt = False,
    *,
    flags: RunFlags,
) -> None:
    """Score generated MCP servers (toolgauge's or the official pipeline's registry.json) on L1–L4."""
    from toolgauge.benchmarks.tool_genesis.loader import registry_file
    from toolgauge.models.offline import NoModel

    bench = build(
        data=data, pred=pred, variant=_variant(variant), skip_l4=skip_l4, agent_model=agent_model,
        judge_model=judge_model, call_timeout=call_timeout, limit=flags.limit,
    )  # fmt: skip
    check_isolation(unsafe_no_sandbox)
    plan = l4_plan(skip=skip_l4, agent=agent_model, judge=judge_model, default_agent=None)
    _check_embeddings()
    label = f"registry:{registry_file(pred)}"
    evaluated = NoModel(label)  # the servers were generated elsewhere; only the agent and judge roles are asked
    roles = _roles(plan.agent, plan.judge, evaluated, label, flags.timeout)
    execute(bench, label, flags, client=evaluated, roles=roles, unit="server")


def eval_tool_genesis(
    data: DataOpt = None,
    strategy: Annotated[
        StrategyChoice, typer.Option("--strategy", help="direct (one pass) or code-agent (ReAct, at most 10 steps)")
    ] = StrategyChoice.direct,
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
    *,
    flags: RunFlags,
) -> None:
    """Generate a server per requirement with a model (or the gold servers), then score them on L1–L4."""
    from toolgauge.cli.common import resolved_model

    model = flags.model_spec
    bench = build(
        data=data, model=model, strategy="code-agent" if strategy is StrategyChoice.code_agent else "direct",
        out=out_dir, variant=_variant(variant), skip_l4=skip_l4, agent_model=agent_model, judge_model=judge_model,
        call_timeout=call_timeout, limit=flags.limit,
    )  # fmt: skip
    check_isolation(unsafe_no_sandbox)
    gold = model.strip() == "gold"
    plan = l4_plan(skip=skip_l4, agent=agent_model, judge=judge_model, default_agent=None if gold else model)
    _check_embeddings()
    shown, client = resolved_model(bench, model, flags.timeout)
    roles = _roles(plan.agent, plan.judge, client, model, flags.timeout)
    execute(bench, shown, flags, client=client, roles=roles, unit="server")
    if not flags.as_json and bench.out_dir is not None:
        out.print(f"generated servers: {bench.out_dir} (registry: {bench.out_dir / 'registry.json'})", highlight=False)


def add_commands(groups: CommandGroups) -> None:
    """Mount the ``genesis`` group (``generate``, ``evaluate``) and ``eval tool-genesis``."""
    genesis_app = typer.Typer(
        help="Tool-Genesis: generate MCP servers from requirements and evaluate them.", no_args_is_help=True
    )
    groups.root.add_typer(genesis_app, name="genesis")
    add_generate_command(genesis_app)
    add_sft_command(genesis_app)
    evaluate = run_command(model=False, engine=EVALUATE_ENGINE, sampling=False, epochs=False)
    genesis_app.command("evaluate")(evaluate(genesis_evaluate))
    eval_command = run_command(engine=EVAL_ENGINE, sampling=False)
    groups.eval.command("tool-genesis")(eval_command(eval_tool_genesis))
