"""The shape of what ``toolgauge paper`` lays out: a seed paper's tables and figures, filled from stored runs.

Each benchmark package computes its paper's blocks as pure functions over stored runs (no model calls) and
returns :class:`PaperBlock` values; the ``paper`` command prints them, writes them as JSON, or draws them on an
HTML page. A block names what it reproduces (``"Table 2"``, ``"Figure 5(a)"``), keeps the paper's column order
and units, and says in one line which run would fill it when its inputs are missing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field

from toolgauge.results import EvalResults, Provenance, SampleScore

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


class PaperRun:
    """A stored run as a benchmark's ``paper_blocks`` reads it: identity, label, settings and verdicts.

    ``label`` is the row label: the run's name when it has one, else its model. ``scores()`` are the per-unit
    verdicts (the benchmark's scoring of the stored outputs, every epoch combined: what ``api.stored_scores``
    returns) and ``samples()`` the ``(key, sample)`` pairs of the data the run was made from; both are made
    on first use and kept (the command loads them from the store; tests pass lists).

    Attributes:
        id: The run id.
        benchmark: The stored run name (``Benchmark.name``, e.g. ``tool-genesis``).
        model: The evaluated model as stored.
        label: The row label (run name, else model).
        config: The run's stored config (its ``build`` settings).
        provenance: What reproduces it (model options, benchmark options), when stored.
        results: Its stored results (None for a run that never finished).
        tags: The run's tags (``--tag``), in order; empty when it has none.
    """

    def __init__(
        self,
        *,
        id: str,
        benchmark: str,
        model: str,
        config: dict[str, Any] | None = None,
        results: EvalResults | None = None,
        scores: Sequence[SampleScore] | Callable[[], Sequence[SampleScore]] = (),
        samples: Sequence[tuple[str, Any]] | Callable[[], Sequence[tuple[str, Any]]] = (),
        label: str | None = None,
        tags: Sequence[str] = (),
    ):
        self.id = id
        self.benchmark = benchmark
        self.model = model
        self.config = dict(config or {})
        self.results = results
        self.provenance: Provenance | None = results.provenance if results is not None else None
        self.label = label or run_label(self.config, model)
        self.tags = tuple(tags) or run_tags(self.config)
        self._scores = scores
        self._samples = samples
        self._scores_made: list[SampleScore] | None = None
        self._samples_made: list[tuple[str, Any]] | None = None

    def scores(self) -> list[SampleScore]:
        """The per-unit verdicts, made on the first call."""
        if self._scores_made is None:
            made = self._scores() if callable(self._scores) else self._scores
            self._scores_made = list(made)
        return self._scores_made

    def samples(self) -> list[tuple[str, Any]]:
        """The run's ``(key, sample)`` pairs (the benchmark's own sample objects), made on the first call."""
        if self._samples_made is None:
            made = self._samples() if callable(self._samples) else self._samples
            self._samples_made = list(made)
        return self._samples_made

    def option(self, name: str, default: Any = None) -> Any:
        """A benchmark option of the run: from its config, else its provenance's benchmark options."""
        if name in self.config and self.config[name] is not None:
            return self.config[name]
        if self.provenance is not None:
            return self.provenance.benchmark_options.get(name, default)
        return default

    def __repr__(self) -> str:
        return f"PaperRun({self.id!r}, {self.benchmark!r}, label={self.label!r})"


def run_label(config: dict[str, Any], model: str) -> str:
    """A run's row label: its name (``--name``, stored as ``run_name`` or ``name``) when set, else its model."""
    for key in ("run_name", "name"):
        value = config.get(key)
        if isinstance(value, str) and value.strip():
            return value
    return model


def run_tags(config: dict[str, Any]) -> tuple[str, ...]:
    """A run's tags as stored in its config (``tags``: a list of strings, or ``key=value`` mapping), else none."""
    value = config.get("tags")
    if isinstance(value, dict):
        return tuple(f"{k}={v}" for k, v in value.items())
    if isinstance(value, list | tuple):
        return tuple(str(v) for v in value)
    return ()


# What a benchmark's ``paper.py`` exposes: ``paper_blocks(runs, **options) -> list[PaperBlock]``.
PaperBlocks = Callable[..., list[PaperBlock]]
