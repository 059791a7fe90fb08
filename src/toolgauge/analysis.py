"""Stored runs as pandas DataFrames, for notebooks and scripts (as Inspect's ``inspect_ai.analysis`` does).

- :func:`runs_df`: one row per stored run (what ``toolgauge runs`` lists, with its counts, tokens and time);
- :func:`metrics_df`: one row per metric of a run, or of every cell's run of a sweep (long format: the overall
  metrics and every breakdown group, with the headline metrics' standard error and 95% interval);
- :func:`samples_df`: one row per scored unit and epoch of a run, scored again from the stored outputs as
  ``toolgauge rescore`` does (the columns of ``toolgauge export``'s samples table).

Numbers are fractions, as in JSON; secrets are masked as in every output. Every function reads the store
through the store's own API (``store`` defaults as the CLI's ``--store``: ``$TOOLGAUGE_STORE``, else
``.toolgauge/toolgauge.db``). pandas comes with the ``analysis`` extra (``pip install 'toolgauge[analysis]'``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolgauge.errors import UsageError
from toolgauge.redact import redact_tree
from toolgauge.results import EvalResults

if TYPE_CHECKING:
    import pandas as pd

    from toolgauge.store.store import RunInfo, Store

# The columns of each frame, in order (samples_df adds its score_, weight_ and metadata_ columns after these).
RUN_COLUMNS = (
    "run_id", "benchmark", "model", "status", "samples", "epochs", "sample_errors", "model_calls", "cached_calls",
    "input_tokens", "output_tokens", "wall_seconds", "seed", "created_at", "finished_at",
)  # fmt: skip
METRIC_COLUMNS = (
    "run_id", "benchmark", "model", "name", "by", "group", "value", "n", "kind", "headline", "stderr", "ci_low",
    "ci_high",
)  # fmt: skip
# Before the columns of export's samples table (toolgauge.export.tables), so frames of several runs concatenate.
RUN_KEY_COLUMNS = ("run_id", "benchmark", "model")


def runs_df(*, store: str | Path | None = None, limit: int | None = None) -> pd.DataFrame:
    """One row per stored run, newest first (``limit``: only the newest that many).

    Columns: ``run_id``, ``benchmark``, ``model``, ``status``, ``samples``, ``epochs``, ``sample_errors``,
    ``model_calls``, ``cached_calls``, ``input_tokens``, ``output_tokens``, ``wall_seconds``, ``seed`` (None
    where the run has no results yet), ``created_at`` and ``finished_at`` (UTC timestamps).
    """
    pandas = _pandas()
    with _opened(store) as st:
        runs = st.list_runs(limit if limit is not None else _ALL)
    frame = pandas.DataFrame([redact_tree(_run_row(r)) for r in runs], columns=list(RUN_COLUMNS))
    for column in ("created_at", "finished_at"):
        frame[column] = pandas.to_datetime(frame[column], unit="s", utc=True)
    return frame


def metrics_df(run_or_sweep: str = "latest", *, store: str | Path | None = None) -> pd.DataFrame:
    """One row per metric of a run, or of every cell's run of a sweep (a sweep id, or a unique start of one).

    ``run_or_sweep`` is a run id, a unique start of one, ``"latest"``, or a sweep id. Columns: ``run_id``,
    ``benchmark``, ``model``, ``name``, ``by`` and ``group`` (None for an overall metric), ``value``, ``n``,
    ``kind`` (rate, count or mean), ``headline`` (a headline metric's overall row) and, for the headline rows,
    ``stderr``, ``ci_low`` and ``ci_high`` from the run's summary (the bootstrap over clusters). A run without
    results (still running, or failed) has no rows.
    """
    pandas = _pandas()
    from toolgauge.store.sweeps import get_sweep, resolve_sweep_id

    with _opened(store) as st:
        sweep_id = resolve_sweep_id(st, run_or_sweep)
        if sweep_id is not None:
            record = get_sweep(st, sweep_id)
            found = [st.get_run(cell.run_id) for cell in record.cells] if record is not None else []
            runs = [run for run in found if run is not None]
        else:
            runs = [_stored_run(st, run_or_sweep)]
    rows = [row for run in runs if run.results is not None for row in _metric_rows(run, run.results)]
    return pandas.DataFrame(rows, columns=list(METRIC_COLUMNS))


def samples_df(run: str = "latest", *, store: str | Path | None = None, variant: str | None = None) -> pd.DataFrame:
    """One row per scored unit and epoch of a run, scored again from its stored outputs (no model call).

    ``run`` is a run id, a unique start of one, or ``"latest"``; ``variant`` a metric variant (default: the
    run's). The data files the run was made from must still be where they were (as for ``rescore``).
    Columns: ``run_id``, ``benchmark``, ``model``, then those of ``toolgauge export``'s samples table
    (docs/exports.md): ``id`` (the unit), ``sample``, ``epoch``, ``value``, ``explanation``, ``error``,
    ``cluster`` (the unit a bootstrap resamples; None: the sample), one ``scores.NAME`` column per per-unit
    measure, ``weights`` and ``metadata`` (dicts).
    """
    pandas = _pandas()
    from toolgauge.api import stored_scores
    from toolgauge.export.tables import columns_of, sample_rows

    with _opened(store) as st:
        stored = _stored_run(st, run)
        rows = sample_rows(list(stored_scores(st, stored, variant).iter_samples()), {})
    key = dict(zip(RUN_KEY_COLUMNS, redact_tree([stored.id, stored.benchmark, stored.model]), strict=True))
    return pandas.DataFrame([{**key, **row} for row in rows], columns=[*RUN_KEY_COLUMNS, *columns_of(rows)])


# -- rows ------------------------------------------------------------------------------------------------------

# No limit on runs_df: more runs than any store holds.
_ALL = 2**62


def _run_row(run: RunInfo) -> dict[str, Any]:
    results = run.results
    stats = results.run if results is not None else None
    provenance = results.provenance if results is not None else None
    return {
        "run_id": run.id,
        "benchmark": run.benchmark,
        "model": run.model,
        "status": run.status,
        "samples": run.n_samples,
        "epochs": stats.epochs if stats is not None else int(run.config.get("epochs", 1)),
        "sample_errors": stats.sample_errors if stats is not None else None,
        "model_calls": stats.model_calls if stats is not None else None,
        "cached_calls": stats.cached_calls if stats is not None else None,
        "input_tokens": stats.input_tokens if stats is not None else None,
        "output_tokens": stats.output_tokens if stats is not None else None,
        "wall_seconds": stats.wall_seconds if stats is not None else None,
        "seed": provenance.seed if provenance is not None else None,
        "created_at": run.created_at,
        "finished_at": run.finished_at,
    }


def _metric_rows(run: RunInfo, results: EvalResults) -> Iterator[dict[str, Any]]:
    for metric in results.metrics:
        summary = results.summary.get(metric.name) if metric.group is None else None
        yield redact_tree(
            {
                "run_id": run.id,
                "benchmark": run.benchmark,
                "model": run.model,
                "name": metric.name,
                "by": metric.by,
                "group": metric.group,
                "value": metric.value,
                "n": metric.n,
                "kind": metric.kind,
                "headline": summary is not None,
                "stderr": summary.stderr if summary is not None else metric.stderr,
                "ci_low": summary.ci_low if summary is not None else metric.ci_low,
                "ci_high": summary.ci_high if summary is not None else metric.ci_high,
            }
        )


# -- the store and pandas --------------------------------------------------------------------------------------


@contextmanager
def _opened(store: str | Path | None) -> Iterator[Store]:
    """The store as the CLI opens it for reading (nothing is created), closed afterwards."""
    from toolgauge.api import store_url
    from toolgauge.store import open_store

    st = open_store(store_url(store), create=False)
    try:
        yield st
    finally:
        st.close()


def _stored_run(st: Store, ref: str) -> RunInfo:
    run = st.get_run(st.resolve_run_id(ref))
    if run is None:
        raise UsageError(f"no run {ref!r} in the store")
    return run


def _pandas() -> Any:
    try:
        import pandas
    except ImportError as exc:
        raise UsageError("toolgauge.analysis needs pandas: pip install 'toolgauge[analysis]'") from exc
    return pandas


__all__ = ["metrics_df", "runs_df", "samples_df"]
