"""``--executor ray``: cells, and the samples of large cells in shards, as Ray tasks writing to one shared store.

- A cell of at most ``shard_size`` samples is one task: the whole run, resumed under the cell's run id.
- A larger cell is one task per shard of ``shard_size`` samples (``toolgauge.sweep.cells.run_shard``), all at
  once, then one task that scores the run (nothing is left to run by then).
- A worker lost mid-task (its node died) is retried by Ray (``max_retries``). The retry resumes the run or the
  shard from the store: a sample stored as done is never run again, and the retry takes the lease of the lost
  worker over once that worker's process is gone (same host), its host has no live Ray node any more, or its
  heartbeat is 10 minutes old.
- Requests to one endpoint are capped across the whole cluster by one named actor, ``EndpointSlots``, which every
  worker's model client asks for a slot around each request (``toolgauge.sweep.limits.LimitedClient``).

With ``epochs`` > 1 a shard runs every try of its samples.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import secrets
import signal
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

from toolgauge.errors import UsageError
from toolgauge.store.lease import STALE_AFTER_SECONDS
from toolgauge.sweep.cells import run_cell, run_shard, shards_of
from toolgauge.sweep.plan import CellTask
from toolgauge.sweep.runner import CellJob, CellReporter, describe_failure, run_all

# A retried task waits this long at most for the lease of the worker it replaces (a lost node's lease goes
# stale after STALE_AFTER_SECONDS without a heartbeat).
LEASE_PATIENCE = STALE_AFTER_SECONDS + 60.0
# Ray retries a task whose worker died this many times.
TASK_RETRIES = 3
# A local Ray instance (no --address): small, no dashboard.
LOCAL_OBJECT_STORE_BYTES = 100 * 1024 * 1024
DEFAULT_SHARD_SIZE = 50


def import_ray() -> Any:
    """The ``ray`` module, or a usage error saying how to install it."""
    try:
        # By name: Ray ships no type information, and mypy need not read it.
        return importlib.import_module("ray")
    except ImportError:
        raise UsageError("--executor ray needs Ray: pip install 'toolgauge[ray]'") from None


class EndpointSlots:
    """The Ray actor that hands out each endpoint's request slots to every worker of the cluster.

    A slot not given back within ``hold_for`` seconds (its worker was lost mid-request) is taken back.
    """

    def __init__(self) -> None:
        self._held: dict[str, dict[str, float]] = {}
        self._changed = asyncio.Condition()

    async def acquire(self, endpoint: str, limit: int, hold_for: float) -> str:
        """Wait for a free slot of ``endpoint`` (``limit`` in all) and return its token."""
        async with self._changed:
            while True:
                held = self._held.setdefault(endpoint, {})
                now = time.monotonic()
                for token in [t for t, until in held.items() if until < now]:
                    del held[token]
                if len(held) < limit:
                    token = secrets.token_hex(8)
                    held[token] = now + hold_for
                    return token
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._changed.wait(), timeout=1.0)

    async def release(self, endpoint: str, token: str) -> None:
        """Give a slot back."""
        async with self._changed:
            self._held.get(endpoint, {}).pop(token, None)
            self._changed.notify_all()

    async def in_use(self, endpoint: str) -> int:
        """How many slots of ``endpoint`` are held now."""
        return len(self._held.get(endpoint, {}))


class ActorLimiter:
    """The worker side of ``EndpointSlots``: a slot of the cluster-wide limit around each request."""

    def __init__(self, actor: Any, hold_for: float):
        self.actor = actor
        self.hold_for = hold_for

    @contextlib.asynccontextmanager
    async def slot(self, endpoint: str, limit: int) -> AsyncIterator[None]:
        """Hold one slot of ``endpoint`` for the block."""
        token = await self.actor.acquire.remote(endpoint, limit, self.hold_for)
        try:
            yield
        finally:
            await self.actor.release.remote(endpoint, token)


def _hold_for(task: CellTask) -> float:
    # A request never lasts longer than the engine's timeout; past that its worker is gone.
    return task.timeout + 30.0


def host_gone(host: str) -> bool:
    """Whether no live node of the Ray cluster runs on ``host`` (a lease held from there belongs to a lost worker).

    Asked inside a Ray task; a host the cluster never had (a process outside Ray) is not taken for lost.
    """
    nodes = import_ray().nodes()
    hosts = {n.get("NodeManagerHostname") for n in nodes}
    alive = {n.get("NodeManagerHostname") for n in nodes if n.get("Alive")}
    return host in hosts and host not in alive


def cell_task(task: CellTask, store_url: str, run_id: str, actor: Any) -> str:
    """Ray task: run (or resume, or only score) a cell's whole run; return its status."""
    limiter = ActorLimiter(actor, _hold_for(task))
    return asyncio.run(run_cell(task, store_url, run_id, limiter, lease_patience=LEASE_PATIENCE, host_gone=host_gone))


