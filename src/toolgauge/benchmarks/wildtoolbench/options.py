"""The options of a WildToolBench run (``eval wildtoolbench``) and of scoring recorded runs (``score wildtoolbench``).

:class:`WildLogFiles` are the files both commands can write from the run's session logs: command-line outputs
(as ``--samples`` is), not options of the run, so neither stored nor taken by the API or a sweep file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field

from toolgauge.benchmarks.wildtoolbench.records import Language
from toolgauge.options import Cli, LimitOptions, OptionsModel, SamplingOptions, ToolChoiceOptions

BUILTIN = "builtin:wild_sample"
"""The data label of the built-in sample sessions (what a run without the official file stores as its data)."""

DATA_HELP = (
    "Sessions: the official Wild-Tool-Bench.jsonl or toolgauge's session format "
    "(default: the cached official file once pulled, else the built-in sample sessions)."
)
LANGUAGE_HELP = "en | zh: which half of an official file to read."
VARIANT_HELP = "reference (the official rules) | strict (without their quirks)."

# As metrics.WildVariant, which the options do not import (the metrics are no part of the command line's start).
WildVariantChoice = Literal["reference", "strict"]


class WildOptions(ToolChoiceOptions, LimitOptions, SamplingOptions):
    """Run a model on WildToolBench sessions (4 tasks each, official online loop) and score it."""

    data: Path | None = Field(None, description=DATA_HELP)
    language: Language = Field("en", description=LANGUAGE_HELP)
    variant: WildVariantChoice = Field("reference", description=VARIANT_HELP)
    # Set by a run of an official result file (the sessions it holds), so that rescore rebuilds the same run.
    sessions: Annotated[list[str] | None, Cli(hidden=True)] = Field(
        None, description="Only these session ids (in data order), before limit."
    )


class WildScoreOptions(OptionsModel):
    """Rescore recorded WildToolBench runs: toolgauge step JSONL or the official harness's result file."""

    predictions: Path = Field(description="Step JSONL, or an official Wild-Tool-Bench_result.jsonl.")
    data: Path | None = Field(None, description=DATA_HELP)
    format: Literal["auto", "steps", "official"] = Field(
        "auto", description="auto | steps | official (auto: by the first line)."
    )
    language: Language = Field("en", description=LANGUAGE_HELP)
    variant: WildVariantChoice = Field("reference", description=VARIANT_HELP)


class WildLogFiles(OptionsModel):
    """The files written from a finished run's session logs (``eval`` and ``score wildtoolbench``)."""

    predictions_out: Path | None = Field(
        None,
        description="Write the run's logs as an official Wild-Tool-Bench_result.jsonl (for the official eval_runner).",
    )
    steps_out: Path | None = Field(
        None, description="Write the model's replies as step JSONL (replay them with replay:PATH)."
    )
