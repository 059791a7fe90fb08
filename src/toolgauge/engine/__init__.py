"""The one runner engine: concurrency, retries, timeouts, caching, resume, progress."""

from toolgauge.engine.pairing import in_step
from toolgauge.engine.runner import (
    EngineConfig,
    EpisodeContext,
    RunOutcome,
    SampleOutcome,
    run_episodes,
    stored_outcomes,
)

__all__ = [
    "EngineConfig",
    "EpisodeContext",
    "RunOutcome",
    "SampleOutcome",
    "in_step",
    "run_episodes",
    "stored_outcomes",
]
