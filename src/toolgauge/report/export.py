"""Machine-readable exports: JSON, CSV and per-sample JSONL, written atomically."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from toolgauge.errors import UsageError
from toolgauge.redact import redact, redact_tree, secret_values
from toolgauge.results import EvalResults

METRIC_COLUMNS = ("metric", "by", "group", "value", "n")
"""The columns of the long metric format (``report --csv``, ``export``'s metrics tables)."""


def metric_rows(results: EvalResults) -> list[dict[str, Any]]:
    """The metric values as long-format rows (``METRIC_COLUMNS``; overall rows have empty by and group)."""
    return [
        {"metric": redact(m.name), "by": redact(m.by or ""), "group": redact(m.group or ""), "value": m.value, "n": m.n}
        for m in results.metrics
    ]


def results_to_csv(results: EvalResults) -> str:
    """Return the metric values as CSV rows ``metric,by,group,value,n`` (overall rows have empty by and group)."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(METRIC_COLUMNS)
    for row in metric_rows(results):
        writer.writerow([row[c] for c in METRIC_COLUMNS])
    return buf.getvalue()


def check_output_file(path: Path, option: str) -> None:
    """Refuse an output file that could not be written, before a run starts (one line, exit 2).

    It must not be a folder or anything but a regular file (a rename onto ``/dev/null`` would replace it), and
    its folder must exist and be writable: toolgauge creates no folder it was not asked for.

    Raises:
        UsageError: ``OPTION PATH: what is wrong``.
    """
    path = Path(path)
    where = f"{option} {path}"
    if path.is_dir():
        raise UsageError(f"{where}: is a folder; give the path of a file to write")
    if path.exists() and not path.is_file():
        raise UsageError(f"{where}: not a regular file; give the path of a file to write")
    folder = path.parent
    if not folder.is_dir():
        raise UsageError(f"{where}: the folder {folder} does not exist (toolgauge creates no folder); create it first")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise UsageError(f"{where}: cannot write in the folder {folder}: permission denied")


def write_atomic(path: Path, text: str) -> None:
    """Write a file so that readers never see it half-written."""
    write_lines_atomic(path, [text])


def write_lines_atomic(path: Path, chunks: Iterable[str]) -> None:
    """Write ``chunks`` one after the other into a temporary file beside ``path``, then rename it to ``path``.

    Readers never see a half-written file, and only one chunk need be in memory at a time. The folder must
    exist (see :func:`check_output_file`). If anything fails on the way (a full disk, an exception while the
    chunks are made) the temporary file is removed and ``path`` is left as it was.
    """
    path = Path(path)
    tmp: str | None = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        with os.fdopen(fd, "w") as fh:
            for chunk in chunks:
                fh.write(chunk)
        os.replace(tmp, path)
        tmp = None
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from exc
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def sample_lines(rows: Iterable[Mapping[str, Any]]) -> Iterator[str]:
    """Yield one ``--samples`` JSON line per row, secrets masked (error texts may quote a server that echoed a key).

    The environment's secret values are looked up once for the whole file, not per string.
    """
    secrets = secret_values()
    for row in rows:
        yield json.dumps(redact_tree(dict(row), secrets=secrets), ensure_ascii=False, default=str) + "\n"


def samples_jsonl(rows: Iterable[Mapping[str, Any]]) -> str:
    """Return one JSON line per sample, secrets masked."""
    return "".join(sample_lines(rows))
