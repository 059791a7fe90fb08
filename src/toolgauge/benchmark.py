"""What a benchmark supplies: the episode protocol the driver runs, and the spec it registers with.

A benchmark package (``toolgauge/benchmarks/<name>/``) implements :class:`Benchmark` for its runs and
exposes one :class:`BenchmarkSpec`; ``toolgauge/benchmarks/registry.py`` lists the specs. The core
never imports a benchmark: the CLI shell and the Python API reach them through the registry.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from pydantic import BaseModel

from toolgauge.results import EvalResults, ScoredRun

if TYPE_CHECKING:
    # Types only: a benchmark's metrics import this module, and must not pull in the engine and the store.
    import typer
    from rich.console import Console

    from toolgauge.engine import EpisodeContext, SampleOutcome
    from toolgauge.export.source import RunSource
    from toolgauge.models.base import ModelClient
    from toolgauge.panels import RunPanels, SamplePanels
    from toolgauge.records import AssistantTurn

S = TypeVar("S")
R = TypeVar("R", bound=BaseModel)
OptionsT = TypeVar("OptionsT", bound=BaseModel)


class Benchmark(Protocol[S, R]):
    """The pieces a protocol provides; the engine and the driver do the rest.

    ``options`` are what the run was built from (an instance of ``BenchmarkSpec.options``): the engine stores them
    as the run's config (:func:`stored_config`), ``--resume`` checks them and ``rescore`` validates them back into
    the model to rebuild the run. :class:`BenchmarkBase` holds them and the samples for a benchmark that wants it.
    """

    name: str
    result_type: type[R]

    @property
    def options(self) -> BaseModel:
        """The options the run was built from (its stored config, with the sample count)."""
        ...

    def samples(self) -> list[tuple[str, S]]:
        """Return (unique key, sample) pairs in a stable order."""
        ...

    async def episode(self, sample: S, ctx: EpisodeContext) -> R:
        """Run one sample against the model."""
        ...

    def score(self, samples: Sequence[tuple[str, S]], outcomes: Sequence[SampleOutcome[R]]) -> ScoredRun:
        """Score every sample (failed ones count as empty replies). Pure: no I/O, no state kept."""
        ...

    def replay_table(self, path: Path) -> Mapping[str, Sequence[AssistantTurn]]:
        """Read recorded outputs at ``path`` into (sample key -> turns by step). Pure: returns the table."""
        ...


class BenchmarkBase(Generic[S, OptionsT]):
    """What most benchmarks keep, for their protocol class to build on (a :class:`Benchmark` need not).

    The samples (``items``, keyed by ``keys`` in the same order), where they came from as the results name it
    (``data_label``), the options the run was built from (``options``, stored as its config) and the warnings said
    with its results. A subclass declares ``name``, ``result_type`` and what is its own: the mode, the variant,
    the call settings, the episode and the scoring.
    """

    def __init__(
        self,
        items: Sequence[S],
        *,
        keys: Sequence[str],
        data_label: str,
        options: OptionsT,
        warnings: Sequence[str] = (),
    ) -> None:
        self.items = list(items)
        self.keys = list(keys)
        self.data_label = data_label
        self.options = options
        self.warnings = list(warnings)

    def samples(self) -> list[tuple[str, S]]:
        """The items with their keys, in order."""
        return list(zip(self.keys, self.items, strict=True))


@dataclass(frozen=True)
class CommandGroups:
    """The CLI groups a benchmark adds its commands to."""

    root: typer.Typer
    eval: typer.Typer
    score: typer.Typer


Renderer = Callable[[EvalResults, "Console"], None]
# The model a run asks, when a benchmark makes it itself: (benchmark, model spec, timeout) -> (shown spec, client).
ClientMaker = Callable[[Any, str, float], tuple[str, "ModelClient"]]


@dataclass(frozen=True)
class RecordedRun:
    """A run of recorded outputs, as ``ScoreSpec.run`` makes it.

    Attributes:
        bench: The benchmark, built from the ``eval`` options model (so the run rescores as any other).
        model: The recorded outputs' model spec, as shown and stored.
        client: The recorded outputs as the run's model.
        notes: Warnings about the recordings themselves, said before the run (entries with no recorded output).
    """

    bench: Benchmark[Any, Any]
    model: str
    client: ModelClient
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class ScoreSpec:
    """How ``score NAME`` scores recorded outputs: its options model (with ``predictions``) and the run it makes.

    Attributes:
        options: The options model of ``score NAME`` (the command is generated from it); it has ``predictions``.
        run: Makes the run from those options.
    """

    options: type[BaseModel]
    run: Callable[[Any], RecordedRun]


@dataclass(frozen=True)
class OutputFiles:
    """Files the ``eval NAME`` and ``score NAME`` commands can write from a finished run, besides ``--samples``.

    They are command-line outputs, not options of the run: not stored, and no keyword of the API or a sweep file.

    Attributes:
        options: The model of the file options (``--predictions-out PATH``); the commands get its fields as options.
        writers: From those options, the files to write: label -> (path, writer of the finished ``RunResult``).
            It checks the paths first (before anything runs).
    """

    options: type[BaseModel]
    writers: Callable[[Any], Mapping[str, tuple[Path, Callable[[Any], None]]]]


class ExportWriter(Protocol):
    """Writes one stored run in a benchmark's own format into ``folder`` and returns the files it wrote."""

    def __call__(self, folder: Path, source: RunSource, *, model_name: str | None = None) -> list[Path]:
        """Write the run (``model_name``: the model as the format's files name it; None: the run's model)."""
        ...


