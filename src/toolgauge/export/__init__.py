"""``toolgauge export``: a stored run in formats other tools read (docs/exports.md).

* ``inspect``: an Inspect AI eval log (:mod:`toolgauge.export.inspect_log`);
* ``bfcl``: BFCL's score files and leaderboard CSVs (:mod:`toolgauge.benchmarks.bfcl.export`);
* ``csv``, ``jsonl``, ``parquet``: per-sample tables and the metrics (:mod:`toolgauge.export.tables`).

Every format reads the run through :mod:`toolgauge.export.source` and writes into a staged folder
(:mod:`toolgauge.export.staging`) that replaces ``--out`` only when it is complete.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, cast, get_args

from toolgauge.errors import UsageError
from toolgauge.export.source import Verdicts, open_run
from toolgauge.export.staging import check_out_dir, staged_dir

ExportFormat = Literal["inspect", "bfcl", "csv", "jsonl", "parquet"]
FORMATS: tuple[str, ...] = get_args(ExportFormat)


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
) -> ExportReport:
    """Export stored run ``ref`` as ``fmt`` into the folder ``out``.

    Args:
        ref: Run id, a unique start of one, or ``latest``.
        fmt: One of :data:`FORMATS`.
        out: The folder to write; it must not exist or be empty unless ``force``.
        store_url: The store (None: the default store).
        verdicts: Recomputes the run's per-unit verdicts (see :data:`~toolgauge.export.source.Verdicts`).
        force: Replace a non-empty ``out``.
        headline_of: A benchmark's headline metric names (the Inspect log lists them first).
        model_name: BFCL's model folder and ``model_name`` (default: the run's model, made a folder name).
        log_format: Inspect's log format, ``eval`` (the default, as Inspect's) or ``json``; inspect only.

    Raises:
        UsageError: unknown format, unknown run, ``out`` not replaceable, a format the run cannot have.
    """
    if fmt not in FORMATS:
        raise UsageError(f"--format {fmt!r}: one of {', '.join(FORMATS)}")
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
    with open_run(ref, store_url, verdicts) as source:
        if fmt == "bfcl" and source.run.benchmark != "bfcl":
            raise UsageError(
                f"run {source.run.id} is a {source.run.benchmark} run: --format bfcl exports BFCL runs only"
            )
        notes = [source.note] if source.note else []
        with staged_dir(out, force=force) as folder:
            if fmt == "inspect":
                from toolgauge.export.inspect_log import InspectLogFormat, write_inspect_log

                headline = headline_of(source.run.benchmark) if headline_of is not None else ()
                chosen: InspectLogFormat = "json" if log_format == "json" else "eval"
                files = [write_inspect_log(folder, source, headline=headline, log_format=chosen)]
            elif fmt == "bfcl":
                from toolgauge.benchmarks.bfcl.export import write_bfcl_scores

                files = write_bfcl_scores(folder, source, model_name=model_name)
            else:
                from toolgauge.export.tables import TableFormat, sample_rows, write_tables

                rows = sample_rows(source.scores, source.states)
                files = write_tables(folder, cast(TableFormat, fmt), rows, source.results)
            files = [out / f.relative_to(folder) for f in files]
        return ExportReport(run_id=source.run.id, out=out, files=files, notes=notes)


__all__ = ["FORMATS", "ExportFormat", "ExportReport", "export_run"]
