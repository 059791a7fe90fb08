"""The sweep file: TOML read with tomllib into pydantic records, every option checked before anything runs.

```toml
epochs = 3
seed = 0
[[model]]
spec = "http://127.0.0.1:8000/v1#qwen"
temperature = 0.7
[[benchmark]]
name = "bfcl"
data = "path/to/bfcl"          # optional: the cached official data (toolgauge data pull bfcl)
categories = ["simple_python", "multiple"]
limit = 50
```

Option keys are the ``eval`` command's option names with ``-`` as ``_``; the bounded ones (``limit``,
``temperature``, ``epochs``, ``concurrency``, ...) are checked by the declaration ``eval`` uses
(:mod:`toolgauge.bounds`), with strict types (``limit = true`` is no number). A benchmark entry takes the options
of its benchmark's ``build`` (what ``toolgauge.api.evaluate`` passes on) and the engine options below; a model
entry takes the engine options and any option every benchmark of the file accepts (``temperature``,
``max_tokens``). An option set by both a model and a benchmark entry is an error. Entries are counted from 1
in messages (``benchmark[1]`` is the first ``[[benchmark]]``). ``eval``'s ``--model`` is no key: a cell's
model is its ``[[model]]`` spec. Extra roles' models are options too (Tool-Genesis's ``agent_model`` and
``judge_model``); the planner gives each cell those clients (``BenchmarkSpec.roles``).
"""

from __future__ import annotations

import tomllib
import typing
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from toolgauge.benchmark import BenchmarkSpec
from toolgauge.bounds import OptionOutOfBounds, problem_of
from toolgauge.datasets.resolve import missing_official
from toolgauge.engine.cache import CacheMode
from toolgauge.errors import DataError, UsageError
from toolgauge.jsonl import read_text
from toolgauge.options import BOUNDED, check_option, options_listing
from toolgauge.unknown_fields import did_you_mean

MAX_NESTING = 32
"""The deepest a sweep file's arrays and tables may nest (its real options nest two levels at most)."""


class SweepFileError(UsageError):
    """A bad sweep file: the message is one line, ``FILE: where: what is wrong``."""


