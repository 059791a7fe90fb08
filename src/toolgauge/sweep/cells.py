"""Run one cell, or one shard of a cell's samples, into its run in the store (what every executor calls).

A cell is one run under the id the sweep gave it: the first attempt makes the run, every later one (a resumed
sweep, a Ray retry after a lost worker) resumes it, so a sample stored as done is never run again.

A shard is a slice of a large cell's samples run by one worker while other workers run the other slices of the
same run at the same time. Each shard holds a lease of its own (``RUN_ID/shard-N`` in ``run_locks``), so a
retried shard waits for, or takes over from, the worker it replaces, and never runs beside it; the engine's
resume then looks at that shard's samples alone. When every shard is done, the cell is run once more as a
whole: nothing is left to run, and that pass scores the run and stores its results and status.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy import delete

from toolgauge.driver import run_benchmark, run_config, start_clients
from toolgauge.engine import EngineConfig, run_episodes
from toolgauge.errors import RunLocked
from toolgauge.models.spec import display_spec, resolve_model
from toolgauge.options import EngineOptions, validated
from toolgauge.run_labels import RunLabels
from toolgauge.run_setup import role_clients, run_options
from toolgauge.store import Store, open_store, schema
from toolgauge.store.lease import this_host
from toolgauge.sweep.limits import LimitedClient, Limiter, endpoint_of
from toolgauge.sweep.plan import DEFAULT_CONCURRENCY, CellTask, build_bench

# Whether a host is known to be lost (its Ray node died): its leases need not go stale first.
HostGone = Callable[[str], bool]
# How often a worker looks again at a lease another (maybe lost) worker holds.
LEASE_POLL_SECONDS = 1.0


def shard_lease(run_id: str, shard: int) -> str:
    """The ``run_locks`` key of one shard of a run."""
    return f"{run_id}/shard-{shard}"


async def run_cell(
    task: CellTask,
    store_url: str,
    run_id: str,
    limiter: Limiter | None,
    *,
    bench: Any = None,
    lease_patience: float = 0.0,
    host_gone: HostGone | None = None,
) -> str:
    """Run (or resume) the cell's whole run, score it and store its results; return the run's status.

    ``lease_patience``: seconds to wait for the run's lease while another process holds it (a Ray retry waits
    for the lost worker's lease to be released or go stale). ``host_gone``: tells a holder's host that is known
    to be lost (a dead Ray node), whose lease is then taken over at once.
    """
    from toolgauge.benchmarks.registry import spec_named

    bench = bench if bench is not None else build_bench(task)
    ensure_run(store_url, run_id, bench, task.shown_model, task.epochs)
    spec = spec_named(task.benchmark)
    typed = validated(spec.options, task.options) if spec is not None else task.options
    engine = EngineOptions(concurrency=task.concurrency, timeout=task.timeout, max_retries=task.max_retries,
                           cache=task.cache, resume=run_id, epochs=task.epochs,
                           price=task.price)  # fmt: skip
    options = run_options(
        spec,
        typed,
        engine,
        store=store_url,
        seed=task.seed,
        labels=RunLabels(name=task.name, tags=task.tags),
    )
    deadline = time.monotonic() + lease_patience
    while True:
        client = LimitedClient(
            resolve_model(task.model_spec, replay_loader=bench.replay_table, timeout=task.timeout),
            limiter, task.endpoint, task.endpoint_limit, name=task.shown_model,
        )  # fmt: skip
        roles = cell_roles(task, client, limiter)
        try:
            result = await run_benchmark(bench, task.shown_model, options, client=client, roles=roles)
        except RunLocked:
            if host_gone is not None:
                store = open_store(store_url)
                try:
                    dropped = drop_lost_lease(store, run_id, host_gone)
                finally:
                    store.close()
                if dropped:
                    continue
            if time.monotonic() >= deadline:
                raise
            await asyncio.sleep(LEASE_POLL_SECONDS)
            continue
        run = result.scored.results.run
        return run.status if run is not None else "finished"


def cell_roles(task: CellTask, evaluated: LimitedClient, limiter: Limiter | None) -> dict[str, LimitedClient]:
    """The clients of the cell's extra roles (Tool-Genesis's ``agent`` and ``judge``), each under its endpoint's limit.

    As ``eval`` does: a role whose spec is the evaluated model's shares its client, and roles with one spec
    share one client.
    """

    def limited(spec: str) -> LimitedClient:
        endpoint = endpoint_of(spec)
        limit = task.role_limits.get(endpoint, DEFAULT_CONCURRENCY) if endpoint else DEFAULT_CONCURRENCY
        return LimitedClient(
            resolve_model(spec, timeout=task.timeout), limiter, endpoint, limit, name=display_spec(spec)
        )

    return role_clients(task.roles, task.model_spec, evaluated, limited)


def engine_config(task: CellTask) -> EngineConfig:
    """The engine options of a cell's run (or shard): the file's, with its epochs and seed."""
    return EngineConfig(
        concurrency=task.concurrency, timeout=task.timeout, max_retries=task.max_retries,
        use_cache=task.cache != "off", cache=task.cache,
        show_progress=False, seed=task.seed, epochs=task.epochs,
    )  # fmt: skip


def ensure_run(store_url: str, run_id: str, bench: Any, shown_model: str, epochs: int = 1) -> None:
    """Make the cell's run under its id unless it exists (two workers racing: the second finds it made)."""
    store = open_store(store_url)
    try:
        if store.get_run(run_id) is None:
            try:
                store.create_run(bench.name, shown_model, run_config(bench, epochs), run_id=run_id)
            except Exception:
                if store.get_run(run_id) is None:
                    raise
    finally:
        store.close()


