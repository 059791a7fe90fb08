"""``toolgauge sweep`` (run every model x benchmark cell of a sweep file) and ``toolgauge sweeps`` (list them).

``toolgauge report SWEEP_ID`` prints a sweep's leaderboard again (cli/runs.py hands sweep ids here).
"""

from __future__ import annotations

import json
import sys
import time
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from toolgauge.cli.common import JsonOpt, StoreOpt, err, guarded, out
from toolgauge.cli.event_loop import run_interruptible
from toolgauge.errors import UsageError
from toolgauge.redact import redact


class ExecutorName(StrEnum):
    """Where the cells run."""

    local = "local"
    ray = "ray"


def sweep_cmd(
    sweep_file: Annotated[Path, typer.Argument(help="The sweep file (TOML; docs/sweeps.md).")],
    executor: Annotated[
        ExecutorName, typer.Option("--executor", help="local: cells in this process; ray: Ray tasks.")
    ] = ExecutorName.local,
    address: Annotated[
        str | None,
        typer.Option("--address", help="Ray cluster address (ray executor; default: start a local Ray instance)."),
    ] = None,
    store: StoreOpt = None,
    resume: Annotated[str | None, typer.Option("--resume", help="Continue an interrupted sweep by id.")] = None,
    concurrency: Annotated[int, typer.Option("--concurrency", "-c", min=1, help="Cells run at once.")] = 2,
    shard_size: Annotated[
        int,
        typer.Option("--shard-size", min=1, help="ray: a cell with more samples runs as shards of this many."),
    ] = 50,
    name: Annotated[
        str | None,
        typer.Option(
            "--name", metavar="NAME", help="Tag every cell's run sweep=NAME (runs --tag sweep=NAME finds them)."
        ),
    ] = None,
    tag: Annotated[
        list[str], typer.Option("--tag", metavar="KEY=VALUE", help="KEY=VALUE tag on every cell's run (repeatable).")
    ] = [],  # noqa: B006
    as_json: JsonOpt = False,
) -> None:
    """Run every model on every benchmark of a sweep file, then print the leaderboard."""

    def body() -> None:
        from toolgauge.sweep.file import read_sweep_file
        from toolgauge.sweep.plan import plan_cells
        from toolgauge.sweep.report import render_leaderboard
        from toolgauge.sweep.runner import Executor, LocalExecutor, SweepInterrupted, run_sweep

        if address is not None and executor != ExecutorName.ray:
            raise UsageError("--address is for --executor ray")
        url = absolute_store_url(store)
        if executor == ExecutorName.ray:
            refuse_sqlite_on_a_cluster(url, address)
        from toolgauge.run_labels import check_name, parse_tags

        tags = {**parse_tags(tag), **({"sweep": check_name(name) or ""} if name is not None else {})}
        sweep, text = read_sweep_file(sweep_file)
        cells = plan_cells(sweep, str(sweep_file))
        for cell in cells:
            cell.task.tags = tags
        runner: Executor
        if executor == ExecutorName.ray:
            from toolgauge.sweep.ray_executor import RayExecutor, import_ray

            import_ray()
            runner = RayExecutor(address, concurrency=concurrency, shard_size=shard_size)
        else:
            runner = LocalExecutor(concurrency)
        try:
            sweep_run = run_sweep(sweep, text, cells, url, runner, resume=resume, where=str(sweep_file))
            sweep_id = run_interruptible(sweep_run, stopped=(SweepInterrupted,))
        except SweepInterrupted as exc:
            notice = Text("interrupted", style="yellow")
            again = redact(" ".join(a for a in sys.argv[1:] if a != "--resume"))
            notice.append(f": finished cells and samples of sweep {exc.sweep_id} are saved; continue with:\n"
                          f"  toolgauge {again} --resume {exc.sweep_id}")  # fmt: skip
            err.print(notice, highlight=False, soft_wrap=True)
            raise typer.Exit(130) from None
        report = _report(url, sweep_id)
        if as_json:
            sys.stdout.write(json.dumps(report.document(), indent=2) + "\n")
        else:
            render_leaderboard(report, out)
        unfinished = [c for c in report.cells if c.status != "finished"]
        if unfinished:
            first = unfinished[0]
            err.print(
                Text(f"warning: {len(unfinished)} of {len(report.cells)} cells did not finish cleanly; first: "
                     f"{first.model} on {first.benchmark} (run {first.run}): {first.status}"
                     + _cell_error(url, sweep_id, first.run), style="yellow"),
                soft_wrap=True,
            )  # fmt: skip
            raise typer.Exit(1)

    guarded(body)


