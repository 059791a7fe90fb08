"""Build BFCL memory runs: from options (a new run) or from a stored run's config (rescore)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from toolgauge.benchmarks.bfcl.memory import BfclMemoryBenchmark, MemoryData, import_memory_backend, load_memory
from toolgauge.benchmarks.bfcl.multi_turn import BfclMultiTurnMode
from toolgauge.benchmarks.bfcl.multi_turn_check import load_multi_turn_results
from toolgauge.errors import UsageError
from toolgauge.settings import CallSettings

SNAPSHOT_ROOT_ENV = "TOOLGAUGE_BFCL_MEMORY_DIR"


def default_snapshot_root() -> Path:
    """Where memory snapshots go unless told: ``$TOOLGAUGE_BFCL_MEMORY_DIR``, else ``.toolgauge/bfcl_memory``."""
    return Path(os.environ.get(SNAPSHOT_ROOT_ENV) or Path(".toolgauge") / "bfcl_memory")


def build_memory(
    *,
    data: Path,
    categories: Sequence[str],
    mode: str = "native",
    predictions: str | Path | None = None,
    temperature: float = 0.0,
    max_tokens: int = 512,
    limit: int | None = None,
    snapshot_root: Path | None = None,
    check_backends: bool = True,
) -> BfclMemoryBenchmark:
    """The memory run over ``categories`` (the first ``limit`` questions of each).

    ``snapshot_root`` holds the runs' memory snapshots (default :func:`default_snapshot_root`); ``check_backends``
    imports the memory backends first (a rescore, which asks no model, skips it).

    Raises:
        UsageError: result files given, or a mode other than native or prompt.
        DataError: a data file is missing or malformed.
    """
    if mode not in ("native", "prompt", "replay"):
        raise UsageError(f"mode {mode!r}: BFCL has the modes native, prompt, replay")
    if (mode == "replay") != (predictions is not None):
        raise UsageError("mode replay scores BFCL result files: give predictions (and only in that mode)")
    chosen: BfclMultiTurnMode = "replay" if mode == "replay" else "prompt" if mode == "prompt" else "native"
    root = snapshot_root or default_snapshot_root()
    data_sets = [_limited(load_memory(data, c), limit) for c in categories]
    recorded = None
    if predictions is not None:
        wanted = {e.id for d in data_sets for e in d.entries}
        found = load_multi_turn_results(Path(predictions), categories)
        recorded = {rid: result for rid, result in found.items() if rid in wanted}
    if check_backends and recorded is None:
        # A missing dependency is one line now, not a failure on every sample.
        for category in categories:
            import_memory_backend(f"MemoryAPI_{category.removeprefix('memory_')}", root / "bfcl_project")
    return BfclMemoryBenchmark(
        data_sets,
        data_label=str(data),
        snapshot_root=root,
        mode=chosen,
        settings=CallSettings(temperature=temperature, max_tokens=max_tokens),
        limit=limit,
        recorded=recorded,
    )


def rebuild_memory(config: Mapping[str, Any]) -> BfclMemoryBenchmark:
    """A stored memory run's benchmark, for rescoring (its stored answers are what is scored)."""
    mode = str(config["mode"])
    bench = build_memory(
        data=Path(str(config["data"])),
        categories=list(config["categories"]),
        mode="native" if mode == "replay" else mode,
        temperature=float(config.get("temperature", 0.0)),
        max_tokens=int(config.get("max_tokens", 512)),
        limit=config.get("limit"),
        snapshot_root=Path(str(config["snapshot_root"])) if config.get("snapshot_root") else None,
        check_backends=False,
    )
    if mode == "replay":
        # A replayed run rescores from its stored results: the result files are not needed again.
        bench.mode, bench.recorded = "replay", {}
    return bench


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
