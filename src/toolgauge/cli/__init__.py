"""The ``toolgauge`` command line."""

from __future__ import annotations

import asyncio
import json
import math
import os
import sys
from collections.abc import Callable, Mapping
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, NoReturn, TypeVar

import typer
from rich.console import Console
from rich.markup import escape
from rich.text import Text

from toolgauge.driver import Benchmark, RunOptions, RunResult, run_benchmark
from toolgauge.engine import EngineConfig
from toolgauge.errors import DataError, RunInterrupted, UsageError
from toolgauge.models.base import ModelClient
from toolgauge.redact import redact, redact_tree
from toolgauge.report.export import sample_lines, summary_to_csv, write_lines_atomic
from toolgauge.report.terminal import render_summary
from toolgauge.settings import CallSettings

app = typer.Typer(
    name="toolgauge",
    help=(
        "Measure how well language models use and build tools: "
        "MTU-Bench, BFCL, WildToolBench, Tool-Genesis and toolgauge's own suites."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _package_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("toolgauge")
    except PackageNotFoundError:  # running from a source tree that was never installed
        from toolgauge import __version__

        return __version__


def _print_version(value: bool) -> None:
    if value:
        sys.stdout.write(f"toolgauge {_package_version()}\n")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_print_version, is_eager=True, help="Print the version and exit."),
    ] = False,
) -> None:
    pass


eval_app = typer.Typer(help="Run a model on a benchmark and score it.", no_args_is_help=True)
score_app = typer.Typer(help="Rescore recorded model outputs offline (no model calls).", no_args_is_help=True)
app.add_typer(eval_app, name="eval")
app.add_typer(score_app, name="score")

T = TypeVar("T")

err = Console(stderr=True)
# Piped output keeps full tables instead of wrapping at rich's 80-column default.
out = Console() if sys.stdout.isatty() else Console(width=120)


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


# -- shared options -------------------------------------------------------------------------
ModelOpt = Annotated[
    str,
    typer.Option("--model", "-m", help="local | gold | replay:PATH | scripted:PATH | openai:MODEL[@URL] | URL#MODEL"),
]
StoreOpt = Annotated[
    str | None,
    typer.Option(
        "--store", help="SQLAlchemy URL of the store (default: $TOOLGAUGE_STORE, else .toolgauge/toolgauge.db)"
    ),
]
ConcurrencyOpt = Annotated[int, typer.Option("--concurrency", "-c", min=1, help="Samples run at once.")]
TimeoutOpt = Annotated[float, typer.Option("--timeout", min=0.1, help="Seconds per model request.")]
RetriesOpt = Annotated[int, typer.Option("--max-retries", min=0, help="Retries on 429/5xx/timeouts.")]
NoCacheOpt = Annotated[bool, typer.Option("--no-cache", help="Do not serve model answers from the cache.")]
ResumeOpt = Annotated[str | None, typer.Option("--resume", help="Continue an interrupted run by id.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the summary as JSON on stdout.")]
SamplesOpt = Annotated[Path | None, typer.Option("--samples", help="Write one JSON line per sample to this file.")]
LimitOpt = Annotated[
    int | None, typer.Option("--limit", min=1, help="Run only the first N samples (of each split or category).")
]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")]
TempOpt = Annotated[float, typer.Option("--temperature", help="Sampling temperature.")]
MaxTokOpt = Annotated[int, typer.Option("--max-tokens", min=1, help="Max tokens per model reply.")]
ToolChoiceOpt = Annotated[
    ToolChoice, typer.Option("--tool-choice", help="auto | none | expected (force the reference tool by name).")
]


