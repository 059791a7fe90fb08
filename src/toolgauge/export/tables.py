"""Per-sample tables: ``samples.{csv,jsonl,parquet}`` (one row per scored unit) and ``metrics.*``.

A samples row holds a :class:`~toolgauge.results.SampleScore` flattened: ``id, sample, epoch, value,
explanation, error, cluster``, one ``scores.<name>`` column per per-unit measure (the union over the
run, in first-seen order; empty where a unit lacks it), then ``weights`` and ``metadata``. In JSONL
``weights`` and ``metadata`` are objects; in CSV and Parquet they are JSON text. The metrics tables
are the long format ``toolgauge report --csv`` prints (``metric, by, group, value, n``).

A run that could not be rescored has no verdicts: its rows are its stored samples (``id`` and
``sample`` the sample key, ``error`` its stored error, ``metadata`` its status and latency), with
the verdict columns empty.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from toolgauge.errors import UsageError
from toolgauge.export.source import split_store_key
from toolgauge.redact import redact_tree, secret_values
from toolgauge.report.export import METRIC_COLUMNS, metric_rows, results_to_csv
from toolgauge.results import EvalResults, SampleScore
from toolgauge.store.store import SampleState

TableFormat = Literal["csv", "jsonl", "parquet"]

LEAD_COLUMNS = ("id", "sample", "epoch", "value", "explanation", "error", "cluster")
TAIL_COLUMNS = ("weights", "metadata")
SCORE_PREFIX = "scores."
# Columns whose values are objects: JSON text in CSV and Parquet.
OBJECT_COLUMNS = frozenset(TAIL_COLUMNS)

PARQUET_HINT = "--format parquet needs pyarrow: pip install 'toolgauge[parquet]'"


def sample_rows(scores: Sequence[SampleScore] | None, states: Mapping[str, SampleState]) -> list[dict[str, Any]]:
    """Every scored unit as one flat row (secrets masked); the stored samples when there are no verdicts."""
    if scores is None:
        rows = [_state_row(state) for state in states.values()]
    else:
        names: dict[str, None] = {}
        for score in scores:
            names.update(dict.fromkeys(score.scores))
        rows = [_score_row(score, names) for score in scores]
    secrets = secret_values()
    return [redact_tree(row, secrets=secrets) for row in rows]


def columns_of(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The columns of ``rows``: the lead columns, ``scores.*`` in first-seen order, then weights and metadata."""
    scored: dict[str, None] = {}
    for row in rows:
        scored.update(dict.fromkeys(k for k in row if k.startswith(SCORE_PREFIX)))
    return [*LEAD_COLUMNS, *scored, *TAIL_COLUMNS]


def _score_row(score: SampleScore, names: Iterable[str]) -> dict[str, Any]:
    row: dict[str, Any] = {
        "id": score.id,
        "sample": score.sample,
        "epoch": score.epoch,
        "value": score.value,
        "explanation": score.explanation,
        "error": score.error,
        "cluster": score.cluster,
    }
    for name in names:
        row[SCORE_PREFIX + name] = score.scores.get(name)
    row["weights"] = dict(score.weights)
    row["metadata"] = score.model_dump(mode="json")["metadata"]
    return row


def _state_row(state: SampleState) -> dict[str, Any]:
    sample, epoch = split_store_key(state.sample_key)
    return {
        "id": sample,
        "sample": sample,
        "epoch": epoch,
        "value": None,
        "explanation": None,
        "error": state.error,
        "cluster": None,
        "weights": {},
        "metadata": {"status": state.status, "latency_s": state.latency_s},
    }


def write_tables(
    folder: Path, fmt: TableFormat, rows: Sequence[Mapping[str, Any]], results: EvalResults | None
) -> list[Path]:
    """Write ``samples.<fmt>`` and (when the run has results) ``metrics.<fmt>`` into ``folder``.

    Raises:
        UsageError: ``fmt`` is parquet and pyarrow is not installed.
    """
    columns = columns_of(rows)
    written = [folder / f"samples.{fmt}"]
    metrics = metric_rows(results) if results is not None else None
    if metrics is not None:
        written.append(folder / f"metrics.{fmt}")
    if fmt == "parquet":
        pq = _pyarrow()
        _write_parquet(pq, written[0], rows, columns)
        if metrics is not None:
            _write_parquet(pq, written[1], metrics, list(METRIC_COLUMNS))
    elif fmt == "csv":
        written[0].write_text(_csv_text(rows, columns), encoding="utf-8")
        if results is not None:
            written[1].write_text(results_to_csv(results), encoding="utf-8")
    else:
        _write_jsonl(written[0], rows, columns)
        if metrics is not None:
            _write_jsonl(written[1], metrics, list(METRIC_COLUMNS))
    return written


def _cell(value: Any, column: str) -> Any:
    """A value as CSV/Parquet holds it: objects as JSON text."""
    if column in OBJECT_COLUMNS or isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False, sort_keys=False)
    return value


def _csv_text(rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow([_csv_scalar(_cell(row.get(c), c)) for c in columns])
    return buf.getvalue()


def _csv_scalar(value: Any) -> Any:
    # Booleans as true/false, like the JSON and Parquet tables (csv would write True/False); None as empty.
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else value


def _write_jsonl(path: Path, rows: Iterable[Mapping[str, Any]], columns: Sequence[str]) -> None:
    with path.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps({c: row.get(c) for c in columns}, ensure_ascii=False, default=str) + "\n")


def _pyarrow() -> Any:
    try:
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise UsageError(PARQUET_HINT) from exc
    return pq


def parquet_available() -> bool:
    """Whether pyarrow can be imported (``--format parquet`` needs it)."""
    try:
        _pyarrow()
    except UsageError:
        return False
    return True


def _write_parquet(pq: Any, path: Path, rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> None:
    import pyarrow as pa

    arrays = {}
    for column in columns:
        values = [_cell(row.get(column), column) for row in rows]
        kind = _arrow_type(pa, values)
        if kind == pa.string():
            values = list(_stringify_mixed(values))
        arrays[column] = pa.array(values, type=kind)
    pq.write_table(pa.table(arrays), path)


def _arrow_type(pa: Any, values: Sequence[Any]) -> Any:
    """One type per column: bool, int64, float64 or (mixed or text) string; all-null columns are strings."""
    present = [v for v in values if v is not None]
    if present and all(isinstance(v, bool) for v in present):
        return pa.bool_()
    if present and all(isinstance(v, int) and not isinstance(v, bool) for v in present):
        return pa.int64()
    if present and all(isinstance(v, int | float) and not isinstance(v, bool) for v in present):
        return pa.float64()
    return pa.string()


def _stringify_mixed(values: Iterable[Any]) -> Iterator[Any]:
    """Values for a string column: text as is, anything else as JSON text (None stays None)."""
    for v in values:
        yield v if v is None or isinstance(v, str) else json.dumps(v)
