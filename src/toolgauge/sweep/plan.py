"""From a checked sweep file to its cells: one run of one model on one benchmark, with every option resolved.

Planning builds each cell's benchmark (its data is read and checked here) and resolves each model spec, so a
bad data path or model spec stops the sweep before anything is stored.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from toolgauge.benchmark import Benchmark, build_from, with_evaluated_model
from toolgauge.engine.cache import CacheMode
from toolgauge.errors import DataError, UsageError
from toolgauge.models.spec import display_spec, resolve_model
from toolgauge.run_setup import role_specs
from toolgauge.sweep.file import BenchmarkEntry, ModelEntry, SweepFile, SweepFileError
from toolgauge.sweep.limits import endpoint_of

# eval's engine defaults (cli/common.py EngineDefaults): what a cell gets for an option the file leaves out.
DEFAULT_CONCURRENCY = 4
DEFAULT_TIMEOUT = 120.0
DEFAULT_MAX_RETRIES = 4


class CellTask(BaseModel):
    """Everything a worker needs to run (a shard of) one cell: plain data, so it travels to a Ray worker."""

    index: int
    benchmark: str
    options: dict[str, Any]
    model_spec: str
    shown_model: str
    concurrency: int
    timeout: float
    max_retries: int
    cache: CacheMode = "on"
    epochs: int = 1
    seed: int = 0
    endpoint: str | None = None
    endpoint_limit: int = DEFAULT_CONCURRENCY
    # The extra roles' model specs (Tool-Genesis's agent and judge), as the benchmark's eval command decides
    # them from the options (``BenchmarkSpec.roles``), and the limits of their endpoints.
    roles: dict[str, str] = {}
    role_limits: dict[str, int] = {}
    # The run's name (the [[model]]'s display name) and tags (sweep --tag, --name as tag "sweep").
    name: str | None = None
    tags: dict[str, str] = {}
    # The [[model]]'s price (eval's --price IN,OUT), checked when the file was read.
    price: str | None = None


@dataclass
class Cell:
    """One planned cell: its task and the benchmark built from it (on the machine that planned)."""

    task: CellTask
    bench: Benchmark[Any, Any] = field(repr=False)

    @property
    def sample_keys(self) -> list[str]:
        """The keys of the cell's samples, in order."""
        return [key for key, _ in self.bench.samples()]


def plan_cells(sweep: SweepFile, where: str) -> list[Cell]:
    """Every cell of the sweep, model by model, each benchmark in file order.

    Raises ``SweepFileError`` naming the entry whose benchmark cannot be built or whose model spec is wrong.
    """
    from toolgauge.benchmarks.registry import spec_named

    cells: list[Cell] = []
    # An endpoint's limit: the smallest concurrency of the models that use it.
    limits: dict[str, int] = {}
    for model in sweep.models:
        endpoint = endpoint_of(model.spec)
        if endpoint is not None:
            own = model.engine.concurrency or DEFAULT_CONCURRENCY
            limits[endpoint] = min(limits.get(endpoint, own), own)
    for m_index, model in enumerate(sweep.models, 1):
        for b_index, entry in enumerate(sweep.benchmarks, 1):
            spec = spec_named(entry.name)
            assert spec is not None  # checked with the file
            options = with_evaluated_model(spec, {**entry.options, **model.options}, model.spec)
            try:
                bench = build_from(spec, options)
            except DataError as exc:
                raise SweepFileError(f"{where}: benchmark[{b_index}] ({entry.name}): {exc.render()}") from None
            except UsageError as exc:
                raise SweepFileError(f"{where}: benchmark[{b_index}] ({entry.name}): {exc}") from None
            try:
                resolve_model(model.spec, replay_loader=bench.replay_table)
            except (UsageError, DataError) as exc:
                text = exc.render() if isinstance(exc, DataError) else str(exc)
                raise SweepFileError(f"{where}: model[{m_index}].spec: {text}") from None
            roles = role_specs(spec, options, model.spec)
            for role_spec in roles.values():
                try:
                    resolve_model(role_spec)
                except (UsageError, DataError) as exc:
                    text = exc.render() if isinstance(exc, DataError) else str(exc)
                    field_name = _role_field(role_spec, model, m_index, entry, b_index)
                    raise SweepFileError(f"{where}: {field_name}: {text}") from None
            endpoint = endpoint_of(model.spec)
            role_endpoints = {e for e in map(endpoint_of, roles.values()) if e is not None}
            task = CellTask(
                index=len(cells),
                benchmark=entry.name,
                options=options,
                model_spec=model.spec,
                shown_model=display_spec(model.spec),
                name=model.name,
                price=model.price,
                concurrency=entry.engine.concurrency or model.engine.concurrency or DEFAULT_CONCURRENCY,
                timeout=entry.engine.timeout or model.engine.timeout or DEFAULT_TIMEOUT,
                max_retries=_first(entry.engine.max_retries, model.engine.max_retries, DEFAULT_MAX_RETRIES),
                cache=_first(entry.engine.cache_mode, model.engine.cache_mode, "on"),
                epochs=sweep.epochs,
                seed=sweep.seed,
                endpoint=endpoint,
                endpoint_limit=limits.get(endpoint, DEFAULT_CONCURRENCY) if endpoint else DEFAULT_CONCURRENCY,
                roles=roles,
                role_limits={e: limits.get(e, DEFAULT_CONCURRENCY) for e in sorted(role_endpoints)},
            )
            cells.append(Cell(task, bench))
    return cells


def _role_field(spec: str, model: ModelEntry, m_index: int, entry: BenchmarkEntry, b_index: int) -> str:
    """Where a role's spec was set: the option (``benchmark[2].judge_model``) or, by default, the model's spec."""
    for where, options in ((f"benchmark[{b_index}]", entry.options), (f"model[{m_index}]", model.options)):
        for key, value in options.items():
            if key.endswith("_model") and value == spec:
                return f"{where}.{key}"
    return f"model[{m_index}].spec"


def _first(*values: Any) -> Any:
    return next(v for v in values if v is not None)


def build_bench(task: CellTask) -> Benchmark[Any, Any]:
    """The cell's benchmark, built again from its options (on a worker)."""
    from toolgauge.benchmarks.registry import spec_named

    spec = spec_named(task.benchmark)
    if spec is None:
        raise UsageError(f"unknown benchmark {task.benchmark!r} on this worker")
    return build_from(spec, task.options)
