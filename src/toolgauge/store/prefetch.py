"""A model's response-cache entries read into memory on the store's thread, so that hits need no trip there.

A run answered from the cache used to wait once per model call for a look-up on the store's thread. Each
wait lets the event loop turn, and every turn with a finished sample starts a group commit: a warm run made
about 15 times as many commits as a run that never waits (250 against 16 for 2,000 samples), and that, not
the look-up, was most of what a warm run cost beyond a scripted one (docs/benchmarks.md). Once a model's
entries are in memory, a hit is a dictionary read on the loop's thread, with no I/O and no wait.

What it reads and keeps: the rows of one ``model`` (the cache's ``model`` column), a page at a time on the
store's thread (``CacheReader.page``; each page is its own job, so look-ups and commits queued meanwhile run
between pages), the response text as stored, up to ``budget`` characters of keys and texts for the whole
store. It only ever answers hits: a key it lacks (never cached, cached after its page was read, by this
process or another, or past the budget) is looked up on the store's thread as before. Entries are never
changed or deleted once stored, so an entry read here is what a look-up would return.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from toolgauge.store.reader import CacheReader

#: Rows per page read on the store's thread.
PAGE_ROWS = 1000
#: Characters of keys and response texts held in memory per store, over every model (ASCII text takes a byte
#: a character, plus about 200 bytes an entry for its objects): past it, look-ups go to the store's thread.
BUDGET_CHARS = 32 * 1024 * 1024


class CachePrefetch:
    """Response-cache entries of the models asked for (``start``), held in memory; ``get`` on any thread."""

    def __init__(self, reader: CacheReader, *, budget: int = BUDGET_CHARS, page_rows: int = PAGE_ROWS):
        self._reader = reader
        self._budget = budget
        self._page_rows = page_rows
        self._entries: dict[str, str] = {}
        self._size = 0
        self._lock = threading.Lock()
        self._models: dict[str, threading.Event] = {}  # model -> set once its last page was read
        self._stopped = False

    def get(self, key: str) -> str | None:
        """The response text read for ``key``, or None (not read: look it up in the store)."""
        with self._lock:
            return self._entries.get(key)

    def start(self, model: str, submit: Callable[..., Future[Any]]) -> threading.Event:
        """Read ``model``'s entries, page after page, each page a job given to ``submit`` (the store's thread).

        Returns an event set once the last page is read or reading stopped (the same event for a model
        asked for again). A page that fails ends it silently: this is only a shortcut, and a look-up on the
        store's thread reports the store's errors as before.
        """
        if model in self._models:
            return self._models[model]
        done = self._models[model] = threading.Event()
        self._next_page(model, "", submit)
        return done

    def stop(self) -> None:
        """Read no further pages (the store is closing); the entries read stay."""
        self._stopped = True

    def _next_page(self, model: str, after: str, submit: Callable[..., Future[Any]]) -> None:
        if self._stopped:
            self._models[model].set()
            return
        try:
            submit(self._read_page, model, after, submit)
        except RuntimeError:  # the store's thread was shut down meanwhile
            self._models[model].set()

    def _read_page(self, model: str, after: str, submit: Callable[..., Future[Any]]) -> None:
        try:
            rows = self._reader.page(model, after, self._page_rows)
        except Exception:  # a shortcut only: a look-up on the store's thread reports the store's errors
            self._models[model].set()
            return
        full = False
        with self._lock:
            for key, text in rows:
                size = len(key) + len(text)
                if self._size + size > self._budget:
                    full = True
                    break
                if self._entries.setdefault(key, text) is text:
                    self._size += size
        if full or len(rows) < self._page_rows:
            self._models[model].set()
            return
        # The next page is a new job: what was queued on the store's thread meanwhile runs first.
        self._next_page(model, rows[-1][0], submit)
