"""Machine-readable exports: JSON, CSV and per-sample JSONL, written atomically."""

from __future__ import annotations

import csv
import io
import json
import os
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from toolgauge.errors import UsageError
from toolgauge.redact import redact, redact_tree


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
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from exc


def samples_jsonl(rows: Sequence[Mapping[str, Any]]) -> str:
    """Return one JSON line per sample, secrets masked (error texts may quote a server that echoed a key)."""
    return "".join(json.dumps(redact_tree(dict(r)), ensure_ascii=False, default=str) + "\n" for r in rows)
