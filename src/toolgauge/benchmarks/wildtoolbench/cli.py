"""``eval wildtoolbench`` and ``score wildtoolbench``; ``build`` makes the run for the CLI and the API."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from toolgauge.benchmark import CommandGroups
from toolgauge.benchmarks.wildtoolbench.log import WildSessionResult
from toolgauge.benchmarks.wildtoolbench.metrics import WildVariant
from toolgauge.benchmarks.wildtoolbench.protocol import WildBenchmark, WildScoredRun
from toolgauge.benchmarks.wildtoolbench.records import Language
from toolgauge.cli.common import (
    RunFlags,
    ToolChoice,
    ToolChoiceOpt,
    Variant,
    execute,
    resolved_model,
    run_command,
)
from toolgauge.datasets.resolve import official_data
from toolgauge.driver import RunResult
from toolgauge.errors import DataError, UsageError
from toolgauge.report.export import check_output_file
from toolgauge.selection import existing_data, limit_items
from toolgauge.settings import CallSettings, ToolChoiceMode

BUILTIN = "builtin:wild_sample"


def build(
    *,
    data: str | Path | None = None,
    language: Language = "en",
    variant: WildVariant = "reference",
    tool_choice: ToolChoiceMode = "auto",
    temperature: float = 0.0,
    max_tokens: int = 512,
    limit: int | None = None,
    recorded: str | Path | None = None,
    sessions: Sequence[str] | None = None,
) -> WildBenchmark:
    """The WildToolBench run over ``data`` in ``language``.

    ``data`` None: the cached official file when it was pulled, else the built-in sample sessions
    (``builtin:wild_sample``, which may also be given).

    ``recorded``: an official ``Wild-Tool-Bench_result.jsonl`` whose logs are the run (no model is asked);
    only the sessions it holds are scored. ``sessions``: only these session ids (in data order; what a
    stored run of a result file keeps). ``limit``: the first N sessions of what is left.

    Raises:
        DataError: a file is malformed, or the result file shares no session with the data.
        UsageError: an unknown language or variant.
    """
    from toolgauge.benchmarks.wildtoolbench.io import read_official
    from toolgauge.benchmarks.wildtoolbench.loader import builtin_wild_path, load_wild

    if language not in ("en", "zh"):
        raise UsageError(f"language {language!r}: WildToolBench has the languages en, zh")
    if variant not in ("reference", "strict"):
        raise UsageError(f"variant {variant!r}: wildtoolbench has the variants reference, strict")
    if data is None:  # the official file once pulled (it needs --accept-terms), else the built-in sample
        data = official_data("wildtoolbench") or BUILTIN
    path = builtin_wild_path() if str(data) == BUILTIN else existing_data(data)
    loaded = load_wild(path, language)
    table = read_official(Path(recorded)) if recorded is not None else None
    if table is not None:
        if not {s.id for s in loaded} & set(table):
            raise DataError(
                str(recorded), f"none of its {len(table)} sessions is in the data (first: {next(iter(table))!r})",
                field="id",
            )  # fmt: skip
        loaded = [s for s in loaded if s.id in table]
    if sessions is not None:
        wanted = set(sessions)
        loaded = [s for s in loaded if s.id in wanted]
    return WildBenchmark(
        limit_items(loaded, limit),
        data_label=BUILTIN if str(data) == BUILTIN else str(path),
        language=language,
        variant=variant,
        settings=CallSettings(temperature=temperature, max_tokens=max_tokens, tool_choice=tool_choice),
        recorded=table,
        chosen=table is not None or sessions is not None,
    )


def rescore(config: Mapping[str, Any], variant: str | None) -> WildBenchmark:
    """Rebuild a stored WildToolBench run's benchmark from its config (the data file must still be there).

    The outputs are read from the store, so a run of an official result file needs only its session ids.
    """
    label = str(config["data"])
    chosen = config.get("sessions")
    return build(
        data=label,
        language="zh" if config.get("language") == "zh" else "en",
        variant="strict" if (variant or config["variant"]) == "strict" else "reference",
        tool_choice=config.get("tool_choice", "auto"),
        temperature=float(config.get("temperature", 0.0)),
        max_tokens=int(config.get("max_tokens", 512)),
        limit=None if chosen is not None else int(config["n"]),
        sessions=None if chosen is None else [str(s) for s in chosen],
    )


# --- the commands --------------------------------------------------------------------------------------------


class LanguageChoice(StrEnum):
    """Which half of an official session file to read."""

    en = "en"
    zh = "zh"


class FormatChoice(StrEnum):
    """Format of a ``--predictions`` file."""

    auto = "auto"
    steps = "steps"
    official = "official"


DataOpt = Annotated[
    Path | None,
    typer.Option(
        "--data",
        help="Sessions: the official Wild-Tool-Bench.jsonl or toolgauge's session format "
        "(default: the cached official file once pulled, else the built-in sample sessions).",
    ),
]
LanguageOpt = Annotated[
    LanguageChoice, typer.Option("--language", help="en | zh: which half of an official file to read.")
]
WildVariantOpt = Annotated[
    Variant, typer.Option("--variant", help="reference (the official rules) | strict (without their quirks).")
]
PredictionsOutOpt = Annotated[
    Path | None,
    typer.Option(
        "--predictions-out",
        help="Write the run's logs as an official Wild-Tool-Bench_result.jsonl (for the official eval_runner).",
    ),
]
StepsOutOpt = Annotated[
    Path | None,
    typer.Option("--steps-out", help="Write the model's replies as step JSONL (replay them with replay:PATH)."),
]


def _variant(variant: Variant) -> WildVariant:
    return "strict" if variant is Variant.strict else "reference"


def _language(language: LanguageChoice) -> Language:
    return "zh" if language is LanguageChoice.zh else "en"


def session_logs(result: RunResult[Any]) -> Iterator[WildSessionResult]:
    """The session logs of a scored WildToolBench run (read from its store, which must still be open)."""
    scored = result.scored
    if not isinstance(scored, WildScoredRun):  # pragma: no cover - only a WildBenchmark run reaches here
        raise TypeError(f"not a scored WildToolBench run: {type(scored).__name__}")
    return scored.session_logs()


def log_outputs(
    predictions_out: Path | None, steps_out: Path | None
) -> dict[str, tuple[Path, Callable[[RunResult[Any]], None]]]:
    """The writers of ``--predictions-out`` and ``--steps-out``, for ``execute(outputs=...)``."""
    from toolgauge.benchmarks.wildtoolbench.io import write_official_results, write_steps

    def official(result: RunResult[Any]) -> None:
        assert predictions_out is not None
        run = result.scored.results.run
        write_official_results(predictions_out, session_logs(result), model_name=run.model if run else "")

    def steps(result: RunResult[Any]) -> None:
        assert steps_out is not None
        write_steps(steps_out, session_logs(result))

    outputs: dict[str, tuple[Path, Callable[[RunResult[Any]], None]]] = {}
    if predictions_out is not None:
        check_output_file(predictions_out, "--predictions-out")
        outputs["official result file"] = (predictions_out, official)
    if steps_out is not None:
        check_output_file(steps_out, "--steps-out")
        outputs["step JSONL"] = (steps_out, steps)
    return outputs


def eval_wild(
    data: DataOpt = None,
    language: LanguageOpt = LanguageChoice.en,
    variant: WildVariantOpt = Variant.reference,
    tool_choice: ToolChoiceOpt = ToolChoice.auto,
    predictions_out: PredictionsOutOpt = None,
    steps_out: StepsOutOpt = None,
    *,
    flags: RunFlags,
) -> None:
    """Run a model on WildToolBench sessions (4 tasks each, official online loop) and score it."""
    settings = flags.call_settings(tool_choice)
    bench = build(
        data=data,
        language=_language(language),
        variant=_variant(variant),
        tool_choice=settings.tool_choice,
        temperature=settings.temperature,
        max_tokens=settings.max_tokens,
        limit=flags.limit,
    )
    shown, client = resolved_model(bench, flags.model_spec, flags.timeout)
    execute(bench, shown, flags, client=client, outputs=log_outputs(predictions_out, steps_out), unit="session")


def score_wild(
    predictions: Annotated[
        Path, typer.Option("--predictions", help="Step JSONL, or an official Wild-Tool-Bench_result.jsonl.")
    ],
    data: DataOpt = None,
    prediction_format: Annotated[
        FormatChoice, typer.Option("--format", help="auto | steps | official (auto: by the first line).")
    ] = FormatChoice.auto,
    language: LanguageOpt = LanguageChoice.en,
    variant: WildVariantOpt = Variant.reference,
    predictions_out: PredictionsOutOpt = None,
    steps_out: StepsOutOpt = None,
    *,
    flags: RunFlags,
) -> None:
    """Rescore recorded WildToolBench runs: toolgauge step JSONL or the official harness's result file."""
    from toolgauge.benchmarks.wildtoolbench.io import detect_format
    from toolgauge.models.offline import NoModel

    chosen = detect_format(predictions) if prediction_format is FormatChoice.auto else prediction_format.value
    outputs = log_outputs(predictions_out, steps_out)
    if chosen == "official":
        # The logs are the run: no model is asked.
        bench = build(data=data, language=_language(language), variant=_variant(variant), recorded=predictions)
        model = f"official:{predictions}"
        execute(bench, model, flags, client=NoModel(model), outputs=outputs, unit="session")
        return
    bench = build(data=data, language=_language(language), variant=_variant(variant))
    shown, client = resolved_model(bench, f"replay:{predictions}", flags.timeout)
    execute(bench, shown, flags, client=client, outputs=outputs, unit="session")


def add_commands(groups: CommandGroups) -> None:
    """Mount ``eval wildtoolbench`` and ``score wildtoolbench``."""
    groups.eval.command("wildtoolbench")(run_command()(eval_wild))
    groups.score.command("wildtoolbench")(run_command(engine=None, limit=False)(score_wild))
