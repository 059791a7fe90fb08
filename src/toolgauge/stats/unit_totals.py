"""What combining epochs keeps of each scored unit: per-cluster sums and per-try successes, in flat arrays.

A run of 100,000 dialogues scores about 230,000 units per epoch. Combining the epochs needs, per headline
metric, each cluster's ``(sum of score * weight, sum of weight)`` in each epoch, and, per sample, whether
each try succeeded. Held as Python lists of lists and tuples that was about 1 KB per dialogue; here it is
one index per cluster or sample id and a few bytes per metric and epoch (docs/benchmarks/memory.md).

Clusters and samples come out in the order of their ids, never in the order units came in (the order samples
finished, or a rescore's load order), and each sum is kept as two doubles (the rounded sum and its rounding
error, Knuth's TwoSum), so the totals do not depend on that order either: a run's bootstrap interval is a
function of its verdicts and seed only (docs/statistics.md).
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from toolgauge.results import SampleScore
from toolgauge.stats.passk import is_success

if TYPE_CHECKING:
    import numpy as np

# A try's state per sample and epoch: no unit with a value yet, every unit so far succeeded, one failed.
_NO_TRY, _SUCCESS, _FAILURE = 0, 1, 2


def number(value: object) -> float | None:
    """A unit's score as a float (booleans as 1.0 / 0.0); None for anything that is not a number."""
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, int | float):
        return float(value)
    return None


class _MetricTotals:
    """One metric's sums, ``epochs`` slots per id index, and its clusters in the order they were first scored."""

    __slots__ = ("order", "scored", "sums", "sums_error", "weights", "weights_error")

    def __init__(self) -> None:
        self.sums = array("d")
        self.weights = array("d")
        # The rounding error of each sum so far: sum + error is the exact total, whatever the order of the terms.
        self.sums_error = array("d")
        self.weights_error = array("d")
        self.scored = bytearray()  # per id index: 1 once a unit of that cluster scored this metric
        self.order = array("q")  # id indexes, first scored first


class UnitTotals:
    """Per-cluster totals of the headline metrics and per-sample try outcomes of ``epochs`` tries.

    Feed every unit of every epoch to :meth:`add`; then :meth:`cluster_totals` gives a metric's
    ``(clusters x epochs)`` arrays for :func:`~toolgauge.stats.bootstrap.clustered_bootstrap_arrays` and
    :meth:`tries` each sample's try outcomes for :func:`~toolgauge.stats.passk.pass_rates`.
    """

    def __init__(self, names: Sequence[str], epochs: int):
        self.epochs = epochs
        self._metrics = {name: _MetricTotals() for name in names}
        self._ids: dict[str, int] = {}  # cluster and sample ids share one index
        self._zeros = array("d", bytes(8 * epochs))
        self._is_cluster = bytearray()
        self._clusters = 0
        self._tries = bytearray()  # per id index, ``epochs`` states
        self._sample_order = array("q")  # id indexes of samples, first given a value first

    def _index(self, key: str) -> int:
        found = self._ids.get(key)
        if found is not None:
            return found
        index = self._ids[key] = len(self._ids)
        for metric in self._metrics.values():
            metric.sums.extend(self._zeros)
            metric.weights.extend(self._zeros)
            metric.sums_error.extend(self._zeros)
            metric.weights_error.extend(self._zeros)
            metric.scored.append(0)
        self._is_cluster.append(0)
        self._tries.extend(bytes(self.epochs))
        return index

    def add(self, unit: SampleScore, epoch: int) -> None:
        """Count one unit of try ``epoch`` (1-based)."""
        cluster = self._index(unit.cluster if unit.cluster is not None else unit.sample)
        if not self._is_cluster[cluster]:
            self._is_cluster[cluster] = 1
            self._clusters += 1
        slot = cluster * self.epochs + epoch - 1
        for name, metric in self._metrics.items():
            score = number(unit.scores.get(name))
            if score is None:
                continue
            weight = float(unit.weights.get(name, 1.0))
            if not metric.scored[cluster]:
                metric.scored[cluster] = 1
                metric.order.append(cluster)
            _add(metric.sums, metric.sums_error, slot, score * weight)
            _add(metric.weights, metric.weights_error, slot, weight)
        if unit.value is not None:
            sample = self._index(unit.sample)
            first = sample * self.epochs
            if not any(self._tries[first : first + self.epochs]):
                self._sample_order.append(sample)
            if self._tries[first + epoch - 1] != _FAILURE:
                self._tries[first + epoch - 1] = _SUCCESS if is_success(unit.value) else _FAILURE

    @property
    def clusters(self) -> int:
        """How many clusters the units belong to."""
        return self._clusters

    def scored(self, name: str) -> bool:
        """Whether any unit scored metric ``name``."""
        return len(self._metrics[name].order) > 0

    def cluster_totals(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """Metric ``name``'s ``(sum of score * weight, sum of weight)`` as two ``(clusters x epochs)`` arrays.

        Rows are the clusters that scored it, in the order of their ids.
        """
        import numpy as np

        metric = self._metrics[name]
        order = np.array(self._by_id(metric.order), dtype=np.int64)
        shape = (-1, self.epochs)

        def exact(total: array[float], error: array[float]) -> np.ndarray:
            # sum + error, rounded once: the correctly rounded total of the terms.
            both = np.frombuffer(total, dtype=np.float64) + np.frombuffer(error, dtype=np.float64)
            return both.reshape(shape)[order]

        return exact(metric.sums, metric.sums_error), exact(metric.weights, metric.weights_error)

    def _by_id(self, indexes: Sequence[int]) -> list[int]:
        """``indexes`` sorted by the ids they stand for."""
        ids = list(self._ids)  # an id's index is its position: ids are added in index order
        return sorted(indexes, key=ids.__getitem__)

    def tries(self) -> Iterator[list[bool]]:
        """Each sample's try outcomes in epoch order (tries without a valued unit left out), samples by id."""
        for sample in self._by_id(self._sample_order):
            first = sample * self.epochs
            yield [state == _SUCCESS for state in self._tries[first : first + self.epochs] if state != _NO_TRY]


def _add(total: array[float], error: array[float], slot: int, x: float) -> None:
    """Add ``x`` to ``total[slot]``, keeping the rounding error in ``error[slot]`` (Knuth's TwoSum)."""
    a = total[slot]
    s = a + x
    b = s - a
    total[slot] = s
    error[slot] += (a - (s - b)) + (x - b)
