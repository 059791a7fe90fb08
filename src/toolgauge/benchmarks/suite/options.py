"""The options of a suite run: declared once, for ``eval suite``, the API, sweeps and the stored config."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from toolgauge.options import LimitOptions, SamplingOptions, ToolChoiceOptions

BUILTIN = "builtin:sample"
"""The data label of the built-in sample suite (what ``data`` None runs)."""


class SuiteOptions(ToolChoiceOptions, LimitOptions, SamplingOptions):
    """Run a model on toolgauge's own multi-turn format (the built-in sample suite by default)."""

    data: Path | None = Field(None, description="A toolgauge JSONL file (default: the built-in sample suite)")
    variant: Literal["reference", "strict"] = Field("strict", description="Metric variant.")


def migrate_suite_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """A suite config stored before the options model (main@ffe3fb4: ``data`` label, ``n``) as the model's fields.

    The run took the first ``n`` dialogues: that is its ``limit``. (A config of today has a ``limit`` key.)
    """
    if "limit" in config:
        return dict(config)
    old = dict(config)
    n = old.pop("n")
    label = old.get("data")
    old["data"] = None if label == BUILTIN else label
    old["limit"] = n
    return old
