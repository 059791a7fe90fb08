"""What every part of the store is handed (``StoreAccess``), and the one-line error of a store write that failed."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import Engine

from toolgauge.errors import StoreWriteError
from toolgauge.redact import redact


@dataclass(frozen=True)
class StoreAccess:
    """The database of one store, as its parts (runs, samples, model calls, steps) use it.

    Attributes:
        engine: the store's SQLAlchemy engine.
        flush: the store's flush (a part writes or reads after the rows buffered before it are committed).
        write_error: builds the one-line error of a failed write from what was being written and the error.
    """

    engine: Engine
    flush: Callable[[], None]
    write_error: Callable[[str, BaseException], StoreWriteError]


class StorePart:
    """A part of the store that reads and writes its tables through the store's ``StoreAccess``.

    Args:
        access: the store's engine, flush (the buffered rows are written before what the part does) and write errors.
    """

    def __init__(self, access: StoreAccess):
        self._engine = access.engine
        self._flush = access.flush
        self._write_error = access.write_error


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
