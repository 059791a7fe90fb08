"""Run a command's coroutine so that a second Ctrl-C during its shutdown stays one line.

``asyncio.run`` cancels the main task on the first Ctrl-C; a second one raises ``KeyboardInterrupt``
wherever the loop is (often inside the cancellation clean-up). The runner then cancels what is left,
and a task that ends with the command's own "stopped" error is logged with a traceback as "unhandled
exception during asyncio.run() shutdown". Here that error is kept and raised instead, so the caller
prints its usual resume hint.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def run_interruptible(main: Coroutine[Any, Any, T], stopped: tuple[type[BaseException], ...]) -> T:
    """Run ``main`` like ``asyncio.run``; after a second Ctrl-C raise the ``stopped`` error a task ended with.

    Args:
        main: The command's coroutine.
        stopped: The exception types that mean "stopped, resumable" (for example ``RunInterrupted``).

    Returns:
        What ``main`` returned.

    Raises:
        KeyboardInterrupt: A second Ctrl-C before any task ended with a ``stopped`` error.
    """
    ended: list[BaseException] = []

    def keep_stopped(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        exc = context.get("exception")
        if isinstance(exc, BaseException) and isinstance(exc, (*stopped, KeyboardInterrupt)):
            ended.append(exc)
            return
        loop.default_exception_handler(context)

    try:
        with asyncio.Runner() as runner:
            runner.get_loop().set_exception_handler(keep_stopped)
            return runner.run(main)
    except KeyboardInterrupt:
        found = next((e for e in ended if isinstance(e, stopped)), None)
        if found is not None:
            raise found from None
        raise
