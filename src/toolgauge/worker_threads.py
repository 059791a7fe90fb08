"""Daemon threads for blocking work (embedding, scoring) that a command waits for before its process exits.

Such work runs on a daemon thread so that an interrupted command never waits for it to return its answer.
It must not still run when the interpreter shuts down: a daemon thread inside native code (torch, while
sentence-transformers embeds) at interpreter exit can abort the process ("terminate called without an active
exception", SIGABRT) after the command printed its last line. The CLI's ``main`` therefore waits a few
seconds for every thread started here (:func:`join_worker_threads`) once its exit code is decided, and skips
the interpreter's shutdown (``os._exit``) when one is still running after the wait.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

_live: set[threading.Thread] = set()
_lock = threading.Lock()


def start_worker_thread(work: Callable[[], None], name: str) -> threading.Thread:
    """Start ``work`` on a daemon thread that :func:`join_worker_threads` waits for."""

    def tracked() -> None:
        try:
            work()
        finally:
            with _lock:
                _live.discard(thread)

    thread = threading.Thread(target=tracked, name=name, daemon=True)
    with _lock:
        _live.add(thread)
    thread.start()
    return thread


def join_worker_threads(timeout: float) -> bool:
    """Wait until every thread started by :func:`start_worker_thread` has ended, ``timeout`` seconds at most.

    Returns:
        True when none is left running.
    """
    deadline = time.monotonic() + timeout
    while True:
        with _lock:
            running = [t for t in _live if t.is_alive()]
        if not running:
            return True
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        running[0].join(left)
