"""The response cache: model responses by request hash, served from the buffer, memory or the database.

A look-up is answered, cheapest first, by the rows buffered or being committed, by the entries read ahead into
memory (``prefetch``, :mod:`toolgauge.store.prefetch`), then by the database on the store's thread. The look-ups
asked for in one tick of the event loop make one trip to the store's thread together: a trip costs more CPU (two
thread wake-ups) than a look-up. Entries are stored with secrets masked, so a hit serves what the store would.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from sqlalchemy.exc import SQLAlchemyError

from toolgauge.errors import StoreWriteError
from toolgauge.redact import SecretMasker, redact_url
from toolgauge.store.executor import StoreThread
from toolgauge.store.prefetch import CachePrefetch
from toolgauge.store.reader import CacheReader
from toolgauge.store.write_buffer import WriteBuffer

Lookup = Callable[[str], dict[str, Any] | None]


class ResponseCache:
    """One store's response cache.

    Args:
        reader: reads entries from the database (its own connection, on the store's thread).
        buffer: the store's write buffer (entries not yet committed are served from it).
        thread: the store's thread.
        masker: masks secrets in a response before it is buffered.
        write_error: builds the one-line error of a failed read (an unreachable store stops the run).
    """

    def __init__(
        self,
        reader: CacheReader,
        buffer: WriteBuffer,
        thread: StoreThread,
        masker: SecretMasker,
        *,
        write_error: Callable[[str, BaseException], StoreWriteError],
    ):
        self.reader = reader
        self.prefetched = CachePrefetch(reader)
        self._buffer = buffer
        self._thread = thread
        self._masker = masker
        self._write_error = write_error
        # Look-ups asked for in this tick of the event loop, sent to the store's thread together.
        self._lookups: list[tuple[str, asyncio.Future[dict[str, Any] | None]]] = []

    def known(self, key: str) -> dict[str, Any] | None:
        """A cached response known without I/O (buffered, being committed, read ahead); None says nothing."""
        pending = self._buffer.cached(key)
        if pending is not None:
            return json.loads(pending["response"])  # type: ignore[no-any-return]
        text = self.prefetched.get(key)
        return json.loads(text) if text is not None else None

    def get(self, key: str) -> dict[str, Any] | None:
        """A cached response by request hash: from the buffer, else the database (on the caller's thread)."""
        pending = self._buffer.cached(key)
        if pending is not None:
            return json.loads(pending["response"])  # type: ignore[no-any-return]
        try:
            text = self.reader.get(key)
        except (SQLAlchemyError, self.reader.error) as exc:
            # Mid-run, an unreachable store must stop the run like a failed write, not fail one sample.
            raise self._write_error("reading the response cache", exc) from exc
        return json.loads(text) if text is not None else None

    def put(self, key: str, model: str, response: Mapping[str, Any]) -> None:
        """Buffer a response, secrets masked."""
        self._buffer.add_cache(
            {
                "key": key,
                "model": redact_url(model),
                "response": self._masker.json_text(json.dumps(dict(response))),
                "created_at": time.time(),
            }
        )

    def prefetch(self, model: str) -> threading.Event | None:
        """Start reading ``model``'s entries into memory on the store's thread; see ``Store.prefetch_cache``."""
        if not self._thread.threaded:
            return None
        return self.prefetched.start(redact_url(model), self._thread.start)

    async def get_async(self, key: str, lookup: Lookup) -> dict[str, Any] | None:
        """``lookup(key)`` on the store's thread, in one trip with the other look-ups of this tick of the loop."""
        if not self._thread.threaded:
            return lookup(key)
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[dict[str, Any] | None] = loop.create_future()
        self._lookups.append((key, waiter))
        if len(self._lookups) == 1:
            loop.call_soon(self._send_lookups, loop, lookup)
        return await waiter

    def _send_lookups(self, loop: asyncio.AbstractEventLoop, lookup: Lookup) -> None:
        batch, self._lookups = self._lookups, []
        trip = loop.run_in_executor(self._thread.pool(), _lookup_many, lookup, [key for key, _ in batch])

        def deliver(done: asyncio.Future[list[Any]]) -> None:
            error = done.exception() if not done.cancelled() else asyncio.CancelledError()
            outcomes = done.result() if error is None else [error] * len(batch)
            for (_, waiter), outcome in zip(batch, outcomes, strict=True):
                if waiter.done():  # its sample was cancelled meanwhile
                    continue
                if isinstance(outcome, BaseException):
                    waiter.set_exception(outcome)
                else:
                    waiter.set_result(outcome)

        trip.add_done_callback(deliver)

    def close(self) -> None:
        """Stop reading ahead (the store's thread is stopped by the store)."""
        self.prefetched.stop()


def _lookup_many(lookup: Lookup, keys: list[str]) -> list[dict[str, Any] | Exception | None]:
    outcomes: list[dict[str, Any] | Exception | None] = []
    for key in keys:
        try:
            outcomes.append(lookup(key))
        except Exception as exc:  # handed to the one look-up that failed
            outcomes.append(exc)
    return outcomes
