"""The one driver that runs any benchmark: model, probe, engine, pure scoring, store."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Literal, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel
from rich.console import Console
from rich.markup import escape
from rich.text import Text

from toolgauge.benchmark import Benchmark, stored_config
from toolgauge.cost import Price
from toolgauge.engine import EngineConfig, run_episodes
from toolgauge.engine.budget import BudgetReached
from toolgauge.engine.epochs import check_epoch_keys
from toolgauge.errors import EndpointDown, ModelError, RunInterrupted, RunStopped, StoreWriteError, UsageError
from toolgauge.models.base import ModelClient
from toolgauge.models.spec import display_spec, resolve_model
from toolgauge.provenance import make_provenance
from toolgauge.records import GenerateOptions
from toolgauge.redact import redact
from toolgauge.results import Provenance, RunStats, SampleFailure, ScoredRun
from toolgauge.run_labels import RunLabels, role_prices
from toolgauge.stats.epochs import aggregate_epochs

if TYPE_CHECKING:
    from toolgauge.store import Store

S = TypeVar("S")
R = TypeVar("R", bound=BaseModel)


@runtime_checkable
class ProbedClient(Protocol):
    """A client that can check its endpoint with one tiny real request before a run (network clients)."""

    name: str

    async def probe(self) -> None:
        """Raise ``ModelError`` with the server's answer when the endpoint, model name or key is wrong."""
        ...


# Run statuses in the store: running, finished (every sample ok), finished_with_errors (some
# samples failed: scores not comparable), failed (every sample failed, the model could not start
# or answer the probe, a store write failed, an internal error), interrupted (Ctrl-C, SIGTERM or
# the endpoint stopped answering; resumable), stopped_budget (--max-cost or --max-tokens-total; resumable).
RunStatus = Literal["finished", "finished_with_errors", "failed", "interrupted", "stopped_budget"]
FINISHED: RunStatus = "finished"
FINISHED_WITH_ERRORS: RunStatus = "finished_with_errors"
FAILED: RunStatus = "failed"
INTERRUPTED: RunStatus = "interrupted"
STOPPED_BUDGET: RunStatus = "stopped_budget"

SameRun = Callable[[Mapping[str, Any], Mapping[str, Any]], bool]
"""Whether a stored run's config (first) defines the run of a config (second)."""


@dataclass
class RunOptions:
    """Run-level options shared by every ``eval`` and ``score`` command."""

    store_url: str | None = None
    resume: str | None = None
    engine: EngineConfig = field(default_factory=EngineConfig)
    console: Console | None = None
    # The metrics summarised with their spread (the benchmark's ``SPEC.headline``; empty: every overall
    # metric that is not a count). The caller passes them: the driver does not read the registry.
    headline: tuple[str, ...] = ()
    # For the provenance: the model's sampling options as the user gave them, and ``--limit``.
    model_options: dict[str, Any] = field(default_factory=dict)
    limit: int | None = None
    # --name and --tag, stored with the run; --price (USD per million tokens in and out) of the evaluated model.
    labels: RunLabels = field(default_factory=RunLabels)
    price: Price | None = None
    # Whether a stored run's config defines this run, for --resume (default: equal configs). The caller passes
    # the benchmark's (``benchmark.same_run``: a config stored before its options model, migrated, matches too).
    same_run: SameRun | None = None


@dataclass
class RunResult(Generic[R]):
    """What the driver returns to the CLI."""

    run_id: str
    scored: ScoredRun
    # USD per sample try (store key) of the evaluated model's calls, cached ones 0; None: its price is unknown.
    sample_costs: Mapping[str, float] | None = None


