"""One way to set up a run from (benchmark, options, model, roles): the CLI, the API and sweep cells all use it.

:func:`prepare_run` builds the benchmark from its typed options, resolves the evaluated model and the clients of
the extra roles the benchmark asks for, and makes the driver's :class:`~toolgauge.driver.RunOptions`.
:func:`role_clients` is the one rule for those roles: a role whose spec is the evaluated model's gets its client,
and roles with one spec share one client.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel

from toolgauge.benchmark import Benchmark, BenchmarkSpec, same_run
from toolgauge.driver import RunOptions
from toolgauge.engine import EngineConfig
from toolgauge.models.base import ModelClient
from toolgauge.options import EngineOptions, SamplingOptions
from toolgauge.provenance import MODEL_OPTION_NAMES
from toolgauge.run_labels import RunLabels, RunMetaOptions, run_meta_options

if TYPE_CHECKING:
    from rich.console import Console

C = TypeVar("C")


@dataclass
class PreparedRun:
    """Everything ``driver.run_benchmark`` takes for one run."""

    bench: Benchmark[Any, Any]
    model: str
    client: ModelClient
    roles: dict[str, ModelClient]
    options: RunOptions


def role_specs(spec: BenchmarkSpec, options: BaseModel | Mapping[str, Any], model: str) -> dict[str, str]:
    """The model specs of the extra roles a run of ``spec`` asks for (``BenchmarkSpec.roles``), by role."""
    if spec.roles is None:
        return {}
    values = options.model_dump() if isinstance(options, BaseModel) else options
    return dict(spec.roles(values, model))


def role_clients(roles: Mapping[str, str], model: str, client: C, make: Callable[[str], C]) -> dict[str, C]:
    """The clients of ``roles`` (role -> spec): ``client`` for the evaluated ``model``'s spec, one per other spec."""
    clients: dict[str, C] = {model: client}
    chosen: dict[str, C] = {}
    for role, role_spec in roles.items():
        if role_spec not in clients:
            clients[role_spec] = make(role_spec)
        chosen[role] = clients[role_spec]
    return chosen


def run_options(
    spec: BenchmarkSpec | None,
    options: BaseModel | Mapping[str, Any] | None,
    engine: EngineOptions,
    *,
    store: str | None,
    show_progress: bool = False,
    console: Console | None = None,
    seed: int = 0,
    labels: RunLabels | None = None,
) -> RunOptions:
    """The driver's options of a run with ``options`` (its sampling options go into the provenance).

    ``spec``: the benchmark (None: one without a spec). Its headline metrics are summarised with their spread, and
    ``--resume`` takes a run it stored before its options model, whose migrated config matches (``same_run``).

    ``options`` as a mapping: the keyword options of a benchmark still without an options model. ``labels``: the
    run's name and tags where they come from elsewhere than ``engine`` (a sweep cell's model name and tags).
    """
    if isinstance(options, SamplingOptions):
        model_options = options.model_options()
    elif isinstance(options, Mapping):
        model_options = {k: options[k] for k in MODEL_OPTION_NAMES if options.get(k) is not None}
    else:
        model_options = {}
    limit = options.get("limit") if isinstance(options, Mapping) else getattr(options, "limit", None)
    meta = run_meta_options(
        name=engine.name, tags=engine.tag or (), max_cost=engine.max_cost, max_tokens_total=engine.max_tokens_total,
        price=engine.price, cache=engine.cache, no_cache=engine.no_cache,
    )  # fmt: skip
    return RunOptions(
        store_url=store,
        resume=engine.resume,
        engine=engine_config(engine, meta, show_progress=show_progress, seed=seed),
        console=console,
        headline=spec.headline if spec is not None else (),
        model_options=model_options,
        limit=limit,
        labels=labels or meta.labels,
        price=meta.price,
        same_run=functools.partial(same_run, spec) if spec is not None else None,
    )


def engine_config(engine: EngineOptions, meta: RunMetaOptions, *, show_progress: bool, seed: int) -> EngineConfig:
    """The engine's knobs of a run with ``engine``: its cache mode and budget as checked into ``meta``."""
    return EngineConfig(
        concurrency=engine.concurrency, timeout=engine.timeout, max_retries=engine.max_retries, epochs=engine.epochs,
        use_cache=not engine.no_cache, cache=meta.cache, budget=meta.budget, show_progress=show_progress, seed=seed,
    )  # fmt: skip


def prepare_run(
    spec: BenchmarkSpec,
    options: BaseModel,
    model: str | ModelClient,
    *,
    engine: EngineOptions,
    store: str | None = None,
    roles: Mapping[str, ModelClient] | None = None,
    bench: Benchmark[Any, Any] | None = None,
    show_progress: bool = False,
    console: Console | None = None,
) -> PreparedRun:
    """Set up a run of ``spec`` with ``options`` on ``model`` (a spec as on the command line, or a client).

    ``roles`` None: the roles ``spec`` asks for get clients of their specs (:func:`role_clients`). ``bench``:
    the benchmark already built from ``options`` (a command that looked at it first).

    Raises:
        UsageError, DataError: bad options, data or model spec (before anything is stored).
    """
    from toolgauge.models.spec import display_spec, resolve_model

    if isinstance(model, str) and "model" in type(options).model_fields and options.model_dump().get("model") is None:
        options = options.model_copy(update={"model": model})  # a benchmark whose run the evaluated model shapes
    bench = bench if bench is not None else spec.build(options)
    if not isinstance(model, str):
        shown, client = model.name, model
    elif spec.client is not None:
        shown, client = spec.client(bench, model, engine.timeout)
    else:
        shown, client = (
            display_spec(model),
            resolve_model(model, replay_loader=bench.replay_table, timeout=engine.timeout),
        )
    if roles is None:
        wanted = role_specs(spec, options, model) if isinstance(model, str) else {}
        roles = role_clients(wanted, model if isinstance(model, str) else shown, client,
                             lambda s: resolve_model(s, timeout=engine.timeout))  # fmt: skip
    return PreparedRun(
        bench=bench,
        model=shown,
        client=client,
        roles=dict(roles),
        options=run_options(spec, options, engine, store=store, show_progress=show_progress, console=console),
    )
