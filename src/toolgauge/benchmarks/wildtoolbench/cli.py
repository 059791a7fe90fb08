"""``eval wildtoolbench`` and ``score wildtoolbench``."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from toolgauge.cli import (
    ConcurrencyOpt,
    JsonOpt,
    LimitOpt,
    MaxTokOpt,
    ModelOpt,
    NoCacheOpt,
    QuietOpt,
    ResumeOpt,
    RetriesOpt,
    SamplesOpt,
    StoreOpt,
    TempOpt,
    TimeoutOpt,
    ToolChoice,
    ToolChoiceOpt,
    Variant,
    eval_app,
    execute,
    guarded,
    require_finite,
    resolved_model,
    run_options,
    score_app,
)
from toolgauge.driver import RunOptions
from toolgauge.models.base import ModelClient
from toolgauge.settings import CallSettings


class Language(StrEnum):
    """Which half of an official session file to read."""

    en = "en"
    zh = "zh"


class PredictionFormat(StrEnum):
    """Format of a ``--predictions`` file."""

    auto = "auto"
    steps = "steps"
    official = "official"


DataOpt = Annotated[
    Path | None,
    typer.Option(
        "--data",
        help="Sessions: the official Wild-Tool-Bench.jsonl or toolgauge's session format "
        "(default: the built-in sample sessions).",
    ),
]
LanguageOpt = Annotated[Language, typer.Option("--language", help="en | zh: which half of an official file to read.")]
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


def _sessions(data: Path | None, language: Language, limit: int | None) -> tuple[list[Any], str]:
    from toolgauge.benchmarks.wildtoolbench.loader import builtin_wild_path, load_wild

    path = data or builtin_wild_path()
    sessions = load_wild(path, language.value)
    return (sessions[:limit] if limit else sessions), ("builtin:wild_sample" if data is None else str(path))


def _run_and_report(
    bench: Any,
    model: str,
    options: RunOptions,
    *,
    as_json: bool,
    samples: Path | None,
    predictions_out: Path | None,
    steps_out: Path | None,
    client: ModelClient | None = None,
) -> None:
    """Run, write the requested files (whole, at the end), print; exit 1 when every session failed."""
    from toolgauge.benchmarks.wildtoolbench.io import write_official_results, write_steps

    outputs: dict[str, tuple[Path, Callable[[], None]]] = {}
    if predictions_out is not None:
        outputs["official result file"] = (
            predictions_out,
            lambda: write_official_results(predictions_out, bench.results, model_name=model),
        )
    if steps_out is not None:
        outputs["step JSONL"] = (steps_out, lambda: write_steps(steps_out, bench.results))
    execute(bench, model, options, as_json=as_json, samples=samples, client=client, outputs=outputs, unit="session")


@eval_app.command("wildtoolbench")
def eval_wild(
    model: ModelOpt,
    data: DataOpt = None,
    language: LanguageOpt = Language.en,
    variant: WildVariantOpt = Variant.reference,
    tool_choice: ToolChoiceOpt = ToolChoice.auto,
    store: StoreOpt = None,
    concurrency: ConcurrencyOpt = 4,
    timeout: TimeoutOpt = 120.0,
    max_retries: RetriesOpt = 4,
    no_cache: NoCacheOpt = False,
    resume: ResumeOpt = None,
    as_json: JsonOpt = False,
    samples: SamplesOpt = None,
    predictions_out: PredictionsOutOpt = None,
    steps_out: StepsOutOpt = None,
    limit: LimitOpt = None,
    quiet: QuietOpt = False,
    temperature: TempOpt = 0.0,
    max_tokens: MaxTokOpt = 512,
) -> None:
    """Run a model on WildToolBench sessions (4 tasks each, official online loop) and score it."""

    def body() -> None:
        from toolgauge.benchmarks.wildtoolbench.protocol import WildBenchmark

        require_finite(temperature=temperature, timeout=timeout)
        sessions, label = _sessions(data, language, limit)
        bench = WildBenchmark(
            sessions,
            data_label=label,
            language=language.value,
            variant=variant.value,
            settings=CallSettings(temperature=temperature, max_tokens=max_tokens, tool_choice=tool_choice.value),
        )
        opts = run_options(
            store=store, concurrency=concurrency, timeout=timeout, max_retries=max_retries,
            no_cache=no_cache, resume=resume, quiet=quiet,
        )  # fmt: skip
        shown, client = resolved_model(bench, model, timeout)
        _run_and_report(
            bench, shown, opts, as_json=as_json, samples=samples, predictions_out=predictions_out,
            steps_out=steps_out, client=client,
        )  # fmt: skip

    guarded(body)


@score_app.command("wildtoolbench")
def score_wild(
    predictions: Annotated[
        Path, typer.Option("--predictions", help="Step JSONL, or an official Wild-Tool-Bench_result.jsonl.")
    ],
    data: DataOpt = None,
    prediction_format: Annotated[
        PredictionFormat, typer.Option("--format", help="auto | steps | official (auto: by the first line).")
    ] = PredictionFormat.auto,
    language: LanguageOpt = Language.en,
    variant: WildVariantOpt = Variant.reference,
    store: StoreOpt = None,
    as_json: JsonOpt = False,
    samples: SamplesOpt = None,
    predictions_out: PredictionsOutOpt = None,
    steps_out: StepsOutOpt = None,
    quiet: QuietOpt = True,
) -> None:
    """Rescore recorded WildToolBench runs: toolgauge step JSONL or the official harness's result file."""

    def body() -> None:
        from toolgauge.benchmarks.wildtoolbench.io import detect_format, read_official
        from toolgauge.benchmarks.wildtoolbench.protocol import WildBenchmark
        from toolgauge.models.offline import ReplayClient

        chosen = detect_format(predictions) if prediction_format is PredictionFormat.auto else prediction_format.value
        sessions, label = _sessions(data, language, None)
        recorded = None
        client: ModelClient | None = None
        if chosen == "official":
            recorded = read_official(predictions)
            known = {s.id for s in sessions}
            if not known & set(recorded):
                raise _no_overlap(predictions, recorded)
            sessions = [s for s in sessions if s.id in recorded]
            client = ReplayClient({}, name=f"official:{predictions}")  # never asked: the logs are the run
        bench = WildBenchmark(sessions, data_label=label, language=language.value, variant=variant.value,
                              recorded=recorded)  # fmt: skip
        opts = run_options(
            store=store, concurrency=64, timeout=60.0, max_retries=0, no_cache=True, resume=None, quiet=quiet
        )
        _run_and_report(
            bench, f"replay:{predictions}", opts, as_json=as_json, samples=samples, predictions_out=predictions_out,
            steps_out=steps_out, client=client,
        )  # fmt: skip

    guarded(body)


def _no_overlap(path: Path, recorded: Mapping[str, Any]) -> Exception:
    from toolgauge.errors import DataError

    first = next(iter(recorded))
    return DataError(str(path), f"none of its {len(recorded)} sessions is in the data (first: {first!r})", field="id")


# --- tables ------------------------------------------------------------------------------------------------