async def run_benchmark(
    bench: Benchmark[S, R],
    model_spec: str,
    options: RunOptions,
    *,
    client: ModelClient | None = None,
    roles: Mapping[str, ModelClient] | None = None,
    on_scored: Callable[[RunResult[R]], None] | None = None,
) -> RunResult[R]:
    """Run a benchmark end to end: model, engine, scoring, store.

    ``roles`` are extra clients an episode reaches with ``ctx.generate(..., role=name)`` (a proxy
    agent, a judge). A client shared by several roles is started and closed once.

    ``on_scored`` is called with the result once the run's status is stored, while the store is
    still open: the outcomes, and lazy ``--samples`` rows built on them, read their results from
    the store, so the files that need them are written there.

    The data has already been loaded and validated by the time we get here, so nothing
    reaches the store for bad input. Every network client answers one probe request before the
    first sample. The stored status is ``finished``, ``finished_with_errors`` or ``failed``
    (every sample failed); a run stopped by Ctrl-C or a dead endpoint is ``interrupted`` and a
    failed store write raises ``RunStopped``: both resume with ``--resume``.
    """
    samples = bench.samples()
    check_epoch_keys((k for k, _ in samples), options.engine.epochs)  # before anything is stored
    client = client or resolve_model(model_spec, replay_loader=bench.replay_table, timeout=options.engine.timeout)
    # From here on only the masked form is stored or shown (a password in a model URL stays out of everything).
    model_spec = display_spec(model_spec)
    extra = dict(roles or {})
    distinct: list[ModelClient] = []
    for c in [client, *extra.values()]:
        if all(c is not seen for seen in distinct):
            distinct.append(c)
    # Each role's model priced (a --max-cost with a price unknown is refused here, before anything is stored).
    engine = dataclasses.replace(options.engine, prices=role_prices(model_spec, options, extra))
    from toolgauge.store import open_store  # SQLAlchemy: loaded when a run opens the store, not on import

    store = open_store(options.store_url)
    run_id: str | None = None
    try:
        run_id = _open_run(store, bench, model_spec, options.resume, options.engine.epochs, options.same_run)
        from toolgauge.store.run_meta import labels_of, save_labels

        save_labels(store, run_id, options.labels)
        labels = labels_of(store, [run_id]).get(run_id, RunLabels())  # a resumed run keeps the labels it had
        await _start_and_probe(distinct, store, run_id)
        not_sent = unsupported_options_warning(client, _effective_options(bench, options))
        if not_sent:
            line = Text("warning:", style="yellow")
            line.append(" " + redact(not_sent))
            (options.console or Console(stderr=True)).print(line, highlight=False, soft_wrap=True)
        started = time.perf_counter()
        try:
            outcome = await run_episodes(
                samples,
                bench.episode,
                bench.result_type,
                client=client,
                store=store,
                run_id=run_id,
                config=engine,
                description=escape(f"{bench.name} · {labels.name or model_spec}"),
                console=options.console,
                roles=extra,
            )
        except (KeyboardInterrupt, asyncio.CancelledError) as exc:
            store.set_run_status(run_id, INTERRUPTED)
            raise RunInterrupted(run_id) from exc
        except EndpointDown as exc:
            store.set_run_status(run_id, INTERRUPTED)
            raise RunStopped(run_id, str(exc)) from exc
        except BudgetReached:
            store.set_run_status(run_id, STOPPED_BUDGET)
            raise
        except StoreWriteError:
            raise
        except BaseException:
            store.set_run_status(run_id, FAILED)
            raise
        finally:
            for c in distinct:
                await c.close()
        wall = time.perf_counter() - started
        epochs = outcome.epochs
        # Each epoch is scored alone by the benchmark's pure score(), then the epochs are combined.
        per_epoch = [bench.score(samples, outcome.of_epoch(e)) for e in range(1, epochs + 1)]
        scored = aggregate_epochs(per_epoch, options.headline, seed=options.engine.seed)
        results = scored.results
        stats = store.call_stats(run_id)
        failed = outcome.failed  # the light list: iterating outcome.outcomes would read every result again
        tries = len(samples) * epochs
        status: RunStatus = FINISHED
        first = SampleFailure(key=failed[0].store_key, error=failed[0].error or "") if failed else None
        if failed:
            status = FAILED if len(failed) == tries else FINISHED_WITH_ERRORS
            what = "samples" if epochs == 1 else f"tries ({len(samples)} samples x {epochs} epochs)"
            results.warnings.append(
                f"{len(failed)} of {tries} {what} failed; scores are not comparable "
                f"(failed samples are scored as empty replies); first ({failed[0].store_key}): {failed[0].error}"
            )
        cached_in, cached_out = int(stats["cached_input_tokens"]), int(stats["cached_output_tokens"])
        results.run = RunStats(
            id=run_id,
            model=model_spec,
            status=status,
            samples=len(samples),
            sample_errors=len(failed),
            first_error=first,
            resumed_samples=outcome.resumed,
            model_calls=outcome.model_calls,
            cached_calls=outcome.cached_calls,
            # Tokens spent by real calls; answers served from the cache are counted apart.
            input_tokens=int(stats["input_tokens"]) - cached_in,
            output_tokens=int(stats["output_tokens"]) - cached_out,
            cached_input_tokens=cached_in,
            cached_output_tokens=cached_out,
            epochs=epochs,
            wall_seconds=round(wall, 3),
            cost_usd=round(outcome.spend.usd, 6) if outcome.spend.cost_known else None,
            price=_price_text(engine.prices.get("model")),
            unit_price=engine.prices.get("model"),
            name=labels.name,
            tags=labels.tags,
            cache=engine.cache_mode,
        )
        if not_sent:
            results.warnings.append(not_sent)
        if status == FAILED:
            # Scores of nothing but empty replies would look like a result: keep the run and its errors only.
            scored = ScoredRun(results.without_scores())
        scored.results.provenance = _provenance(bench, model_spec, options)
        store.save_results(run_id, scored.results)
        store.set_run_status(run_id, status, n_samples=len(samples))
        from toolgauge.store.run_meta import sample_costs

        price = engine.prices.get("model")
        costs = sample_costs(store, run_id, price) if price is not None else None
        result: RunResult[R] = RunResult(run_id, scored, sample_costs=costs)
        if on_scored is not None:
            on_scored(result)
        return result
    except StoreWriteError as exc:
        if run_id is None:
            raise
        # Mark the run failed if the store still takes that write; its pending rows stay buffered.
        with contextlib.suppress(Exception):
            store.set_run_status(run_id, FAILED)
        raise RunStopped(run_id, f"store write failed: {exc}") from exc
    finally:
        # A store that cannot write cannot flush on close either; the error was reported above.
        with contextlib.suppress(StoreWriteError):
            store.close()


