"""Which samples a run takes, and where its data is: shared by every benchmark's ``build`` (no command line here)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from toolgauge.errors import MissingDataPath

T = TypeVar("T")


def limit_items(items: list[T], limit: int | None, group: Callable[[T], str] | None = None) -> list[T]:
    """The first ``limit`` items, or with ``group`` the first ``limit`` of each group (split, category)."""
    if not limit:
        return items
    if group is None:
        return items[:limit]
    taken: dict[str, int] = {}
    kept: list[T] = []
    for item in items:
        key = group(item)
        if taken.get(key, 0) < limit:
            taken[key] = taken.get(key, 0) + 1
            kept.append(item)
    return kept


def existing_data(path: str | Path, option: str = "--data") -> Path:
    """``path`` when something is there; else a usage error about the option, not about a file inside it.

    Raises:
        MissingDataPath: ``--data /nope: no such file or folder`` (a sweep reports it under its entry, ``rescore``
            as the run's data).
    """
    found = Path(path)
    if not found.exists():
        raise MissingDataPath(option, str(path))
    return found
