"""``eval mtu-bench`` and ``score mtu-bench``; ``build`` makes the run for the CLI and the API."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any

import typer

from toolgauge.benchmark import CommandGroups
from toolgauge.benchmarks.mtu.loader import load_mtu, load_mtu_predictions
from toolgauge.benchmarks.mtu.metrics import MtuVariant
from toolgauge.benchmarks.mtu.protocol import MtuBenchmark, MtuMode, replay_turns, splits_with_predictions
from toolgauge.benchmarks.mtu.records import MTU_SPLITS, MtuItem, MtuPrediction
from toolgauge.cli.common import (
    Mode,
    RunFlags,
    ToolChoice,
    ToolChoiceOpt,
    Variant,
    execute,
    existing_data,
    limit_items,
    resolved_model,
    run_command,
    split_list,
)
from toolgauge.datasets.resolve import data_or_official
from toolgauge.errors import UsageError
from toolgauge.models.base import ModelClient
from toolgauge.models.offline import ReplayClient
from toolgauge.models.spec import display_spec
from toolgauge.settings import CallSettings, ToolChoiceMode

DataOpt = Annotated[
    Path | None,
    typer.Option("--data", help="Folder with <split>_eval.jsonl files (default: the cached official data)."),
]
VariantOpt = Annotated[Variant, typer.Option("--variant")]


def build(
    *,
    data: str | Path | None = None,
    splits: Sequence[str] | str | None = None,
    mode: MtuMode = "prompt",
    variant: MtuVariant = "reference",
    tool_choice: ToolChoiceMode = "auto",
    temperature: float = 0.0,
    max_tokens: int = 512,
    limit: int | None = None,
) -> MtuBenchmark:
    """The MTU-Bench run over ``data``'s eval files.

    Args:
        data: The folder with ``<split>_eval.jsonl`` files (None: the cached official data).
        splits: Which splits (a list, or a comma list as on the command line); all five when None.
        mode: ``prompt`` (the ReAct text prompt, as the reference) or ``native`` tool calls.
        variant: ``reference`` (the published scorer) or ``strict``.
        tool_choice: The tool-choice setting of native requests.
        temperature: Sampling temperature.
        max_tokens: Max tokens per reply.
        limit: Only the first ``limit`` items of each split.

    Raises:
        UsageError: an unknown mode or variant.
        DataError: an unknown split, a missing file or a bad line.
    """
    if mode not in ("prompt", "native"):
        raise UsageError(f"mode {mode!r}: MTU-Bench has the modes prompt, native")
    if variant not in ("reference", "strict"):
        raise UsageError(f"variant {variant!r}: MTU-Bench has the variants reference, strict")
    chosen = split_list(splits) if isinstance(splits, str) else splits
    path = existing_data(data_or_official("mtu-bench", data))
    return MtuBenchmark(
        limit_items(load_mtu(path, chosen), limit, group=lambda item: item.split),
        data_label=str(path),
        mode=mode,
        variant=variant,
        settings=CallSettings(temperature=temperature, max_tokens=max_tokens, tool_choice=tool_choice),
    )


def rescore(config: Mapping[str, Any], variant: str | None) -> MtuBenchmark:
    """Rebuild a stored MTU-Bench run's benchmark from its config (the eval files must still be there).

    The config keeps the splits and the number of items; a run made with ``--limit`` took the
    first N items of each split, and N is the one that gives that number.
    """
    stored = set(config["splits"])
    options: dict[str, Any] = {
        "data": str(config["data"]),
        "splits": [split for split in MTU_SPLITS if split in stored],
        "mode": "native" if config.get("mode") == "native" else "prompt",
        "variant": "reference" if (variant or config["variant"]) == "reference" else "strict",
        "tool_choice": config.get("tool_choice", "auto"),
        "temperature": float(config.get("temperature", 0.0)),
        "max_tokens": int(config.get("max_tokens", 512)),
    }
    bench = build(**options)
    limit = _per_split_limit(bench.items, int(config["n"]))
    return bench if limit is None else build(**options, limit=limit)


def _per_split_limit(items: Sequence[MtuItem], n: int) -> int | None:
    """The per-split limit that leaves ``n`` of ``items`` (None: all of them).

    Raises:
        UsageError: no limit does (the eval files changed since the run).
    """
    if n == len(items):
        return None
    sizes = Counter(item.split for item in items).values()
    for limit in range(1, max(sizes, default=0) + 1):
        if sum(min(limit, size) for size in sizes) == n:
            return limit
    raise UsageError(f"the run has {n} items, which no --limit of these eval files gives (have they changed?)")


def _model(bench: MtuBenchmark, spec: str, timeout: float) -> tuple[str, ModelClient]:
    """The model to run; recorded replies (``replay:PATH``) also add how they paired with the items to the warnings."""
    if not spec.startswith("replay:"):
        return resolved_model(bench, spec, timeout)
    path = Path(spec.removeprefix("replay:"))
    return _replay(bench, path, load_mtu_predictions(path))


def _replay(bench: MtuBenchmark, path: Path, recorded: Sequence[MtuPrediction]) -> tuple[str, ModelClient]:
    """A replay of ``recorded`` (read from ``path``) for ``bench``, whose warnings get the pairing's."""
    table, warnings = replay_turns(bench.items, recorded)
    bench.warnings.extend(warnings)
    spec = display_spec(f"replay:{path}")
    return spec, ReplayClient(table, name=spec)


def eval_mtu(
    data: DataOpt = None,
    splits: Annotated[str | None, typer.Option("--splits", help="Comma list of S-S,S-M,M-S,M-M,OOD")] = None,
    mode: Annotated[
        Mode, typer.Option("--mode", help="prompt (ReAct text, reference) or native tool calls")
    ] = Mode.prompt,
    variant: VariantOpt = Variant.reference,
    tool_choice: ToolChoiceOpt = ToolChoice.auto,
    *,
    flags: RunFlags,
) -> None:
    """Run a model on MTU-Bench's eval files and score it with MTU-Bench's metrics."""
    settings = flags.call_settings(tool_choice)
    bench = build(
        data=data,
        splits=split_list(splits),
        mode="native" if mode is Mode.native else "prompt",
        variant="strict" if variant is Variant.strict else "reference",
        tool_choice=settings.tool_choice,
        temperature=settings.temperature,
        max_tokens=settings.max_tokens,
        limit=flags.limit,
    )
    shown, client = _model(bench, flags.model_spec, flags.timeout)
    execute(bench, shown, flags, client=client)


def score_mtu(
    predictions: Annotated[Path, typer.Option("--predictions", help='File or folder of {"id","response"} lines.')],
    data: DataOpt = None,
    splits: Annotated[
        str | None, typer.Option("--splits", help="Comma list (default: the splits that have predictions)")
    ] = None,
    variant: VariantOpt = Variant.reference,
    *,
    flags: RunFlags,
) -> None:
    """Rescore recorded MTU-Bench replies (e.g. the published GPT-4 responses)."""
    recorded = load_mtu_predictions(predictions)
    bench = build(
        data=data,
        splits=split_list(splits) or splits_with_predictions(recorded),
        mode="prompt",
        variant="strict" if variant is Variant.strict else "reference",
    )
    shown, client = _replay(bench, predictions, recorded)
    execute(bench, shown, flags, client=client)


def add_commands(groups: CommandGroups) -> None:
    """Mount ``eval mtu-bench`` and ``score mtu-bench``."""
    groups.eval.command("mtu-bench")(run_command()(eval_mtu))
    groups.score.command("mtu-bench")(run_command(engine=None, limit=False)(score_mtu))
