"""Group commit off the event loop: what the engine uses to make finished samples durable.

Every sample that finishes while no commit is running starts one (on the store's thread, see
``Store.flush_async``); samples that finish while it runs wait for the next, which starts as soon as it
ends. So the loop never waits for the database, a sample counts as finished only once its commit
returned, and commits keep their order. A buffer that is due for a flush (size or age, see
``Store.flush_rows``) asks for a commit the same way (``Store.flush_soon``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING

from toolgauge.errors import StoreWriteError

if TYPE_CHECKING:
    from toolgauge.store.store import Store


class GroupCommit:
    """Schedules ``store.flush_async`` for finished samples; reports how many each commit made durable.

    ``stopped()`` true: commit nothing more (the run is stopping). ``failed(exc)``: a commit failed
    (its rows stay buffered in the store). ``committed(n)``: ``n`` more samples are durable.
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
        self._task: asyncio.Task[None] | None = None
        self._wanted = False
        self._waiting = 0  # samples buffered and in no commit yet

    def start(self) -> None:
        """From now on, a store buffer that is due for a flush asks this for a commit instead of flushing in place."""
        self._store.flush_soon = self.request

    def close(self) -> None:
        """Stop scheduling commits; a commit already on the store's thread still finishes there."""
        self._store.flush_soon = None
        if self._task is not None:
            self._task.cancel()

    def sample_buffered(self) -> None:
        """A finished sample's row is buffered: commit it (with whatever else is buffered) soon."""
        self._waiting += 1
        self.request()

    def request(self) -> None:
        """Commit what is buffered soon: now if no commit runs, else right after the one that does."""
        self._wanted = True
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._commits())

    def take_waiting(self) -> int:
        """How many finished samples are in no commit yet (for a last commit made by the caller); resets it."""
        waiting, self._waiting = self._waiting, 0
        return waiting

    async def drain(self) -> None:
        """Wait for the commits asked for so far."""
        while self._task is not None:
            await asyncio.shield(self._task)

    async def _commits(self) -> None:
        try:
            while self._wanted and not self._stopped():
                self._wanted = False
                samples = self.take_waiting()
                try:
                    await self._store.flush_async()
                except StoreWriteError as exc:
                    self._failed(exc)
                    return
                self._committed(samples)
        finally:
            self._task = None
