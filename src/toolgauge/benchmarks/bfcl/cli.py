"""``eval bfcl`` and ``score bfcl``; ``build`` makes the run for the CLI and the API, ``rescore`` for a stored run."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any

import typer

from toolgauge.benchmark import CommandGroups
from toolgauge.benchmarks.bfcl.backends import bfcl_module
from toolgauge.benchmarks.bfcl.loader import BfclEntry, categories_with_results, load_bfcl, load_bfcl_results
from toolgauge.benchmarks.bfcl.memory import BFCL_MEMORY_CATEGORIES, BfclMemoryBenchmark
from toolgauge.benchmarks.bfcl.memory_build import build_memory, rebuild_memory, skip_web_search
from toolgauge.benchmarks.bfcl.multi_turn import BfclMultiTurnBenchmark
from toolgauge.benchmarks.bfcl.multi_turn_check import (
    BFCL_MULTI_TURN_CATEGORIES,
    MultiTurnEntry,
    load_multi_turn,
    load_multi_turn_results,
)
from toolgauge.benchmarks.bfcl.protocol import BfclBenchmark, BfclMode, missing_predictions_warning, recorded_turns
from toolgauge.cli.common import (
    Mode,
    RunFlags,
    execute,
    existing_data,
    limit_items,
    resolved_model,
    run_command,
    split_list,
    warn,
)
from toolgauge.datasets.resolve import data_or_official
from toolgauge.errors import UsageError
from toolgauge.settings import CallSettings

BfclRun = BfclBenchmark | BfclMultiTurnBenchmark | BfclMemoryBenchmark

DataOpt = Annotated[
    Path | None,
    typer.Option(
        "--data",
        help="Folder with BFCL_v4_<category>.json and possible_answer/ (default: the cached official data).",
    ),
]


def build(
    *,
    data: str | Path | None = None,
    categories: str | Sequence[str] | None = None,
    mode: BfclMode = "native",
    predictions: str | Path | None = None,
    underscore_to_dot: bool | None = None,
    temperature: float = 0.0,
    max_tokens: int = 512,
    limit: int | None = None,
) -> BfclRun:
    """The BFCL run: multi-turn categories on BFCL's backends (:func:`build_multi_turn`), else the AST ones.

    The options are spelt out (not ``**options``): sweeps and the API read them from this signature.

    Raises:
        UsageError: multi-turn and AST categories mixed in one run.
    """
    options: dict[str, Any] = {"mode": mode, "predictions": predictions, "underscore_to_dot": underscore_to_dot,
                               "temperature": temperature, "max_tokens": max_tokens, "limit": limit}  # fmt: skip
    data = existing_data(data_or_official("bfcl", data))  # the data first: a missing pull is the first thing to say
    chosen = (split_list(categories) or []) if isinstance(categories, str) else list(categories or [])
    if not chosen and predictions is not None:
        chosen = categories_with_results(Path(predictions))
    chosen, skipped = skip_web_search(chosen)
    if skipped:
        warn(skipped)
    memory = [c for c in chosen if c in BFCL_MEMORY_CATEGORIES]
    if memory:
        if len(memory) != len(chosen):
            raise UsageError("run BFCL's memory categories as a run of their own")
        return build_memory(data=data, categories=memory, mode=mode, predictions=predictions,
                            temperature=temperature, max_tokens=max_tokens, limit=limit)  # fmt: skip
    multi = [c for c in chosen if c in BFCL_MULTI_TURN_CATEGORIES]
    if not multi:
        return build_ast(data=data, categories=chosen or None, **options)
    if len(multi) != len(chosen):
        raise UsageError("run BFCL's multi-turn categories and its single-turn categories as separate runs")
    return build_multi_turn(data=data, categories=multi, **options)


def build_multi_turn(
    *,
    data: str | Path | None = None,
    categories: Sequence[str],
    mode: BfclMode = "native",
    predictions: str | Path | None = None,
    underscore_to_dot: bool | None = None,
    temperature: float = 0.0,
    max_tokens: int = 512,
    limit: int | None = None,
) -> BfclMultiTurnBenchmark:
    """The multi-turn run over ``categories`` (the first ``limit`` entries of each).

    ``native`` or ``prompt`` asks a model; ``replay`` scores BFCL's multi-turn result files at ``predictions``.

    Raises:
        UsageError: ``predictions`` missing in replay mode, or given in another.
        DataError: a data file is missing or malformed.
    """
    if (mode == "replay") != (predictions is not None):
        raise UsageError("mode replay scores BFCL result files: give predictions (and only in that mode)")
    del underscore_to_dot  # multi-turn function names have no dots
    bfcl_module("constants.executable_backend_config")  # no bfcl-eval: one line now, not a failure per sample
    data = existing_data(data_or_official("bfcl", data))
    entries = _multi_turn_entries(data, categories, limit)
    recorded = None
    if predictions is not None:
        wanted = {e.id for e in entries}
        found = load_multi_turn_results(Path(predictions), categories)
        recorded = {rid: result for rid, result in found.items() if rid in wanted}
    return BfclMultiTurnBenchmark(
        entries,
        data_label=str(data),
        mode=mode,
        settings=CallSettings(temperature=temperature, max_tokens=max_tokens),
        limit=limit,
        recorded=recorded,
    )


def build_ast(
    *,
    data: str | Path | None = None,
    categories: str | Sequence[str] | None = None,
    mode: BfclMode = "native",
    predictions: str | Path | None = None,
    underscore_to_dot: bool | None = None,
    temperature: float = 0.0,
    max_tokens: int = 512,
    limit: int | None = None,
) -> BfclBenchmark:
    """The BFCL run over ``categories`` of the data folder ``data`` (the first ``limit`` entries of each).

    ``data`` None: the cached official data (``toolgauge data pull bfcl``).

    ``mode`` ``native`` or ``prompt`` asks a model; ``replay`` scores the BFCL result files at
    ``predictions`` (one file, or a folder searched recursively), over the categories that have
    result files unless ``categories`` is given. ``categories`` is a comma list or a sequence of
    names. ``underscore_to_dot`` None: on for function-calling output, off for text.

    Raises:
        UsageError: no categories for a model run, or ``predictions`` missing in replay mode (or given in another).
        DataError: a data or result file is missing or malformed, or a category is unknown.
    """
    data = data_or_official("bfcl", data)
    if mode not in ("native", "prompt", "replay"):
        raise UsageError(f"mode {mode!r}: BFCL has the modes native, prompt, replay")
    if (mode == "replay") != (predictions is not None):
        raise UsageError("mode replay scores BFCL result files: give predictions (and only in that mode)")
    data_dir = existing_data(data)
    chosen = split_list(categories) if isinstance(categories, str) else (list(categories) if categories else None)
    recorded = None
    if predictions is not None:
        chosen = chosen or categories_with_results(Path(predictions))
    if not chosen:
        raise UsageError("give the BFCL categories to run, e.g. simple_python,multiple")
    entries = _entries(data_dir, chosen, limit)
    if predictions is not None:
        wanted = {e.id for e in entries}
        recorded = {rid: line.result for rid, line in load_bfcl_results(Path(predictions)).items() if rid in wanted}
    return BfclBenchmark(
        entries,
        data_label=str(data),
        mode=mode,
        underscore_to_dot=underscore_to_dot,
        settings=CallSettings(temperature=temperature, max_tokens=max_tokens),
        limit=limit,
        recorded=recorded,
    )


def rescore(config: Mapping[str, Any], variant: str | None) -> BfclRun:
    """Rebuild a stored BFCL run's benchmark from its config (the data folder must still be there).

    The stored outputs are what is scored: a replay run needs its result files no more.
    """
    if variant is not None:
        raise UsageError(f"variant {variant!r}: BFCL has no metric variants")
    limit = config.get("limit")
    if any(c in BFCL_MEMORY_CATEGORIES for c in config["categories"]):
        return rebuild_memory(config)
    if any(c in BFCL_MULTI_TURN_CATEGORIES for c in config["categories"]):
        return BfclMultiTurnBenchmark(
            _multi_turn_entries(Path(str(config["data"])), list(config["categories"]), limit),
            data_label=str(config["data"]),
            mode=config["mode"],
            settings=CallSettings(
                temperature=float(config.get("temperature", 0.0)), max_tokens=int(config.get("max_tokens", 512))
            ),
            limit=limit,
        )
    return BfclBenchmark(
        _entries(Path(str(config["data"])), list(config["categories"]), limit),
        data_label=str(config["data"]),
        mode=config["mode"],
        underscore_to_dot=config.get("underscore_to_dot"),
        settings=CallSettings(
            temperature=float(config.get("temperature", 0.0)), max_tokens=int(config.get("max_tokens", 512))
        ),
        limit=limit,
    )


def _multi_turn_entries(data: Path, categories: Sequence[str], limit: int | None) -> list[MultiTurnEntry]:
    return [entry for category in categories for entry in limit_items(load_multi_turn(data, category), limit)]


def _entries(data: Path, categories: list[str], limit: int | None) -> list[BfclEntry]:
    return limit_items(load_bfcl(data, categories), limit, group=lambda entry: entry.category)


UnderscoreOpt = Annotated[
    bool | None,
    typer.Option(
        "--underscore-to-dot/--keep-dots",
        help="BFCL name conversion (default: on for function calling, off for prompting text)",
    ),
]


def eval_bfcl(
    categories: Annotated[str, typer.Option("--categories", help="Comma list, e.g. simple_python,multiple")],
    data: DataOpt = None,
    mode: Annotated[
        Mode, typer.Option("--mode", help="native (function calling) or prompt (Python-call text)")
    ] = Mode.native,
    underscore_to_dot: UnderscoreOpt = None,
    *,
    flags: RunFlags,
) -> None:
    """Run a model on BFCL's AST categories and score it with BFCL's checker rules."""
    settings = flags.call_settings()
    bench = build(
        data=data,
        categories=categories,
        mode="native" if mode is Mode.native else "prompt",
        underscore_to_dot=underscore_to_dot,
        temperature=settings.temperature,
        max_tokens=settings.max_tokens,
        limit=flags.limit,
    )
    shown, client = resolved_model(bench, flags.model_spec, flags.timeout)
    execute(bench, shown, flags, client=client)


def score_bfcl(
    predictions: Annotated[
        Path, typer.Option("--predictions", help="BFCL result file or folder (searched recursively).")
    ],
    data: DataOpt = None,
    categories: Annotated[
        str | None, typer.Option("--categories", help="Comma list (default: the categories that have result files)")
    ] = None,
    underscore_to_dot: UnderscoreOpt = None,
    *,
    flags: RunFlags,
) -> None:
    """Rescore BFCL result files (``{"id", "result"}`` lines) with BFCL's checker rules."""
    from toolgauge.models.offline import NoModel, ReplayClient

    bench = build(
        data=data, categories=categories, mode="replay", predictions=predictions, underscore_to_dot=underscore_to_dot
    )
    missing = missing_predictions_warning(bench.missing_predictions(), len(bench.entries))
    if missing:
        warn(missing)
    model = f"replay:{predictions}"
    if isinstance(bench, BfclMultiTurnBenchmark | BfclMemoryBenchmark):
        # The episodes decode the recorded turns themselves: no model is asked.
        execute(bench, model, flags, client=NoModel(model))
        return
    execute(bench, model, flags, client=ReplayClient(recorded_turns(bench.recorded or {}), name=model))


def add_commands(groups: CommandGroups) -> None:
    """Mount ``eval bfcl`` and ``score bfcl``."""
    groups.eval.command("bfcl")(run_command()(eval_bfcl))
    groups.score.command("bfcl")(run_command(engine=None, limit=False)(score_bfcl))