async def start_clients(clients: Sequence[ModelClient]) -> None:
    """Start every client, then probe the network ones: a dead endpoint fails before any sample.

    On any failure the clients already started are closed again. Raises ``UsageError`` naming a model that
    could not start or does not answer.
    """
    started: list[ModelClient] = []
    try:
        for c in clients:
            try:
                await c.start()
            except ModelError as exc:
                raise UsageError(f"model {c.name!r} could not start: {exc}") from exc
            started.append(c)
        for c in clients:
            if isinstance(c, ProbedClient):
                try:
                    await c.probe()
                except ModelError as exc:
                    raise UsageError(f"model {c.name!r} does not answer: {exc}") from exc
    except BaseException:
        for c in started:
            await c.close()
        raise


async def _start_and_probe(clients: Sequence[ModelClient], store: Store, run_id: str) -> None:
    """:func:`start_clients`; on failure the run is marked failed (interrupted on Ctrl-C)."""
    try:
        await start_clients(clients)
    except BaseException as exc:
        stopped = isinstance(exc, KeyboardInterrupt | asyncio.CancelledError)
        store.set_run_status(run_id, INTERRUPTED if stopped else FAILED)
        if stopped:
            raise RunInterrupted(run_id) from exc
        raise


@runtime_checkable
class OptionCheckingClient(Protocol):
    """A client that says which generation options its API cannot honour (the named providers)."""

    name: str

    def unsupported(self, options: GenerateOptions) -> list[str]:
        """One ``"option (why)"`` per set option that will not be sent."""
        ...


