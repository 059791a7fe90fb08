"""``eval suite``: toolgauge's own multi-turn format; ``build`` makes the run for the CLI and the API."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

import typer

from toolgauge.benchmark import CommandGroups
from toolgauge.benchmarks.suite.protocol import SuiteBenchmark
from toolgauge.cli.common import (
    RunFlags,
    ToolChoice,
    ToolChoiceOpt,
    Variant,
    execute,
    existing_data,
    limit_items,
    resolved_model,
    run_command,
)
from toolgauge.errors import UsageError
from toolgauge.metrics.calls import MtuVariant
from toolgauge.settings import CallSettings, ToolChoiceMode

BUILTIN = "builtin:sample"


def build(
    *,
    data: str | Path | None = None,
    limit: int | None = None,
    variant: MtuVariant = "strict",
    tool_choice: ToolChoiceMode = "auto",
    temperature: float = 0.0,
    max_tokens: int = 512,
) -> SuiteBenchmark:
    """The suite run over ``data`` (None: the built-in sample suite), its first ``limit`` dialogues."""
    from toolgauge.benchmarks.suite.loader import builtin_suite_path, load_suite

    if variant not in ("reference", "strict"):
        raise UsageError(f"variant {variant!r}: the suite has the variants reference, strict")
    path = existing_data(data) if data is not None else builtin_suite_path()
    return SuiteBenchmark(
        limit_items(load_suite(path), limit),
        data_label=BUILTIN if data is None else str(path),
        settings=CallSettings(temperature=temperature, max_tokens=max_tokens, tool_choice=tool_choice),
        variant=variant,
    )


def rescore(config: Mapping[str, Any], variant: str | None) -> SuiteBenchmark:
    """Rebuild a stored suite run's benchmark from its config (the data file must still be there)."""
    label = str(config["data"])
    return build(
        data=None if label == BUILTIN else label,
        limit=int(config["n"]),
        variant="reference" if (variant or config["variant"]) == "reference" else "strict",
        tool_choice=config.get("tool_choice", "auto"),
        temperature=float(config.get("temperature", 0.0)),
        max_tokens=int(config.get("max_tokens", 512)),
    )


def eval_suite(
    data: Annotated[
        Path | None, typer.Option("--data", help="A toolgauge JSONL file (default: the built-in sample suite)")
    ] = None,
    tool_choice: ToolChoiceOpt = ToolChoice.auto,
    variant: Annotated[Variant, typer.Option("--variant")] = Variant.strict,
    *,
    flags: RunFlags,
) -> None:
    """Run a model on toolgauge's own multi-turn format (the built-in sample suite by default)."""
    settings = flags.call_settings(tool_choice)
    bench = build(
        data=data,
        limit=flags.limit,
        variant="reference" if variant is Variant.reference else "strict",
        tool_choice=settings.tool_choice,
        temperature=settings.temperature,
        max_tokens=settings.max_tokens,
    )
    shown, client = resolved_model(bench, flags.model_spec, flags.timeout)
    execute(bench, shown, flags, client=client)


def add_commands(groups: CommandGroups) -> None:
    """Mount ``eval suite``."""
    groups.eval.command("suite")(run_command()(eval_suite))
