"""Group commit off the event loop: what the engine uses to make finished samples durable.

A sample that finishes while no commit runs starts one at the end of the loop's tick (with every
sample that finished in that tick), on the store's thread (``Store.start_io``); samples that finish
while it runs go in the next, which starts as soon as it ends. A buffer that is due for a flush (size
or age, see ``Store.flush_rows``) starts a commit at once (``Store.flush_soon``), so rows are committed
even while episodes that never wait keep the loop busy. The loop never waits for the database, a sample
counts as finished only once its commit returned, and commits keep their order.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING

from toolgauge.errors import StoreWriteError

if TYPE_CHECKING:
    from toolgauge.store.store import Store


class GroupCommit:
    """Starts ``store.flush`` on the store's thread for finished samples; reports how many each commit made durable.

    ``stopped()`` true: start no more commits (the run is stopping). ``failed(exc)``: a commit failed
    (its rows stay buffered in the store). ``committed(n)``: ``n`` more samples are durable. Every
    callback runs on the event loop's thread.
    """

    def __init__(
        self,
        store: Store,
        *,
        stopped: Callable[[], bool],
        failed: Callable[[StoreWriteError], object],
        committed: Callable[[int], None],
    ):
        self._store = store
        self._stopped = stopped
        self._failed = failed
        self._committed = committed
        self._loop: asyncio.AbstractEventLoop | None = None
        self._running: Future[None] | None = None
        self._running_samples = 0  # samples the running commit makes durable
        self._waiting = 0  # samples buffered and in no commit yet
        self._wanted = False  # rows are buffered that no commit has taken
        self._tick_pending = False

    def start(self) -> None:
        """From now on, a store buffer that is due for a flush starts a commit instead of flushing in place."""
        self._loop = asyncio.get_running_loop()
        self._store.flush_soon = self.request

    def close(self) -> None:
        """Start no more commits; one already on the store's thread still finishes there."""
        self._store.flush_soon = None
        self._wanted = False

    def sample_buffered(self) -> None:
        """A finished sample's row is buffered: commit it, with every sample that finishes in this tick."""
        self._waiting += 1
        self._wanted = True
        if not self._tick_pending:
            self._tick_pending = True
            asyncio.get_running_loop().call_soon(self._tick)

    def request(self) -> None:
        """Commit what is buffered: now if no commit runs, else right after the one that does."""
        self._wanted = True
        self._settle()
        if self._running is None and not self._stopped():
            self._start()

    @property
    def backlog(self) -> int:
        """How many finished samples are buffered and in no commit yet."""
        return self._waiting

    def take_waiting(self) -> int:
        """How many finished samples are in no commit yet (for a last commit made by the caller); resets it."""
        waiting, self._waiting = self._waiting, 0
        return waiting

    async def drain(self) -> None:
        """Wait for the commit under way, and the ones it was asked to start after it."""
        while self._running is not None:
            waited = asyncio.wrap_future(self._running)
            # A failed commit is reported once, by _settle (through ``failed``): the copy of its error on this
            # future is retrieved here, or asyncio logs "Future exception was never retrieved" with its traceback
            # when the future is collected (also when this wait is cancelled before the commit ends).
            waited.add_done_callback(_retrieve)
            await asyncio.wait([waited])
            self._settle()

    def _tick(self) -> None:
        self._tick_pending = False
        self._settle()
        if self._running is None and self._wanted and not self._stopped():
            self._start()

    def _start(self) -> None:
        self._wanted = False
        self._running_samples = self.take_waiting()
        running = self._running = self._store.start_io(self._store.flush)
        loop = self._loop

        def wake(_: Future[None]) -> None:  # on the store's thread: settle on the loop's
            if loop is not None:
                with contextlib.suppress(RuntimeError):  # the loop is closed: nobody is waiting
                    loop.call_soon_threadsafe(self._settle)

        running.add_done_callback(wake)

    def _settle(self) -> None:
        """Handle the commit that ended (on the loop's thread), and start the next one if rows wait."""
        running = self._running
        if running is None or not running.done():
            return
        self._running = None
        error = running.exception()
        if error is not None:
            if not isinstance(error, StoreWriteError):
                error = StoreWriteError(f"group commit failed: {error.__class__.__name__}: {error}")
            self._failed(error)
            return
        self._committed(self._running_samples)
        if self._wanted and not self._stopped():
            self._start()


def _retrieve(future: asyncio.Future[None]) -> None:
    """Mark a future's error as seen (it is handled elsewhere)."""
    if not future.cancelled():
        future.exception()
