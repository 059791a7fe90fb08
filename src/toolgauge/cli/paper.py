"""``toolgauge paper NAME RUN_OR_SWEEP...``: a seed paper's tables and figures, filled from stored runs.

No model is asked: each run is scored again from its stored outputs (as ``rescore``) and its benchmark's
``paper_blocks`` (``BenchmarkSpec.paper``) lays the verdicts out as the paper does (docs/paper.md).
"""

from __future__ import annotations

import inspect
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from toolgauge.cli.common import JsonOpt, StoreOpt, guarded, out
from toolgauge.errors import UsageError

if TYPE_CHECKING:
    from toolgauge.benchmark import BenchmarkSpec
    from toolgauge.report.paper_tables import PaperRun
    from toolgauge.store.store import RunInfo, Store

# The papers ``paper`` lays out, by benchmark name (docs/paper.md).
PAPERS = ("tool-genesis", "wildtoolbench", "mtu-bench", "toolgate")

NameArg = Annotated[str, typer.Argument(help=f"The paper: {', '.join(PAPERS)}.", show_default=False)]
RunsArg = Annotated[
    list[str] | None,
    typer.Argument(
        help="Runs (ids, unique starts of ids, 'latest') or sweep ids (their cells' runs).", show_default=False
    ),
]


def paper_cmd(
    name: NameArg,
    runs: RunsArg = None,
    as_json: JsonOpt = False,
    html_out: Annotated[
        Path | None, typer.Option("--html", help="Write one self-contained page with the tables and figures.")
    ] = None,
    data: Annotated[
        Path | None,
        typer.Option("--data", help="A data file: the dataset statistics from the data alone (wildtoolbench)."),
    ] = None,
    oracle_run: Annotated[
        str | None,
        typer.Option(
            "--oracle-run",
            help="tool-genesis: normalise SR by this run's per-task scores (the official GT proxy: the best run).",
        ),
    ] = None,
    store: StoreOpt = None,
) -> None:
    """Print a seed paper's tables for your runs: one row per model, the paper's columns and units, 95% intervals.

    Each block names the table or figure it reproduces (docs/paper.md).

    A block whose inputs the runs lack says, in one line, which run would fill it.

    The runs are scored again from their stored outputs: their data files must still be there.
    """

    def body() -> None:
        from toolgauge.report.paper_render import blocks_document, paper_html, print_blocks
        from toolgauge.view.html_report import write_atomic

        spec = paper_spec(name)
        assert spec.paper is not None
        options: dict[str, Any] = {}
        if data is not None:
            if not data.is_file():
                raise UsageError(f"--data {data}: no such file")
            options["data"] = data
        if html_out is not None and not html_out.parent.is_dir():
            raise UsageError(f"--html {html_out}: the folder {html_out.parent} does not exist")
        if not runs and data is None:
            raise UsageError(
                f"give runs (or sweeps) of {name}" + (", or --data FILE" if "data" in _takes(spec) else "")
            )
        _check_options(spec, {**options, **({"oracle": True} if oracle_run else {})})
        st = _open(store) if runs or oracle_run else None
        try:
            loaded = load_paper_runs(st, spec, runs or []) if st is not None else []
            if oracle_run is not None and st is not None:
                options["oracle"] = load_paper_runs(st, spec, [oracle_run])[0]
            if (
                "store" in _takes(spec) and st is not None
            ):  # a paper whose tables read the call log (ToolGate's Table 2)
                options["store"] = st
            blocks = spec.paper(loaded, **options)
        finally:
            if st is not None:
                st.close()
        if html_out is not None:
            title = f"{name}: " + ", ".join(r.label for r in loaded) if loaded else f"{name}: {data}"
            write_atomic(html_out, paper_html(title, blocks))
        if as_json:
            sys.stdout.write(json.dumps({"paper": name, "blocks": blocks_document(blocks)}, indent=2) + "\n")
        elif html_out is None or runs:
            print_blocks(blocks, out)
        if html_out is not None and not as_json:
            out.print(f"wrote {html_out}", highlight=False)

    guarded(body)


def paper_spec(name: str) -> BenchmarkSpec:
    """The benchmark ``name`` whose paper ``paper`` lays out; ``UsageError`` for another name."""
    from toolgauge.benchmarks.registry import spec_named

    spec = spec_named(name)
    if spec is None or spec.paper is None:
        known = [n for n in PAPERS if (s := spec_named(n)) is not None and s.paper is not None]
        raise UsageError(f"no paper {name!r}: choose one of {', '.join(known)}")
    return spec


def _takes(spec: BenchmarkSpec) -> set[str]:
    target = getattr(spec.paper, "lazy_target", None)
    fn: Callable[..., Any] | None = spec.paper
    if target is not None:
        import importlib

        fn = getattr(importlib.import_module(target[0]), target[1])
    assert fn is not None
    return {p for p in inspect.signature(fn).parameters if p != "runs"}


def _check_options(spec: BenchmarkSpec, options: dict[str, Any]) -> None:
    flags = {"data": "--data", "oracle": "--oracle-run"}
    takes = _takes(spec)
    for key in options:
        if key not in takes:
            raise UsageError(f"{flags[key]} does not apply to {spec.name}")


def _open(store: str | None) -> Store:
    from toolgauge.store import open_store

    return open_store(store, create=False)


def load_paper_runs(st: Store, spec: BenchmarkSpec, refs: Sequence[str]) -> list[PaperRun]:
    """The runs ``refs`` name (a sweep id: its cells' runs of ``spec``'s benchmark, in cell order), as paper runs.

    Raises:
        UsageError: a ref names no run or sweep, a run is of another benchmark, or has no results.
    """
    from toolgauge.store.sweeps import get_sweep, resolve_sweep_id

    infos: list[RunInfo] = []
    for ref in refs:
        sweep_id = resolve_sweep_id(st, ref)
        if sweep_id is not None:
            record = get_sweep(st, sweep_id)
            cells = [c for c in (record.cells if record is not None else []) if c.benchmark == spec.name]
            found = [info for c in cells if (info := st.get_run(c.run_id)) is not None]
            if not found:
                raise UsageError(f"sweep {sweep_id} has no run of {spec.name}")
            infos.extend(found)
            continue
        info = st.get_run(st.resolve_run_id(ref))
        if info is None:
            raise UsageError(f"no run {ref!r} in the store (see: toolgauge runs)")
        if info.benchmark not in spec.run_names:
            raise UsageError(f"run {info.id} is {info.benchmark}, not {spec.name}")
        infos.append(info)
    return [_paper_run(st, spec, info) for info in infos]


def _paper_run(st: Store, spec: BenchmarkSpec, info: RunInfo) -> PaperRun:
    from toolgauge.api import stored_scores
    from toolgauge.report.paper_tables import PaperRun

    if info.results is None or info.status not in ("finished", "finished_with_errors"):
        raise UsageError(f"run {info.id} is {info.status}: it has no results to lay out")

    def scores() -> list[Any]:
        return list(stored_scores(st, info).iter_samples())

    def samples() -> list[tuple[str, Any]]:
        from toolgauge.benchmark import rebuild

        return list(rebuild(spec, info.config).samples())

    return PaperRun(
        id=info.id, benchmark=info.benchmark, model=info.model, config=info.config, results=info.results,
        scores=scores, samples=samples,
    )  # fmt: skip
