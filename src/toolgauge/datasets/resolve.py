"""``--data`` made optional: the one place a benchmark's data default is decided (CLI, API and sweeps)."""

from __future__ import annotations

from pathlib import Path

from toolgauge.datasets.cache import cache_root, cached_path
from toolgauge.datasets.registry import dataset_for_benchmark
from toolgauge.errors import UsageError


def official_data(benchmark: str) -> Path | None:
    """The cached official data of ``benchmark`` (what ``--data`` would name), or None when it is not cached."""
    dataset = dataset_for_benchmark(benchmark)
    return cached_path(dataset) if dataset is not None else None


def data_or_official(benchmark: str, data: str | Path | None) -> str | Path:
    """``data`` when given, else the cached official data of ``benchmark``.

    Raises:
        UsageError: no ``data`` and the official data is not cached (the line names the pull command).
    """
    if data is not None:
        return data
    dataset = dataset_for_benchmark(benchmark)
    if dataset is None:
        raise UsageError(f"{benchmark} has no official dataset toolgauge can fetch: give --data PATH")
    found = cached_path(dataset)
    if found is None:
        terms = " --accept-terms" if dataset.needs_terms else ""
        raise UsageError(
            f"no --data given and the official {benchmark} data is not in the cache ({cache_root()}): "
            f"run `toolgauge data pull {dataset.name}{terms}`, or give --data PATH"
        )
    return found
