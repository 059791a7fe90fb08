"""Make a Tool-Genesis run from its options (the CLI, the API, sweeps and ``rescore`` all come here).

:func:`build` makes a new run: it reads the data (and the registry it scores), refuses to run generated code
unsandboxed without the opt-out, and checks the embedder is installed. :func:`restore` makes a stored run again
from its options, to score its stored per-server results: no registry is read, no server launched, no model asked.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolgauge.benchmarks.tool_genesis.options import MAX_STEPS, GenerateRun, GenesisOptions
from toolgauge.benchmarks.tool_genesis.plan import is_gold, l4_plan
from toolgauge.datasets.resolve import data_or_official
from toolgauge.errors import UsageError
from toolgauge.selection import existing_data, limit_items

if TYPE_CHECKING:
    from toolgauge.benchmarks.tool_genesis.generate import GenesisGenerateBenchmark
    from toolgauge.benchmarks.tool_genesis.protocol import GenesisBenchmark, GenesisSample
    from toolgauge.tools import ServerLauncher

# A config stored before the options model kept whether L4 ran and the run's source, not the model specs that
# decided them: a migrated run names those models so, and they decide nothing else (rescore asks no model).
UNRECORDED = "unrecorded"


def role_specs(options: Mapping[str, Any], model: str) -> dict[str, str]:
    """The ``agent`` and ``judge`` specs of a run with ``options`` of ``model`` (``BenchmarkSpec.roles``).

    ``genesis evaluate`` (``pred`` given) has no default agent; ``eval tool-genesis`` makes the evaluated model
    the agent unless it is ``gold``. Empty when L4 does not run, and for a run that only generates.
    """
    if options.get("generate") is not None:
        return {}
    values = {k: v for k, v in options.items() if k in GenesisOptions.model_fields}
    plan = l4_plan(GenesisOptions.model_validate({**values, "model": values.get("model") or model}))
    return {role: spec for role, spec in (("agent", plan.agent), ("judge", plan.judge)) if spec is not None}


def default_out_dir(model: str, strategy: str) -> Path:
    """Where ``eval tool-genesis`` writes generated servers when ``--out`` is not given."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", model).strip("_") or "model"
    return Path(".toolgauge") / "genesis" / f"{safe}-{strategy}"


def generated_servers(bench: GenesisBenchmark) -> list[str]:
    """Where ``eval tool-genesis`` wrote its servers and their registry, said after the run (``after_run``)."""
    if bench.out_dir is None:  # a registry was scored: nothing was written
        return []
    return [f"generated servers: {bench.out_dir} (registry: {bench.out_dir / 'registry.json'})"]


def build(
    options: GenesisOptions | None = None, *, launcher: ServerLauncher | None = None
) -> GenesisBenchmark | GenesisGenerateBenchmark:
    """A new Tool-Genesis run of the first ``limit`` servers of ``options.data`` (None: the cached official file).

    With ``pred`` it scores that registry (``genesis evaluate``); with ``generate`` it only writes servers
    (``genesis generate``); otherwise ``model`` generates them into ``out`` (``gold``: the reference servers) and
    they are scored in the same run. The run is stored with what it found: the data file and the output folder
    resolved, the registry's tries.

    Raises:
        MissingDataPath, DataError: no data file, a bad data file or registry.
        UsageError: neither a registry nor a model; generated code would run unsandboxed without the opt-out;
            the embedder is not installed.
    """
    from toolgauge.benchmarks.tool_genesis.loader import load_genesis, load_registry, registry_file
    from toolgauge.benchmarks.tool_genesis.protocol import GenesisSample, pair_registry

    options = options if options is not None else GenesisOptions()
    data = existing_data(data_or_official("tool-genesis", options.data))
    servers = limit_items(load_genesis(data), options.limit)
    if options.generate is not None:
        return _generate_run(options, data, launcher)
    warnings: list[str] = []
    if options.pred is not None:
        samples, warnings = pair_registry(servers, load_registry(options.pred))
        tries = [(s.sample_key, s.server.server_slug) for s in samples] if any(s.key for s in samples) else None
        update: dict[str, Any] = {"pred": registry_file(options.pred).resolve(), "registry_tries": tries}
    elif options.model is None:
        raise UsageError("give a registry to score (pred) or a model to generate the servers (model)")
    else:
        samples = [GenesisSample(server=s) for s in servers]
        model = options.model.strip()
        out = options.out or default_out_dir(model, "gold" if is_gold(model) else options.strategy)
        update = {"out": out.resolve(), "model": _shown(model), "registry_tries": None}
    _check_isolation(options.unsafe_no_sandbox)
    _check_embeddings()
    return _benchmark(options.model_copy(update={"data": data, **update}), samples, warnings)


