"""What every command shares: the common options (declared once), error handling, running and printing.

A benchmark's command declares only its own options and one ``flags: RunFlags`` parameter;
:func:`run_command` adds the shared options to its signature and turns every failure into one line
and its exit code. Nothing here imports a benchmark or the app that mounts the commands.
"""

from __future__ import annotations

import functools
import inspect
import json
import math
import os
import shlex
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, NoReturn, TypeVar

import typer
from rich.text import Text

from toolgauge.benchmark import Benchmark, BenchmarkSpec
from toolgauge.cli.option_params import option_parameters
from toolgauge.driver import RunOptions, RunResult, run_benchmark
from toolgauge.engine.budget import BudgetReached
from toolgauge.engine.cache import CacheMode
from toolgauge.engine.epochs import epoch_key
from toolgauge.errors import DataError, RunInterrupted, RunStopped, UsageError
from toolgauge.models.base import ModelClient
from toolgauge.options import BOUNDED, EngineOptions, LimitOptions, SamplingOptions, check_options
from toolgauge.parsing.call_rate import PROMPT_MODE_WARNING
from toolgauge.redact import redact, redact_tree
from toolgauge.report.console import TerminalConsole, json_for_terminal
from toolgauge.report.export import check_output_file, sample_lines, write_lines_atomic
from toolgauge.report.terminal import render_results
from toolgauge.results import EvalResults, SampleScore
from toolgauge.settings import CallSettings

T = TypeVar("T")

# Piped stdout is as wide as $COLUMNS says, else wide enough that no table is folded into narrow columns.
PIPED_WIDTH = 1000


def piped_width(environ: Mapping[str, str]) -> int:
    """The width of stdout when it is not a terminal: ``$COLUMNS`` when it is a positive number, else PIPED_WIDTH."""
    columns = environ.get("COLUMNS", "").strip()
    return int(columns) if columns.isdigit() and int(columns) > 0 else PIPED_WIDTH


# Every command prints through these: control characters in data are shown, never obeyed (report/console.py).
err = TerminalConsole(stderr=True)
out = TerminalConsole() if sys.stdout.isatty() else TerminalConsole(width=piped_width(os.environ))


class Mode(StrEnum):
    """How the model is asked for calls."""

    prompt = "prompt"
    native = "native"


class Variant(StrEnum):
    """Metric variant."""

    reference = "reference"
    strict = "strict"


class ToolChoice(StrEnum):
    """Tool-choice setting for native calls."""

    auto = "auto"
    none = "none"
    expected = "expected"


def _store_given(value: str | None) -> str | None:
    # An empty --store (an unset variable in a script) must not quietly mean the default store.
    if value is not None and not value.strip():
        raise typer.BadParameter("an empty store URL; give a URL, or leave --store out for the default store")
    return value


