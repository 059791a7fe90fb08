"""``toolgauge export``: a stored run in formats other tools read (docs/exports.md).

* ``inspect``: an Inspect AI eval log (:mod:`toolgauge.export.inspect_log`);
* ``csv``, ``jsonl``, ``parquet``: per-sample tables and the metrics (:mod:`toolgauge.export.tables`);
* a benchmark's own formats, which its spec offers (:attr:`toolgauge.benchmark.BenchmarkSpec.exports`: BFCL's
  score files, ``bfcl``); the caller hands them over, since the core does not reach the benchmarks itself.

Every format reads the run through :mod:`toolgauge.export.source` and writes into a staged folder
(:mod:`toolgauge.export.staging`) that replaces ``--out`` only when it is complete.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal, cast, get_args

from toolgauge.benchmark import Exporter
from toolgauge.errors import UsageError
from toolgauge.export.source import Verdicts, open_run
from toolgauge.export.staging import check_out_dir, staged_dir

if TYPE_CHECKING:
    from toolgauge.store.store import RunInfo

ExportFormat = Literal["inspect", "csv", "jsonl", "parquet"]
FORMATS: tuple[str, ...] = get_args(ExportFormat)
"""The formats every run can be exported as; a benchmark's spec may offer more."""


@dataclass(frozen=True)
class ExportReport:
    """What an export wrote: the run, the files (paths inside ``out``), and what the reader should know."""

    run_id: str
    out: Path
    files: list[Path]
    notes: list[str] = field(default_factory=list)


def export_run(
    ref: str,
    fmt: str,
    out: Path,
    *,
    store_url: str | None,
    verdicts: Verdicts,
    force: bool = False,
    headline_of: Callable[[str], Sequence[str]] | None = None,
    model_name: str | None = None,
    log_format: str | None = None,
    benchmark_exports: Mapping[str, Mapping[str, Exporter]] | None = None,
) -> ExportReport:
    """Export stored run ``ref`` as ``fmt`` into the folder ``out``.

    Args:
        ref: Run id, a unique start of one, or ``latest``.
        fmt: One of :data:`FORMATS`, or a format the run's benchmark offers (``benchmark_exports``).
        out: The folder to write; it must not exist or be empty unless ``force``.
        store_url: The store (None: the default store).
        verdicts: Recomputes the run's per-unit verdicts (see :data:`~toolgauge.export.source.Verdicts`).
        force: Replace a non-empty ``out``.
        headline_of: A benchmark's headline metric names (the Inspect log lists them first).
        model_name: BFCL's model folder and ``model_name`` (default: the run's model, made a folder name).
        log_format: Inspect's log format, ``eval`` (the default, as Inspect's) or ``json``; inspect only.
        benchmark_exports: The formats each benchmark offers (its spec's ``exports``), by the ``Benchmark.name``
            its runs are stored under.

    Raises:
        UsageError: unknown format, unknown run, ``out`` not replaceable, a format the run cannot have.
    """
    offered = benchmark_exports or {}
    if log_format is not None and fmt != "inspect":
        raise UsageError("--log-format is for --format inspect")
    if log_format not in (None, "eval", "json"):
        raise UsageError(f"--log-format {log_format!r}: one of eval, json")
    out = Path(out)
    check_out_dir(out, force=force)
    if fmt == "parquet":
        from toolgauge.export.tables import PARQUET_HINT, parquet_available

        if not parquet_available():
            raise UsageError(PARQUET_HINT)
    chosen: list[Exporter] = []  # the run's benchmark's own exporter, when fmt is one

    def check(run: RunInfo) -> None:
        if fmt in FORMATS:
            return
        mine = offered.get(run.benchmark, {})
        if fmt in mine:
            chosen.append(mine[fmt])
            return
        this_run = f"(this {run.benchmark} run: {', '.join(_every_format({run.benchmark: mine}))})"
        owners = dict.fromkeys(e[fmt].runs for e in offered.values() if fmt in e)
        if owners:
            raise UsageError(
                f"run {run.id} is a {run.benchmark} run: --format {fmt} exports {' and '.join(owners)} runs only "
                + this_run
            )
        raise UsageError(f"--format {fmt!r}: one of {', '.join(_every_format(offered))} {this_run}")

    with open_run(ref, store_url, verdicts, check) as source:
        notes = [source.note] if source.note else []
        with staged_dir(out, force=force) as folder:
            if chosen:
                files = chosen[0].write(folder, source, model_name=model_name)
            elif fmt == "inspect":
                from toolgauge.export.inspect_log import InspectLogFormat, write_inspect_log

                headline = headline_of(source.run.benchmark) if headline_of is not None else ()
                log: InspectLogFormat = "json" if log_format == "json" else "eval"
                files = [write_inspect_log(folder, source, headline=headline, log_format=log)]
            else:
                from toolgauge.export.tables import TableFormat, sample_rows, write_tables

                rows = sample_rows(source.scores, source.states)
                files = write_tables(folder, cast(TableFormat, fmt), rows, source.results)
            files = [out / f.relative_to(folder) for f in files]
        return ExportReport(run_id=source.run.id, out=out, files=files, notes=notes)


def _every_format(offered: Mapping[str, Mapping[str, Exporter]]) -> list[str]:
    """The generic formats with the benchmarks' own after ``inspect``, in the order messages list them."""
    own = dict.fromkeys(name for exports in offered.values() for name in exports if name not in FORMATS)
    return [FORMATS[0], *own, *FORMATS[1:]]


__all__ = ["FORMATS", "ExportFormat", "ExportReport", "export_run"]
