"""Make a BFCL run from its options (the CLI, the API, sweeps and ``rescore`` all come here).

AST, multi-turn and memory categories are separate runs (:class:`BfclBenchmark`, :class:`BfclMultiTurnBenchmark`,
:class:`BfclMemoryBenchmark`). Web search is skipped with one line: it needs SerpAPI and live pages.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from toolgauge.benchmark import RecordedRun
from toolgauge.benchmarks.bfcl.backends import bfcl_module
from toolgauge.benchmarks.bfcl.loader import BfclEntry, categories_with_results, load_bfcl, load_bfcl_results
from toolgauge.benchmarks.bfcl.memory import BFCL_MEMORY_CATEGORIES, BfclMemoryBenchmark
from toolgauge.benchmarks.bfcl.memory_build import build_memory, skip_web_search
from toolgauge.benchmarks.bfcl.multi_turn import BfclMultiTurnBenchmark
from toolgauge.benchmarks.bfcl.multi_turn_check import (
    BFCL_MULTI_TURN_CATEGORIES,
    MultiTurnEntry,
    load_multi_turn,
    load_multi_turn_results,
)
from toolgauge.benchmarks.bfcl.options import BfclOptions, BfclScoreOptions
from toolgauge.benchmarks.bfcl.protocol import BfclBenchmark, missing_predictions_warning, recorded_turns
from toolgauge.datasets.resolve import data_or_official
from toolgauge.errors import UsageError
from toolgauge.selection import existing_data, limit_items

BfclRun = BfclBenchmark | BfclMultiTurnBenchmark | BfclMemoryBenchmark


def build(options: BfclOptions | None = None) -> BfclRun:
    """The BFCL run: multi-turn categories on BFCL's backends, else the AST ones (the first ``limit`` of each).

    ``native`` or ``prompt`` asks a model; ``replay`` scores the BFCL result files at ``options.predictions`` (one
    file, or a folder searched recursively), over the categories that have result files unless ``categories`` is
    given. ``underscore_to_dot`` None: on for function-calling output, off for text.

    Raises:
        UsageError: no categories, multi-turn and AST categories mixed, or predictions without mode replay (or
            the other way round).
        DataError: a data or result file is missing or malformed, or a category is unknown.
    """
    options = options if options is not None else BfclOptions()
    return _made(options, options.predictions, check_replay=True)


def restore(options: BfclOptions) -> BfclRun:
    """A stored BFCL run's benchmark: a run of result files is scored from its stored outputs, without the files."""
    return _made(options, None, check_replay=False)


def _made(options: BfclOptions, predictions: Path | None, *, check_replay: bool) -> BfclRun:
    # The data first: a missing pull is said first. A stored run's folder is not checked: the file that is
    # gone is named by the loader (export says which file it could not rescore from).
    data = existing_data(data_or_official("bfcl", options.data)) if check_replay else Path(str(options.data))
    if check_replay and (options.mode == "replay") != (predictions is not None):
        raise UsageError("mode replay scores BFCL result files: give predictions (and only in that mode)")
    chosen = list(options.categories or [])
    if not chosen and predictions is not None:
        chosen = categories_with_results(predictions)
    chosen, skipped = skip_web_search(chosen)
    if not chosen:
        raise UsageError("give the BFCL categories to run, e.g. simple_python,multiple")
    warnings = [skipped] if skipped else []
    memory = [c for c in chosen if c in BFCL_MEMORY_CATEGORIES]
    if memory:
        if len(memory) != len(chosen):
            raise UsageError("run BFCL's memory categories as a run of their own")
        # A stored run (``check_replay`` False) asks no model: its memory backends are not imported.
        found_in = options.model_copy(update={"data": data})
        return build_memory(found_in, memory, predictions, check_backends=check_replay, warnings=warnings)
    multi = [c for c in chosen if c in BFCL_MULTI_TURN_CATEGORIES]
    if multi and len(multi) != len(chosen):
        raise UsageError("run BFCL's multi-turn categories and its single-turn categories as separate runs")
    # Stored with the data folder it read and its categories sorted (their order changes no score).
    stored = options.model_copy(update={"data": data, "categories": sorted(set(chosen))})
    if multi:
        bfcl_module("constants.executable_backend_config")  # no bfcl-eval: one line now, not a failure per sample
        turns = _multi_turn_entries(data, multi, options.limit)
        found = load_multi_turn_results(predictions, multi) if predictions is not None else None
        return BfclMultiTurnBenchmark(turns, stored, recorded=_of(found, {e.id for e in turns}), warnings=warnings)
    entries = _entries(data, chosen, options.limit)
    lines = load_bfcl_results(predictions) if predictions is not None else None
    results = {rid: line.result for rid, line in lines.items()} if lines is not None else None
    return BfclBenchmark(entries, stored, recorded=_of(results, {e.id for e in entries}), warnings=warnings)


def _of(found: Mapping[str, Any] | None, wanted: set[str]) -> dict[str, Any] | None:
    """The recorded results of the run's entries (None: nothing recorded)."""
    return None if found is None else {rid: result for rid, result in found.items() if rid in wanted}


def score_run(options: BfclScoreOptions) -> RecordedRun:
    """BFCL result files at ``options.predictions`` as a replay run (entries without a result: said first)."""
    from toolgauge.models.offline import NoModel, ReplayClient

    bench = build(
        BfclOptions(
            data=options.data,
            categories=options.categories,
            mode="replay",
            predictions=options.predictions,
            underscore_to_dot=options.underscore_to_dot,
        )
    )
    missing = missing_predictions_warning(bench.missing_predictions(), len(bench.items))
    model = f"replay:{options.predictions}"
    # Multi-turn episodes decode the recorded turns themselves: no model is asked.
    client = (
        NoModel(model)
        if isinstance(bench, BfclMultiTurnBenchmark | BfclMemoryBenchmark)
        else ReplayClient(recorded_turns(bench.recorded or {}), name=model)
    )
    return RecordedRun(bench, model, client, (missing,) if missing else ())


def migrate_bfcl_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """A BFCL config stored before the options model (main@ffe3fb4) as the model's fields.

    It kept a ``tool_choice`` BFCL never set.
    """
    return {k: v for k, v in config.items() if k != "tool_choice"}


def _multi_turn_entries(data: Path, categories: Sequence[str], limit: int | None) -> list[MultiTurnEntry]:
    return [entry for category in categories for entry in limit_items(load_multi_turn(data, category), limit)]


def _entries(data: Path, categories: list[str], limit: int | None) -> list[BfclEntry]:
    return limit_items(load_bfcl(data, categories), limit, group=lambda entry: entry.category)
