"""``view``: the web viewer over a store; and what the viewer and ``report --html`` need from the benchmarks."""

from __future__ import annotations

import contextlib
import importlib.util
import ipaddress
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from toolgauge.cli.common import StoreOpt, err, guarded
from toolgauge.cli.event_loop import run_interruptible
from toolgauge.errors import UsageError
from toolgauge.results import SampleScore

if TYPE_CHECKING:  # SQLAlchemy loads with the store: only when the command runs
    from toolgauge.panels import RunPanels, SamplePanels
    from toolgauge.store.store import RunInfo, Store
    from toolgauge.view.data import Benchmarks

VIEW_PACKAGES = ("starlette", "uvicorn", "altair", "vl_convert")
LOCALHOST = "127.0.0.1"


def stored_verdicts(store: Store, run: RunInfo) -> Iterator[SampleScore]:
    """A stored run's per-unit scores (every epoch's), recomputed by its benchmark (no model call)."""
    from toolgauge.api import stored_scores

    return stored_scores(store, run).iter_samples()


def sweep_leaderboard(store: Store, sweep_id: str) -> dict[str, Any]:
    """A sweep's leaderboard as the viewer shows it: ``toolgauge report SWEEP``'s cells, ranked per benchmark.

    ``{"sweep", "status", "boards": [{"benchmark", "metrics", "cells": [cell, ...]}]}``: each board's cells best
    first by its first headline metric; a cell has ``model``, ``run``, ``status``, ``metrics`` (per headline
    metric ``mean``, ``stderr``, ``ci_low``, ``ci_high``, ``n``) and ``significant`` / ``test`` (its difference
    with the board's best, see :mod:`toolgauge.sweep.report`).
    """
    from toolgauge.sweep.report import headline_of, ranked, sweep_report

    report = sweep_report(store, sweep_id)
    boards = []
    for benchmark in dict.fromkeys(c.benchmark for c in report.cells):
        order = ranked(report.cells, benchmark)
        names = headline_of(benchmark, None) or tuple(dict.fromkeys(n for c in order for n in c.metrics))
        boards.append(
            {"benchmark": benchmark, "metrics": list(names), "cells": [c.model_dump(mode="json") for c in order]}
        )
    return {"sweep": report.sweep, "status": report.status, "boards": boards}


def benchmark_panels(run_name: str) -> tuple[RunPanels | None, SamplePanels | None]:
    """The run and sample panels of the benchmark whose runs are named ``run_name`` (none for an unknown one)."""
    from toolgauge.benchmarks.registry import spec_for_run

    spec = spec_for_run(run_name)
    return (spec.run_panels, spec.sample_panels) if spec is not None else (None, None)


def paper_tab(store: Store, name: str, refs: list[str]) -> dict[str, Any]:
    """The viewer's paper tab: ``toolgauge paper NAME REFS --json``, each drawn block's figure as SVG beside it."""
    from toolgauge.benchmarks.registry import spec_for_run
    from toolgauge.cli.paper import load_paper_runs, paper_spec
    from toolgauge.report.paper_render import block_charts, blocks_document

    found = spec_for_run(name)
    spec = paper_spec(found.name if found is not None else name)
    assert spec.paper is not None
    blocks = spec.paper(load_paper_runs(store, spec, refs))
    docs = blocks_document(blocks)
    for block, doc in zip(blocks, docs, strict=True):
        doc["charts"] = [{"caption": caption, "svg": svg} for caption, svg in block_charts(block)]
    return {"paper": spec.name, "blocks": docs}


def registry_benchmarks() -> Benchmarks:
    """The viewer's access to the registered benchmarks."""
    from toolgauge.api import headline_of
    from toolgauge.view.data import Benchmarks

    return Benchmarks(
        verdicts=stored_verdicts,
        headline=headline_of,
        leaderboard=sweep_leaderboard,
        panels=benchmark_panels,
        paper=paper_tab,
    )


def require_view_packages() -> None:
    """Raise ``UsageError`` naming the install when the ``view`` extra is missing."""
    missing = [p for p in VIEW_PACKAGES if importlib.util.find_spec(p) is None]
    if missing:
        raise UsageError(
            f"the viewer needs {', '.join(missing)}: pip install 'toolgauge[view]' (make setup-dev installs it)"
        )


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def access_token(host: str, token: str | None) -> str | None:
    """The token the server will require: the one given, else a new one when ``host`` is not loopback."""
    if token:
        return token
    return None if _is_loopback(host) else secrets.token_urlsafe(24)


