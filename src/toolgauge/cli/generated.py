"""``eval NAME`` and ``score NAME`` generated from a benchmark's options models: no benchmark writes them by hand.

The command's own options are its options model's fields (:mod:`toolgauge.cli.option_params`); the shared ones
(``--model``, ``--store``, the engine options, ``--json``, ``--samples``, ``--quiet``) come from
:func:`toolgauge.cli.common.run_command`. The body validates the options by the model (one line on bad input),
sets the run up with :func:`toolgauge.run_setup.prepare_run` and runs it as every command does.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from rich.text import Text

from toolgauge.benchmark import BenchmarkSpec, CommandGroups
from toolgauge.cli.common import EngineDefaults, RunFlags, err, execute, out, run_command, warn
from toolgauge.cli.option_params import command_values, option_parameters
from toolgauge.options import EngineOptions, validated
from toolgauge.run_setup import prepare_run, run_options


def engine_of(flags: RunFlags) -> EngineOptions:
    """The engine options the user gave (checked by their declaration: ``--timeout inf`` is one line)."""
    values = {name: getattr(flags, name) for name in EngineOptions.model_fields}
    return validated(EngineOptions, values, prefix="--")


def with_signature(fn: Callable[..., None], params: list[inspect.Parameter]) -> Callable[..., None]:
    """``fn`` with the parameters typer reads (``params``, then ``flags``), for :func:`run_command` to extend."""
    flags = inspect.Parameter("flags", inspect.Parameter.KEYWORD_ONLY, annotation=RunFlags)
    fn.__signature__ = inspect.Signature([*params, flags])  # type: ignore[attr-defined]
    return fn


def _file_parameters(spec: BenchmarkSpec) -> list[inspect.Parameter]:
    """The options of the files the command can write from the run (``BenchmarkSpec.outputs``), if any."""
    return option_parameters(spec.outputs.options) if spec.outputs is not None else []


def _files(spec: BenchmarkSpec, values: dict[str, Any]) -> Mapping[str, tuple[Path, Callable[[Any], None]]]:
    """The files to write from the run (paths checked now), taking their options out of ``values``."""
    if spec.outputs is None:
        return {}
    model = spec.outputs.options
    given = {name: values.pop(name) for name in list(values) if name in model.model_fields}
    return spec.outputs.writers(validated(model, command_values(model, given), prefix="--"))


def eval_command(spec: BenchmarkSpec) -> Callable[..., None]:
    """The ``eval NAME`` command of ``spec``, from ``spec.options``."""
    model = spec.options
    assert model is not None

    def command(*, flags: RunFlags, **values: Any) -> None:
        files = _files(spec, values)
        options = validated(model, command_values(model, values), prefix="--")
        prepared = prepare_run(
            spec, options, flags.model_spec, engine=engine_of(flags), store=flags.store,
            show_progress=not flags.quiet, console=err,
        )  # fmt: skip
        execute(prepared.bench, prepared.model, flags, client=prepared.client, roles=prepared.roles,
                outputs=files, run_options=prepared.options, unit=spec.unit.removesuffix("s"))  # fmt: skip
        if spec.after_run is not None and not flags.as_json:
            for line in spec.after_run(prepared.bench):
                out.print(Text(line), highlight=False)

    command.__doc__ = model.__doc__  # the model's docstring says what the command does
    defaults = EngineDefaults(**{k: v for k, v in spec.engine_defaults.items() if k in ("concurrency", "timeout")})
    fn = with_signature(command, option_parameters(model, spec.engine_defaults) + _file_parameters(spec))
    # A benchmark whose tries of one sample would share files offers no --epochs (BenchmarkSpec.repeatable).
    return run_command(engine=defaults, sampling=False, limit=False, epochs=spec.repeatable)(fn)


def score_command(spec: BenchmarkSpec) -> Callable[..., None]:
    """The ``score NAME`` command of ``spec``, from ``spec.score``: recorded outputs scored, no model asked."""
    scoring = spec.score
    assert scoring is not None

    def command(*, flags: RunFlags, **values: Any) -> None:
        files = _files(spec, values)
        options = validated(scoring.options, command_values(scoring.options, values), prefix="--")
        recorded = scoring.run(options)
        for note in recorded.notes:
            warn(note)
        engine = EngineOptions(concurrency=flags.concurrency, timeout=flags.timeout, max_retries=flags.max_retries,
                               no_cache=flags.no_cache, name=flags.name, tag=flags.tag)  # fmt: skip
        prepared = run_options(spec, options, engine, store=flags.store, console=err)
        execute(recorded.bench, recorded.model, flags, client=recorded.client, outputs=files, run_options=prepared,
                unit=spec.unit.removesuffix("s"))  # fmt: skip

    command.__doc__ = scoring.options.__doc__
    fn = with_signature(command, option_parameters(scoring.options) + _file_parameters(spec))
    return run_command(engine=None, limit=False)(fn)


def add_generated_commands(spec: BenchmarkSpec, groups: CommandGroups) -> None:
    """Mount the generated ``eval NAME`` (and ``score NAME`` where the benchmark scores recorded outputs)."""
    groups.eval.command(spec.name)(eval_command(spec))
    if spec.score is not None:
        groups.score.command(spec.name)(score_command(spec))