def restore(options: GenesisOptions) -> GenesisBenchmark | GenesisGenerateBenchmark:
    """A stored run made again from its options, to score its stored results (the data file must still be there).

    The registry is not read again: its samples are the first ``limit`` servers, or the stored tries.
    """
    from toolgauge.benchmarks.tool_genesis.loader import load_genesis
    from toolgauge.benchmarks.tool_genesis.protocol import GenesisSample

    data = Path(str(options.data))
    if options.generate is not None:
        return _generate_run(options, data, None)
    servers = limit_items(load_genesis(data), options.limit)
    samples = [GenesisSample(server=s) for s in servers]
    if options.registry_tries:
        by_slug = {s.server_slug: s for s in servers}
        samples = [
            GenesisSample(server=by_slug[slug], key=None if key == slug else key)
            for key, slug in options.registry_tries
        ]
    return _benchmark(options, samples, [])


def _benchmark(options: GenesisOptions, samples: Sequence[GenesisSample], warnings: list[str]) -> GenesisBenchmark:
    from toolgauge.benchmarks.tool_genesis.protocol import GenesisBenchmark

    return GenesisBenchmark(samples, options, data_label=str(options.data), warnings=warnings)


def _generate_run(options: GenesisOptions, data: Path, launcher: ServerLauncher | None) -> GenesisGenerateBenchmark:
    """The ``genesis generate`` run of ``options`` (``options.generate`` set): servers written into ``out``."""
    from toolgauge.benchmarks.tool_genesis.generate import GenesisGenerateBenchmark
    from toolgauge.benchmarks.tool_genesis.loader import load_genesis
    from toolgauge.records import GenerateOptions
    from toolgauge.tools import launch_mcp_backend

    generate = options.generate
    assert generate is not None
    if options.out is None:
        raise UsageError("genesis generate needs the folder to write the servers into (out)")
    if options.strategy == "code-agent" and not generate.gold:
        _check_isolation(options.unsafe_no_sandbox)  # the code agent launches what it writes
    stored = options.model_copy(update={"data": data, "out": options.out.resolve()})
    return GenesisGenerateBenchmark(
        limit_items(load_genesis(data), options.limit),
        out_dir=options.out,
        strategy=options.strategy,
        data_label=str(data),
        gold=generate.gold,
        options=GenerateOptions(temperature=generate.temperature, max_tokens=generate.max_tokens),
        max_steps=generate.max_steps,
        launcher=launcher or launch_mcp_backend,
        run_options=stored,
    )


def _shown(model: str) -> str:
    """The model spec as a run stores it (credentials left out)."""
    from toolgauge.models.spec import display_spec

    return display_spec(model)


def _check_isolation(unsafe_no_sandbox: bool) -> None:
    """Refuse to run generated code without bubblewrap unless the opt-out was given (then warn loudly)."""
    from toolgauge.sandbox import allow_unisolated, require_isolation

    if unsafe_no_sandbox:
        allow_unisolated(True)
    require_isolation(allow_unsafe=unsafe_no_sandbox)


def _check_embeddings() -> None:
    from toolgauge.embeddings.minilm import load_embedder

    load_embedder()  # a UsageError with the install hint when the extra is missing


def migrate_genesis_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """A Tool-Genesis config stored before the options model (main@ffe3fb4) as the model's fields.

    An evaluation kept its source, whether L4 ran (and why not), the first ``n`` servers and a registry's tries; a
    ``genesis generate`` run its generation options. The models that decided the source and L4 were not kept:
    they are named ``unrecorded`` (rescoring asks no model). (A config of today has a ``limit`` key.)
    """
    if "limit" in config:
        return dict(config)
    common = {"data": config["data"], "limit": int(config["n"])}
    if "source" not in config:  # a genesis generate run
        generate = GenerateRun(
            gold=bool(config.get("gold", False)),
            max_steps=int(config.get("max_steps", MAX_STEPS)),
            temperature=float(config.get("temperature") or 0.0),
            max_tokens=int(config.get("max_tokens") or GenerateRun().max_tokens),
        )
        strategy = config.get("strategy") or "direct"
        return {**common, "out": config["out"], "strategy": strategy, "generate": generate.model_dump()}
    source = str(config["source"])
    if source not in ("registry", "generate", "gold"):
        raise UsageError(f"the stored run has an unknown source {source!r}")
    values: dict[str, Any] = {
        **common,
        "variant": config["variant"],
        "call_timeout": float(config.get("call_timeout", 30.0)),
        "strategy": config.get("strategy") or "direct",
        "out": config.get("out"),
        "registry_tries": config.get("samples") or None,
    }
    if source == "registry":
        values["pred"] = UNRECORDED
    else:
        values["model"] = "gold" if source == "gold" else UNRECORDED
    return {**values, **_l4_of(config, source)}


def _l4_of(config: Mapping[str, Any], source: str) -> dict[str, Any]:
    """The L4 options that give a stored run's L4 decision again (its skip reason is part of the results)."""
    skipped = config.get("l4_skipped")
    agent = {} if source == "generate" else {"agent_model": UNRECORDED}
    if config.get("l4") and skipped is None:
        return {**agent, "judge_model": UNRECORDED}
    if skipped == "no judge model (give --judge-model)":
        return agent
    if skipped == "no agent model (give --agent-model)":
        return {}
    return {"skip_l4": True}
