"""Make a suite run from its options (the CLI, the API, sweeps and ``rescore`` all call :func:`build`)."""

from __future__ import annotations

from toolgauge.benchmarks.suite.options import BUILTIN, SuiteOptions
from toolgauge.benchmarks.suite.protocol import SuiteBenchmark
from toolgauge.selection import existing_data, limit_items


def build(options: SuiteOptions | None = None) -> SuiteBenchmark:
    """The suite run over ``options.data`` (None: the built-in sample suite), its first ``options.limit`` dialogues.

    Raises:
        MissingDataPath: no file at ``options.data``.
        DataError: a bad line in the file.
    """
    from toolgauge.benchmarks.suite.loader import builtin_suite_path, load_suite

    options = options if options is not None else SuiteOptions()
    path = existing_data(options.data) if options.data is not None else builtin_suite_path()
    return SuiteBenchmark(
        limit_items(load_suite(path), options.limit),
        options=options,
        data_label=BUILTIN if options.data is None else str(path),
    )