def shard_task(task: CellTask, store_url: str, run_id: str, shard: int, keys: list[str], actor: Any) -> int:
    """Ray task: run one shard of a cell's samples; return how many of them are done."""
    limiter = ActorLimiter(actor, _hold_for(task))
    return asyncio.run(
        run_shard(task, store_url, run_id, shard, keys, limiter, lease_patience=LEASE_PATIENCE, host_gone=host_gone)
    )


class RayExecutor:
    """Runs cells on a Ray cluster (``address``) or on a local Ray instance started for the sweep."""

    def __init__(self, address: str | None, *, concurrency: int = 4, shard_size: int = DEFAULT_SHARD_SIZE,
                 local_cpus: int | None = None):  # fmt: skip
        self.address = address
        self.concurrency = concurrency
        self.shard_size = shard_size
        self.local_cpus = local_cpus

    async def run(self, jobs: Sequence[CellJob], store_url: str, reporter: CellReporter) -> None:
        """Run every cell as Ray tasks; a cell's failure is its status."""
        ray = import_ray()
        options: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "logging_level": logging.ERROR}
        if self.address is None:
            options.update(address="local", object_store_memory=LOCAL_OBJECT_STORE_BYTES)
            if self.local_cpus is not None:
                options["num_cpus"] = self.local_cpus
        else:
            options["address"] = self.address
        # Ray's driver prints cluster events (a lost node, a retried task) on stdout, which is --json's: send
        # them to stderr while Ray is up.
        with contextlib.redirect_stdout(sys.stderr):
            with keep_sigterm_handler():
                ray.init(**options)
            try:
                await self._run(ray, jobs, store_url, reporter)
            finally:
                ray.shutdown()

    async def _run(self, ray: Any, jobs: Sequence[CellJob], store_url: str, reporter: CellReporter) -> None:
        remote_cell = ray.remote(num_cpus=1, max_retries=TASK_RETRIES, retry_exceptions=False)(cell_task)
        remote_shard = ray.remote(num_cpus=1, max_retries=TASK_RETRIES, retry_exceptions=False)(shard_task)
        slots = ray.remote(EndpointSlots).options(
            name=f"toolgauge-endpoint-slots-{reporter.sweep_id}",
            namespace="toolgauge",
            get_if_exists=True,
            num_cpus=0,
            max_restarts=-1,
            max_task_retries=-1,
        )
        actor = slots.remote()
        gate = asyncio.Semaphore(self.concurrency)

        async def one(job: CellJob) -> None:
            task = job.cell.task
            run_id = job.record.run_id
            async with gate:
                reporter.started(job)
                try:
                    keys = job.cell.sample_keys
                    if len(keys) > self.shard_size:
                        await asyncio.gather(
                            *(remote_shard.remote(task, store_url, run_id, i, chunk, actor)
                              for i, chunk in enumerate(shards_of(keys, self.shard_size)))
                        )  # fmt: skip
                    status = await remote_cell.remote(task, store_url, run_id, actor)
                except (asyncio.CancelledError, KeyboardInterrupt):
                    reporter.ended(job, "interrupted")
                    raise
                except Exception as exc:
                    reporter.ended(job, *describe_failure(_cause(exc)))
                    return
                reporter.ended(job, str(status))

        await run_all(one(job) for job in jobs)


@contextlib.contextmanager
def keep_sigterm_handler() -> Iterator[None]:
    """Put back the SIGTERM handler ``ray.init`` replaces with ``sys.exit(15)`` in the driver's main thread.

    The command's handler (toolgauge.cli.event_loop) stops the sweep through its cancellation path: cells marked
    interrupted, the resume hint, exit 130.
    """
    previous = signal.getsignal(signal.SIGTERM)
    try:
        yield
    finally:
        if previous is not None and threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, previous)


def _cause(exc: BaseException) -> BaseException:
    """The exception a Ray task raised (Ray wraps it), or the error itself (a worker lost for good)."""
    cause = getattr(exc, "cause", None)
    return cause if isinstance(cause, BaseException) else exc
