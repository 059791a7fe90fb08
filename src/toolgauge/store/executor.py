"""The store's own thread: blocking store calls run there, one at a time in the order they were made.

One thread per store keeps its calls in order (a commit never overtakes the look-up queued before it), and the
event loop goes on while they run. An in-memory SQLite store is one connection per thread, so only the caller's
thread sees it: such a store runs every call on the caller's thread (``threaded`` false).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")


class StoreThread:
    """Runs blocking store calls on a thread of their own (started on first use), or in place if not ``threaded``."""

    def __init__(self, *, threaded: bool):
        self.threaded = threaded
        self._pool: ThreadPoolExecutor | None = None

    def pool(self) -> ThreadPoolExecutor:
        """The one-thread executor, started on first use."""
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="toolgauge-store")
        return self._pool

    async def run(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """Run ``fn`` on the store's thread and wait for it without blocking the event loop.

        Cancelling the wait does not stop a call that has started; it finishes on the store's thread.
        """
        if not self.threaded:
            return fn(*args, **kwargs)
        return await asyncio.get_running_loop().run_in_executor(self.pool(), lambda: fn(*args, **kwargs))

    def start(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        """Start ``fn`` on the store's thread and return its future at once (in place, done, when not threaded)."""
        if self.threaded:
            return self.pool().submit(fn, *args, **kwargs)
        done: Future[T] = Future()
        try:
            done.set_result(fn(*args, **kwargs))
        except Exception as exc:
            done.set_exception(exc)
        return done

    def shutdown(self) -> None:
        """Wait for the calls under way and stop the thread (a later call starts a new one)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