def unsupported_options_warning(client: ModelClient, options: GenerateOptions) -> str:
    """The one warning line for the options ``client`` cannot honour ("" when it honours them all)."""
    if not isinstance(client, OptionCheckingClient):
        return ""
    missing = client.unsupported(options)
    if not missing:
        return ""
    return f"model {client.name!r} cannot honour {'; '.join(missing)}: not sent, the provider's default applies"


def _effective_options(bench: Benchmark[Any, Any], options: RunOptions) -> GenerateOptions:
    """The generation options the run's requests carry: the benchmark's call settings under the user's."""
    from pydantic import ValidationError

    from toolgauge.settings import CallSettings

    config = stored_config(bench)
    given = {k: v for k, v in config.items() if k in CallSettings.model_fields}
    given.update({k: v for k, v in options.model_options.items() if k in CallSettings.model_fields and v is not None})
    try:
        return CallSettings.model_validate(given).options_for([])
    except ValidationError:  # a benchmark whose config uses these names otherwise: its requests' own options
        return GenerateOptions()


def _provenance(bench: Benchmark[Any, Any], model_spec: str, options: RunOptions) -> Provenance:
    """What reproduces the run (its data files hashed as they are now, at the end of the run)."""
    import toolgauge

    return make_provenance(
        version=toolgauge.__version__,
        model=model_spec,
        benchmark_options=_jsonable(stored_config(bench)),
        model_options=options.model_options,
        limit=options.limit,
        seed=options.engine.seed,
        epochs=options.engine.epochs,
    )


def _price_text(price: Price | None) -> str:
    return price.describe() if price is not None else "unknown"


def run_config(bench: Benchmark[Any, Any], epochs: int = 1) -> dict[str, Any]:
    """The config a run is stored with: :func:`~toolgauge.benchmark.stored_config`, plus ``epochs`` when more than one.

    One epoch adds nothing, so runs of one epoch keep the config they always had (``--resume`` of an
    older run still matches); ``rescore`` reads ``epochs`` back from it.
    """
    config = stored_config(bench)
    if epochs != 1:
        config["epochs"] = epochs
    return config


def _open_run(
    store: Store,
    bench: Benchmark[Any, Any],
    model_spec: str,
    resume: str | None,
    epochs: int = 1,
    same_run: SameRun | None = None,
) -> str:
    """Create or reopen the run, holding its lease (``RunLocked`` when another process runs it).

    ``store.close()`` gives the lease back when the run ends.
    """
    config = run_config(bench, epochs)
    if resume is None:
        run_id = store.create_run(bench.name, model_spec, config)
        store.acquire_run_lock(run_id)
        return run_id
    run = store.get_run(resume)
    if run is None:
        raise UsageError(f"--resume {resume}: no such run in the store (see: toolgauge runs)")
    if run.benchmark != bench.name or run.model != model_spec:
        raise UsageError(
            f"--resume {resume}: that run is {run.benchmark} with model {run.model!r}, "
            f"not {bench.name} with {model_spec!r}"
        )
    given = _jsonable(config)
    if not (same_run(run.config, given) if same_run is not None else run.config == given):
        raise UsageError(f"--resume {resume}: the run was started with other settings: {run.config}")
    # Before anything is changed: a second resumer stops here, with no model call and no write.
    store.acquire_run_lock(resume)
    store.set_run_status(resume, "running")
    return resume


def _jsonable(config: Mapping[str, Any]) -> dict[str, Any]:
    import json

    from toolgauge.redact import redact_tree

    # The store keeps the config with secrets masked; compare like with like.
    return dict(json.loads(json.dumps(redact_tree(dict(config)), sort_keys=True, default=str)))
