"""Tool-Genesis evaluation: one sample per server, levels L1–L4, scored as the official code does.

An episode takes a generated server (from a registry, from the generator, or the gold server) and
records every level's raw results, even when a level fails:

- **L1** the schema file's compliance (official strict check) and MCP validity; up to 3 sandboxed
  launches, stopping at the first that initialises and lists at least one tool.
- **L2** Schema-F1 of the schema FILE against the reference tools, and ``schema_f1_live`` from the
  tools the running server lists.
- **L3** every unit test routed through the inverse tool/argument maps, on one server process (a
  fresh process per test for stateful servers in ``strict``), 30 s per call; when the server dies
  the remaining tests are not run and the reason is recorded.
- **L4** per task example, the proxy agent (role ``agent``) solves the task with the generated
  server and with the reference server (the oracle), and the judge (role ``judge``) rates both.

Failures of a generated server are outcomes, never exceptions. ``score`` is pure: it turns the
records into ``GenesisServerScore`` (level gating), the typed metrics of ``genesis_metrics`` (levels,
over-reached means, cascade) and one ``SampleScore`` per server.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar, TypeVarTuple

from pydantic import BaseModel, Field

from toolgauge.benchmark import BenchmarkBase
from toolgauge.benchmarks.tool_genesis.loader import UNSAFE_PATH, load_registry, write_registry
from toolgauge.benchmarks.tool_genesis.metrics import (
    METRIC_LEVELS,
    GenesisServerScore,
    genesis_metrics,
    genesis_server_score,
)
from toolgauge.benchmarks.tool_genesis.metrics.compliance import Verdict, check_compliance, check_mcp_valid
from toolgauge.benchmarks.tool_genesis.metrics.schema import GenesisVariant, SchemaMatch, match_schemas, route_unit_test
from toolgauge.benchmarks.tool_genesis.metrics.unit_tests import (
    UnitTestCall,
    UnitTestScore,
    UnitTestSummary,
    score_unit_tests,
    summarise_unit_tests,
)
from toolgauge.benchmarks.tool_genesis.options import GenesisOptions
from toolgauge.benchmarks.tool_genesis.plan import Source, l4_plan, source_of
from toolgauge.benchmarks.tool_genesis.records import GeneratedServer, GenesisServer
from toolgauge.embeddings.base import Embedder
from toolgauge.engine import EpisodeContext, SampleOutcome
from toolgauge.engine.epochs import epoch_key, split_epoch_key
from toolgauge.errors import DataError, UsageError
from toolgauge.records import AssistantTurn
from toolgauge.results import EvalResults, SampleScore, ScoredRun
from toolgauge.sandbox import SandboxLimits
from toolgauge.tools import McpBackend, McpServerSession, ServerLaunchError, ToolCallOutcome, launch_server
from toolgauge.tools.staging import UnsafeFile, read_untrusted_file
from toolgauge.worker_threads import start_worker_thread

LAUNCH_ATTEMPTS = 3
STARTUP_TIMEOUT = 30.0
_KEEP_CHARS = 2000  # outputs stored per unit test / trajectory are cut to this many characters

T = TypeVar("T")
Ts = TypeVarTuple("Ts")
# A schema file larger than this is not read (a generated one is a few kilobytes).
_MAX_SCHEMA_BYTES = 10 * 1024 * 1024


async def _off_loop(fn: Callable[[*Ts], T], *args: *Ts) -> T:
    """Run blocking work (embedding) in a daemon thread and await it.

    Not ``asyncio.to_thread``: ``asyncio.run`` joins its executor's threads at exit, so an interrupted run
    would wait for a model load or an embedding batch to finish before it says it stopped. A daemon thread
    is left to finish on its own; the CLI waits for it only once it has printed its last line
    (:mod:`toolgauge.worker_threads`), so the interpreter never shuts down under it.
    """
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def settle(outcome: tuple[T] | BaseException) -> None:
        if future.done():
            return
        if isinstance(outcome, BaseException):
            future.set_exception(outcome)
        else:
            future.set_result(outcome[0])

    def work() -> None:
        outcome: tuple[T] | BaseException
        try:
            outcome = (fn(*args),)
        except BaseException as exc:  # handed to the awaiting task, which decides
            outcome = exc
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits any more
            loop.call_soon_threadsafe(settle, outcome)

    start_worker_thread(work, name=f"toolgauge-{getattr(fn, '__name__', 'work')}")
    return await future


def _cut(text: str | None, limit: int = _KEEP_CHARS) -> str:
    if not text:
        return ""
    return text if len(text) <= limit else text[:limit] + f"... [{len(text) - limit} more characters]"


@dataclass(frozen=True)
class GenesisSample:
    """One server of the data file and, when it is already known, its generated server.

    ``key`` names the sample when it is not the server's slug: a registry written with ``--epochs`` holds
    try e >= 2 of a server as the entry ``<slug>@e<e>``, which ``genesis evaluate`` scores as a sample of its
    own (clustered with the server's other tries).
    """

    server: GenesisServer
    generated: GeneratedServer | None = None
    key: str | None = None

    @property
    def sample_key(self) -> str:
        """The sample's key: ``key``, else the server's slug."""
        return self.key if self.key is not None else self.server.server_slug


class LaunchRecord(BaseModel):
    """One launch attempt."""

    attempt: int
    ok: bool
    stage: str | None = None
    reason: str | None = None
    tools: int = 0
    seconds: float = 0.0


class UnitTestRecord(BaseModel):
    """One unit test: where it was routed, what came back and its score.

    ``status`` is ``called``, ``not_built`` (no generated tool matches the reference tool) or
    ``not_run`` (the server had died before this test).
    """

    gold_tool: str
    index: int
    status: Literal["called", "not_built", "not_run"]
    pred_tool: str | None = None
    arguments: dict[str, Any] = Field(default_factory=dict)
    is_error: bool = False
    failure: str | None = None
    seconds: float = 0.0
    score: UnitTestScore | None = None


class TaskRecord(BaseModel):
    """One task example: the judge's rating with the generated server and with the reference server."""

    index: int
    task: str
    rating: int = 0
    reference_rating: int | None = None
    tool_calls: int = 0
    reference_tool_calls: int = 0
    answer: str = ""
    reference_answer: str = ""
    judge_raw: str = ""
    errors: list[str] = Field(default_factory=list)


class GenesisEvalResult(BaseModel):
    """Everything one server's episode measured, level by level."""

    slug: str
    variant: GenesisVariant
    source: Source = "registry"
    generation_error: str | None = None
    schema_error: str | None = None
    compliance: Verdict = Field(default_factory=lambda: Verdict(ok=False, reason="not checked"))
    mcp_valid: Verdict = Field(default_factory=lambda: Verdict(ok=False, reason="not checked"))
    launches: list[LaunchRecord] = Field(default_factory=list)
    live_tools: list[str] = Field(default_factory=list)
    schema_match: SchemaMatch | None = None
    schema_live: SchemaMatch | None = None
    unit_tests: list[UnitTestRecord] = Field(default_factory=list)
    ut_summary: UnitTestSummary | None = None
    ut_abort: str | None = None
    tasks: list[TaskRecord] | None = None
    l4_skipped: str | None = None
    seconds: dict[str, float] = Field(default_factory=dict)

    @property
    def launch_successes(self) -> int:
        """Launches that initialised and listed at least one tool."""
        return sum(1 for launch in self.launches if launch.ok)

    @property
    def launch_failure(self) -> str | None:
        """Why the last failed launch failed."""
        failed = [launch for launch in self.launches if not launch.ok]
        if not failed:
            return None
        last = failed[-1]
        return f"{last.stage}: {last.reason}" if last.stage else last.reason


class _LiveServer:
    """A launched server together with the stack that stops it, so it can be stopped early (restarts)."""

    def __init__(self, session: McpServerSession, stack: AsyncExitStack):
        self.session = session
        self._stack = stack

    async def close(self) -> None:
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            # Closing because the run is cancelled (Ctrl-C): kill the sandbox first, skipping MCP's grace period.
            self.session.kill()
        await self._stack.aclose()


class GenesisBenchmark(BenchmarkBase[GenesisSample, GenesisOptions]):
    """Tool-Genesis evaluation (``genesis evaluate`` and ``eval tool-genesis``).

    ``options`` decide the run and are stored as its config: the variant, where the servers come from
    (:func:`.plan.source_of`: a registry, the gold servers, or the model generating them into ``out``), the
    strategy, whether L4 runs (:func:`.plan.l4_plan`) and the tool-call timeout. The rest is no option: the
    embedder (None: MiniLM), the sandbox limits, the server start-up timeout and launch attempts.
    """

    name = "tool-genesis"
    result_type = GenesisEvalResult

    def __init__(
        self,
        samples: Sequence[GenesisSample],
        options: GenesisOptions,
        *,
        data_label: str,
        embedder: Embedder | None = None,
        limits: SandboxLimits | None = None,
        startup_timeout: float = STARTUP_TIMEOUT,
        launch_attempts: int = LAUNCH_ATTEMPTS,
        warnings: Sequence[str] = (),
    ):
        self.variant: GenesisVariant = options.variant
        self.source: Source = source_of(options)
        # A registry was written elsewhere; generated servers go into ``out``.
        self.out_dir = options.out if self.source != "registry" else None
        self.strategy: Literal["direct", "code-agent"] = options.strategy
        self.l4 = l4_plan(options).settings
        self._embedder = embedder
        self.limits = limits
        self.call_timeout = options.call_timeout
        self.startup_timeout = startup_timeout
        self.launch_attempts = launch_attempts
        if self.source != "registry" and self.out_dir is None:
            raise ValueError("generating servers needs the folder to write them into (options.out)")
        self._registry: dict[str, GeneratedServer] | None = None  # read on the first generated server
        keys = [s.sample_key for s in samples]
        super().__init__(samples, keys=keys, data_label=data_label, options=options, warnings=warnings)

    def _existing_registry(self) -> dict[str, GeneratedServer]:
        """Entries of an earlier (resumed) run in ``out_dir``, so the rewritten registry keeps them."""
        if self.out_dir is None or not (self.out_dir / "registry.json").is_file():
            return {}
        try:
            return load_registry(self.out_dir, check_schemas=False)
        except DataError:
            return {}  # an unreadable old registry is replaced

    # -- Benchmark protocol -------------------------------------------------------------------
    @property
    def embedder(self) -> Embedder:
        """The run's embedder, loaded on first use and shared by every episode."""
        if self._embedder is None:
            from toolgauge.embeddings.minilm import load_embedder

            self._embedder = load_embedder()
        return self._embedder

    async def episode(self, sample: GenesisSample, ctx: EpisodeContext) -> GenesisEvalResult:
        """Evaluate one server through L1–L4 (generating it first when the run generates)."""
        server = sample.server
        result = GenesisEvalResult(slug=sample.sample_key, variant=self.variant, source=self.source)
        started = time.perf_counter()
        generated = await self._generated(sample, ctx)
        result.seconds["generate"] = round(time.perf_counter() - started, 3)
        if generated is None:
            result.generation_error = "the server is not in the registry"
            result.compliance = result.mcp_valid = Verdict(ok=False, reason=result.generation_error)
            return result
        if generated.error is not None:
            result.generation_error = generated.error
        payload = self._schema_payload(generated, result)
        if payload is not None:
            result.compliance = check_compliance(payload)
            result.mcp_valid = check_mcp_valid(payload)
        else:
            reason = result.schema_error or "no schema file"
            if result.generation_error is not None:
                # A registry path refused by the loader is not a generation failure: say what it is.
                unsafe = result.generation_error.startswith(UNSAFE_PATH)
                reason = result.generation_error if unsafe else f"generation failed: {result.generation_error}"
            result.compliance = result.mcp_valid = Verdict(ok=False, reason=reason)
        t0 = time.perf_counter()
        live = await self._launch_with_attempts(generated, result)
        result.seconds["launch"] = round(time.perf_counter() - t0, 3)
        try:
            schema_ok = result.compliance.ok if self.variant == "reference" else result.mcp_valid.ok
            if live is None or not schema_ok:
                # L1 failed: the official pipeline computes nothing further (every later metric is 0).
                result.l4_skipped = "L1 failed"
                return result
            result.live_tools = live.session.tool_names
            t0 = time.perf_counter()
            tools = payload.get("tools") if isinstance(payload, dict) else None
            gold_tools = server.tool_definitions
            result.schema_match = await _off_loop(
                match_schemas, tools if isinstance(tools, list) else [], gold_tools, self.embedder, self.variant
            )
            result.schema_live = await _off_loop(
                match_schemas, live.session.tools, gold_tools, self.embedder, self.variant
            )
            result.seconds["l2"] = round(time.perf_counter() - t0, 3)
            t0 = time.perf_counter()
            live = await self._unit_tests(server, generated, live, result)
            result.seconds["l3"] = round(time.perf_counter() - t0, 3)
            t0 = time.perf_counter()
            await self._tasks(server, generated, live, ctx, result)
            result.seconds["l4"] = round(time.perf_counter() - t0, 3)
        finally:
            if live is not None:
                await live.close()
        return result

    def score(
        self, samples: Sequence[tuple[str, GenesisSample]], outcomes: Sequence[SampleOutcome[GenesisEvalResult]]
    ) -> ScoredRun:
        """Per-server scores with the level gating, then the aggregates and the cascade (pure).

        One pass over the samples and their outcomes (both in input order, as the engine returns
        them; a sample that did not run has no outcome and scores as a failed episode). The
        per-server rows are made by a second pass when they are asked for.

        Raises:
            ValueError: an outcome is out of order or belongs to no sample.
            UsageError: the results were evaluated with the other variant (``rescore --variant``).
        """
        served = list(self.server_results(samples, outcomes))
        evaluated = {result.variant for _, result, _ in served if result.variant != self.variant}
        if evaluated:
            # Another variant routes, runs and compares the unit tests differently: stored results cannot show it.
            raise UsageError(
                f"this run was evaluated with --variant {evaluated.pop()}; the {self.variant} variant routes, runs "
                f"and compares the unit tests differently, so it needs the servers run again: "
                f"genesis evaluate --variant {self.variant}"
            )
        scores = [server_score(result, self.variant) for _, result, _ in served]
        l4_run = self.l4.skip_reason is None
        stopped = {
            s.slug: {"level": level, "reason": s.failures[level]}
            for s in scores
            for level in s.reached[-1:]
            if level in s.failures
        }
        results = EvalResults(
            benchmark=self.name,
            settings={"variant": self.variant, "source": self.source, "data": self.data_label},
            metrics=genesis_metrics(scores, total_servers=len(samples), l4_run=l4_run),
            details={"l4": "run" if l4_run else f"skipped: {self.l4.skip_reason}", "stopped": stopped},
            warnings=list(self.warnings),
        )
        return ScoredRun(results, lambda: self.sample_scores(samples, outcomes))

    def sample_scores(
        self, samples: Iterable[tuple[str, GenesisSample]], outcomes: Iterable[SampleOutcome[GenesisEvalResult]]
    ) -> Iterator[SampleScore]:
        """Yield one score per server, in sample order (see :func:`server_sample_score`).

        The cluster of every score is its server, so the tries of one server are resampled together.
        """
        samples = list(samples)
        server_of = {key: sample.server.server_slug for key, sample in samples}
        for key, result, error in self.server_results(samples, outcomes):
            score = server_score(result, self.variant)
            yield server_sample_score(key, result, score, error, l4_run=self.l4.skip_reason is None,
                                      cluster=server_of[key])  # fmt: skip

    def server_results(
        self, samples: Iterable[tuple[str, GenesisSample]], outcomes: Iterable[SampleOutcome[GenesisEvalResult]]
    ) -> Iterator[tuple[str, GenesisEvalResult, str | None]]:
        """Yield (slug, episode results, sample error) per sample, reading ``samples`` and ``outcomes`` once, in step.

        A failed or missing episode becomes results that fail L1 with the error as the reason.

        Raises:
            ValueError: an outcome is out of order or belongs to no sample.
        """
        pending = iter(outcomes)
        outcome = next(pending, None)
        for key, _ in samples:
            mine = None
            if outcome is not None and outcome.key == key:
                mine, outcome = outcome, next(pending, None)
            if mine is not None and mine.result is not None:
                yield key, mine.result, mine.error
                continue
            error = (mine.error if mine else None) or "not run"
            reason = f"episode failed: {error}"
            failed = GenesisEvalResult(
                slug=key,
                variant=self.variant,
                source=self.source,
                generation_error=reason,
                compliance=Verdict(ok=False, reason=reason),
                mcp_valid=Verdict(ok=False, reason=reason),
            )
            yield key, failed, error
        if outcome is not None:
            raise ValueError(f"outcome {outcome.key!r} is not in sample order (or not a sample of this run)")

    def replay_table(self, path: Path) -> Mapping[str, Sequence[AssistantTurn]]:
        """Tool-Genesis has no recorded-output format to replay."""
        raise DataError(str(path), "tool-genesis cannot replay recorded outputs; use genesis evaluate --pred")

    # -- episode parts --------------------------------------------------------------------------
    async def _generated(self, sample: GenesisSample, ctx: EpisodeContext) -> GeneratedServer | None:
        if self.source == "registry":
            return sample.generated
        assert self.out_dir is not None
        if self._registry is None:  # before any server of this run is written
            self._registry = self._existing_registry()
        from toolgauge.benchmarks.tool_genesis.generate import generate_server
        from toolgauge.benchmarks.tool_genesis.server_files import try_dir

        # Each try (--epochs) has its own folder and registry entry: try 1 the server's, try e >= 2 "<slug>@e<e>".
        folder = try_dir(self.out_dir, sample.server.server_slug, ctx.epoch)
        if self.source == "gold":
            from toolgauge.benchmarks.tool_genesis.gold import write_gold_server

            folder.mkdir(parents=True, exist_ok=True)
            gold = await asyncio.to_thread(write_gold_server, sample.server, folder)
            generated = gold.model_copy(update={"slug": epoch_key(sample.server.server_slug, ctx.epoch)})
        else:
            generated = await generate_server(ctx, sample.server, self.out_dir, self.strategy)
        # The registry is rewritten after every server, so an interrupted run leaves a usable one.
        self._registry[generated.slug] = generated
        write_registry(self.out_dir, self._registry.values())
        return generated

    def _schema_payload(self, generated: GeneratedServer, result: GenesisEvalResult) -> object:
        """The schema file's JSON, or None with ``schema_error`` set (a scored L1 failure)."""
        path = Path(generated.schema_path)
        if not path.exists() and not path.is_symlink():
            result.schema_error = f"schema file not found: {path}"
            return None
        try:
            # No link is followed: a schema file linked to a host file must not be read as root.
            text = read_untrusted_file(path, _MAX_SCHEMA_BYTES).decode("utf-8")
        except UnsafeFile as exc:
            result.schema_error = f"unsafe schema file: {exc.reason}"
            return None
        except UnicodeDecodeError as exc:
            result.schema_error = f"cannot read the schema file: {exc}"
            return None
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            result.schema_error = f"schema file is not JSON: {exc.msg} (line {exc.lineno})"
            return None
        except (ValueError, RecursionError):  # generated text: an over-long integer or nesting too deep
            result.schema_error = "schema file is not JSON: a number or nesting beyond the parser's limits"
            return None

    async def _launch(self, code_path: Path) -> _LiveServer:
        """Start a server (raises ``ServerLaunchError``); the caller closes the returned handle."""
        stack = AsyncExitStack()
        try:
            session = await stack.enter_async_context(
                launch_server(code_path, limits=self.limits, startup_timeout=self.startup_timeout)
            )
        except BaseException:
            await stack.aclose()
            raise
        return _LiveServer(session, stack)

    async def _launch_with_attempts(self, generated: GeneratedServer, result: GenesisEvalResult) -> _LiveServer | None:
        """Up to ``launch_attempts`` launches; the first that lists a tool is kept for L2–L4."""
        if generated.error is not None and not Path(generated.code_path).is_file():
            reason = f"no code file ({generated.error})" if generated.error.startswith(UNSAFE_PATH) else "no code file"
            result.launches.append(LaunchRecord(attempt=1, ok=False, stage="prepare", reason=reason))
            return None
        for attempt in range(1, self.launch_attempts + 1):
            t0 = time.perf_counter()
            try:
                live = await self._launch(Path(generated.code_path))
            except ServerLaunchError as exc:
                result.launches.append(
                    LaunchRecord(attempt=attempt, ok=False, stage=exc.stage, reason=exc.reason, seconds=_since(t0))
                )
                if exc.stage == "prepare":
                    break  # a missing code file does not appear on a second try
                continue
            result.launches.append(
                LaunchRecord(attempt=attempt, ok=True, tools=len(live.session.tools), seconds=_since(t0))
            )
            return live
        return None

    async def _relaunch(self, generated: GeneratedServer) -> tuple[_LiveServer | None, str | None]:
        try:
            return await self._launch(Path(generated.code_path)), None
        except ServerLaunchError as exc:
            return None, str(exc)

    async def _unit_tests(
        self,
        server: GenesisServer,
        generated: GeneratedServer,
        live: _LiveServer,
        result: GenesisEvalResult,
    ) -> _LiveServer | None:
        """Run L3; returns the server L4 should use (a restart may have replaced it; None if none runs)."""
        assert result.schema_match is not None
        match = result.schema_match
        restart_each = self.variant == "strict" and server.stateful
        called: list[tuple[UnitTestRecord, ToolCallOutcome, str]] = []
        aborted: str | None = None
        current: _LiveServer | None = live
        for gold_tool, cases in server.unit_test.items():
            for index, case in enumerate(cases):
                route = route_unit_test(gold_tool, case.arguments_dict, match)
                if route is None:
                    result.unit_tests.append(UnitTestRecord(gold_tool=gold_tool, index=index, status="not_built"))
                    continue
                pred_tool, arguments = route
                record = UnitTestRecord(
                    gold_tool=gold_tool, index=index, status="called", pred_tool=pred_tool, arguments=arguments
                )
                if aborted is not None:
                    record.status = "not_run"
                    result.unit_tests.append(record)
                    continue
                if restart_each and called and current is not None:
                    # Strict: a stateful server starts every test from a fresh process.
                    await current.close()
                    current, why = await self._relaunch(generated)
                    if current is None:
                        aborted = f"restart before test {gold_tool}[{index}] failed: {why}"
                        record.status = "not_run"
                        result.unit_tests.append(record)
                        continue
                assert current is not None
                outcome = await current.session.call(pred_tool, arguments, timeout=self.call_timeout)
                record.is_error, record.failure, record.seconds = outcome.is_error, outcome.failure, outcome.seconds
                result.unit_tests.append(record)
                called.append((record, outcome, case.function_output_content))
                if not current.session.alive:
                    aborted = f"server died at {gold_tool}[{index}]: {current.session.death_reason}"
        result.ut_abort = aborted
        result.seconds["l3_calls"] = round(sum(r.seconds for r, _, _ in called), 3)
        t0 = time.perf_counter()
        scores = await _off_loop(self._score_calls, called)
        result.seconds["l3_scoring"] = _since(t0)
        for (record, _, _), score in zip(called, scores, strict=True):
            record.score = score.model_copy(update={"actual": _cut(score.actual), "expected": _cut(score.expected)})
        not_built = sum(1 for r in result.unit_tests if r.status == "not_built")
        not_run = sum(1 for r in result.unit_tests if r.status == "not_run")
        result.ut_summary = summarise_unit_tests(scores, not_built=not_built, not_run=not_run, variant=self.variant)
        return current

    def _score_calls(self, called: Sequence[tuple[UnitTestRecord, ToolCallOutcome, str]]) -> list[UnitTestScore]:
        """Score every call (the texts are embedded in one batch first)."""
        calls = [
            UnitTestCall(content=o.content, is_error=o.is_error, call_failure=o.failure, expected=expected)
            for _, o, expected in called
        ]
        return score_unit_tests(calls, self.embedder, self.variant)

    async def _tasks(
        self,
        server: GenesisServer,
        generated: GeneratedServer,
        live: _LiveServer | None,
        ctx: EpisodeContext,
        result: GenesisEvalResult,
    ) -> None:
        """L4: every task example with the generated server and with the reference server, both judged."""
        if self.l4.skip_reason is not None:
            result.l4_skipped = self.l4.skip_reason
            return
        if not server.task_example:
            result.l4_skipped = "the server has no task examples"
            result.tasks = []
            return
        from toolgauge.benchmarks.tool_genesis.agent import judge_task, solve_task
        from toolgauge.benchmarks.tool_genesis.gold import write_reference_server

        own: list[_LiveServer] = []
        try:
            gen = live
            if gen is None or not gen.session.alive:
                gen, _ = await self._relaunch(generated)
                if gen is not None:
                    own.append(gen)
            with tempfile.TemporaryDirectory(prefix="toolgauge-oracle-") as tmp:
                oracle = await asyncio.to_thread(write_reference_server, server, Path(tmp))
                ref, ref_error = await self._relaunch(oracle)
                if ref is not None:
                    own.append(ref)
            result.tasks = []
            for index, task in enumerate(server.task_example):
                record = TaskRecord(index=index, task=task)
                if gen is not None and gen.session.alive:
                    trajectory = await solve_task(
                        ctx, task, McpBackend(gen.session), role="agent", max_steps=self.l4.max_steps
                    )
                    verdict = await judge_task(ctx, task, trajectory, role="judge")
                    record.rating, record.judge_raw = verdict.score, _cut(verdict.raw, 500)
                    record.tool_calls, record.answer = len(trajectory.steps), _cut(trajectory.final_answer)
                    record.errors += trajectory.errors + verdict.errors
                else:
                    record.errors.append("the generated server is not running")
                if ref is not None:
                    ref_traj = await solve_task(
                        ctx, task, McpBackend(ref.session), role="agent", max_steps=self.l4.max_steps
                    )
                    ref_verdict = await judge_task(ctx, task, ref_traj, role="judge")
                    record.reference_rating = ref_verdict.score
                    record.reference_tool_calls = len(ref_traj.steps)
                    record.reference_answer = _cut(ref_traj.final_answer)
                else:
                    record.errors.append(f"reference server not running: {ref_error}")
                result.tasks.append(record)
        finally:
            for handle in own:
                await handle.close()


def _since(t0: float) -> float:
    return round(time.perf_counter() - t0, 3)


def server_score(result: GenesisEvalResult, variant: GenesisVariant) -> GenesisServerScore:
    """The per-server score record of one episode's results (pure)."""
    ratings: list[int | None] | None = None
    reference: list[float] | None = None
    if result.tasks is not None and result.l4_skipped is None:
        ratings = [t.rating for t in result.tasks]
        if result.tasks and all(t.reference_rating is not None for t in result.tasks):
            reference = [(t.reference_rating or 0) / 5 for t in result.tasks]
    launch_attempts = len(result.launches) or (0 if result.generation_error else 1)
    return genesis_server_score(
        result.slug,
        variant=variant,
        compliance=result.compliance,
        mcp_valid=result.mcp_valid,
        launches=result.launch_successes,
        launch_attempts=launch_attempts,
        launch_failure=result.launch_failure or result.generation_error,
        schema=result.schema_match,
        schema_live=result.schema_live,
        unit_tests=result.ut_summary,
        task_ratings=ratings,
        reference_task_scores=reference,
    )


def server_sample_score(
    slug: str,
    result: GenesisEvalResult,
    score: GenesisServerScore,
    error: str | None,
    *,
    l4_run: bool = True,
    cluster: str | None = None,
) -> SampleScore:
    """One server's ``--samples`` row (pure).

    ``value`` is the server's UT_hard (0 when it stopped before L3), so the mean over the rows is the run's
    ``ut_hard``; ``scores`` holds every per-server metric and the counts behind them, so that each overall
    metric is the mean of its per-server scores over the servers that have it (a metric that is unknown,
    the L4 rates when L4 was skipped for the run (``l4_run`` False) or ``sr_oracle_normalized`` with no
    reference run, is left out); ``explanation`` the levels passed and where and why the server stopped;
    ``metadata`` the levels reached, the failures and each level's raw results (L3 per reference tool).
    The cluster is ``cluster``, else the server itself (``slug``): a registry's tries of one server
    (``<slug>@e<e>``) name that server.
    """
    per_server = {
        key: value
        for key, value in score.metrics().items()
        if value is not None and (l4_run or METRIC_LEVELS[key] != "L4")
    }
    scores: dict[str, float | int | bool | str | None] = {
        **per_server,
        "launches": score.launches,
        "launch_attempts": score.launch_attempts,
        "unit_tests_counted": score.unit_tests_counted,
        "tasks": score.tasks,
    }
    return SampleScore(
        id=slug,
        sample=slug,
        value=score.ut_hard,
        scores=scores,
        cluster=cluster if cluster is not None else slug,
        explanation=score.explanation(),
        error=error,
        metadata={
            "reached": list(score.reached),
            "failures": dict(score.failures),
            "source": result.source,
            "generation_error": result.generation_error,
            "L1": {
                "compliance": result.compliance.model_dump(mode="json"),
                "mcp_valid": result.mcp_valid.model_dump(mode="json"),
                "schema_error": result.schema_error,
                "launches": [launch.model_dump(mode="json") for launch in result.launches],
                "launch_failure": result.launch_failure,
            },
            "L2": {
                "schema_file": _match_summary(result.schema_match),
                "live": _match_summary(result.schema_live),
                "live_tools": list(result.live_tools),
            },
            "L3": {
                "summary": result.ut_summary.model_dump(mode="json") if result.ut_summary else None,
                "abort": result.ut_abort,
                "tools": unit_tests_by_tool(result.unit_tests),
            },
            "L4": {
                "skipped": result.l4_skipped,
                "tasks": None if result.tasks is None else [_task_summary(t) for t in result.tasks],
            },
            "seconds": dict(result.seconds),
        },
    )


def _match_summary(match: SchemaMatch | None) -> dict[str, object] | None:
    """Schema-F1 and its parts, with the tool map (the matched pairs' similarities are left out)."""
    if match is None:
        return None
    return {"tool_f1": match.tool_f1, "args_f1": match.args_f1, "schema_f1": match.schema_f1,
            "tool_map": dict(match.tool_map), "arg_maps": {k: dict(v) for k, v in match.arg_maps.items()}}  # fmt: skip


def _task_summary(task: TaskRecord) -> dict[str, object]:
    """One L4 task: the ratings and tool calls with both servers, and what went wrong (answers left out)."""
    return {"index": task.index, "rating": task.rating, "reference_rating": task.reference_rating,
            "tool_calls": task.tool_calls, "reference_tool_calls": task.reference_tool_calls,
            "errors": list(task.errors)}  # fmt: skip


def unit_tests_by_tool(records: Sequence[UnitTestRecord]) -> dict[str, dict[str, object]]:
    """L3 per reference tool: where its tests went, the counts, and each test's verdict (texts left out).

    ``soft_sum`` is the sum of the called tests' soft scores; the server's UT figures divide by the
    variant's denominator (docs/metrics/tool-genesis.md).
    """
    tools: dict[str, dict[str, object]] = {}
    for gold_tool in dict.fromkeys(r.gold_tool for r in records):
        mine = [r for r in records if r.gold_tool == gold_tool]
        scored = [r.score for r in mine if r.score is not None]
        tools[gold_tool] = {
            "pred_tool": next((r.pred_tool for r in mine if r.pred_tool is not None), None),
            "tests": len(mine),
            "called": sum(1 for r in mine if r.status == "called"),
            "not_built": sum(1 for r in mine if r.status == "not_built"),
            "not_run": sum(1 for r in mine if r.status == "not_run"),
            "hard_passed": sum(1 for sc in scored if sc.hard_pass),
            "soft_sum": sum(sc.soft for sc in scored),
            "results": [
                {
                    "index": r.index,
                    "status": r.status,
                    "hard_pass": r.score.hard_pass if r.score else None,
                    "soft": r.score.soft if r.score else None,
                    "reason": (r.score.reason if r.score else None) or r.failure,
                }
                for r in mine
            ],
        }
    return tools


def pair_registry(
    servers: Sequence[GenesisServer], registry: Mapping[str, GeneratedServer]
) -> tuple[list[GenesisSample], list[str]]:
    """Pair data servers with registry entries by slug; returns samples and warnings.

    Every data server is a sample (one missing from the registry scores as not generated, as the
    paper's division by all servers implies). An entry ``<slug>@e<e>`` of a data server (try e >= 2 of
    a run with ``--epochs``) is a sample of its own keyed by that entry, right after its server's try 1,
    tries in order. Registry entries without a data server are reported.
    """
    known = {s.server_slug for s in servers}
    tries: dict[str, list[tuple[int, str]]] = {}
    for entry in registry:
        slug, epoch = split_epoch_key(entry)
        if epoch > 1 and slug in known and entry not in known:
            tries.setdefault(slug, []).append((epoch, entry))
    samples: list[GenesisSample] = []
    for s in servers:
        samples.append(GenesisSample(server=s, generated=registry.get(s.server_slug)))
        for _, entry in sorted(tries.get(s.server_slug, [])):
            samples.append(GenesisSample(server=s, generated=registry[entry], key=entry))
    warnings: list[str] = []
    missing = [s.server_slug for s in servers if s.server_slug not in registry]
    if missing:
        warnings.append(f"{len(missing)} server(s) of the data are not in the registry and score 0: {missing[:5]}")
    of_tries = {entry for found in tries.values() for _, entry in found}
    extra = [slug for slug in registry if slug not in known and slug not in of_tries]
    if extra:
        warnings.append(f"{len(extra)} registry entr(y/ies) have no server in the data and were ignored: {extra[:5]}")
    return samples, warnings
