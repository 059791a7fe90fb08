"""``--data`` made optional: the one place a benchmark's data default is decided (CLI, API and sweeps)."""

from __future__ import annotations

from pathlib import Path

from toolgauge.datasets.cache import cache_root, cached_path
from toolgauge.datasets.registry import Dataset, dataset_for_benchmark
from toolgauge.errors import UsageError


def official_data(benchmark: str) -> Path | None:
    """The cached official data of ``benchmark`` (what ``--data`` would name), or None when it is not cached."""
    dataset = dataset_for_benchmark(benchmark)
    return cached_path(dataset) if dataset is not None else None


def missing_official(benchmark: str, give: str = "--data PATH") -> str | None:
    """Why ``benchmark`` cannot run without data (its official data is not cached), or None when it can.

    None too for a benchmark with a built-in default instead (the suite, WildToolBench's sample sessions).
    """
    dataset = dataset_for_benchmark(benchmark)
    if dataset is None or dataset.fallback or cached_path(dataset) is not None:
        return None
    return _not_cached(dataset, give)


def _not_cached(dataset: Dataset, give: str) -> str:
    terms = " --accept-terms" if dataset.needs_terms else ""
    return (
        f"no {give.split()[0]} given and the official {dataset.benchmark} data is not in the cache ({cache_root()}): "
        f"run `toolgauge data pull {dataset.name}{terms}`, or give {give}"
    )


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
        raise UsageError(_not_cached(dataset, "--data PATH"))
    return found
