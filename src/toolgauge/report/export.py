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


def flatten(summary: Mapping[str, Any], scope: str = "") -> Iterator[tuple[str, str, Any]]:
    """Yield (scope, metric, value) for every scalar leaf of a summary."""
    for key, value in summary.items():
        if isinstance(value, Mapping):
            yield from flatten(value, f"{scope}/{key}" if scope else key)
        elif isinstance(value, str | int | float | bool) or value is None:
            yield (scope or "overall", key, value)


def summary_to_csv(summary: Mapping[str, Any]) -> str:
    """Return the summary as CSV rows ``scope,metric,value`` (secrets in text values masked)."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["scope", "metric", "value"])
    for scope, metric, value in flatten(summary):
        writer.writerow([redact(scope), redact(metric), redact(value) if isinstance(value, str) else value])
    return buf.getvalue()


def write_atomic(path: Path, text: str) -> None:
    """Write a file so that readers never see it half-written."""
    write_lines_atomic(path, [text])


def write_lines_atomic(path: Path, chunks: Iterable[str]) -> None:
    """Write ``chunks`` one after the other into a temporary file beside ``path``, then rename it to ``path``.

    Readers never see a half-written file, and only one chunk need be in memory at a time. If
    anything fails on the way (a full disk, an exception while the chunks are made) the temporary
    file is removed and ``path`` is left as it was.
    """
    path = Path(path)
    tmp: str | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
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
