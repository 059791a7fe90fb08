"""The options of a BFCL run (``eval bfcl``) and of scoring BFCL result files (``score bfcl``)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field

from toolgauge.options import Cli, CommaList, LimitOptions, OptionsModel, SamplingOptions

DATA_HELP = "Folder with BFCL_v4_<category>.json and possible_answer/ (default: the cached official data)."
UNDERSCORE_HELP = "BFCL name conversion (default: on for function calling, off for prompting text)"
UnderscoreToDot = Annotated[bool | None, Cli(names=("--underscore-to-dot/--keep-dots",))]


class BfclOptions(LimitOptions, SamplingOptions):
    """Run a model on BFCL's AST categories and score it with BFCL's checker rules."""

    data: Path | None = Field(None, description=DATA_HELP)
    categories: Annotated[CommaList | None, Cli(required=True)] = Field(
        None, description="Comma list, e.g. simple_python,multiple"
    )
    # ``replay`` scores result files (``score bfcl``): the run is stored so, and rescored from its stored outputs.
    mode: Annotated[Literal["native", "prompt", "replay"], Cli(choices=("native", "prompt"))] = Field(
        "native", description="native (function calling) or prompt (Python-call text)"
    )
    underscore_to_dot: UnderscoreToDot = Field(None, description=UNDERSCORE_HELP)
    memory_dir: Path | None = Field(
        None,
        description="Folder for BFCL memory snapshots, one sub-folder per run (default: $TOOLGAUGE_BFCL_MEMORY_DIR, "
        "else .toolgauge/bfcl_memory).",
    )
    # The result files of mode replay: what the run replays, not what defines it (not stored with the run).
    predictions: Annotated[Path | None, Cli(hidden=True)] = Field(
        None, exclude=True, description="BFCL result file or folder (mode replay)."
    )


class BfclScoreOptions(OptionsModel):
    """Rescore BFCL result files (``{"id", "result"}`` lines) with BFCL's checker rules."""

    predictions: Path = Field(description="BFCL result file or folder (searched recursively).")
    data: Path | None = Field(None, description=DATA_HELP)
    categories: CommaList | None = Field(
        None, description="Comma list (default: the categories that have result files)"
    )
    underscore_to_dot: UnderscoreToDot = Field(None, description=UNDERSCORE_HELP)