StoreOpt = Annotated[
    str | None,
    typer.Option(
        "--store",
        callback=_store_given,
        help="SQLAlchemy URL of the store (default: $TOOLGAUGE_STORE, else .toolgauge/toolgauge.db)",
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the results as JSON on stdout.")]
RunArg = Annotated[str, typer.Argument(help="Run id, a unique start of one, or 'latest' (see: toolgauge runs).")]
ToolChoiceOpt = Annotated[
    ToolChoice, typer.Option("--tool-choice", help="auto | none | expected (force the reference tool by name).")
]
UnsafeNoSandboxOpt = Annotated[
    bool,
    typer.Option(
        "--unsafe-no-sandbox",
        help="DANGEROUS: run generated code even without bubblewrap (it can then read and write your "
        "files and secrets). Without it, generated code runs only under bubblewrap. See docs/sandbox.md.",
    ),
]


def check_isolation(unsafe_no_sandbox: bool) -> None:
    """Refuse to run generated code without bubblewrap unless the opt-out was given (one line, exit 2).

    With the opt-out a loud warning is printed on stderr, and the rest of the run may run generated code
    without isolation.
    """
    from toolgauge.sandbox import allow_unisolated, require_isolation

    if unsafe_no_sandbox:
        allow_unisolated(True)
    require_isolation(allow_unsafe=unsafe_no_sandbox)


# -- the shared options ------------------------------------------------------------------------
@dataclass(frozen=True)
class RunFlags:
    """The options every run-type command shares, as the user gave them.

    Commands that replay recorded outputs (``score``) have no model, engine or sampling options:
    they keep the fixed values below (many samples at once, no retries, no cache).
    """

    model: str | None = None
    store: str | None = None
    concurrency: int = 64
    timeout: float = 60.0
    max_retries: int = 0
    no_cache: bool = True
    resume: str | None = None
    quiet: bool = True
    as_json: bool = False
    samples: Path | None = None
    limit: int | None = None
    temperature: float = 0.0
    max_tokens: int = 512
    epochs: int = 1
    name: str | None = None
    tag: tuple[str, ...] = ()
    max_cost: float | None = None
    max_tokens_total: int | None = None
    price: str | None = None
    cache: CacheMode | None = None

    def run_options(self, spec: BenchmarkSpec | None = None) -> RunOptions:
        """The driver's options of a run of ``spec``'s benchmark (:func:`toolgauge.run_setup.run_options`)."""
        from toolgauge.run_setup import run_options

        self.check_bounds()
        engine = EngineOptions.model_construct(
            concurrency=self.concurrency, timeout=self.timeout, max_retries=self.max_retries, no_cache=self.no_cache,
            resume=self.resume, epochs=self.epochs, cache=self.cache, max_cost=self.max_cost,
            max_tokens_total=self.max_tokens_total, price=self.price, name=self.name, tag=self.tag,
        )  # fmt: skip
        sampling = {"temperature": self.temperature, "max_tokens": self.max_tokens} if self.model else {}
        return run_options(spec, {**sampling, "limit": self.limit}, engine, store=self.store,
                           show_progress=not self.quiet, console=err)  # fmt: skip

    def call_settings(self, tool_choice: ToolChoice = ToolChoice.auto) -> CallSettings:
        """The sampling settings for model requests."""
        self.check_bounds()
        return CallSettings(temperature=self.temperature, max_tokens=self.max_tokens, tool_choice=tool_choice.value)

    def check_bounds(self) -> None:
        """Check the bounded options against their one declaration (:mod:`toolgauge.options`), as a sweep file's.

        The CLI's ranges already hold; this catches what a range cannot (``--temperature nan``).
        """
        check_options({name: getattr(self, name) for name in BOUNDED if hasattr(self, name)})

    @property
    def model_spec(self) -> str:
        """The ``--model`` value (commands with a model always have one)."""
        if self.model is None:  # pragma: no cover - a command without --model asked for it
            raise UsageError("this command takes no --model")
        return self.model


@dataclass(frozen=True)
class EngineDefaults:
    """Per-command defaults of the engine options and the reply length.

    A Tool-Genesis server is slower to generate than a BFCL entry, and its code longer than a tool call.
    """

    concurrency: int = 4
    timeout: float = 120.0
    max_tokens: int = 512


ModelOpt = Annotated[
    str,
    typer.Option("--model", "-m", help="local | gold | replay:PATH | scripted:PATH | openai:MODEL[@URL] | URL#MODEL"),
]
NameOpt = Annotated[
    str | None, typer.Option("--name", metavar="TEXT", help="A name for the run, shown in runs, reports, leaderboards.")
]
TagOpt = Annotated[
    list[str],
    typer.Option("--tag", metavar="KEY=VALUE", help="KEY=VALUE label for the run (repeatable; runs --tag filters)."),
]
SamplesOpt = Annotated[Path | None, typer.Option("--samples", help="Write one JSON line per scored unit to this file.")]
QuietOpt = Annotated[bool, typer.Option("--quiet/--progress", "-q", help="No progress bar.")]


def _option(name: str, annotation: Any, default: Any) -> inspect.Parameter:
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)


def _shared_options(
    model: bool, engine: EngineDefaults | None, sampling: bool, limit: bool, epochs: bool = True
) -> list[inspect.Parameter]:
    """The ``inspect.Parameter`` list of the shared options a command takes, typer annotations included."""
    params = [_option("model", ModelOpt, ...)] if model else []
    params.append(_option("store", StoreOpt, None))
    if engine is not None:  # generated from the one declaration of the engine options
        defaults = {"concurrency": engine.concurrency, "timeout": engine.timeout}
        params += [p for p in option_parameters(EngineOptions, defaults) if epochs or p.name != "epochs"]
    params += [
        _option("name", NameOpt, None),
        _option("tag", TagOpt, []),
        _option("as_json", JsonOpt, False),
        _option("samples", SamplesOpt, None),
        _option("quiet", QuietOpt, engine is None),
    ]
    if limit:
        params += option_parameters(LimitOptions)
    if sampling:
        max_tokens = engine.max_tokens if engine is not None else 512
        sampled = option_parameters(SamplingOptions, {"max_tokens": max_tokens})
        params += [p for p in sampled if p.name in ("temperature", "max_tokens")]
    return params


def run_command(
    *,
    model: bool = True,
    engine: EngineDefaults | None = EngineDefaults(),
    sampling: bool = True,
    limit: bool = True,
    epochs: bool = True,
) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Decorate a command whose last parameter is ``flags: RunFlags``: add the shared options, guard the body.

    ``engine=None`` is a replay command: no ``--model``, no engine options, quiet by default.
    ``epochs=False``: no ``--epochs`` (a command whose tries would share files, such as generated servers).
    """

    def wrap(fn: Callable[..., None]) -> Callable[..., None]:
        own = [p for p in inspect.signature(fn, eval_str=True).parameters.values() if p.name != "flags"]
        shared = _shared_options(model and engine is not None, engine, sampling and engine is not None, limit, epochs)
        shared_names = {p.name for p in shared}

        @functools.wraps(fn)
        def command(**kwargs: Any) -> None:
            shared_values = {k: v for k, v in kwargs.items() if k in shared_names}
            shared_values["tag"] = tuple(shared_values.get("tag") or ())
            flags = RunFlags(**shared_values)

            def body() -> None:
                if flags.samples is not None:  # checked before anything runs or is stored
                    check_output_file(flags.samples, "--samples")
                fn(**{k: v for k, v in kwargs.items() if k not in shared_names}, flags=flags)

            guarded(body)

        # --model first, then the command's own options, then the shared ones (as --help lists them).
        params = [p for p in shared if p.name == "model"] + own + [p for p in shared if p.name != "model"]
        params = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in params]
        command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
        command.__annotations__ = {p.name: p.annotation for p in params}
        del command.__wrapped__  # typer must read the new signature, not the function's own
        return command

    return wrap


# -- errors ------------------------------------------------------------------------------------
def fail(message: str, code: int = 2) -> NoReturn:
    """Print one error line (secrets masked, never read as markup) and exit.

    The message comes from data, models and servers: ``[/x]`` in a suite id or ``[postgres]`` in an
    install hint is text, so it goes out as a :class:`~rich.text.Text`, which rich does not parse.
    """
    line = Text("error:", style="bold red")
    line.append(" " + " ".join(redact(message).splitlines()))
    err.print(line, highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def warn(message: str) -> None:
    """Print one warning line on stderr (plain text: it may quote data)."""
    line = Text("warning:", style="yellow")
    line.append(" " + redact(message))
    err.print(line, highlight=False, soft_wrap=True)


def guarded(fn: Callable[[], T]) -> T:
    """Run a command body, turning every failure into one line and its exit code (docs/cli.md "Exit codes").

    2: bad input or usage; 75 (EX_TEMPFAIL): stopped by a dead endpoint or a failed store write,
    resumable; 130: Ctrl-C or SIGTERM, resumable; 70 (EX_SOFTWARE): an internal error.
    """
    try:
        return fn()
    except DataError as exc:
        fail(exc.render())
    except UsageError as exc:
        fail(str(exc))
    except BudgetReached as exc:
        fail(
            f"{exc.reason}; run {exc.run_id} is stopped_budget, resumable: {resume_command(sys.argv[1:], exc.run_id)}",
            1,
        )
    except RunStopped as exc:
        fail(f"{exc.reason}; the run is resumable: {resume_command(sys.argv[1:], exc.run_id)}", code=75)
    except RunInterrupted as exc:
        notice = Text("interrupted", style="yellow")
        notice.append(
            f": finished samples of run {exc.run_id} are saved; continue with:\n"
            f"  {redact(resume_command(sys.argv[1:], exc.run_id))}"
        )
        err.print(notice, highlight=False, soft_wrap=True)
        raise typer.Exit(130) from None
    except KeyboardInterrupt:
        err.print("[yellow]interrupted[/]")
        raise typer.Exit(130) from None
    except typer.Exit:
        raise
    except Exception as exc:
        if os.environ.get("TOOLGAUGE_DEBUG"):
            raise
        fail(
            f"internal error: {exc.__class__.__name__}: {exc} (set TOOLGAUGE_DEBUG=1 for the traceback)",
            code=70,
        )


def resume_command(args: list[str], run_id: str) -> str:
    """The command that resumes run ``run_id``: the command line ``args`` as given, ``--resume`` replaced.

    A password in the ``--store`` URL is left out, with a note to set ``PGPASSWORD`` (PostgreSQL reads it
    there): the command then works when copied, and the password is never printed. A store named by
    ``$TOOLGAUGE_STORE`` is not printed at all; the note says the variable must be set as it was.
    """
    kept: list[str] = []
    notes: list[str] = []
    store_given = False
    for arg in _without_resume(args):
        flag, eq, value = arg.partition("=")
        if (flag == "--store" and eq) or kept[-1:] == ["--store"]:
            store_given = True
            url = value if eq else arg
            bare = _without_password(url)
            if bare != url:
                notes.append("with the store's password in PGPASSWORD")
            arg = f"--store={bare}" if eq else bare
        kept.append(arg)
    if not store_given and os.environ.get("TOOLGAUGE_STORE"):
        notes.append("with TOOLGAUGE_STORE set as for this run")
    command = shlex.join(["toolgauge", *kept, "--resume", run_id])
    return f"{command} ({'; '.join(notes)})" if notes else command


def _without_password(url: str) -> str:
    """``url`` with the password of its ``user:password@`` part left out."""
    scheme, sep, rest = url.partition("://")
    netloc, slash, path = rest.partition("/")
    userinfo, at, host = netloc.rpartition("@")
    if not sep or not at or ":" not in userinfo:
        return url
    return f"{scheme}://{userinfo.split(':', 1)[0]}@{host}{slash}{path}"


def _without_resume(args: list[str]) -> list[str]:
    """The command line minus any ``--resume ID`` (to print the command that resumes a run)."""
    kept: list[str] = []
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg == "--resume":
            skip = True
        elif not arg.startswith("--resume="):
            kept.append(arg)
    return kept


def require_finite(**flags: float) -> None:
    """Reject NaN and infinite float flags (``--temperature nan``, ``--timeout inf``) as usage errors."""
    for name, value in flags.items():
        if not math.isfinite(value):
            raise UsageError(f"--{name.replace('_', '-')} must be a finite number, got {value}")


# -- small helpers -----------------------------------------------------------------------------
def split_list(value: str | None) -> list[str] | None:
    """A comma list as a list (None when not given); an empty list is a usage error."""
    if value is None:
        return None
    parts = [p.strip() for p in value.split(",") if p.strip()]
    if not parts:
        raise UsageError("an empty list was given")
    return parts


def resolved_model(bench: Benchmark[Any, Any], model: str, timeout: float) -> tuple[str, ModelClient]:
    """The spec as it may be stored and shown (password masked), and the client the real spec names."""
    from toolgauge.models.spec import display_spec, resolve_model

    return display_spec(model), resolve_model(model, replay_loader=bench.replay_table, timeout=timeout)


# -- running and printing ----------------------------------------------------------------------
def print_results(results: EvalResults, *, as_json: bool, document: Callable[[EvalResults], Any] | None = None) -> None:
    """Print results as JSON on stdout, or as the benchmark's tables (its renderer from the registry).

    ``document`` makes the JSON printed instead of the results' own (a command with a fixed ``--json`` shape).
    """
    from toolgauge.benchmarks.registry import spec_for_run

    if as_json:
        data = document(results) if document is not None else results.model_dump(mode="json")
        sys.stdout.write(json_for_terminal(json.dumps(redact_tree(data), indent=2, ensure_ascii=False)) + "\n")
        return
    spec = spec_for_run(results.benchmark)
    render_results(results, out, spec.render if spec else None, spec.unit if spec else "samples")


def sample_row(score: SampleScore, costs: Mapping[str, float] | None) -> dict[str, Any]:
    """A ``--samples`` row: the unit's score and ``sample_cost_usd``, what its sample's try cost.

    The cost of the evaluated model's calls of that try (every unit of a sample shares it), cached calls 0;
    None when the model's price is unknown.
    """
    cost = None if costs is None else round(costs.get(epoch_key(score.sample, score.epoch), 0.0), 8)
    return {**score.model_dump(mode="json"), "sample_cost_usd": cost}


def execute(
    bench: Benchmark[Any, Any],
    model: str,
    flags: RunFlags,
    *,
    client: ModelClient | None = None,
    roles: Mapping[str, ModelClient] | None = None,
    outputs: Mapping[str, tuple[Path, Callable[[RunResult[Any]], None]]] | None = None,
    unit: str = "sample",
    document: Callable[[EvalResults], Any] | None = None,
    run_options: RunOptions | None = None,
) -> RunResult[Any]:
    """Run, write the requested files, print; exit 1 when samples failed.

    ``run_options``: the driver's options as ``run_setup.prepare_run`` made them (default: from ``flags``).

    ``--json`` prints ``document(results)`` when ``document`` is given (a fixed JSON shape), else the results.

    Files are written whole at the end or not at all: the samples file (line by line into a
    temporary file that is then renamed), then each of ``outputs`` (label -> (path, writer of the
    scored run)). They are written while the run's store is open, since the per-unit scores read
    the results back from it. A run where every sample failed prints no scores and writes no files.
    """
    written: list[tuple[str, Path]] = []

    def write_files(result: RunResult[Any]) -> None:
        run = result.scored.results.run
        if run is not None and run.status == "failed":
            return
        if flags.samples is not None:
            rows = (sample_row(s, result.sample_costs) for s in result.scored.iter_samples())
            write_lines_atomic(flags.samples, sample_lines(rows))
            written.append((f"per-{unit} results", flags.samples))
        for label, (path, write) in (outputs or {}).items():
            write(result)
            written.append((label, path))

    from toolgauge.benchmarks.registry import spec_for_run

    spec = spec_for_run(bench.name)
    options = run_options or flags.run_options(spec)
    from toolgauge.cli.event_loop import run_interruptible

    job = run_benchmark(bench, model, options, client=client, roles=roles, on_scored=write_files)
    result = run_interruptible(job, stopped=(RunInterrupted,))
    results = result.scored.results
    run = results.run
    status = run.status if run is not None else None
    if status == "failed" and run is not None:
        if flags.as_json:  # the status and the errors: run_benchmark keeps no scores of empty replies
            print_results(results, as_json=True, document=document)
        first = run.first_error
        fail(
            f"every {unit} failed (run {run.id} is stored, status failed); "
            f"first: {first.key + ': ' + first.error if first else None}",
            code=1,
        )
    print_results(results, as_json=flags.as_json, document=document)
    if not flags.as_json:
        for label, path in written:
            out.print(Text(f"{label}: {path}"), highlight=False)
    # Said on stderr at the end of the run, unless the table just showed it on this terminal (the results keep it).
    if flags.as_json or not sys.stdout.isatty():
        for warning in results.warnings:
            if warning.startswith(PROMPT_MODE_WARNING):
                warn(warning)
    if status == "finished_with_errors" and run is not None:
        if flags.as_json:  # the table carries this warning; JSON readers get it on stderr too
            err.print(
                f"[yellow]warning:[/] {run.sample_errors} of {run.samples} {unit}s failed; "
                f"scores are not comparable (run {run.id}, status finished_with_errors)",
                highlight=False,
                soft_wrap=True,
            )
        raise typer.Exit(1)
    return result
