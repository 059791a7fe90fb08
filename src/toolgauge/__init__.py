"""toolgauge: measure how well language models use tools and build them.

The Python API (docs/api.md)::

    import toolgauge

    run = toolgauge.evaluate("suite", model="gold", limit=3)
    print(run.results.value("tool_accuracy"))

``evaluate``, ``score``, ``rescore``, ``compare``, ``read_run`` and ``list_runs`` (and the ``_async`` forms) come
from :mod:`toolgauge.api`; they are imported on first use, so ``import toolgauge`` stays light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from toolgauge.api import (
        Evaluation,
        StoredRun,
        benchmark_names,
        compare,
        evaluate,
        evaluate_async,
        list_runs,
        read_run,
        rescore,
        score,
        score_async,
    )
    from toolgauge.results import EvalResults, Metric, SampleScore

__all__ = [
    "EvalResults",
    "Evaluation",
    "Metric",
    "SampleScore",
    "StoredRun",
    "__version__",
    "benchmark_names",
    "compare",
    "evaluate",
    "evaluate_async",
    "list_runs",
    "read_run",
    "rescore",
    "score",
    "score_async",
]
_RESULTS = ("EvalResults", "Metric", "SampleScore")


def __getattr__(name: str) -> Any:
    if name in __all__ and name not in _RESULTS:
        from toolgauge import api

        return getattr(api, name)
    if name in _RESULTS:
        from toolgauge import results

        return getattr(results, name)
    raise AttributeError(f"module 'toolgauge' has no attribute {name!r}")