@dataclass(frozen=True)
class Exporter:
    """An export format a benchmark offers besides the ones every run has (``toolgauge export --format NAME``).

    Attributes:
        writes: What the format writes, one line (``toolgauge export``'s help and messages say it).
        runs: The runs it exports, as a message names them (``"BFCL"``: "--format bfcl exports BFCL runs only").
        write: The writer, usually ``lazy`` so that the registry imports no export code.
    """

    writes: str
    runs: str
    write: ExportWriter


def no_commands(groups: CommandGroups) -> None:
    """``add_commands`` of a benchmark whose commands are all generated from its options models."""
    del groups


@dataclass(frozen=True)
class BenchmarkSpec:
    """One benchmark as the registry knows it.

    Attributes:
        name: The benchmark's CLI name (``toolgauge eval NAME``).
        title: A one-line description.
        options: The options model of ``eval NAME`` (:mod:`toolgauge.options`): the command, the API's keywords,
            a sweep entry's keys and the stored config all come from it.
        build: Makes the benchmark from an instance of ``options``; the CLI command, the Python API, sweeps
            (:func:`build_from`) and ``rescore`` (:func:`rebuild`) call it. By convention (a spec does not give
            it): ``build`` of the ``build`` module beside ``options``' module (``toolgauge.benchmarks.suite.build``
            for ``toolgauge.benchmarks.suite.options.SuiteOptions``), imported when first called (:func:`lazy`).
        run_names: The ``Benchmark.name`` values of its runs (what the store records); default ``(name,)``.
        add_commands: Adds the commands truly the benchmark's own to the CLI groups (default :func:`no_commands`:
            none; ``eval NAME`` and ``score NAME`` are generated from ``options`` and ``score``).
        render: Prints one run's results in the terminal (None: the generic table).
        headline: The names of the metrics a leaderboard shows.
        extras: The optional dependency groups (``pip install 'toolgauge[X]'``) it needs.
        variants: The metric variants ``rescore --variant`` accepts.
        unit: What one sample is, plural, for the run line (``"sessions"``, ``"servers"``).
        repeatable: Whether a run may try each sample several times (``--epochs``); False where the tries
            of one sample would share files (ToolGate's candidate ids).
        roles: The model specs of the extra roles (``{"agent": SPEC, "judge": SPEC}``) a run asks for, from
            its ``build`` options and the evaluated model's spec, as the benchmark's ``eval`` command decides
            them (Tool-Genesis's ``--agent-model`` and ``--judge-model``); None: it asks for none. A sweep
            cell gives its run these clients.
        score: How ``score NAME`` scores recorded outputs, generated like ``eval`` (None: no generated ``score``).
        client: Makes the model a run asks, where the benchmark pairs it with its samples itself (MTU-Bench's
            ``replay:PATH``); None: the model spec resolved as usual.
        migrate: Turns a config stored before the options model into the model's fields (old runs rescore).
        restore: Makes a stored run's benchmark from its options where that differs from ``build`` (BFCL: a run of
            result files is scored again from its stored outputs, without the files); None: ``build``.
        engine_defaults: The engine options' defaults of ``eval NAME`` where they are not the usual ones.
        outputs: Files ``eval NAME`` and ``score NAME`` can write from a finished run (WildToolBench's logs), or None.
        after_run: The lines ``eval NAME`` prints after a finished run's results (not with ``--json``), from the
            benchmark ``build`` made: where the run wrote files of its own (Tool-Genesis's servers); None: none.
        run_panels: The viewer's extra panels of a run page (:mod:`toolgauge.panels`), or None.
        sample_panels: The viewer's extra panels of a sample page, or None.
        paper: ``paper_blocks(runs, **options)`` laying out the seed paper's tables (``toolgauge paper``), or None.
        exports: The export formats the benchmark offers, by ``--format`` name, besides the ones every run has.
    """

    name: str
    title: str
    options: type[BaseModel]
    build: Callable[[Any], Benchmark[Any, Any]] = field(init=False)
    run_names: tuple[str, ...] = ()
    add_commands: Callable[[CommandGroups], None] = no_commands
    render: Renderer | None = None
    headline: tuple[str, ...] = ()
    extras: tuple[str, ...] = ()
    variants: tuple[str, ...] = field(default=())
    unit: str = "samples"
    repeatable: bool = True
    roles: Callable[[Mapping[str, Any], str], Mapping[str, str]] | None = None
    score: ScoreSpec | None = None
    client: ClientMaker | None = None
    migrate: Callable[[Mapping[str, Any]], dict[str, Any]] | None = None
    restore: Callable[[Any], Benchmark[Any, Any]] | None = None
    engine_defaults: Mapping[str, Any] = field(default_factory=dict)
    outputs: OutputFiles | None = None
    after_run: Callable[[Any], Sequence[str]] | None = None
    run_panels: RunPanels | None = None
    sample_panels: SamplePanels | None = None
    paper: Callable[..., Any] | None = None
    exports: Mapping[str, Exporter] = field(default_factory=dict)

    def __post_init__(self) -> None:
        package = self.options.__module__.rpartition(".")[0]
        object.__setattr__(self, "build", lazy(f"{package}.build", "build"))
        if not self.run_names:
            object.__setattr__(self, "run_names", (self.name,))


