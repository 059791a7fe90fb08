"""The one-line error of a store write that failed: what failed, which store, the database's first line."""

from __future__ import annotations

from toolgauge.errors import StoreWriteError
from toolgauge.redact import redact


def write_error(store_url: str, what: str, exc: BaseException) -> StoreWriteError:
    """Return ``cannot write to the store URL: WHAT: <the database's first line, secrets masked>``.

    Args:
        store_url: the store as shown (password masked).
        what: what was being written (``creating run R``).
        exc: the driver's or SQLAlchemy's error.
    """
    orig = getattr(exc, "orig", None) or exc
    lines = str(orig).strip().splitlines() or [orig.__class__.__name__]
    return StoreWriteError(f"cannot write to the store {store_url}: {what}: {redact(lines[0].strip())}")
