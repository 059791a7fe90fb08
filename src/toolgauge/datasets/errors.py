"""How a pull fails (one line and an exit code) and its progress callbacks: no HTTP library needed to name them."""

from __future__ import annotations

from collections.abc import Callable

# Exit codes: 2 the download was refused (not found, wrong bytes, unsafe archive): retrying will not help;
# 75 (EX_TEMPFAIL) it was cut short (timeout, lost connection, server error, full disk): try again.
REFUSED = 2
TRANSIENT = 75

# ``start(label, total bytes or None)`` returns ``advance(n bytes)``.
Advance = Callable[[int], None]
Start = Callable[[str, int | None], Advance]


class FetchError(Exception):
    """A pull that could not complete; ``str()`` is the one line the user sees, ``code`` the exit code."""

    def __init__(self, message: str, code: int = REFUSED):
        super().__init__(message)
        self.code = code
