"""The options of an MTU-Bench run (``eval mtu-bench``) and of scoring recorded replies (``score mtu-bench``)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator

from toolgauge.options import CommaList, LimitOptions, OptionsModel, SamplingOptions, ToolChoiceOptions

DATA_HELP = "Folder with <split>_eval.jsonl files (default: the cached official data)."


class MtuOptions(ToolChoiceOptions, LimitOptions, SamplingOptions):
    """Run a model on MTU-Bench's eval files and score it with MTU-Bench's metrics."""

    data: Path | None = Field(None, description=DATA_HELP)
    splits: CommaList | None = Field(None, description="Comma list of S-S,S-M,M-S,M-M,OOD")
    mode: Literal["prompt", "native"] = Field(
        "prompt", description="prompt (ReAct text, reference) or native tool calls"
    )
    variant: Literal["reference", "strict"] = Field("reference", description="Metric variant.")
    feedback: Literal["none", "parse", "tool", "param", "all"] = Field(
        "none",
        description="Recovery from feedback (A2): after a wrong reply of that kind, tell the model the kind of error "
        "and ask once more; recovery rates are reported beside the first-attempt score.",
    )

    @field_validator("splits")
    @classmethod
    def _sorted(cls, splits: list[str] | None) -> list[str] | None:
        # One run, one config: the splits' order changes no score (the metrics group by split), so it is kept sorted.
        return sorted(splits) if splits is not None else None


class MtuScoreOptions(OptionsModel):
    """Rescore recorded MTU-Bench replies (e.g. the published GPT-4 responses)."""

    predictions: Path = Field(description='File or folder of {"id","response"} lines.')
    data: Path | None = Field(None, description=DATA_HELP)
    splits: CommaList | None = Field(None, description="Comma list (default: the splits that have predictions)")
    variant: Literal["reference", "strict"] = Field("reference", description="Metric variant.")