def fail(message: str, code: int = 2) -> NoReturn:
    """Print one error line (secrets masked, never read as markup) and exit.

    The message comes from data, models and servers: ``[/x]`` in a suite id or ``[postgres]`` in an
    install hint is text, so it goes out as a :class:`~rich.text.Text`, which rich does not parse.
    """
    line = Text("error:", style="bold red")
    line.append(" " + " ".join(redact(message).splitlines()))
    err.print(line, highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def guarded(fn: Callable[[], Any]) -> Any:
    """Run a command body, turning every failure into one line and its exit code (docs/cli.md "Exit codes").

    2: bad input or usage; 75 (EX_TEMPFAIL): stopped by a dead endpoint or a failed store write,
    resumable; 130: Ctrl-C or SIGTERM, resumable; 70 (EX_SOFTWARE): an internal error.
    """
    from toolgauge.errors import RunStopped

    try:
        return fn()
    except DataError as exc:
        fail(exc.render())
    except UsageError as exc:
        fail(str(exc))
    except RunStopped as exc:
        again = " ".join(_without_resume(sys.argv[1:]))
        fail(f"{exc.reason}; the run is resumable: toolgauge {again} --resume {exc.run_id}", code=75)
    except RunInterrupted as exc:
        again = redact(" ".join(_without_resume(sys.argv[1:])))
        notice = Text("interrupted", style="yellow")
        notice.append(
            f": finished samples of run {exc.run_id} are saved; continue with:\n"
            f"  toolgauge {again} --resume {exc.run_id}"
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


def run_options(
    *,
    store: str | None,
    concurrency: int,
    timeout: float,
    max_retries: int,
    no_cache: bool,
    resume: str | None,
    quiet: bool,
) -> RunOptions:
    """Build the engine options shared by every eval/score command."""
    return RunOptions(
        store_url=store,
        resume=resume,
        engine=EngineConfig(
            concurrency=concurrency,
            timeout=timeout,
            max_retries=max_retries,
            use_cache=not no_cache,
            show_progress=not quiet,
        ),
        console=err,
    )


def execute(
    bench: Benchmark[Any, Any],
    model: str,
    options: RunOptions,
    *,
    as_json: bool,
    samples: Path | None,
    client: ModelClient | None = None,
    roles: Mapping[str, ModelClient] | None = None,
    outputs: Mapping[str, tuple[Path, Callable[[], None]]] | None = None,
    unit: str = "sample",
) -> None:
    """Run, write the requested files, print; exit 1 when samples failed.

    Files are written whole at the end or not at all: the samples file (line by line into a
    temporary file that is then renamed), then each of ``outputs`` (label -> (path, writer)). They
    are written while the run's store is open, since the rows read the results back from it. A
    run where every sample failed prints no scores and writes no files.
    """
    written: list[tuple[str, Path]] = []

    def write_files(result: RunResult[Any]) -> None:
        if result.scored.summary.get("run", {}).get("status") == "failed":
            return
        if samples is not None:
            write_lines_atomic(samples, sample_lines(result.scored.iter_rows()))
            written.append((f"per-{unit} results", samples))
        for label, (path, write) in (outputs or {}).items():
            write()
            written.append((label, path))

    result = asyncio.run(run_benchmark(bench, model, options, client=client, roles=roles, on_scored=write_files))
    summary = result.scored.summary
    run = summary.get("run", {})
    status = run.get("status")
    if status == "failed":
        if as_json:  # the status and the errors: run_benchmark keeps no scores of empty replies
            sys.stdout.write(json.dumps(redact_tree(summary), indent=2, ensure_ascii=False) + "\n")
        fail(
            f"every {unit} failed (run {run.get('id')} is stored, status failed); first: {run.get('first_error')}",
            code=1,
        )
    if as_json:
        sys.stdout.write(json.dumps(redact_tree(summary), indent=2, ensure_ascii=False) + "\n")
    else:
        render_summary(summary, out)
        for label, path in written:
            out.print(Text(f"{label}: {path}"), highlight=False)
    if status == "finished_with_errors":
        if as_json:  # the table carries this warning; JSON readers get it on stderr too
            err.print(
                f"[yellow]warning:[/] {run.get('sample_errors')} of {run.get('samples')} {unit}s failed; "
                f"scores are not comparable (run {run.get('id')}, status finished_with_errors)",
                highlight=False,
                soft_wrap=True,
            )
        raise typer.Exit(1)


def _limit(items: list[T], limit: int | None, group: Callable[[T], str] | None = None) -> list[T]:
    """The first ``limit`` items, or with ``group`` the first ``limit`` of each group (split, category)."""
    if not limit:
        return items
    if group is None:
        return items[:limit]
    taken: dict[str, int] = {}
    kept: list[T] = []
    for item in items:
        key = group(item)
        if taken.get(key, 0) < limit:
            taken[key] = taken.get(key, 0) + 1
            kept.append(item)
    return kept


def _warn(message: str) -> None:
    """Print one warning line on stderr (plain text: it may quote data)."""
    line = Text("warning:", style="yellow")
    line.append(" " + redact(message))
    err.print(line, highlight=False, soft_wrap=True)


def resolved_model(bench: Benchmark[Any, Any], model: str, timeout: float) -> tuple[str, ModelClient]:
    """The spec as it may be stored and shown (password masked), and the client the real spec names.

    The run records the masked form; only the client sees credentials.
    """
    from toolgauge.models.spec import display_spec, resolve_model

    return display_spec(model), resolve_model(model, replay_loader=bench.replay_table, timeout=timeout)


def require_finite(**flags: float) -> None:
    """Reject NaN and infinite float flags (``--temperature nan``, ``--timeout inf``) as usage errors."""
    for name, value in flags.items():
        if not math.isfinite(value):
            raise UsageError(f"--{name.replace('_', '-')} must be a finite number, got {value}")


def _split_list(value: str | None) -> list[str] | None:
    if value is None:
        return None
    parts = [p.strip() for p in value.split(",") if p.strip()]
    if not parts:
        raise UsageError("an empty list was given")
    return parts


# -- eval -----------------------------------------------------------------------------------
@eval_app.command("suite")
def eval_suite(
    model: ModelOpt,
    data: Annotated[
        Path | None, typer.Option("--data", help="A toolgauge JSONL file (default: the built-in sample suite)")
    ] = None,
    tool_choice: ToolChoiceOpt = ToolChoice.auto,
    variant: Annotated[Variant, typer.Option("--variant")] = Variant.strict,
    store: StoreOpt = None,
    concurrency: ConcurrencyOpt = 4,
    timeout: TimeoutOpt = 120.0,
    max_retries: RetriesOpt = 4,
    no_cache: NoCacheOpt = False,
    resume: ResumeOpt = None,
    as_json: JsonOpt = False,
    samples: SamplesOpt = None,
    limit: LimitOpt = None,
    quiet: QuietOpt = False,
    temperature: TempOpt = 0.0,
    max_tokens: MaxTokOpt = 512,
) -> None:
    """Run a model on toolgauge's own multi-turn format (the built-in sample suite by default)."""

    def body() -> None:
        from toolgauge.benchmarks.suite.loader import builtin_suite_path, load_suite
        from toolgauge.benchmarks.suite.protocol import SuiteBenchmark

        require_finite(temperature=temperature, timeout=timeout)
        path = data or builtin_suite_path()
        dialogues = _limit(load_suite(path), limit)
        bench = SuiteBenchmark(
            dialogues,
            data_label="builtin:sample" if data is None else str(path),
            settings=CallSettings(temperature=temperature, max_tokens=max_tokens, tool_choice=tool_choice.value),
            variant=variant.value,
        )
        opts = run_options(
            store=store, concurrency=concurrency, timeout=timeout, max_retries=max_retries,
            no_cache=no_cache, resume=resume, quiet=quiet,
        )  # fmt: skip
        shown, client = resolved_model(bench, model, timeout)
        execute(bench, shown, opts, as_json=as_json, samples=samples, client=client)

    guarded(body)


@eval_app.command("mtu-bench")
def eval_mtu(
    model: ModelOpt,
    data: Annotated[Path, typer.Option("--data", help="Folder with <split>_eval.jsonl files.")],
    splits: Annotated[str | None, typer.Option("--splits", help="Comma list of S-S,S-M,M-S,M-M,OOD")] = None,
    mode: Annotated[
        Mode, typer.Option("--mode", help="prompt (ReAct text, reference) or native tool calls")
    ] = Mode.prompt,
    variant: Annotated[Variant, typer.Option("--variant")] = Variant.reference,
    tool_choice: ToolChoiceOpt = ToolChoice.auto,
    store: StoreOpt = None,
    concurrency: ConcurrencyOpt = 4,
    timeout: TimeoutOpt = 120.0,
    max_retries: RetriesOpt = 4,
    no_cache: NoCacheOpt = False,
    resume: ResumeOpt = None,
    as_json: JsonOpt = False,
    samples: SamplesOpt = None,
    limit: LimitOpt = None,
    quiet: QuietOpt = False,
    temperature: TempOpt = 0.0,
    max_tokens: MaxTokOpt = 512,
) -> None:
    """Run a model on MTU-Bench's eval files and score it with MTU-Bench's metrics."""

    def body() -> None:
        from toolgauge.benchmarks.mtu.loader import load_mtu
        from toolgauge.benchmarks.mtu.protocol import MtuBenchmark

        require_finite(temperature=temperature, timeout=timeout)
        items = _limit(load_mtu(data, _split_list(splits)), limit, group=lambda item: item.split)
        bench = MtuBenchmark(
            items,
            data_label=str(data),
            mode=mode.value,
            variant=variant.value,
            settings=CallSettings(temperature=temperature, max_tokens=max_tokens, tool_choice=tool_choice.value),
        )
        opts = run_options(
            store=store, concurrency=concurrency, timeout=timeout, max_retries=max_retries,
            no_cache=no_cache, resume=resume, quiet=quiet,
        )  # fmt: skip
        shown, client = resolved_model(bench, model, timeout)
        execute(bench, shown, opts, as_json=as_json, samples=samples, client=client)

    guarded(body)


@eval_app.command("bfcl")
def eval_bfcl(
    model: ModelOpt,
    data: Annotated[Path, typer.Option("--data", help="Folder with BFCL_v4_<category>.json and possible_answer/.")],
    categories: Annotated[str, typer.Option("--categories", help="Comma list, e.g. simple_python,multiple")],
    mode: Annotated[
        Mode, typer.Option("--mode", help="native (function calling) or prompt (Python-call text)")
    ] = Mode.native,
    underscore_to_dot: Annotated[
        bool | None,
        typer.Option(
            "--underscore-to-dot/--keep-dots",
            help="BFCL name conversion (default: on in native mode, off in prompt mode)",
        ),
    ] = None,
    store: StoreOpt = None,
    concurrency: ConcurrencyOpt = 4,
    timeout: TimeoutOpt = 120.0,
    max_retries: RetriesOpt = 4,
    no_cache: NoCacheOpt = False,
    resume: ResumeOpt = None,
    as_json: JsonOpt = False,
    samples: SamplesOpt = None,
    limit: LimitOpt = None,
    quiet: QuietOpt = False,
    temperature: TempOpt = 0.0,
    max_tokens: MaxTokOpt = 512,
) -> None:
    """Run a model on BFCL's AST categories and score it with BFCL's checker rules."""

    def body() -> None:
        from toolgauge.benchmarks.bfcl.loader import load_bfcl
        from toolgauge.benchmarks.bfcl.protocol import BfclBenchmark

        require_finite(temperature=temperature, timeout=timeout)
        entries = _limit(load_bfcl(data, _split_list(categories) or []), limit, group=lambda entry: entry.category)
        bench = BfclBenchmark(
            entries,
            data_label=str(data),
            mode=mode.value,
            underscore_to_dot=underscore_to_dot,
            settings=CallSettings(temperature=temperature, max_tokens=max_tokens),
        )
        opts = run_options(
            store=store, concurrency=concurrency, timeout=timeout, max_retries=max_retries,
            no_cache=no_cache, resume=resume, quiet=quiet,
        )  # fmt: skip
        shown, client = resolved_model(bench, model, timeout)
        execute(bench, shown, opts, as_json=as_json, samples=samples, client=client)

    guarded(body)


# -- score ----------------------------------------------------------------------------------
@score_app.command("mtu-bench")
def score_mtu(
    data: Annotated[Path, typer.Option("--data", help="Folder with <split>_eval.jsonl files.")],
    predictions: Annotated[Path, typer.Option("--predictions", help='File or folder of {"id","response"} lines.')],
    splits: Annotated[
        str | None, typer.Option("--splits", help="Comma list (default: the splits that have predictions)")
    ] = None,
    variant: Annotated[Variant, typer.Option("--variant")] = Variant.reference,
    store: StoreOpt = None,
    as_json: JsonOpt = False,
    samples: SamplesOpt = None,
    quiet: QuietOpt = True,
) -> None:
    """Rescore recorded MTU-Bench replies (e.g. the published GPT-4 responses)."""

    def body() -> None:
        from toolgauge.benchmarks.mtu.loader import load_mtu, load_mtu_predictions
        from toolgauge.benchmarks.mtu.protocol import MtuBenchmark, splits_with_predictions

        preds = load_mtu_predictions(predictions)
        chosen = _split_list(splits) or splits_with_predictions(preds)
        items = load_mtu(data, chosen)
        bench = MtuBenchmark(items, data_label=str(data), mode="prompt", variant=variant.value)
        opts = run_options(
            store=store, concurrency=64, timeout=60.0, max_retries=0, no_cache=True, resume=None, quiet=quiet
        )
        shown, client = resolved_model(bench, f"replay:{predictions}", 60.0)
        execute(bench, shown, opts, as_json=as_json, samples=samples, client=client)

    guarded(body)


@score_app.command("bfcl")
def score_bfcl(
    data: Annotated[Path, typer.Option("--data", help="Folder with BFCL_v4_<category>.json and possible_answer/.")],
    predictions: Annotated[
        Path, typer.Option("--predictions", help="BFCL result file or folder (searched recursively).")
    ],
    categories: Annotated[
        str | None, typer.Option("--categories", help="Comma list (default: the categories that have result files)")
    ] = None,
    underscore_to_dot: Annotated[
        bool | None,
        typer.Option(
            "--underscore-to-dot/--keep-dots",
            help="BFCL name conversion (default: on for function-calling lists, off for text)",
        ),
    ] = None,
    store: StoreOpt = None,
    as_json: JsonOpt = False,
    samples: SamplesOpt = None,
    quiet: QuietOpt = True,
) -> None:
    """Rescore BFCL result files (``{"id", "result"}`` lines) with BFCL's checker rules."""

    def body() -> None:
        from toolgauge.benchmarks.bfcl.loader import load_bfcl
        from toolgauge.benchmarks.bfcl.protocol import BfclBenchmark, categories_with_results

        chosen = _split_list(categories) or categories_with_results(predictions)
        entries = load_bfcl(data, chosen)
        bench = BfclBenchmark(
            entries, data_label=str(data), mode="replay", underscore_to_dot=underscore_to_dot, settings=CallSettings()
        )
        opts = run_options(
            store=store, concurrency=64, timeout=60.0, max_retries=0, no_cache=True, resume=None, quiet=quiet
        )
        shown, client = resolved_model(bench, f"replay:{predictions}", 60.0)
        missing = bench.missing_predictions_warning()
        if missing:
            _warn(missing)
        execute(bench, shown, opts, as_json=as_json, samples=samples, client=client)

    guarded(body)


# -- runs and reports -----------------------------------------------------------------------
@app.command("runs")
def runs_cmd(
    store: StoreOpt = None,
    limit: Annotated[int, typer.Option("--limit", min=1)] = 30,
    as_json: JsonOpt = False,
) -> None:
    """List runs, newest first."""

    def body() -> None:
        import time

        from rich.table import Table

        from toolgauge.store import open_store

        st = open_store(store, create=False)
        try:
            runs = st.list_runs(limit)
            holders = st.live_lock_holders()
        finally:
            st.close()
        if as_json:
            rows = [
                {"id": r.id, "benchmark": r.benchmark, "model": r.model, "status": r.status, "samples": r.n_samples,
                 "created_at": r.created_at, "finished_at": r.finished_at,
                 "held_by": holders[r.id].describe() if r.id in holders else None}
                for r in runs
            ]  # fmt: skip
            sys.stdout.write(json.dumps(rows, indent=2) + "\n")
            return
        table = Table(title="runs", title_justify="left")
        for col in ("id", "benchmark", "model", "status", "samples", "started"):
            table.add_column(col)
        for r in runs:
            started = time.strftime("%Y-%m-%d %H:%M", time.localtime(r.created_at))
            status = r.status
            if r.id in holders:
                status = f"{r.status} (pid {holders[r.id].pid} on {holders[r.id].hostname})"
            elif r.status == "running":
                status = "stopped (no process; --resume it)"  # killed, or its store write failed
            table.add_row(*(escape(str(v)) for v in (r.id, r.benchmark, redact(r.model), status, r.n_samples, started)))
        out.print(table)

    guarded(body)


@app.command("report")
def report_cmd(
    run_id: Annotated[str, typer.Argument(help="Run id, a unique start of one, or 'latest' (see: toolgauge runs).")],
    store: StoreOpt = None,
    as_json: JsonOpt = False,
    as_csv: Annotated[bool, typer.Option("--csv", help="Print scope,metric,value rows.")] = False,
) -> None:
    """Print or export one run's summary."""

    def body() -> None:
        from toolgauge.store import open_store

        st = open_store(store, create=False)
        try:
            run = st.get_run(st.resolve_run_id(run_id))
        finally:
            st.close()
        if run is None:
            raise UsageError(f"no run {run_id!r} in the store (see: toolgauge runs)")
        if run.summary is None:
            raise UsageError(
                f"run {run.id} has no summary yet (status: {run.status}); resume it with --resume {run.id}"
            )
        if as_json:
            sys.stdout.write(json.dumps(redact_tree(run.summary), indent=2) + "\n")
        elif as_csv:
            sys.stdout.write(summary_to_csv(run.summary))
        elif run.status == "failed":
            # Every sample failed: there are no scores to show, only why (a failed run never looks like a result).
            first = (run.summary.get("run") or {}).get("first_error")
            fail(f"run {run.id} failed: every sample failed, so it has no scores; first error: {first}", code=1)
        else:
            render_summary(run.summary, out)

    guarded(body)


def main() -> None:
    """Console-script entry point: one line per error, documented exit codes, quiet on a second Ctrl-C."""
    import signal

    try:  # typer >= 0.2x vendors click; earlier versions use click itself
        from typer._click import exceptions as click_errors
    except ImportError:  # pragma: no cover
        from click import exceptions as click_errors  # type: ignore[no-redef]

    def terminate_like_ctrl_c(signum: int, frame: Any) -> None:
        # SIGTERM takes the Ctrl-C path: the run stops, is marked interrupted and can be resumed.
        if signal.getsignal(signal.SIGINT) in (signal.SIG_IGN, signal.SIG_DFL, None):
            raise KeyboardInterrupt
        # asyncio.run's own SIGINT handler cancels the run cleanly; outside it this raises KeyboardInterrupt.
        signal.raise_signal(signal.SIGINT)

    signal.signal(signal.SIGTERM, terminate_like_ctrl_c)
    try:
        code = app(standalone_mode=False)
    except click_errors.NoArgsIsHelpError as exc:
        exc.show()
        code = exc.exit_code
    except click_errors.ClickException as exc:
        ctx = exc.ctx if isinstance(exc, click_errors.UsageError) else None
        where = f" (see: {ctx.command_path} --help)" if ctx is not None else ""
        message = " ".join(exc.format_message().split())
        err.print(f"[bold red]error:[/] {message}{where}", highlight=False, soft_wrap=True)
        code = exc.exit_code
    except (typer.Abort, KeyboardInterrupt):
        # A second Ctrl-C during the shutdown of the first: no traceback.
        code = 130
    sys.exit(code if isinstance(code, int) else 0)


# Larger protocols keep their commands in their own modules; importing them registers the commands.
from toolgauge.benchmarks.tool_genesis import cli as _genesis_cli  # noqa: E402,F401
from toolgauge.benchmarks.tool_genesis import cli_generate as _generate_cli  # noqa: E402,F401
from toolgauge.benchmarks.wildtoolbench import cli as _wild_cli  # noqa: E402,F401
