"""What an export reads: one stored run, its per-unit verdicts recomputed offline, and its transcripts.

The store keeps each sample's outputs and model calls, and the run's typed results; it does not
keep per-unit verdicts. They are recomputed from the stored outputs by the benchmark's own scoring
(``toolgauge rescore``'s machinery: no model is asked). A run whose benchmark cannot be rescored
(unknown to this toolgauge, no rescore, its data files gone) is exported from what the store has,
and ``note`` says so.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from toolgauge.engine.epochs import epoch_key, split_epoch_key
from toolgauge.errors import UsageError
from toolgauge.results import EvalResults, SampleScore
from toolgauge.store import open_store
from toolgauge.store.store import RunInfo, SampleState, Store
from toolgauge.store.transcripts import ModelCallRecord


@dataclass
class RunSource:
    """A stored run opened for export.

    ``scores`` are the per-unit verdicts, or None when the run could not be rescored (``note`` says
    why). ``states`` are the stored samples (status, error, latency) by key. The store stays open
    while the source is in use, for :meth:`transcript`.
    """

    run: RunInfo
    store: Store
    states: dict[str, SampleState]
    scores: list[SampleScore] | None
    note: str | None = None

    @property
    def results(self) -> EvalResults | None:
        """The run's stored results (what ``toolgauge report`` shows), None before it was scored."""
        return self.run.results

    def transcript(self, sample_key: str, epoch: int = 1) -> list[ModelCallRecord]:
        """Every stored model call of one sample (of every role), in the order they were made."""
        return self.store.transcript(self.run.id, transcript_key(sample_key, epoch))


def transcript_key(sample_key: str, epoch: int) -> str:
    """The store key of try ``epoch`` of sample ``sample_key`` (runs without repeats: the key itself)."""
    return epoch_key(sample_key, epoch)


def split_store_key(store_key: str) -> tuple[str, int]:
    """The (sample key, epoch) a store key names: the inverse of :func:`transcript_key`."""
    return split_epoch_key(store_key)


Verdicts = Callable[[RunInfo, "str | None"], "tuple[list[SampleScore] | None, str | None]"]
"""Recompute a run's per-unit verdicts (run, store URL) -> (scores, None), or (None, why not).

Supplied by the caller (the CLI): the core does not reach the benchmarks itself.
"""


@contextlib.contextmanager
def open_run(
    ref: str, store_url: str | None, verdicts: Verdicts, check: Callable[[RunInfo], None] | None = None
) -> Iterator[RunSource]:
    """Open run ``ref`` (an id, a unique start of one, or ``latest``) and recompute its verdicts.

    ``check`` sees the run first and may refuse it (raising :class:`UsageError`) before the verdicts cost a rescore.

    Raises:
        UsageError: no such run, the store cannot be opened, or ``check`` refused the run.
    """
    st = open_store(store_url, create=False)
    try:
        run = st.get_run(st.resolve_run_id(ref))
        if run is None:
            raise UsageError(f"no run {ref!r} in the store (see: toolgauge runs)")
        if check is not None:
            check(run)
        scores, note = verdicts(run, store_url)
        yield RunSource(run=run, store=st, states=st.sample_states(run.id), scores=scores, note=note)
    finally:
        st.close()
