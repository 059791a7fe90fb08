"""The ``toolgauge`` command line: the shell that mounts every registered benchmark's commands.

Shared options and error handling live in :mod:`toolgauge.cli.common`; each benchmark adds its
commands through its ``SPEC`` in :mod:`toolgauge.benchmarks.registry`. No command module imports
this one.
"""

from __future__ import annotations

import signal
import sys
from functools import cache
from typing import Annotated, Any

# isort: off
from toolgauge.cli import starting  # first: it guards the imports below against a signal

# isort: on
import typer
from rich.text import Text

from toolgauge.benchmark import CommandGroups
from toolgauge.cli.common import err
from toolgauge.cli.compare import compare_cmd
from toolgauge.cli.data import data_app
from toolgauge.cli.export import export_cmd
from toolgauge.cli.paper import paper_cmd
from toolgauge.cli.runs import report_cmd, rescore_cmd, runs_cmd
from toolgauge.cli.sweep import sweep_cmd, sweeps_cmd
from toolgauge.cli.transcript import transcript_cmd
from toolgauge.cli.view import view_cmd
from toolgauge.worker_threads import join_worker_threads

# How long an ending command waits for its worker threads (toolgauge.worker_threads) before it exits without
# shutting the interpreter down (os._exit: nothing is left to save by then, the stores are closed). Short: an
# interrupted genesis run may have left a model load of 30 s or more on one, and Ctrl-C must not wait for it.
WORKER_EXIT_WAIT_SECONDS = 5.0


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


def _flags_show_no_type() -> None:
    """A flag takes no value, but typer's help prints ``<bool>`` in its type column: print nothing there.

    Typer asks each option for that column (``TyperOption.display_type_rich``); flags answer None, every other
    option as before.
    """
    from typer.core import TyperOption

    shown = TyperOption.display_type_rich
    if getattr(shown, "hides_flag_types", False):
        return

    def display_type_rich(self: TyperOption, ctx: Any) -> str | None:
        return None if self.is_flag else shown(self, ctx)

    display_type_rich.hides_flag_types = True  # type: ignore[attr-defined]
    TyperOption.display_type_rich = display_type_rich  # type: ignore[method-assign]


def build_app() -> typer.Typer:
    """The CLI: ``eval``, ``score``, the stored-run commands, and each benchmark's own commands."""
    from toolgauge.benchmarks.registry import specs

    _flags_show_no_type()

    root = typer.Typer(
        name="toolgauge",
        help=(
            "Measure how well language models use and build tools: "
            "MTU-Bench, BFCL, WildToolBench, Tool-Genesis and toolgauge's own suites."
        ),
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
    )

    @root.callback()
    def _root(
        version: Annotated[
            bool,
            typer.Option("--version", callback=_print_version, is_eager=True, help="Print the version and exit."),
        ] = False,
    ) -> None:
        pass

    groups = CommandGroups(
        root=root,
        eval=typer.Typer(help="Run a model on a benchmark and score it.", no_args_is_help=True),
        score=typer.Typer(help="Rescore recorded model outputs offline (no model calls).", no_args_is_help=True),
    )
    root.command("runs")(runs_cmd)
    root.command("report")(report_cmd)
    root.command("rescore")(rescore_cmd)
    root.command("transcript")(transcript_cmd)
    root.command("sweep")(sweep_cmd)
    root.command("sweeps")(sweeps_cmd)
    root.command("view")(view_cmd)
    root.command("export")(export_cmd)
    root.command("compare")(compare_cmd)
    root.command("paper")(paper_cmd)
    root.add_typer(data_app, name="data")
    root.add_typer(groups.eval, name="eval")
    root.add_typer(groups.score, name="score")
    from toolgauge.cli.generated import add_generated_commands

    for spec in specs():
        add_generated_commands(spec, groups)  # eval/score from its options models, where it has them
        spec.add_commands(groups)  # the commands truly its own
    return root


@cache
def _app() -> typer.Typer:
    return build_app()


def __getattr__(name: str) -> Any:
    # Built on first use, not at import: the benchmark packages import toolgauge.cli.common, which
    # runs this package's __init__ first; reading the registry here would see them half-imported.
    if name == "app":
        return _app()
    raise AttributeError(f"module 'toolgauge.cli' has no attribute {name!r}")


def main() -> None:
    """Console-script entry point: one line per error, documented exit codes, quiet on a second Ctrl-C."""
    import contextlib
    import os

    try:  # typer >= 0.2x vendors click; earlier versions use click itself
        from typer._click import exceptions as click_errors
    except ImportError:  # pragma: no cover
        from click import exceptions as click_errors  # type: ignore[no-redef]

    def terminate_like_ctrl_c(signum: int, frame: Any) -> None:
        # SIGTERM outside an event loop (reading data, printing results) takes the Ctrl-C path: one line, exit
        # 130. While a command's loop runs, cli/event_loop.py handles SIGTERM inside the loop instead.
        raise KeyboardInterrupt

    starting.take_over()
    signal.signal(signal.SIGTERM, terminate_like_ctrl_c)
    try:
        code = _app()(standalone_mode=False)
    except click_errors.NoArgsIsHelpError as exc:
        exc.show()
        code = exc.exit_code
    except click_errors.ClickException as exc:
        ctx = exc.ctx if isinstance(exc, click_errors.UsageError) else None
        where = f" (see: {ctx.command_path} --help)" if ctx is not None else ""
        message = " ".join(exc.format_message().split())
        line = Text("error:", style="bold red")
        line.append(f" {message}{where}")  # plain text: it quotes the command line ("--data '[/x]'")
        err.print(line, highlight=False, soft_wrap=True)
        code = exc.exit_code
    except (typer.Abort, KeyboardInterrupt):
        # Ctrl-C or SIGTERM while the CLI loads its commands (no command has handled it yet), or a second one
        # during the shutdown of the first: one line, no traceback.
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the line is printed whole; exit_now takes over below
        err.print("[yellow]interrupted[/]")
        code = 130
    final = code if isinstance(code, int) else 0

    def exit_now(signum: int, frame: Any) -> None:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):  # a write the signal interrupted: nothing more to save
                stream.flush()
        os._exit(final)

    # The exit code is decided. A signal from here on would otherwise print a traceback or kill the process by
    # the signal (a caller would see -2 or -15 instead of the documented code): while worker threads are waited
    # for, SIGTERM, and Ctrl-C unless SIGINT was inherited as ignored, end the process at once with that code.
    if signal.getsignal(signal.SIGINT) != signal.SIG_IGN:
        signal.signal(signal.SIGINT, exit_now)
    signal.signal(signal.SIGTERM, exit_now)
    # Blocking work a command left on a daemon thread (an embedding batch of an interrupted run) finishes first:
    # the interpreter must not shut down under a thread in native code (torch aborts the process then).
    if not join_worker_threads(WORKER_EXIT_WAIT_SECONDS):
        exit_now(0, None)
    # Then atexit hooks and the interpreter's shutdown, which puts Python-handled signals back to SIG_DFL on the
    # way: a signal there would kill the process by it (-15, -2). Ignored, the process ends with its code.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    sys.exit(final)


if __name__ == "__main__":
    main()