class EngineOptions(BaseModel):
    """The engine options a model or benchmark entry may set (``eval``'s ``--concurrency`` and so on)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    # For a model: the most requests in flight to its endpoint across the whole sweep (every worker of a
    # cluster), and its runs' samples at once. For a benchmark: its runs' samples at once.
    # The bounds of the numbers are eval's (toolgauge.options.check_option), checked before this model is made.
    concurrency: int | None = None
    timeout: float | None = None
    max_retries: int | None = None
    no_cache: bool | None = None
    # eval's --cache; ``no_cache = true`` is its older spelling of "off" (both in one entry must agree).
    cache: CacheMode | None = None

    @property
    def cache_mode(self) -> CacheMode | None:
        """The response-cache mode this entry sets (``cache``, or ``no_cache`` as off/on); None: not set."""
        if self.cache is not None:
            return self.cache
        return None if self.no_cache is None else ("off" if self.no_cache else "on")


ENGINE_KEYS = tuple(EngineOptions.model_fields)
# Keys that set one thing: an entry's conflict with another is checked on the thing.
_SAME_SETTING = {"no_cache": "cache"}


class ModelEntry(BaseModel):
    """One ``[[model]]``: its spec, engine options and the benchmark options it sets for every benchmark."""

    spec: str
    engine: EngineOptions = Field(default_factory=EngineOptions)
    options: dict[str, Any] = Field(default_factory=dict)
    # A display alias: the name of its cells' runs (runs, leaderboards) instead of the spec.
    name: str | None = None
    # eval's --price IN,OUT (USD per million tokens) for a model the price table does not know.
    price: str | None = None


class BenchmarkEntry(BaseModel):
    """One ``[[benchmark]]``: its registered name, engine options and its own options."""

    name: str
    engine: EngineOptions = Field(default_factory=EngineOptions)
    options: dict[str, Any] = Field(default_factory=dict)


class SweepFile(BaseModel):
    """A checked sweep file."""

    epochs: int = 1
    seed: int = 0
    models: list[ModelEntry]
    benchmarks: list[BenchmarkEntry]


TOP_KEYS = ("epochs", "seed", "model", "benchmark")
# ``eval``'s --model is each cell's [[model]] spec (given to a build that takes ``model``, as Tool-Genesis's).
_MODEL_KEY = "not an option here: each cell's model is its [[model]] entry's spec"


def read_sweep_file(path: Path) -> tuple[SweepFile, str]:
    """Read and check a sweep file; return it and its text. Raises ``SweepFileError`` (one line)."""
    try:
        text = read_text(path)  # a regular file within the input limit, as every input
    except DataError as exc:
        raise SweepFileError(exc.render()) from None
    return parse_sweep(text, str(path)), text


def parse_sweep(text: str, where: str) -> SweepFile:
    """Parse and check the text of a sweep file (``where`` names it in messages)."""

    def bad(field: str, message: str) -> SweepFileError:
        return SweepFileError(f"{where}: {field}: {message}" if field else f"{where}: {message}")

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise bad("", f"not valid TOML: {exc}") from None
    except RecursionError:
        raise bad("", f"arrays or tables nested deeper than {MAX_NESTING} levels") from None
    too_deep = _deeper_than(data, MAX_NESTING)
    if too_deep is not None:
        raise bad(too_deep, f"arrays or tables nested deeper than {MAX_NESTING} levels")
    unknown = [k for k in data if k not in TOP_KEYS]
    if unknown:
        raise bad(
            unknown[0], f"unknown key{did_you_mean(unknown[0], TOP_KEYS)} (a sweep file has {', '.join(TOP_KEYS)})"
        )
    epochs = _bounded("epochs", data.get("epochs", 1), "epochs", bad)
    seed = _bounded("seed", data.get("seed", 0), "seed", bad)
    models_raw = _tables(data.get("model"), "model", bad)
    benches_raw = _tables(data.get("benchmark"), "benchmark", bad)
    benchmarks = [_benchmark_entry(i, raw, bad) for i, raw in enumerate(benches_raw, 1)]
    specs = {b.name: _spec(b.name) for b in benchmarks}
    models = [_model_entry(i, raw, [specs[b.name] for b in benchmarks], bad) for i, raw in enumerate(models_raw, 1)]
    for m_index, model in enumerate(models, 1):
        for b_index, bench in enumerate(benchmarks, 1):
            both = sorted(set(model.options) & set(bench.options))
            bench_set = {_SAME_SETTING.get(k, k) for k in bench.engine.model_fields_set}
            both += sorted(k for k in model.engine.model_fields_set if k != "concurrency"
                           and _SAME_SETTING.get(k, k) in bench_set)  # fmt: skip
            if both:
                raise bad(
                    f"model[{m_index}].{both[0]}",
                    f"also set by benchmark[{b_index}] ({bench.name}); set it in one place",
                )
    return SweepFile(epochs=epochs, seed=seed, models=models, benchmarks=benchmarks)


def _bounded(name: str, value: Any, where: str, bad: Callable[[str, str], SweepFileError]) -> Any:
    """A bounded option's value as eval's declaration accepts it (:func:`toolgauge.options.check_option`)."""
    try:
        return check_option(name, value)
    except OptionOutOfBounds as exc:
        raise bad(where, exc.problem) from None


def _deeper_than(data: Mapping[str, Any], limit: int) -> str | None:
    """The first key (``model[1].x``) whose value nests arrays or tables deeper than ``limit``, else None."""
    stack: list[tuple[str, Any, int]] = [(key, value, 1) for key, value in data.items()]
    while stack:
        where, value, depth = stack.pop()
        if depth > limit:
            return where
        if isinstance(value, dict):
            stack.extend((f"{where}.{k}", v, depth + 1) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((f"{where}[{i + 1}]", v, depth + 1) for i, v in enumerate(value))
    return None


def _tables(value: Any, key: str, bad: Callable[[str, str], SweepFileError]) -> list[dict[str, Any]]:
    if value is None:
        raise bad(key, f"no [[{key}]] entry; a sweep needs at least one")
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise bad(key, f"must be [[{key}]] tables")
    if not value:
        raise bad(key, f"no [[{key}]] entry; a sweep needs at least one")
    return value


def _engine(raw: Mapping[str, Any], where: str, bad: Callable[[str, str], SweepFileError]) -> EngineOptions:
    picked = {k: raw[k] for k in ENGINE_KEYS if k in raw}
    for key in BOUNDED.intersection(picked):
        picked[key] = _bounded(key, picked[key], f"{where}.{key}", bad)
    try:
        engine = EngineOptions.model_validate(picked)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise bad(f"{where}.{first['loc'][0]}", _lower(first["msg"])) from None
    if engine.no_cache and engine.cache not in (None, "off"):
        raise bad(f"{where}.cache", f'"{engine.cache}" disagrees with no_cache = true (no_cache is cache = "off")')
    return engine


def _benchmark_entry(index: int, raw: dict[str, Any], bad: Callable[[str, str], SweepFileError]) -> BenchmarkEntry:
    where = f"benchmark[{index}]"
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        raise bad(f"{where}.name", 'missing: name the benchmark (e.g. name = "bfcl")')
    spec = _spec(name)
    if spec is None:
        from toolgauge.api import benchmark_names

        raise bad(f"{where}.name", f"unknown benchmark {name!r} (known: {', '.join(benchmark_names())})")
    engine = _engine(raw, where, bad)
    return BenchmarkEntry(name=name, engine=engine, options=_benchmark_options(spec, raw, where, bad))


def _benchmark_options(
    spec: BenchmarkSpec, raw: Mapping[str, Any], where: str, bad: Callable[[str, str], SweepFileError]
) -> dict[str, Any]:
    """A benchmark entry's options, each checked as ``eval`` checks it.

    By the benchmark's options model; a benchmark still without one, by its ``build``'s annotations and the bounds.
    """
    typed = spec.options
    known, listing = list(typed.model_fields), options_listing(typed)
    required = [k for k, f in typed.model_fields.items() if f.is_required()]

    def check(key: str, value: Any) -> Any:
        problem = _field_problem(typed, key, value)
        if problem is not None:
            raise bad(f"{where}.{key}", problem)
        return _absolute(value, typed.model_fields[key].annotation)

    options: dict[str, Any] = {}
    for key, value in raw.items():
        if key == "name" or key in ENGINE_KEYS:
            continue
        if key in ("epochs", "seed"):
            raise bad(f"{where}.{key}", "set it at the top of the file, for the whole sweep")
        if key == "model":
            raise bad(f"{where}.{key}", _MODEL_KEY)
        if key not in known:
            hint = did_you_mean(key, [*known, *ENGINE_KEYS])
            raise bad(f"{where}.{key}", f"not an option of {spec.name}{hint} (options: {listing})")
        options[key] = check(key, value)
    missing = [k for k in required if k not in options]
    if missing:
        raise bad(f"{where}.{missing[0]}", f"missing: {spec.name} needs it")
    if "data" in known and "data" not in options:  # the cached official data, checked before anything runs
        uncached = missing_official(spec.name, give='data = "PATH"')
        if uncached:
            raise bad(f"{where}.data", uncached)
    return options


def _model_entry(
    index: int, raw: dict[str, Any], specs: list[BenchmarkSpec | None], bad: Callable[[str, str], SweepFileError]
) -> ModelEntry:
    where = f"model[{index}]"
    spec = raw.get("spec")
    if not isinstance(spec, str) or not spec.strip():
        raise bad(f"{where}.spec", 'missing: give the model spec (e.g. spec = "gold")')
    engine = _engine(raw, where, bad)
    name = raw.get("name")
    if name is not None and (not isinstance(name, str) or not name.strip() or "\n" in name):
        raise bad(f"{where}.name", "expected one line of text (the model's display name)")
    price = raw.get("price")
    if price is not None:
        from toolgauge.cost import parse_price

        try:
            parse_price(price if isinstance(price, str) else "")
        except UsageError as exc:
            raise bad(f"{where}.price", str(exc).replace("--price ", "", 1)) from None
    options: dict[str, Any] = {}
    for key, value in raw.items():
        if key in ("spec", "name", "price") or key in ENGINE_KEYS:
            continue
        if key in ("epochs", "seed"):
            raise bad(f"{where}.{key}", "set it at the top of the file, for the whole sweep")
        if key == "model":
            raise bad(f"{where}.{key}", _MODEL_KEY)
        for bench in specs:
            assert bench is not None
            # The benchmark's options model checks the value.
            fields = list(bench.options.model_fields)
            if key not in fields:
                hint = did_you_mean(key, [*fields, *ENGINE_KEYS])
                raise bad(f"{where}.{key}", f"not an option of benchmark {bench.name}, which this model runs{hint}")
            problem = _field_problem(bench.options, key, value)
            if problem is not None:
                raise bad(f"{where}.{key}", problem)
        options[key] = _bounded(key, value, f"{where}.{key}", bad) if key in BOUNDED else value
    return ModelEntry(
        spec=spec.strip(), engine=engine, options=options, name=name.strip() if name else None, price=price
    )


def _field_problem(model: type[BaseModel], key: str, value: Any) -> str | None:
    """What ``model`` finds wrong with ``value`` for its field ``key`` (``input should be ..., got X``), or None."""
    try:
        model.model_validate({key: value})
    except ValidationError as exc:
        for error in exc.errors():
            if error["loc"][:1] == (key,):
                return problem_of(error, value)
    return None


def _absolute(value: Any, annotation: Any) -> Any:
    """A relative path option made absolute (from the working directory, as on the command line).

    Workers (Ray tasks) may start in another folder; the path must name the same file there.
    """
    takes_path = annotation is Path or Path in typing.get_args(annotation)
    if takes_path and isinstance(value, str) and value and not Path(value).expanduser().is_absolute():
        return str(Path(value).resolve())
    return value


def _lower(message: str) -> str:
    return message[:1].lower() + message[1:]


def _spec(name: str) -> BenchmarkSpec | None:
    from toolgauge.benchmarks.registry import spec_named

    return spec_named(name)
