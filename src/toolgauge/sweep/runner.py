"""Run a sweep: record it with its cells, run the cells that are not finished on an executor, keep their status.

The coordinator (this module) is the only writer of the sweep's rows; the workers write their runs. A cell's
run failing (a model that does not answer, every sample failed) is that cell's status, and the other cells go
on; Ctrl-C stops the sweep, resumable with ``--resume SWEEP_ID``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from toolgauge.errors import DataError, RunInterrupted, RunStopped, UsageError
from toolgauge.redact import redact
from toolgauge.store import open_store
from toolgauge.store.sweeps import CellRecord, create_sweep, get_sweep, resolve_sweep_id, set_cell, set_sweep_status
from toolgauge.sweep.file import SweepFile, parse_sweep
from toolgauge.sweep.limits import LocalLimiter
from toolgauge.sweep.plan import Cell

# A cell in one of these states is not run again by a resume.
DONE = ("finished", "finished_with_errors")


class SweepInterrupted(Exception):
    """Ctrl-C (or SIGTERM) stopped the sweep; finished cells and samples are stored."""

    def __init__(self, sweep_id: str):
        super().__init__(sweep_id)
        self.sweep_id = sweep_id


@dataclass
class CellJob:
    """A cell to run and its row in the store."""

    cell: Cell
    record: CellRecord


class CellReporter:
    """What an executor tells the coordinator as cells start and end (one writer of the sweep's rows)."""

    def __init__(self, store_url: str, sweep_id: str):
        self.store_url = store_url
        self.sweep_id = sweep_id

    def started(self, job: CellJob) -> None:
        """Mark a cell running."""
        self._set(job, "running")

    def ended(self, job: CellJob, status: str, error: str | None = None) -> None:
        """Mark a cell with its run's status (or why it did not finish)."""
        self._set(job, status, error)

    def _set(self, job: CellJob, status: str, error: str | None = None) -> None:
        store = open_store(self.store_url)
        try:
            set_cell(store, self.sweep_id, job.record.cell, status, error=error)
        finally:
            store.close()


class Executor(Protocol):
    """Runs cells and reports each one's end."""

    async def run(self, jobs: Sequence[CellJob], store_url: str, reporter: CellReporter) -> None:
        """Run every job; raise ``asyncio.CancelledError``/``KeyboardInterrupt`` only when stopped."""
        ...


def describe_failure(exc: BaseException) -> tuple[str, str]:
    """A cell's status and error line for an exception its run ended with."""
    if isinstance(exc, RunStopped):
        return "interrupted", f"{exc.reason} (run {exc.run_id})"
    if isinstance(exc, DataError):
        return "failed", exc.render()
    if isinstance(exc, UsageError):
        return "failed", str(exc)
    return "failed", redact(f"{exc.__class__.__name__}: {exc}")


class LocalExecutor:
    """Every cell in this process's event loop, ``concurrency`` cells at once, one slot limit per endpoint."""

    def __init__(self, concurrency: int = 2):
        self.concurrency = concurrency

    async def run(self, jobs: Sequence[CellJob], store_url: str, reporter: CellReporter) -> None:
        """Run the cells; a cell's failure is its status, Ctrl-C stops them all (runs marked interrupted)."""
        from toolgauge.sweep.cells import run_cell

        limiter = LocalLimiter()
        gate = asyncio.Semaphore(self.concurrency)

        async def one(job: CellJob) -> None:
            async with gate:
                reporter.started(job)
                try:
                    status = await run_cell(job.cell.task, store_url, job.record.run_id, limiter, bench=job.cell.bench)
                except RunInterrupted as exc:
                    if isinstance(exc, RunStopped):
                        reporter.ended(job, *describe_failure(exc))
                        return
                    reporter.ended(job, "interrupted")
                    raise
                except (asyncio.CancelledError, KeyboardInterrupt):
                    reporter.ended(job, "interrupted")
                    raise
                except Exception as exc:
                    reporter.ended(job, *describe_failure(exc))
                    return
                reporter.ended(job, status)

        await run_all(one(job) for job in jobs)


async def run_all(coros: Iterable[Coroutine[Any, Any, None]]) -> None:
    """Run the cells' coroutines side by side; when one raises (Ctrl-C, a lost store), cancel and await the rest."""
    tasks = [asyncio.create_task(c) for c in coros]
    try:
        await asyncio.gather(*tasks)
    except BaseException:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


async def run_sweep(
    sweep: SweepFile,
    text: str,
    cells: Sequence[Cell],
    store_url: str,
    executor: Executor,
    *,
    resume: str | None = None,
    where: str = "sweep file",
) -> str:
    """Record (or reopen) the sweep, run its unfinished cells, store its status; return its id.

    Raises ``SweepInterrupted`` when stopped by Ctrl-C; every finished sample is stored.
    """
    store = open_store(store_url)
    try:
        if resume is None:
            record = create_sweep(store, text, [(c.task.shown_model, c.task.benchmark) for c in cells])
        else:
            found = resolve_sweep_id(store, resume)
            record_or_none = get_sweep(store, found) if found is not None else None
            if record_or_none is None:
                raise UsageError(f"--resume {resume}: no such sweep in the store (see: toolgauge sweeps)")
            record = record_or_none
            if parse_sweep(record.file, "the stored sweep") != sweep:
                raise UsageError(f"--resume {record.id}: {where} is not the file that sweep was started with")
            set_sweep_status(store, record.id, "running")
    finally:
        store.close()
    jobs = [CellJob(cell, rec) for cell, rec in zip(cells, record.cells, strict=True) if rec.status not in DONE]
    reporter = CellReporter(store_url, record.id)
    try:
        await executor.run(jobs, store_url, reporter)
    except (asyncio.CancelledError, KeyboardInterrupt, RunInterrupted) as exc:
        _set_status(store_url, record.id, "interrupted")
        raise SweepInterrupted(record.id) from exc
    except BaseException:
        _set_status(store_url, record.id, "failed")
        raise
    store = open_store(store_url)
    try:
        final = get_sweep(store, record.id)
        assert final is not None
        status = "finished" if all(c.status == "finished" for c in final.cells) else "finished_with_errors"
        set_sweep_status(store, record.id, status)
    finally:
        store.close()
    return record.id


def _set_status(store_url: str, sweep_id: str, status: str) -> None:
    store = open_store(store_url)
    try:
        set_sweep_status(store, sweep_id, status)
    finally:
        store.close()
