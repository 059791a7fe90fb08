"""What tells runs apart and what they spent: a run's name and tags (``run_labels``), its calls' tokens by role.

Functions of an open :class:`~toolgauge.store.Store`, kept out of the store class itself. A store whose
``run_labels`` table is missing (an older store opened read-only) reads as one with no labels.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from sqlalchemy import func, insert, inspect, select, update
from sqlalchemy.exc import SQLAlchemyError

from toolgauge.cost import Price, calls_cost
from toolgauge.redact import redact
from toolgauge.run_labels import RunLabels
from toolgauge.store import schema

if TYPE_CHECKING:
    from toolgauge.store.store import RunInfo, Store


def _has_table(store: Store) -> bool:
    return schema.run_labels.name in inspect(store.engine).get_table_names()


def save_labels(store: Store, run_id: str, labels: RunLabels) -> None:
    """Store (or replace, for a resumed run given new ones) a run's name and tags, secrets masked."""
    if labels.empty:
        return
    values = {"name": redact(labels.name) if labels.name else None, "tags": json.dumps(labels.tags, sort_keys=True)}
    table = schema.run_labels
    try:
        with store.engine.begin() as conn:
            done = conn.execute(update(table).where(table.c.run_id == run_id).values(**values)).rowcount
            if not done:
                conn.execute(insert(table).values(run_id=run_id, **values))
    except SQLAlchemyError as exc:
        raise store._write_error(f"labelling run {run_id}", exc) from exc


def labels_of(store: Store, run_ids: Iterable[str]) -> dict[str, RunLabels]:
    """The labels of those of ``run_ids`` that have some."""
    ids = list(run_ids)
    if not ids or not _has_table(store):
        return {}
    table = schema.run_labels
    found: dict[str, RunLabels] = {}
    with store.engine.connect() as conn:
        for start in range(0, len(ids), 500):
            rows = conn.execute(select(table).where(table.c.run_id.in_(ids[start : start + 500]))).mappings()
            for row in rows:
                found[row["run_id"]] = RunLabels(name=row["name"], tags=json.loads(row["tags"]))
    return found


def list_runs(store: Store, limit: int, tags: Mapping[str, str] | None = None) -> list[RunInfo]:
    """The newest ``limit`` runs, newest first; with ``tags``, only the runs that carry every one of them."""
    if not tags:
        return store.list_runs(limit)
    if not _has_table(store):
        return []
    from toolgauge.store.runs import run_info

    table = schema.run_labels
    with store.engine.connect() as conn:
        tagged = [
            run_id
            for run_id, text in conn.execute(select(table.c.run_id, table.c.tags))
            if all(json.loads(text).get(k) == v for k, v in tags.items())
        ]
        runs: list[RunInfo] = []
        for start in range(0, len(tagged), 500):
            chunk = tagged[start : start + 500]
            rows = conn.execute(select(schema.runs).where(schema.runs.c.id.in_(chunk))).mappings()
            runs.extend(run_info(r) for r in rows)
    runs.sort(key=lambda r: r.created_at, reverse=True)
    return runs[:limit]


def spent_calls(store: Store, run_id: str) -> dict[str, list[tuple[int, int, int]]]:
    """The run's answered calls not served from the cache, by role: (input, output tokens, number of calls).

    Calls with the same counts are one row, so a linear price sums them at once and a tiered one prices
    each distinct call once (:func:`toolgauge.cost.calls_cost`).
    """
    store.flush()
    c = schema.model_calls.c
    query = (
        select(c.role, c.input_tokens, c.output_tokens, func.count())
        .where((c.run_id == run_id) & c.cached.is_(False) & c.error.is_(None))
        .group_by(c.role, c.input_tokens, c.output_tokens)
    )
    by_role: dict[str, list[tuple[int, int, int]]] = {}
    with store.engine.connect() as conn:
        for role, tokens_in, tokens_out, n in conn.execute(query):
            by_role.setdefault(role or "model", []).append((int(tokens_in), int(tokens_out), int(n)))
    return by_role


def sample_costs(store: Store, run_id: str, price: Price) -> dict[str, float]:
    """USD per sample try (its store key, epoch mark included) of the evaluated model's calls.

    As :func:`toolgauge.cost.evaluated_call_cost` charges them: role ``model``, calls from the cache cost 0
    (left out), failed calls spent nothing. A sample without such calls is absent (it cost 0).
    """
    store.flush()
    c = schema.model_calls.c
    query = (
        select(c.sample_key, c.input_tokens, c.output_tokens, func.count())
        .where((c.run_id == run_id) & (c.role == "model") & c.cached.is_(False) & c.error.is_(None))
        .group_by(c.sample_key, c.input_tokens, c.output_tokens)
    )
    by_sample: dict[str, list[tuple[int, int, int]]] = {}
    with store.engine.connect() as conn:
        for key, tokens_in, tokens_out, n in conn.execute(query):
            by_sample.setdefault(str(key), []).append((int(tokens_in), int(tokens_out), int(n)))
    return {key: calls_cost(price, rows) for key, rows in by_sample.items()}


def run_settings(run: RunInfo) -> dict[str, Any]:
    """What a run list shows of how the run was made: mode, variant, temperature, epochs and limit.

    From the stored results' provenance when the run has them, else from its stored config (a run still
    running, or stopped); a setting the benchmark has not is None.
    """
    config = run.config
    provenance = run.results.provenance if run.results is not None else None
    options = provenance.model_options if provenance is not None else {}
    return {
        "mode": config.get("mode"),
        "variant": config.get("variant"),
        "temperature": options.get("temperature", config.get("temperature")),
        "epochs": provenance.epochs if provenance is not None else int(config.get("epochs", 1)),
        "limit": provenance.limit if provenance is not None else config.get("limit"),
    }
