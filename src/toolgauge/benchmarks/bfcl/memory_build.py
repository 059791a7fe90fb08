"""Build BFCL memory runs: from options (a new run) or from a stored run's config (rescore)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from toolgauge.benchmarks.bfcl.memory import BfclMemoryBenchmark, MemoryData, import_memory_backend, load_memory
from toolgauge.benchmarks.bfcl.multi_turn import BfclMultiTurnMode
from toolgauge.errors import UsageError
from toolgauge.settings import CallSettings

DEFAULT_SNAPSHOT_ROOT = Path(".toolgauge") / "bfcl_memory"
"""Where memory snapshots go unless told: beside the default store, one folder per run."""


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

    ``snapshot_root`` holds the runs' memory snapshots (default ``.toolgauge/bfcl_memory``); ``check_backends``
    imports the memory backends first (a rescore, which asks no model, skips it).

    Raises:
        UsageError: result files given, or a mode other than native or prompt.
        DataError: a data file is missing or malformed.
    """
    if predictions is not None or mode not in ("native", "prompt"):
        raise UsageError("BFCL memory runs a model (mode native or prompt); its result files are not read back yet")
    chosen: BfclMultiTurnMode = "prompt" if mode == "prompt" else "native"
    root = snapshot_root or DEFAULT_SNAPSHOT_ROOT
    if check_backends:
        # A missing dependency is one line now, not a failure on every sample.
        for category in categories:
            import_memory_backend(f"MemoryAPI_{category.removeprefix('memory_')}", root / "bfcl_project")
    return BfclMemoryBenchmark(
        [_limited(load_memory(data, c), limit) for c in categories],
        data_label=str(data),
        snapshot_root=root,
        mode=chosen,
        settings=CallSettings(temperature=temperature, max_tokens=max_tokens),
        limit=limit,
    )


def rebuild_memory(config: Mapping[str, Any]) -> BfclMemoryBenchmark:
    """A stored memory run's benchmark, for rescoring (its stored answers are what is scored)."""
    return build_memory(
        data=Path(str(config["data"])),
        categories=list(config["categories"]),
        mode=str(config["mode"]),
        temperature=float(config.get("temperature", 0.0)),
        max_tokens=int(config.get("max_tokens", 512)),
        limit=config.get("limit"),
        snapshot_root=Path(str(config.get("snapshot_root") or DEFAULT_SNAPSHOT_ROOT)),
        check_backends=False,
    )


def _limited(data: MemoryData, limit: int | None) -> MemoryData:
    return data if limit is None else data.model_copy(update={"entries": data.entries[:limit]})