def variants_text(spec: BenchmarkSpec) -> str:
    """``NAME has the variants a, b`` or ``NAME has no metric variants``, for error messages."""
    if not spec.variants:
        return f"{spec.name} has no metric variants"
    return f"{spec.name} has the variants {', '.join(spec.variants)}"


def build_from(spec: BenchmarkSpec, values: Mapping[str, Any]) -> Benchmark[Any, Any]:
    """The benchmark ``spec`` makes from option values (as the API and a sweep entry give them).

    Raises:
        UsageError: a value its options model refuses (one line naming the option).
    """
    from toolgauge.options import validated

    return spec.build(validated(spec.options, values))


RUN_KEYS = ("n", "epochs")
"""What a stored config holds besides the options: the run's sample count and (more than one) its epochs."""


def stored_config(bench: Benchmark[Any, Any]) -> dict[str, Any]:
    """The config a run is stored with: the options it was built from and its sample count.

    ``rescore`` validates the options back into the model (:func:`stored_options`); the count lets it tell that the
    data changed since (:func:`rebuild`).
    """
    return {**bench.options.model_dump(mode="json"), "n": len(bench.samples())}


def stored_options(spec: BenchmarkSpec, config: Mapping[str, Any], variant: str | None = None) -> BaseModel:
    """A stored run's options, validated by ``spec.options`` (a config stored before the model migrated first).

    ``variant`` replaces the stored metric variant (``rescore --variant``); the run's own keys are no options.
    """
    from toolgauge.options import validated

    values = spec.migrate(config) if spec.migrate is not None else dict(config)
    values = {k: v for k, v in values.items() if k not in RUN_KEYS}
    if variant is not None:
        values["variant"] = variant
    return validated(spec.options, values)


