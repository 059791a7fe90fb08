"""``toolgauge data list|pull|verify|path``: the official benchmark data, fetched once, verified, cached."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TransferSpeedColumn
from rich.table import Table
from rich.text import Text

from toolgauge.cli.common import JsonOpt, err, fail, guarded, out, warn
from toolgauge.datasets.cache import cache_root, cached_path, revision_dir
from toolgauge.datasets.errors import Advance, FetchError, Start
from toolgauge.datasets.registry import DATASETS, Dataset, dataset_named
from toolgauge.errors import UsageError

data_app = typer.Typer(
    help="Fetch, verify and locate the official benchmark data (the cache: $TOOLGAUGE_DATA_DIR).",
    no_args_is_help=True,
)


def _datasets(names: list[str]) -> list[Dataset]:
    if names == ["all"]:
        return list(DATASETS)
    chosen = []
    for name in names:
        dataset = dataset_named(name)
        if dataset is None:
            raise UsageError(f"unknown dataset {name!r} (known: {', '.join(d.name for d in DATASETS)}, or all)")
        chosen.append(dataset)
    return chosen


def _size(dataset: Dataset) -> str:
    size = dataset.size
    return "?" if size is None else f"{size / 1e6:.1f} MB"


def _hashes(dataset: Dataset) -> str:
    return dataset.note or "sha256"


@data_app.command("list")
def list_cmd(as_json: JsonOpt = False) -> None:
    """Every known dataset: source, pinned revision, license, size, whether it is cached and where."""

    def body() -> None:
        rows = []
        for d in DATASETS:
            where = cached_path(d)
            rows.append({
                "name": d.name, "benchmark": d.benchmark, "source": d.source_text, "revision": d.revision,
                "license": d.license, "size": d.size, "hashes": _hashes(d), "needs_accept_terms": d.needs_terms,
                "cached": where is not None, "path": str(revision_dir(d)),
            })  # fmt: skip
        if as_json:
            sys.stdout.write(json.dumps({"cache": str(cache_root()), "datasets": rows}, indent=2) + "\n")
            return
        table = Table(
            title=f"datasets (cache: {cache_root()}/<name>/<revision>)",
            title_justify="left",
            caption="pinned: the sha256 of every file; (blob): the git blob id, its sha256 recorded on first download",
            caption_justify="left",
        )
        for col in ("name", "revision", "license", "size", "cached", "source"):
            table.add_column(col, no_wrap=col != "source")
        for d in DATASETS:
            license = "none: --accept-terms" if d.needs_terms else d.license
            cached = "yes" if cached_path(d) is not None else "no"
            source = f"{d.source_text} (blob)" if d.note else d.source_text
            table.add_row(*(Text(v) for v in (d.name, d.revision, license, _size(d), cached, source)))
        out.print(table)

    guarded(body)


@contextmanager
def _progress() -> Iterator[Start]:
    """The download callbacks: a progress bar on a terminal, nothing otherwise (logs stay clean)."""
    if not err.is_terminal:
        yield lambda label, total: lambda n: None
        return
    bar = Progress(
        TextColumn("{task.description}"), BarColumn(), DownloadColumn(), TransferSpeedColumn(),
        console=err, transient=True,
    )  # fmt: skip
    with bar:

        def start(label: str, total: int | None) -> Advance:
            task = bar.add_task(label, total=total)
            return lambda n: bar.advance(task, n)

        yield start


@data_app.command("pull")
def pull_cmd(
    names: Annotated[list[str], typer.Argument(help="Dataset names (see: toolgauge data list), or all.")],
    force: Annotated[
        bool, typer.Option("--force", help="Fetch again even when cached (replaced once verified).")
    ] = False,
    accept_terms: Annotated[
        bool, typer.Option("--accept-terms", help="Pull a dataset that has no license (you take responsibility).")
    ] = False,
    timeout: Annotated[float, typer.Option("--timeout", min=0.1, help="Seconds without data before giving up.")] = 60.0,
) -> None:
    """Download datasets into the cache, verify every file, and rename them into place only then."""
    from toolgauge.datasets.pull import pull

    def waiting(lock: Path) -> None:
        warn(f"another pull of this dataset is running; waiting for it (lock {lock})")

    def body() -> None:
        chosen = _datasets(names)
        if names == ["all"] and not accept_terms:
            for d in (d for d in chosen if d.needs_terms):
                warn(f"{d.name} skipped: it has no license (pull it with --accept-terms)")
            chosen = [d for d in chosen if not d.needs_terms]
        for dataset in chosen:
            try:
                with _progress() as start:
                    outcome = pull(
                        dataset, force=force, accept_terms=accept_terms, timeout=timeout, start=start, on_wait=waiting
                    )
            except FetchError as exc:
                fail(str(exc), exc.code)
            note = "already cached" if outcome == "cached" else f"pulled and verified ({len(dataset.pins)} files)"
            out.print(Text(f"{dataset.name} {dataset.revision}: {note}: {cached_path(dataset)}"), highlight=False)

    guarded(body)


@data_app.command("verify")
def verify_cmd(
    names: Annotated[list[str] | None, typer.Argument(help="Dataset names (default: every cached one).")] = None,
) -> None:
    """Re-hash cached datasets against their pins; exit 1 when a file is missing or changed."""
    from toolgauge.datasets.verify import verify_cached

    def body() -> None:
        chosen = _datasets(names) if names else [d for d in DATASETS if cached_path(d) is not None]
        if not chosen:
            out.print(Text(f"nothing is cached in {cache_root()}"), highlight=False)
            return
        bad = 0
        for dataset in chosen:
            try:
                problems = verify_cached(dataset)
            except FileNotFoundError:
                raise UsageError(f"{dataset.name} is not cached: toolgauge data pull {dataset.name}") from None
            if problems:
                bad += 1
                for line in problems:
                    err.print(Text(f"{dataset.name}: {line}", style="red"), highlight=False, soft_wrap=True)
                err.print(Text(f"{dataset.name}: fetch it again with: toolgauge data pull {dataset.name} --force"))
            else:
                out.print(
                    Text(f"{dataset.name} {dataset.revision}: {len(dataset.pins)} files verified"), highlight=False
                )
        if bad:
            raise typer.Exit(1)

    guarded(body)


@data_app.command("path")
def path_cmd(name: Annotated[str, typer.Argument(help="Dataset name (see: toolgauge data list).")]) -> None:
    """Print the cached dataset's folder (for scripts); exit 2 when it is not cached."""

    def body() -> None:
        (dataset,) = _datasets([name])
        if cached_path(dataset) is None:
            raise UsageError(f"{dataset.name} is not cached: toolgauge data pull {dataset.name}")
        sys.stdout.write(f"{revision_dir(dataset)}\n")

    guarded(body)
