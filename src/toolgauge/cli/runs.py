"""``runs``, ``report`` and ``rescore``: reading stored runs (no model is asked)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from toolgauge.cli.common import JsonOpt, RunArg, StoreOpt, fail, guarded, out, print_results, sample_row
from toolgauge.errors import UsageError
from toolgauge.redact import redact
from toolgauge.report.export import check_output_file, results_to_csv, sample_lines, write_lines_atomic

if TYPE_CHECKING:
    from toolgauge.store.store import RunInfo, Store


def runs_cmd(
    store: StoreOpt = None,
    limit: Annotated[int, typer.Option("--limit", min=1)] = 30,
    tag: Annotated[
        list[str],
        typer.Option("--tag", metavar="KEY=VALUE", help="Only runs with this KEY=VALUE tag (repeatable: all)."),
    ] = [],  # noqa: B006
    as_json: JsonOpt = False,
) -> None:
    """List runs, newest first: name and tags, settings, status and cost."""

    def body() -> None:
        from toolgauge.cost import format_usd
        from toolgauge.run_labels import parse_tags
        from toolgauge.store import open_store  # SQLAlchemy: loaded only by a command that opens the store
        from toolgauge.store.run_meta import labels_of, list_runs, run_settings

        wanted = parse_tags(tag)
        st = open_store(store, create=False)
        try:
            runs = list_runs(st, limit, wanted)
            holders = st.live_lock_holders()
            labels = labels_of(st, [r.id for r in runs])
        finally:
            st.close()
        if as_json:
            rows = [
                {"id": r.id, "name": labels[r.id].name if r.id in labels else None,
                 "tags": labels[r.id].tags if r.id in labels else {}, "benchmark": r.benchmark, "model": r.model,
                 "status": r.status, "samples": r.n_samples, **run_settings(r), "cost_usd": _cost(r),
                 "created_at": r.created_at, "finished_at": r.finished_at,
                 "held_by": holders[r.id].describe() if r.id in holders else None}
                for r in runs
            ]  # fmt: skip
            sys.stdout.write(json.dumps(rows, indent=2) + "\n")
            return
        table = Table(title="runs", title_justify="left")
        for col in ("id", "name", "benchmark", "model", "settings", "status", "samples", "cost", "started"):
            table.add_column(col)
        for r in runs:
            started = time.strftime("%Y-%m-%d %H:%M", time.localtime(r.created_at))
            status = r.status
            if r.id in holders:
                status = f"{r.status} (pid {holders[r.id].pid} on {holders[r.id].hostname})"
            elif r.status == "running":
                status = "stopped (no process; --resume it)"  # killed, or its store write failed
            named = labels[r.id].describe() if r.id in labels else ""
            cost = format_usd(_cost(r)) if r.results is not None and r.results.run is not None else ""
            cells = (r.id, named, r.benchmark, redact(r.model), _settings_text(r), status, r.n_samples, cost, started)
            table.add_row(*(escape(str(v)) for v in cells))
        out.print(table)

    guarded(body)


def _cost(run: RunInfo) -> float | None:
    stats = run.results.run if run.results is not None else None
    return stats.cost_usd if stats is not None else None


def _settings_text(run: RunInfo) -> str:
    """``mode=native variant=strict T=0 epochs=3 limit=20``: the settings a run has, the ones it lacks left out."""
    from toolgauge.store.run_meta import run_settings

    shown = {k: v for k, v in run_settings(run).items() if v is not None and not (k == "epochs" and v == 1)}
    short = {"temperature": "T"}
    return " ".join(f"{short.get(k, k)}={v:g}" if isinstance(v, float) else f"{short.get(k, k)}={v}"
                    for k, v in shown.items())  # fmt: skip


def _stored_run(st: Store, ref: str) -> RunInfo:
    run = st.get_run(st.resolve_run_id(ref))
    if run is None:
        raise UsageError(f"no run {ref!r} in the store (see: toolgauge runs)")
    return run


def report_cmd(
    run_id: RunArg,
    store: StoreOpt = None,
    as_json: JsonOpt = False,
    as_csv: Annotated[bool, typer.Option("--csv", help="Print metric,by,group,value,n rows.")] = False,
    html: Annotated[
        Path | None,
        typer.Option(
            "--html",
            help="Write the run's page (charts, verdicts, transcripts), or a sweep's leaderboard, as one file.",
        ),
    ] = None,
    all_samples: Annotated[
        bool,
        typer.Option(
            "--all-samples",
            help="With --html, a run's: also every sample's page (verdicts, transcripts) in a folder beside it.",
        ),
    ] = False,
) -> None:
    """Print or export one run's results, or a sweep's leaderboard (RUN_ID a sweep id)."""

    def body() -> None:
        from toolgauge.cli.sweep import report_sweep
        from toolgauge.store import open_store  # SQLAlchemy: loaded only by a command that opens the store

        if all_samples and html is None:
            raise UsageError("--all-samples writes the samples' pages beside an HTML report: add --html OUT.html")
        if html is not None:
            check_output_file(html, "--html")
        if not as_csv and report_sweep(store, run_id, as_json, html):
            return
        st = open_store(store, create=False)
        try:
            run = _stored_run(st, run_id)
        finally:
            st.close()
        if run.results is None:
            if run.status in ("running", "interrupted", "stopped_budget"):
                raise UsageError(
                    f"run {run.id} has no results yet (status: {run.status}); resume it with --resume {run.id}"
                )
            raise UsageError(
                f"run {run.id} has no results this toolgauge can read (status: {run.status}); "
                f"score it again with: toolgauge rescore {run.id}"
            )
        results = run.results
        if html is not None:
            from toolgauge.cli.view import write_run_html

            write_run_html(store, run.id, html, all_samples=all_samples)
        elif as_json:
            print_results(results, as_json=True)
        elif as_csv:
            sys.stdout.write(results_to_csv(results))
        elif results.run is not None and results.run.status == "failed":
            # Every sample failed: there are no scores to show, only why (a failed run never looks like a result).
            first = results.run.first_error
            fail(
                f"run {run.id} failed: every sample failed, so it has no scores; "
                f"first error: {first.key + ': ' + first.error if first else None}",
                code=1,
            )
        else:
            print_results(results, as_json=False)

    guarded(body)


def _stored_sample_costs(run_id: str, store: str | None) -> dict[str, float] | None:
    """What each sample try of a stored run cost, as ``eval --samples`` says it; None: its price is unknown."""
    from toolgauge.api import store_url
    from toolgauge.store import open_store
    from toolgauge.store.run_meta import sample_costs

    st = open_store(store_url(store), create=False)
    try:
        run = st.get_run(run_id)
        stats = run.results.run if run is not None and run.results is not None else None
        price = stats.unit_price if stats is not None else None
        return sample_costs(st, run_id, price) if price is not None else None
    finally:
        st.close()


def rescore_cmd(
    run_id: RunArg,
    variant: Annotated[
        str | None, typer.Option("--variant", help="Metric variant (default: the one the run was scored with).")
    ] = None,
    store: StoreOpt = None,
    as_json: JsonOpt = False,
    samples: Annotated[
        Path | None, typer.Option("--samples", help="Write one JSON line per scored unit to this file.")
    ] = None,
) -> None:
    """Score a stored run again from its stored outputs, without any model call (e.g. with another --variant).

    The data files the run was made from must still be where they were. The stored run is not changed.
    """

    def body() -> None:
        from toolgauge.api import rescore

        if samples is not None:
            check_output_file(samples, "--samples")
        evaluation = rescore(run_id, variant=variant, store=store, keep_samples=samples is not None)
        if samples is not None:
            costs = _stored_sample_costs(evaluation.run_id, store)
            write_lines_atomic(samples, sample_lines(sample_row(s, costs) for s in evaluation.samples))
        print_results(evaluation.results, as_json=as_json)

    guarded(body)