def view_cmd(
    store: StoreOpt = None,
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="Port (0: any free one).")] = 8765,
    host: Annotated[
        str, typer.Option("--host", help="Address to bind; anything but loopback needs a token (--token).")
    ] = LOCALHOST,
    token: Annotated[
        str | None,
        typer.Option(
            "--token",
            help="Required on every request (?token= once, then a cookie); generated when "
            "--host is not loopback and none is given.",
            envvar="TOOLGAUGE_VIEW_TOKEN",
        ),
    ] = None,
) -> None:
    """Serve a local web app to browse stored runs: metrics, charts, verdicts and transcripts (updates live)."""

    def body() -> None:
        require_view_packages()
        import uvicorn

        from toolgauge.store import open_store
        from toolgauge.view.app import create_app
        from toolgauge.view.charts import warm_up
        from toolgauge.view.data import ViewData

        class QuietServer(uvicorn.Server):
            """uvicorn without its own signal handlers: run_interruptible's stop it, as every command's."""

            @contextlib.contextmanager
            def capture_signals(self) -> Iterator[None]:
                yield

        chosen = access_token(host, token)
        st = open_store(store, create=False)
        # Before the first request, not inside it: vl-convert's engine (about a second, on the first chart)
        # and the benchmarks' registry (the first run page or sample page).
        from toolgauge.benchmarks.registry import specs

        specs()
        warm_up()
        allowed = None if not _is_loopback(host) else ["127.0.0.1", "localhost", "[::1]", "::1"]
        # Runs are scored in a child process: the viewer's memory stays small however large they are.
        data = ViewData(st, registry_benchmarks(), score_in_child=True)
        app = create_app(data, token=chosen, allowed_hosts=allowed)
        config = uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False)
        server = QuietServer(config)
        shown_host = f"[{host}]" if ":" in host else host

        # The bound port (with --port 0, only known once listening) is printed when the server is up.
        original_startup = server.startup

        async def startup(sockets: object = None) -> None:
            await original_startup(sockets=sockets)  # type: ignore[arg-type]
            bound = port
            for s in server.servers:
                for sock in s.sockets:
                    bound = sock.getsockname()[1]
            suffix = f"/?token={chosen}" if chosen else "/"
            err.print(f"toolgauge view: http://{shown_host}:{bound}{suffix}  (Ctrl-C stops it)", highlight=False,
                      soft_wrap=True)  # fmt: skip

        server.startup = startup  # type: ignore[method-assign]

        def shut_down() -> None:
            server.should_exit = True  # uvicorn's graceful shutdown: open requests finish, then serve() returns

        try:
            # SIGTERM or Ctrl-C shuts the server down and the command exits 0; a second signal exits 130 at once.
            run_interruptible(server.serve(), stopped=(), on_stop=shut_down)
        finally:
            data.close()
            st.close()

    guarded(body)


def write_run_html(
    store: str | None, run_id: str, out_path: Path, *, transcripts: int | None = None, all_samples: bool = False
) -> None:
    """``report RUN --html OUT [--all-samples]``: write the run's page (and its samples' pages), say where."""
    require_view_packages()
    from toolgauge.store import open_store
    from toolgauge.view.html_report import DEFAULT_TRANSCRIPTS, write_html_report

    st = open_store(store, create=False)
    try:
        folder = write_html_report(st, run_id, out_path, registry_benchmarks(), all_samples=all_samples,
                                   transcripts=DEFAULT_TRANSCRIPTS if transcripts is None else transcripts)  # fmt: skip
    finally:
        st.close()
    err.print(f"wrote {out_path}" + (f" and every sample's page in {folder}/" if folder else ""), highlight=False,
              soft_wrap=True)  # fmt: skip


def write_sweep_html(st: Store, sweep_id: str, out_path: Path) -> None:
    """``report SWEEP --html OUT``: write the sweep's self-contained page and say where."""
    require_view_packages()
    from toolgauge.view.html_report import write_sweep_report

    write_sweep_report(st, sweep_id, out_path, registry_benchmarks())
    err.print(f"wrote {out_path}", highlight=False, soft_wrap=True)
