"""``export``: a stored run as an Inspect AI log, BFCL score files, or per-sample tables (no model is asked)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.text import Text

from toolgauge.benchmark import rescorable
from toolgauge.cli.common import RunArg, StoreOpt, guarded, out, warn
from toolgauge.errors import DataError
from toolgauge.results import SampleScore

if TYPE_CHECKING:  # SQLAlchemy loads with the store: only when the command runs
    from toolgauge.store.store import RunInfo


def stored_verdicts(run: RunInfo, store_url: str | None) -> tuple[list[SampleScore] | None, str | None]:
    """The run's per-unit verdicts recomputed from its stored outputs (``toolgauge rescore``), or None and why not.

    A run of a benchmark this toolgauge does not know or cannot rescore, or whose data files are gone,
    has none: it is exported from what the store has.
    """
    from toolgauge.api import rescore
    from toolgauge.benchmarks.registry import spec_for_run

    spec = spec_for_run(run.benchmark)
    if not rescorable(spec):
        return None, f"run {run.id} ({run.benchmark}) cannot be rescored, so it has no per-sample verdicts"
    try:
        return rescore(run.id, store=store_url, keep_samples=True).samples, None
    except DataError as exc:
        return None, f"run {run.id} could not be rescored, so it has no per-sample verdicts: {exc.render()}"


def export_cmd(
    run_id: RunArg,
    fmt: Annotated[str, typer.Option("--format", help="inspect | bfcl | csv | jsonl | parquet")],
    out_dir: Annotated[Path, typer.Option("--out", help="Folder to write (must not exist or be empty).")],
    store: StoreOpt = None,
    force: Annotated[bool, typer.Option("--force", help="Replace a non-empty --out folder.")] = False,
    model_name: Annotated[
        str | None,
        typer.Option("--model-name", help="bfcl: the model folder and model_name (default: the run's model)."),
    ] = None,
    log_format: Annotated[
        str | None,
        typer.Option("--log-format", help="inspect: eval (a .eval zip, Inspect's default) or json."),
    ] = None,
) -> None:
    """Write a stored run as an Inspect AI eval log, BFCL's score files, or per-sample tables.

    The per-sample verdicts are recomputed from the stored outputs, as `toolgauge rescore` does (no
    model call). --out is written whole or not at all.
    """

    def body() -> None:
        from toolgauge.api import headline_of
        from toolgauge.benchmarks.registry import specs
        from toolgauge.export import export_run

        offered = {run_name: spec.exports for spec in specs() for run_name in spec.run_names}
        report = export_run(
            run_id, fmt, out_dir, store_url=store, verdicts=stored_verdicts, force=force, headline_of=headline_of,
            model_name=model_name, log_format=log_format, benchmark_exports=offered,
        )  # fmt: skip
        for note in report.notes:
            warn(note)
        shown = f"{len(report.files)} file" + ("" if len(report.files) == 1 else "s")
        out.print(Text(f"run {report.run_id} → {report.out} ({fmt}, {shown})"), highlight=False)
        for path in report.files:
            out.print(Text(f"  {path}"), highlight=False)

    guarded(body)