def same_run(spec: BenchmarkSpec | None, stored: Mapping[str, Any], config: Mapping[str, Any]) -> bool:
    """Whether a stored run's config defines the run that ``config`` defines (``--resume`` checks it: ``RunOptions``).

    Equal configs do; so does a config stored before ``spec``'s options model (its shape changed) whose migrated
    options (:func:`stored_options`) and run keys are ``config``'s: such a run resumes, its stored config kept.
    """
    from toolgauge.errors import UsageError

    if stored == config:
        return True
    # A key the stored config lacks is not checked: a ``gate run`` stored before configs kept ``n`` (its rounds,
    # which its options hold anyway) resumes too.
    if spec is None or spec.migrate is None or any(k in stored and stored[k] != config.get(k) for k in RUN_KEYS):
        return False
    try:
        old, new = stored_options(spec, stored), stored_options(spec, config)
    except (UsageError, LookupError, TypeError, ValueError):  # a config its migration cannot read matches nothing
        return False
    return old.model_dump(mode="json") == new.model_dump(mode="json")


def rebuild(spec: BenchmarkSpec, config: Mapping[str, Any], variant: str | None = None) -> Benchmark[Any, Any]:
    """A stored run's benchmark made again from its config (for ``rescore``), with an optional metric variant.

    Raises:
        UsageError: the benchmark cannot be rebuilt from the store, or the config is not valid.
    """
    from toolgauge.errors import UsageError

    if variant is not None and not spec.variants:
        raise UsageError(f"variant {variant!r}: {variants_text(spec)}")
    bench = (spec.restore or spec.build)(stored_options(spec, config, variant))
    stored, found = config.get("n"), len(bench.samples())
    if isinstance(stored, int) and stored != found:
        raise UsageError(f"the run has {stored} samples and its data gives {found} now (has the data changed?)")
    return bench


def rescorable(spec: BenchmarkSpec | None) -> bool:
    """Whether runs of ``spec`` can be scored again from the store alone."""
    return spec is not None


def lazy(module: str, name: str) -> Callable[..., Any]:
    """A function that imports ``module`` and calls its ``name`` when first called.

    A ``SPEC`` names its commands, ``build`` and ``rescore`` this way, so that importing a
    benchmark's loader or metrics does not import the command line, the engine and the store.
    """

    def call(*args: Any, **kwargs: Any) -> Any:
        return getattr(importlib.import_module(module), name)(*args, **kwargs)

    call.__name__ = call.__qualname__ = name
    call.__doc__ = f"``{module}.{name}``, imported when first called."
    # Where the real function is, for code that reads its signature (the options ``paper`` passes on).
    setattr(call, "lazy_target", (module, name))  # noqa: B010 - a function has no declared attribute
    return call


def with_evaluated_model(spec: BenchmarkSpec, options: Mapping[str, Any], model: str) -> dict[str, Any]:
    """``options`` with ``model`` added when the benchmark's options take the evaluated model and lack it."""
    if "model" in options or "model" not in spec.options.model_fields:
        return dict(options)
    return {**options, "model": model}
