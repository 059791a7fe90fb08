"""Child processes in tests: the signals they must receive, and reading their pipes with a deadline.

A test run as a background job of a script (CI, ``bash -c '... &'``, ``nohup``) starts every child with SIGINT
ignored, and Python keeps an inherited SIG_IGN: a test that sends SIGINT to such a child must start it with
SIGINT restored (``preexec_fn=sigint_restored``), or the signal does nothing and the test waits for an exit
that never comes. Reading a pipe line by line blocks until the child writes or closes it: :class:`LineReader`
reads on a thread, so every wait has a deadline.
"""

from __future__ import annotations

import queue
import signal
import threading
import time
from collections.abc import Callable
from typing import IO


def sigint_restored() -> None:
    """``preexec_fn`` for a child the test sends SIGINT to: SIGINT as in an interactive shell, whatever we inherited."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def sigint_ignored() -> None:
    """``preexec_fn`` for a child started as a background job of a script is: SIGINT inherited as ignored."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


class LineReader:
    """The lines of a child's pipe, read on a daemon thread; every wait for them has a deadline."""

    def __init__(self, stream: IO[str]):
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._ended = False
        threading.Thread(target=self._pump, args=(stream,), daemon=True).start()

    def _pump(self, stream: IO[str]) -> None:
        try:
            for line in stream:
                self._lines.put(line)
        finally:
            self._lines.put(None)  # end of file

    def until(self, wanted: Callable[[str], bool], timeout: float) -> list[str]:
        """The lines up to and including the first ``wanted`` one; AssertionError at the deadline or end of file."""
        seen: list[str] = []
        deadline = time.monotonic() + timeout
        while True:
            line = self._next(deadline, seen)
            if line is None:
                raise AssertionError(f"the pipe ended before the awaited line: {''.join(seen)!r}")
            seen.append(line)
            if wanted(line):
                return seen

    def rest(self, timeout: float) -> str:
        """Every line until the child closes the pipe (it has exited), within ``timeout`` seconds in all."""
        seen: list[str] = []
        deadline = time.monotonic() + timeout
        while not self._ended:
            line = self._next(deadline, seen)
            if line is None:
                self._ended = True
            else:
                seen.append(line)
        return "".join(seen)

    def _next(self, deadline: float, seen: list[str]) -> str | None:
        try:
            return self._lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            raise AssertionError(f"the deadline passed; read so far: {''.join(seen)!r}") from None
