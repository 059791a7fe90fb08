"""The run store: runs, samples, model calls with their transcripts, scores and the response cache, via SQLAlchemy.

``Store``, ``open_store`` and the row types are imported on first use: SQLAlchemy is a third of a
second of CPU to import, and commands that never open the store (``--help``, ``eval --help``) skip it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from toolgauge.store.lease import LockHolder
from toolgauge.store.role_calls import NO_CALLS, RoleCalls
from toolgauge.store.transcripts import ModelCallRecord

if TYPE_CHECKING:
    from toolgauge.store.store import RunInfo, SampleRecord, SampleState, Store, default_store_url, open_store

__all__ = [
    "NO_CALLS",
    "LockHolder",
    "ModelCallRecord",
    "RoleCalls",
    "RunInfo",
    "SampleRecord",
    "SampleState",
    "Store",
    "default_store_url",
    "open_store",
]
_FROM_STORE = frozenset({"RunInfo", "SampleRecord", "SampleState", "Store", "default_store_url", "open_store"})


def __getattr__(name: str) -> Any:
    if name in _FROM_STORE:
        return getattr(importlib.import_module("toolgauge.store.store"), name)
    raise AttributeError(f"module 'toolgauge.store' has no attribute {name!r}")
