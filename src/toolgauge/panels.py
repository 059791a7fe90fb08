"""What a benchmark shows beyond its metrics: charts, tables and text built from its per-unit scores.

A benchmark may give the viewer (``toolgauge view``, ``report --html``) panels for a run page and for a sample
page (``BenchmarkSpec.run_panels`` and ``sample_panels``): MTU-Bench's SATS by turn, WildToolBench's path
through the gold call graph, Tool-Genesis's unit tests per tool, ToolGate's audit tables, BFCL's gold calls.
They are pure functions of the run's results and per-unit scores (the verdicts ``toolgauge rescore`` makes),
so the viewer, the HTML report and a test all get the same panels. A chart is a Vega-Lite spec (made with
altair, a ``view`` extra); the viewer renders it to SVG offline. All text is untrusted: the front end shows
it as text, never as markup.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from toolgauge.results import EvalResults, SampleScore

Cell = str | int | float | bool | None


class ChartPanel(BaseModel):
    """A Vega-Lite chart (``spec``), drawn as SVG by the viewer."""

    kind: Literal["chart"] = "chart"
    name: str
    title: str
    spec: dict[str, Any]
    note: str | None = None


class TablePanel(BaseModel):
    """A table: its column headers and its rows (one cell per column)."""

    kind: Literal["table"] = "table"
    name: str
    title: str
    columns: list[str]
    rows: list[list[Cell]]
    note: str | None = None


class TextPanel(BaseModel):
    """Preformatted text (JSON of calls, a listing), shown as is."""

    kind: Literal["text"] = "text"
    name: str
    title: str
    text: str
    note: str | None = None


Panel = Annotated[ChartPanel | TablePanel | TextPanel, Field(discriminator="kind")]

# A run's panels from its results and every per-unit score (all epochs); a sample's from the units of that sample.
RunPanels = Callable[[EvalResults, Sequence[SampleScore]], list[Panel]]
SamplePanels = Callable[[Sequence[SampleScore]], list[Panel]]
