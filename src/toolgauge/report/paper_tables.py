"""The shape of what ``toolgauge paper`` lays out: a seed paper's tables and figures, filled from stored runs.

Each benchmark package computes its paper's blocks as pure functions over stored runs (no model calls) and
returns :class:`PaperBlock` values; the ``paper`` command prints them, writes them as JSON, or draws them on an
HTML page. A block names what it reproduces (``"Table 2"``, ``"Figure 5(a)"``), keeps the paper's column order
and units, and says in one line which run would fill it when its inputs are missing.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

# How a cell's value reads: a rate in [0, 1] shown as a percentage, a count, a plain number, a duration, text.
CellUnit = Literal["percent", "count", "number", "seconds", "hours", "tokens", "usd", "text"]
# How the HTML page draws a block besides its table (None: the table only).
ChartKind = Literal["bar", "line", "funnel", "heatmap", "scatter"]


class PaperCell(BaseModel):
    """One value of a table, with its 95% interval where the run has one."""

    value: float | int | str | None
    unit: CellUnit = "percent"
    ci_low: float | None = None
    ci_high: float | None = None
    n: int | None = None


class PaperRow(BaseModel):
    """One row: a model (a run, or a sweep's cell) or a category, and its cells in the block's column order."""

    label: str
    cells: list[PaperCell]
    run_ids: list[str] = Field(default_factory=list)


class PaperBlock(BaseModel):
    """One table or figure of a paper.

    Attributes:
        paper: The benchmark name (``tool-genesis``, ``wildtoolbench``, ``mtu-bench``, ``toolgate``).
        ref: What it reproduces, as the paper numbers it (``"Table 2"``, ``"Figure 5(a)"``, ``"App. D.1"``).
        title: A one-line caption.
        columns: Column headers, in the paper's order (the row label's column first).
        rows: The rows; empty when ``missing`` says why.
        missing: One line naming the run that would fill the block when the given runs lack its inputs.
        exact: Whether the block is the paper's definition to the letter (False: reconstructed; ``notes`` say how).
        notes: Short remarks printed under the block (definitions chosen, known biases).
        chart: How the HTML page draws it besides the table.
        data: Extra machine-readable values for ``--json`` and charts (series, grids).
    """

    paper: str
    ref: str
    title: str
    columns: list[str]
    rows: list[PaperRow] = Field(default_factory=list)
    missing: str | None = None
    exact: bool = True
    notes: list[str] = Field(default_factory=list)
    chart: ChartKind | None = None
    data: dict[str, Any] = Field(default_factory=dict)
