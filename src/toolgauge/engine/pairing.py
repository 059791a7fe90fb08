"""Pairing a run's samples with its outcomes, for scoring."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TypeVar

from pydantic import BaseModel

from toolgauge.engine.runner import SampleOutcome

S = TypeVar("S")
R = TypeVar("R", bound=BaseModel)


def in_step(
    samples: Iterable[tuple[str, S]], outcomes: Iterable[SampleOutcome[R]]
) -> Iterator[tuple[str, S, SampleOutcome[R] | None]]:
    """Yield (key, sample, its outcome or None when it did not run), reading both once, in input order.

    The engine returns outcomes in sample order and leaves out samples that never ran; scoring
    walks both in step so that neither is held whole (the outcomes read their results from the store).

    Raises:
        ValueError: an outcome is out of order or belongs to no sample.
    """
    pending = iter(outcomes)
    outcome = next(pending, None)
    for key, sample in samples:
        if outcome is not None and outcome.key == key:
            yield key, sample, outcome
            outcome = next(pending, None)
        else:
            yield key, sample, None
    if outcome is not None:
        raise ValueError(f"outcome {outcome.key!r} is not in sample order (or not a sample of this run)")
