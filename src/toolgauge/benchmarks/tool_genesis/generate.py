"""Tool-Genesis generation: turn each requirement into an MCP server (schema file + Python server).

Two strategies, as in the paper: ``direct`` (one model call, :mod:`.direct`) and ``code-agent`` (the
model writes, launches and tests its server in the tool loop, :mod:`.code_agent`). Each server goes to
``<out>/<slug>/tools.json`` and ``<out>/<slug>/server.py`` (:mod:`.server_files`); ``<out>/registry.json``
is the official registry layout (:mod:`.registry_file`). With ``--epochs K``, try e >= 2 of a server has
its own folder ``<out>/<slug>@e<e>/`` and its own registry entry ``<slug>@e<e>``. A server the model failed
to produce is a ``GeneratedServer`` with ``error`` set, never an exception.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from toolgauge.benchmarks.tool_genesis.code_agent import run_code_agent
from toolgauge.benchmarks.tool_genesis.direct import run_direct
from toolgauge.benchmarks.tool_genesis.generation import GenerationResult, Strategy
from toolgauge.benchmarks.tool_genesis.gold import write_gold_server
from toolgauge.benchmarks.tool_genesis.options import MAX_STEPS, GenerateRun, GenesisOptions
from toolgauge.benchmarks.tool_genesis.records import GeneratedServer, GenesisServer
from toolgauge.benchmarks.tool_genesis.registry_file import RegistryFile, record_metadata
from toolgauge.benchmarks.tool_genesis.server_files import fresh_dir, server_record, try_dir
from toolgauge.engine import EpisodeContext, SampleOutcome
from toolgauge.engine.epochs import epoch_key
from toolgauge.recordings import read_recorded_turns
from toolgauge.records import AssistantTurn, GenerateOptions
from toolgauge.results import EvalResults, Metric, SampleScore, ScoredRun
from toolgauge.tools import ServerLauncher, launch_mcp_backend


async def generate_server(
    ctx: EpisodeContext, server: GenesisServer, out_dir: Path, strategy: Strategy
) -> GeneratedServer:
    """One server's files generated with ``strategy`` and the default options (``eval tool-genesis``'s).

    Failures are a ``GeneratedServer`` with ``error``. :func:`generate_server_detailed` takes the options and
    returns the model's steps too.
    """
    return (await generate_server_detailed(ctx, server, out_dir, strategy)).server


async def generate_server_detailed(
    ctx: EpisodeContext,
    server: GenesisServer,
    out_dir: Path,
    strategy: Strategy,
    *,
    options: GenerateOptions | None = None,
    max_steps: int = MAX_STEPS,
    launcher: ServerLauncher = launch_mcp_backend,
) -> GenerationResult:
    """Generate one server's files with ``strategy``, with the model's steps and raw outputs.

    Failures are a ``GeneratedServer`` with ``error`` in the result. ``launcher`` starts the code agent's server
    (default: the sandboxed MCP launch). The files go to the folder of the context's try (``server_files.try_dir``),
    and the record is keyed by that try.
    """
    folder = try_dir(out_dir, server.server_slug, ctx.epoch)
    fresh_dir(folder)
    opts = options or GenerateOptions(temperature=0.0, max_tokens=4096)
    if strategy == "direct":
        return await run_direct(ctx, server, folder, opts)
    return await run_code_agent(ctx, server, folder, opts, max_steps, launcher)


class GenesisGenerateBenchmark:
    """``genesis generate``: one sample per server; results are the generated files plus raw outputs.

    Each episode keeps ``registry.json`` current (:class:`RegistryFile`), so an interrupted run leaves a
    usable registry; the final write from every outcome is the command's explicit output step
    (``registry_file.registry_writer``), not part of scoring. With ``gold=True`` no model is asked: the
    reference server (``gold.write_gold_server``) is written instead. ``launcher`` starts the code
    agent's servers.
    """

    name = "tool-genesis-generate"
    result_type = GenerationResult

    def __init__(
        self,
        servers: Sequence[GenesisServer],
        *,
        out_dir: Path,
        strategy: Strategy,
        data_label: str,
        gold: bool = False,
        options: GenerateOptions | None = None,
        max_steps: int = MAX_STEPS,
        launcher: ServerLauncher = launch_mcp_backend,
        run_options: GenesisOptions | None = None,
    ):
        self.servers = list(servers)
        self.out_dir = Path(out_dir)
        self.strategy: Strategy = strategy
        self.data_label = data_label
        self.gold = gold
        self.request_options = options or GenerateOptions(temperature=0.0, max_tokens=4096)
        self.max_steps = max_steps
        self.launcher = launcher
        # What the run is stored with: the Tool-Genesis options it was built from (made by hand: its pieces').
        self.options = run_options or GenesisOptions(
            data=Path(data_label), out=self.out_dir.resolve(), strategy=strategy, limit=len(self.servers),
            generate=GenerateRun(gold=gold, max_steps=max_steps, temperature=self.request_options.temperature,
                                 max_tokens=self.request_options.max_tokens),
        )  # fmt: skip
        self.registry = RegistryFile(self.out_dir)  # read on first use, kept current by the episodes

    @property
    def registry_path(self) -> Path:
        """Where the registry is written."""
        return self.registry.path

    def samples(self) -> list[tuple[str, GenesisServer]]:
        """Servers keyed by slug (slugs are unique in a valid data file)."""
        return [(s.server_slug, s) for s in self.servers]

    async def episode(self, sample: GenesisServer, ctx: EpisodeContext) -> GenerationResult:
        """Generate one try of a server into its own folder, then update the registry (its entry only)."""
        self.registry.drop(epoch_key(sample.server_slug, ctx.epoch))
        if self.gold:
            folder = try_dir(self.out_dir, sample.server_slug, ctx.epoch)
            fresh_dir(folder)
            record = write_gold_server(sample, folder).model_copy(
                update={"slug": epoch_key(sample.server_slug, ctx.epoch)}
            )
            result = GenerationResult(server=record, strategy=self.strategy, gold=True, finished=True)
        else:
            result = await generate_server_detailed(
                ctx,
                sample,
                self.out_dir,
                self.strategy,
                options=self.request_options,
                max_steps=self.max_steps,
                launcher=self.launcher,
            )
        self.registry.put([result.server])
        return result

    def score(
        self, samples: Sequence[tuple[str, GenesisServer]], outcomes: Sequence[SampleOutcome[GenerationResult]]
    ) -> ScoredRun:
        """Count what was generated; one score per server (1 generated, 0 not) carrying its registry record.

        Pure: the registry is written by the command's output step from these scores. ``outcomes`` are
        one epoch's (the driver scores each epoch alone); a server of that epoch that did not run points
        at that try's folder.
        """
        by_key = {o.key: o for o in outcomes}
        epoch = next((o.epoch for o in by_key.values()), 1)
        scores: list[SampleScore] = []
        for key, server in samples:
            outcome = by_key.get(key)
            if outcome is not None and outcome.result is not None:
                record = outcome.result.server
                steps, finished = len(outcome.result.steps), outcome.result.finished
            else:
                reason = (outcome.error if outcome else None) or "not run"
                folder = try_dir(self.out_dir, server.server_slug, epoch)
                record = server_record(server, folder, f"generation failed: {reason}", epoch)
                steps, finished = 0, False
            scores.append(
                SampleScore(
                    id=key,
                    sample=key,
                    epoch=epoch,
                    value=0.0 if record.error else 1.0,
                    scores={"model_steps": steps, "finished": finished},
                    explanation=record.error,
                    error=outcome.error if outcome else "not run",
                    metadata=record_metadata(record),
                )
            )
        failures = {s.id: s.explanation for s in scores if s.explanation}
        n = len(samples)
        results = EvalResults(
            benchmark=self.name,
            settings={
                "strategy": self.strategy,
                "gold": self.gold,
                "data": self.data_label,
                "out": str(self.out_dir),
                "registry": str(self.registry_path),
                "max_steps": self.max_steps,
            },
            metrics=[
                Metric(name="servers", value=n, kind="count"),
                Metric(name="generated", value=n - len(failures), n=n, kind="count"),
                Metric(name="failed", value=len(failures), n=n, kind="count"),
            ],
            details={"failures": failures},
        )
        return ScoredRun(results, scores)

    def replay_table(self, path: Path) -> Mapping[str, Sequence[AssistantTurn]]:
        """Read recorded model outputs: JSONL lines ``{"id": slug, "step", "content", "tool_calls"}``."""
        return read_recorded_turns(path, index_field="step", what="recorded output")