async def run_shard(
    task: CellTask,
    store_url: str,
    run_id: str,
    shard: int,
    keys: Sequence[str],
    limiter: Limiter | None,
    *,
    lease_patience: float = 0.0,
    host_gone: HostGone | None = None,
) -> int:
    """Run the tries of the samples ``keys`` of the cell's run that are not done yet; return how many are done now."""
    bench = build_bench(task)
    wanted = set(keys)
    samples = [(key, sample) for key, sample in bench.samples() if key in wanted]
    ensure_run(store_url, run_id, bench, task.shown_model, task.epochs)
    store = open_store(store_url)
    try:
        await take_lease(store, shard_lease(run_id, shard), lease_patience, host_gone)
        client = LimitedClient(
            resolve_model(task.model_spec, replay_loader=bench.replay_table, timeout=task.timeout),
            limiter, task.endpoint, task.endpoint_limit, name=task.shown_model,
        )  # fmt: skip
        roles = cell_roles(task, client, limiter)
        # Each client once (a role may share the evaluated model's), started and probed as the driver does.
        distinct = list({id(c): c for c in (client, *roles.values())}.values())
        await start_clients(distinct)
        try:
            outcome = await run_episodes(
                samples, bench.episode, bench.result_type, client=client, store=store, run_id=run_id,
                config=engine_config(task), roles=roles, shard=True,
            )  # fmt: skip
        finally:
            for each in distinct:
                await each.close()
        return len(outcome.outcomes) - len(outcome.failed)
    finally:
        store.close()


async def take_lease(store: Store, key: str, patience: float, host_gone: HostGone | None = None) -> None:
    """Take the lease ``key``, waiting up to ``patience`` seconds while a live process holds it.

    A lease held from a host that ``host_gone`` says is lost is taken over at once.
    """
    deadline = time.monotonic() + patience
    while True:
        try:
            store.acquire_run_lock(key)
            return
        except RunLocked:
            if drop_lost_lease(store, key, host_gone):
                continue
            if time.monotonic() >= deadline:
                raise
        await asyncio.sleep(LEASE_POLL_SECONDS)


def drop_lost_lease(store: Store, key: str, host_gone: HostGone | None) -> bool:
    """Delete the lease ``key`` when its holder runs on another host that ``host_gone`` says is lost.

    Only the holder looked at is deleted (by its owner token), so of two retries racing, one takes the lease.
    Returns whether a lease was deleted.
    """
    if host_gone is None:
        return False
    holder = store.run_lock_holder(key)
    if holder is None or holder.hostname == this_host() or not host_gone(holder.hostname):
        return False
    locks = schema.run_locks.c
    with store.engine.begin() as conn:
        deleted = conn.execute(delete(schema.run_locks).where((locks.run_id == key) & (locks.owner == holder.owner)))
    return bool(deleted.rowcount)


def shards_of(keys: Sequence[str], size: int) -> list[list[str]]:
    """The keys cut into consecutive shards of ``size`` (the last one shorter)."""
    return [list(keys[start : start + size]) for start in range(0, len(keys), size)]
