"""Typed results: what a scored run is, for the store, the exports, the reports and the Python API.

A run's results are a flat list of :class:`Metric` values (overall, or one group of a breakdown),
the settings that define what was measured, benchmark-specific ``details`` that are not single
numbers (an error taxonomy's examples, a data-defect list), warnings, and the run record. Each
scored unit (a sample, or a turn of one) is a :class:`SampleScore`. Everything here is plain
data: no I/O, nothing that knows a benchmark.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field

from toolgauge.cost import Price

MetricKind = Literal["rate", "count", "mean"]


class Metric(BaseModel):
    """One metric value: overall (``group`` None) or for one group of a breakdown.

    ``by`` names the breakdown (``"split"``, ``"category"``, ``"task_type"``) and ``group`` the
    group within it (``"S-S"``). ``n`` is the number of units the value is over. ``stderr`` and the
    interval are filled by repeated runs; a single run leaves them empty.
    """

    name: str
    value: float | int | None
    group: str | None = None
    by: str | None = None
    n: int | None = None
    kind: MetricKind = "rate"
    stderr: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None


class SampleScore(BaseModel):
    """The verdict on one scored unit: a sample, or one turn or task of it.

    ``value`` is the unit's headline score (1.0 / 0.0 for pass/fail), ``scores`` the other named
    per-unit measures, ``explanation`` why, ``error`` the run error of the sample it belongs to
    (a failed sample is scored as an empty reply), ``metadata`` what a reader needs to find and
    understand it (split, category, the model's calls).
    """

    id: str
    sample: str
    value: float | None = None
    scores: dict[str, float | int | bool | str | None] = Field(default_factory=dict)
    explanation: str | None = None
    error: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    # Repeats (``--epochs K``): which try this verdict is of (1-based).
    epoch: int = 1
    # The unit a bootstrap resamples (a session, a server, a dialogue); None: the sample itself.
    cluster: str | None = None
    # Denominators of ratio metrics: a metric over units is sum(scores[m] * w) / sum(w), w =
    # weights.get(m, 1). Parameter accuracy of a sample with 3 of 4 right: score 0.75, weight 4.
    weights: dict[str, float] = Field(default_factory=dict)


class Estimate(BaseModel):
    """A mean with its standard error and 95% interval over ``n`` clusters (None where not measured)."""

    mean: float | None
    stderr: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    n: int = 0


class MetricSummary(Estimate):
    """A headline metric over repeats: mean, standard error and 95% interval over ``n`` clusters."""

    epochs: int = 1


class Provenance(BaseModel):
    """What reproduces a run: versions, the model and its options, the benchmark's options and data."""

    toolgauge_version: str
    model: str
    model_options: dict[str, Any] = Field(default_factory=dict)
    benchmark_options: dict[str, Any] = Field(default_factory=dict)
    # Data file path (as given) -> sha256 of its bytes.
    data_files: dict[str, str] = Field(default_factory=dict)
    # Official dataset name -> its pinned revision, for data read from the data cache (``toolgauge data``).
    datasets: dict[str, str] = Field(default_factory=dict)
    limit: int | None = None
    seed: int = 0
    epochs: int = 1


class SampleFailure(BaseModel):
    """A sample whose episode raised: its key and the error."""

    key: str
    error: str


# stopped_budget: the next model call would have crossed --max-cost or --max-tokens-total (resumable).
RunStatus = Literal["running", "finished", "finished_with_errors", "failed", "interrupted", "stopped_budget"]


class RunStats(BaseModel):
    """How the run went: identity, status, counts, tokens and time."""

    id: str
    model: str
    status: RunStatus
    samples: int
    sample_errors: int = 0
    first_error: SampleFailure | None = None
    resumed_samples: int = 0
    model_calls: int = 0
    cached_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    # Tokens of answers taken from the response cache: not spent by this run, reported apart.
    cached_input_tokens: int = 0
    cached_output_tokens: int = 0
    epochs: int = 1
    wall_seconds: float = 0.0
    # USD spent by real calls (cached ones cost 0), priced per model (toolgauge/cost.py); None: a price is
    # unknown (a model of your own without --price). ``price`` says where the evaluated model's price came from.
    cost_usd: float | None = None
    price: str | None = None
    # The evaluated model's price itself (None: unknown), for the cost of each of its calls (``transcript``).
    unit_price: Price | None = None
    # --name and --tag (store/run_meta.py), and the response cache mode (--cache).
    name: str | None = None
    tags: dict[str, str] = Field(default_factory=dict)
    cache: str | None = None


class EvalResults(BaseModel):
    """A scored run: metric values, the settings they were measured under, extras, warnings, the run."""

    benchmark: str
    settings: dict[str, Any] = Field(default_factory=dict)
    metrics: list[Metric] = Field(default_factory=list)
    details: dict[str, Any] = Field(default_factory=dict)
    warnings: list[str] = Field(default_factory=list)
    run: RunStats | None = None
    # The headline metrics with their spread (filled for every run; the interval needs >= 2 clusters).
    summary: dict[str, MetricSummary] = Field(default_factory=dict)
    # Repeats of a pass/fail headline: k (as a string, JSON keys) -> pass@k and tau-bench's pass^k.
    pass_at_k: dict[str, float] = Field(default_factory=dict)
    pass_hat_k: dict[str, float] = Field(default_factory=dict)
    provenance: Provenance | None = None

    def metric(self, name: str, group: str | None = None, by: str | None = None) -> Metric | None:
        """The metric ``name`` of ``group`` (overall when None); ``by`` narrows when group labels repeat."""
        for m in self.metrics:
            if m.name == name and m.group == group and (by is None or m.by == by):
                return m
        return None

    def value(self, name: str, group: str | None = None, by: str | None = None) -> float | int | None:
        """The value of :meth:`metric`, or None when there is no such metric."""
        found = self.metric(name, group, by)
        return None if found is None else found.value

    def overall(self) -> list[Metric]:
        """The metrics over the whole run, in order."""
        return [m for m in self.metrics if m.group is None]

    def breakdowns(self) -> list[str]:
        """The names of the breakdowns (``by``) present, in first-seen order."""
        seen: dict[str, None] = {}
        for m in self.metrics:
            if m.by is not None:
                seen.setdefault(m.by, None)
        return list(seen)

    def groups(self, by: str) -> list[str]:
        """The groups of breakdown ``by``, in first-seen order."""
        seen: dict[str, None] = {}
        for m in self.metrics:
            if m.by == by and m.group is not None:
                seen.setdefault(m.group, None)
        return list(seen)

    def without_scores(self) -> EvalResults:
        """The run, settings and warnings only: what a run whose every sample failed keeps."""
        return EvalResults(benchmark=self.benchmark, settings=self.settings, warnings=self.warnings, run=self.run)


def metrics_from_table(
    table: dict[str, dict[str, Any]],
    *,
    by: str | None,
    kinds: dict[str, MetricKind] | None = None,
    n_field: str = "n",
) -> list[Metric]:
    """Turn ``{group: {metric: value, "n": count}}`` into metrics (``by`` None: the keys are overall).

    Only numbers become metrics (booleans and text are skipped); ``n_field`` is each row's count.
    """
    kinds = kinds or {}
    out: list[Metric] = []
    for group, row in table.items():
        n = row.get(n_field)
        for name, value in row.items():
            if name == n_field or isinstance(value, bool) or not isinstance(value, int | float):
                continue
            out.append(
                Metric(
                    name=name,
                    value=value,
                    group=None if by is None else group,
                    by=by,
                    n=n if isinstance(n, int) and not isinstance(n, bool) else None,
                    kind=kinds.get(name, "rate"),
                )
            )
    return out


SampleScores = Sequence[SampleScore] | Callable[[], Iterable[SampleScore]]


class ScoredRun:
    """What a benchmark's pure ``score()`` returns: the results and the per-unit scores.

    ``samples`` is a list, or a function that makes the scores one at a time: then they are made
    only when they are written (a long run need not hold one per turn), and every call makes them
    anew.
    """

    def __init__(self, results: EvalResults, samples: SampleScores = ()):
        self.results = results
        self._samples = samples

    def iter_samples(self) -> Iterator[SampleScore]:
        """Yield the per-unit scores in order."""
        return iter(self._samples() if callable(self._samples) else self._samples)

    @property
    def samples(self) -> list[SampleScore]:
        """Every per-unit score at once (for small runs and tests)."""
        return list(self.iter_samples())
