"""Exponential backoff with full jitter, honouring Retry-After."""

from __future__ import annotations

import random


def backoff_delay(attempt: int, *, base: float, cap: float, retry_after: float | None, rng: random.Random) -> float:
    """Seconds to wait before retry number ``attempt`` (1-based).

    A server's Retry-After wins when given (capped); otherwise ``base * 2**(attempt-1)`` capped,
    scaled by a random factor in [0.5, 1.0) so that many workers do not retry in lockstep.
    """
    if retry_after is not None:
        return min(cap, retry_after)
    delay: float = min(cap, base * 2.0 ** (attempt - 1)) * (0.5 + rng.random() / 2)
    return delay