def _report(url: str, sweep_id: str):  # type: ignore[no-untyped-def]
    from toolgauge.store import open_store
    from toolgauge.sweep.report import sweep_report

    st = open_store(url, create=False)
    try:
        return sweep_report(st, sweep_id)
    finally:
        st.close()


def _cell_error(url: str, sweep_id: str, run_id: str) -> str:
    from toolgauge.store import open_store
    from toolgauge.store.sweeps import get_sweep

    st = open_store(url, create=False)
    try:
        record = get_sweep(st, sweep_id)
    finally:
        st.close()
    errors = [c.error for c in (record.cells if record else []) if c.run_id == run_id and c.error]
    return f" ({errors[0]})" if errors else ""


def absolute_store_url(store: str | None) -> str:
    """The store URL with a SQLite file made absolute (workers of a local Ray instance start elsewhere)."""
    from toolgauge.store import default_store_url

    url = store or default_store_url()
    if "://" not in url:
        return f"sqlite:///{Path(url).resolve()}"
    if url.startswith("sqlite:///") and not url.startswith("sqlite:////"):
        path = url.removeprefix("sqlite:///")
        if path and not path.startswith(":memory:") and not path.startswith("file:"):
            return f"sqlite:///{Path(path).resolve()}"
    return url


def refuse_sqlite_on_a_cluster(url: str, address: str | None) -> None:
    """A Ray cluster (``--address``) needs a store every node reaches: SQLite is refused."""
    if address is not None and url.startswith("sqlite"):
        raise UsageError(
            "--executor ray --address runs cells on other machines, which cannot share a SQLite store: "
            "use PostgreSQL, e.g. --store postgresql://USER@HOST/DB (docs/sweeps.md)"
        )


def sweeps_cmd(
    store: StoreOpt = None,
    limit: Annotated[int, typer.Option("--limit", min=1)] = 30,
    as_json: JsonOpt = False,
) -> None:
    """List sweeps, newest first."""

    def body() -> None:
        from toolgauge.store import open_store
        from toolgauge.store.sweeps import list_sweeps

        st = open_store(store, create=False)
        try:
            found = list_sweeps(st, limit)
        finally:
            st.close()
        if as_json:
            rows = [
                {"id": s.id, "status": s.status, "created_at": s.created_at, "cells": len(s.cells),
                 "finished_cells": sum(c.status == "finished" for c in s.cells),
                 "models": list(dict.fromkeys(c.model for c in s.cells)),
                 "benchmarks": list(dict.fromkeys(c.benchmark for c in s.cells))}
                for s in found
            ]  # fmt: skip
            sys.stdout.write(json.dumps(rows, indent=2) + "\n")
            return
        table = Table(title="sweeps", title_justify="left")
        for col in ("id", "status", "cells", "models", "benchmarks", "started"):
            table.add_column(col)
        for s in found:
            done = sum(c.status == "finished" for c in s.cells)
            models = ", ".join(dict.fromkeys(redact(c.model) for c in s.cells))
            benches = ", ".join(dict.fromkeys(c.benchmark for c in s.cells))
            started = time.strftime("%Y-%m-%d %H:%M", time.localtime(s.created_at))
            table.add_row(*(escape(str(v)) for v in (s.id, s.status, f"{done}/{len(s.cells)}", models, benches,
                                                     started)))  # fmt: skip
        out.print(table)

    guarded(body)


def report_sweep(store: str | None, ref: str, as_json: bool, html: Path | None = None) -> bool:
    """Print the leaderboard of the sweep ``ref`` names; False when it names no sweep (then it is a run).

    With ``html``, write the sweep's page there instead (``report SWEEP --html``).
    """
    from toolgauge.store import open_store
    from toolgauge.store.sweeps import resolve_sweep_id
    from toolgauge.sweep.report import render_leaderboard, sweep_report

    st = open_store(store, create=False)
    try:
        sweep_id = resolve_sweep_id(st, ref)
        if sweep_id is None:
            return False
        if html is not None:
            from toolgauge.cli.view import write_sweep_html

            write_sweep_html(st, sweep_id, html)
            return True
        report = sweep_report(st, sweep_id)
    finally:
        st.close()
    if as_json:
        sys.stdout.write(json.dumps(report.document(), indent=2) + "\n")
    else:
        render_leaderboard(report, out)
    return True


__all__ = ["report_sweep", "sweep_cmd", "sweeps_cmd"]
