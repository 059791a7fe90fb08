"""Build BFCL memory runs from their options (a new run, or a stored one to rescore)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from toolgauge.benchmarks.bfcl.memory import BfclMemoryBenchmark, MemoryData, import_memory_backend, load_memory
from toolgauge.benchmarks.bfcl.multi_turn_check import load_multi_turn_results
from toolgauge.benchmarks.bfcl.options import BfclOptions
from toolgauge.errors import UsageError

SNAPSHOT_ROOT_ENV = "TOOLGAUGE_BFCL_MEMORY_DIR"


def default_snapshot_root() -> Path:
    """Where memory snapshots go unless told: ``$TOOLGAUGE_BFCL_MEMORY_DIR``, else ``.toolgauge/bfcl_memory``."""
    return Path(os.environ.get(SNAPSHOT_ROOT_ENV) or Path(".toolgauge") / "bfcl_memory")


def build_memory(
    options: BfclOptions,
    categories: Sequence[str],
    predictions: Path | None = None,
    *,
    check_backends: bool = True,
    warnings: Sequence[str] = (),
) -> BfclMemoryBenchmark:
    """The memory run over ``categories`` of the options' data folder (the first ``limit`` questions of each).

    Its snapshots go under the options' ``memory_dir`` (default :func:`default_snapshot_root`), stored so with the
    categories sorted. ``predictions``: the result files of mode replay; a stored replay run, given none, is
    rescored from its stored answers. ``check_backends`` imports the memory backends first (a rescore, which asks
    no model, skips it).

    Raises:
        UsageError: no data folder, or result files given outside mode replay.
        DataError: a data or result file is missing or malformed.
    """
    if options.data is None:
        raise UsageError("give the BFCL data folder of the memory run")
    root = options.memory_dir or default_snapshot_root()
    data_sets = [_limited(load_memory(options.data, c), options.limit) for c in categories]
    recorded: dict[str, Any] | None = {} if options.mode == "replay" else None
    if predictions is not None:
        wanted = {e.id for d in data_sets for e in d.entries}
        found = load_multi_turn_results(predictions, categories)
        recorded = {rid: result for rid, result in found.items() if rid in wanted}
    if check_backends and recorded is None:
        # A missing dependency is one line now, not a failure on every sample.
        for category in categories:
            import_memory_backend(f"MemoryAPI_{category.removeprefix('memory_')}", root / "bfcl_project")
    stored = options.model_copy(update={"categories": sorted(categories), "memory_dir": root})
    return BfclMemoryBenchmark(data_sets, stored, recorded=recorded, warnings=warnings)


def _limited(data: MemoryData, limit: int | None) -> MemoryData:
    return data if limit is None else data.model_copy(update={"entries": data.entries[:limit]})


WEB_SEARCH_CATEGORIES = ("web_search_base", "web_search_no_snippet")
"""BFCL's web-search categories: live SerpAPI searches and web pages, outside the offline score."""


def skip_web_search(categories: Sequence[str]) -> tuple[list[str], str | None]:
    """``categories`` without web search, and the line that says it was skipped (None when it was not asked for).

    Raises:
        UsageError: nothing but web search was asked for.
    """
    web = [c for c in categories if c in WEB_SEARCH_CATEGORIES]
    if not web:
        return list(categories), None
    key = "SERPAPI_API_KEY" in os.environ
    why = "toolgauge does not run BFCL's live web search yet" if key else "it needs a SerpAPI key (SERPAPI_API_KEY)"
    line = f"{', '.join(web)} skipped: {why}; web search is outside BFCL's offline score"
    rest = [c for c in categories if c not in WEB_SEARCH_CATEGORIES]
    if not rest:
        raise UsageError(line)
    return rest, line
