"""Imported first by :mod:`toolgauge.cli`: a signal while the CLI's imports run ends the program quietly.

The imports take a second or more on a busy machine, and a Ctrl-C there would print a traceback from inside
some library's import (a SIGTERM would kill the process by the signal). Only when the program being started
is the CLI (the ``toolgauge`` console script, or ``python -m toolgauge.cli``), never in a program that imports
it (tests, notebooks). ``main()`` takes the signals over (:func:`take_over`).
"""

from __future__ import annotations

import os
import signal
import sys
from types import FrameType


def stopped_while_starting(signum: int, frame: FrameType | None) -> None:
    """Nothing has run yet, so nothing is saved or resumable: one line, exit 130."""
    os.write(2, b"interrupted\n")
    os._exit(130)


def take_over() -> None:
    """Give Ctrl-C back its default (``KeyboardInterrupt``) once ``main()`` runs; main sets SIGTERM itself."""
    if signal.getsignal(signal.SIGINT) is stopped_while_starting:
        signal.signal(signal.SIGINT, signal.default_int_handler)


if os.path.basename(sys.argv[0]) == "toolgauge" or sys.argv[0] == "-m":  # -m: while runpy imports the package
    if signal.getsignal(signal.SIGINT) != signal.SIG_IGN:
        signal.signal(signal.SIGINT, stopped_while_starting)
    signal.signal(signal.SIGTERM, stopped_while_starting)
