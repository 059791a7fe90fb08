"""Run a command's coroutine so that SIGTERM and Ctrl-C stop it cleanly, however the process was started.

Every command that runs an event loop (``eval``, ``score``, ``sweep``, the ``gate`` and ``genesis`` commands,
``view``) goes through :func:`run_interruptible`. While the loop runs:

- The first SIGTERM, or SIGINT unless it was inherited as ignored, is handled inside the loop: it cancels the
  command's main task (or calls the command's own ``on_stop``), so the command's cancellation path marks the run
  interrupted and prints its resume hint. A background job of a shell, ``nohup``, CI runners and schedulers
  (SLURM, Kubernetes, systemd, ``timeout``) start processes with SIGINT ignored and stop them with SIGTERM; the
  same path serves them. SIGINT stays ignored when it was inherited so.
- A second signal raises ``KeyboardInterrupt`` wherever the process is, for a shutdown that does not return.
  The loop's clean-up then cancels what is left, and a task that ends with the command's own "stopped" error
  would be logged with a traceback as "unhandled exception during asyncio.run() shutdown": that error is kept
  and raised instead, so the caller prints its usual one-line hint. Until the loop is closed, error reports
  (logging, thread and unraisable-error hooks, leftover tasks' errors) are muted: code that catches and logs
  the KeyboardInterrupt (a database pool closing its connections) would print a traceback of it. Later
  signals are ignored (the process is already on its way out).

The handlers are ``signal.signal`` handlers that only schedule the stop on the loop
(``call_soon_threadsafe``), not ``loop.add_signal_handler``: closing a loop resets what ``add_signal_handler``
installed to SIG_DFL (a SIGTERM in that instant kills the process with no hint) and SIGINT to Python's default
(which would un-ignore a SIGINT the process inherited as ignored). The handlers in place before are restored
once the loop is closed.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
import threading
from collections.abc import Callable, Coroutine
from types import FrameType
from typing import Any, TypeVar

T = TypeVar("T")

_Handler = Callable[[int, FrameType | None], Any] | int | signal.Handlers | None


class _StopOnSignal:
    """The signal handlers of one loop run: the first signal stops the command, the second interrupts."""

    def __init__(self, loop: asyncio.AbstractEventLoop, on_stop: Callable[[], None] | None):
        self.loop = loop
        self.on_stop = on_stop
        self.task: asyncio.Task[Any] | None = None
        self.signals = 0
        self.previous: dict[int, _Handler] = {}
        self.muted: tuple[int, Callable[[Any], object], Callable[[Any], object]] | None = None

    def install(self) -> None:
        """Handle SIGTERM, and SIGINT unless inherited as ignored; nothing outside the main thread."""
        if threading.current_thread() is not threading.main_thread():
            return  # only the main thread may set handlers (an embedding application owns its signals)
        for sig in (signal.SIGTERM, signal.SIGINT):
            current = signal.getsignal(sig)
            if sig == signal.SIGINT and current == signal.SIG_IGN:
                continue  # a background job: Ctrl-C at the terminal is not meant for this process
            self.previous[sig] = current
            signal.signal(sig, self._handle)

    def restore(self) -> None:
        """Put back the handlers found by :meth:`install`, and the error reporting a second signal muted."""
        for sig, handler in self.previous.items():
            signal.signal(sig, signal.SIG_DFL if handler is None else handler)
        self.previous.clear()
        if self.muted is not None:
            level, sys.unraisablehook, threading.excepthook = self.muted
            logging.disable(level)
            self.muted = None

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self.signals += 1
        if self.signals == 1 and not self.loop.is_closed():
            self.loop.call_soon_threadsafe(self._stop)
        elif self.signals <= 2:
            self._mute()
            raise KeyboardInterrupt  # a second signal, or one after the loop closed (as outside any loop)

    def _mute(self) -> None:
        """Mute error reports (logging, threads, unraisable errors) until the loop is closed.

        Stopped hard, the KeyboardInterrupt lands anywhere, and code that logs what it catches (a database pool
        closing its connections), a thread or an object collected half-done would print a traceback of it.
        Nothing of that is news: only the command's own line is printed.
        """
        if self.muted is None:
            self.muted = (logging.root.manager.disable, sys.unraisablehook, threading.excepthook)
            logging.disable(logging.CRITICAL)
            sys.unraisablehook = _ignore
            threading.excepthook = _ignore

    def _stop(self) -> None:
        if self.on_stop is not None:
            self.on_stop()
        elif self.task is not None and not self.task.done():
            self.task.cancel()

    async def run(self, main: Coroutine[Any, Any, T]) -> T:
        """``main`` as the loop's main task (a signal that came before the task started cancels it at once)."""
        self.task = asyncio.current_task()
        if self.signals and self.on_stop is None and self.task is not None:
            self.task.cancel()
        return await main


def _ignore(_: Any) -> None:
    """An error hook that reports nothing."""


def run_interruptible(
    main: Coroutine[Any, Any, T],
    stopped: tuple[type[BaseException], ...],
    *,
    on_stop: Callable[[], None] | None = None,
) -> T:
    """Run ``main`` like ``asyncio.run``, stopping it on SIGTERM or SIGINT (see the module docstring).

    Args:
        main: The command's coroutine.
        stopped: The exception types that mean "stopped, resumable" (for example ``RunInterrupted``).
        on_stop: What the first signal does instead of cancelling ``main`` (the viewer asks its server to shut
            down); runs on the loop.

    Returns:
        What ``main`` returned.

    Raises:
        KeyboardInterrupt: A signal cancelled ``main`` and it did not end with a ``stopped`` error, or a second
            signal came before any task ended with one.
    """
    ended: list[BaseException] = []
    stop: _StopOnSignal | None = None

    def keep_stopped(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        exc = context.get("exception")
        if isinstance(exc, BaseException) and isinstance(exc, (*stopped, KeyboardInterrupt)):
            ended.append(exc)
            return
        if stop is not None and stop.signals >= 2:
            # Stopped hard: what the tasks cut short end with (a server session's broken stream, a task
            # destroyed while pending) is the expected debris of the stop, not news worth a traceback.
            return
        loop.default_exception_handler(context)

    try:
        with asyncio.Runner() as runner:
            loop = runner.get_loop()
            loop.set_exception_handler(keep_stopped)
            stop = _StopOnSignal(loop, on_stop)
            stop.install()
            try:
                return runner.run(stop.run(main))
            except asyncio.CancelledError:
                if stop.signals:  # cancelled by the signal and the command let the cancellation through
                    raise KeyboardInterrupt from None
                raise
    except KeyboardInterrupt:
        found = next((e for e in ended if isinstance(e, stopped)), None)
        if found is not None:
            raise found from None
        raise
    finally:
        if stop is not None:
            stop.restore()
