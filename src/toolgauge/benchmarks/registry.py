"""The benchmarks toolgauge knows: one line per benchmark package, each exposing ``SPEC``.

Adding a benchmark is one folder under ``toolgauge/benchmarks/`` plus one line here
(docs/adding-a-benchmark.md). Packages are imported when the registry is first read.
"""

from __future__ import annotations

import importlib
from functools import cache

from toolgauge.benchmark import BenchmarkSpec

PACKAGES = (
    "toolgauge.benchmarks.suite",
    "toolgauge.benchmarks.mtu",
    "toolgauge.benchmarks.bfcl",
    "toolgauge.benchmarks.wildtoolbench",
    "toolgauge.benchmarks.tool_genesis",
    "toolgauge.benchmarks.toolgate",
)


@cache
def specs() -> tuple[BenchmarkSpec, ...]:
    """Every registered benchmark, in registry order."""
    found: list[BenchmarkSpec] = []
    for package in PACKAGES:
        spec = getattr(importlib.import_module(package), "SPEC", None)
        if not isinstance(spec, BenchmarkSpec):
            raise TypeError(f"{package} is registered but has no SPEC (a toolgauge.benchmark.BenchmarkSpec)")
        found.append(spec)
    return tuple(found)


def spec_for_run(run_name: str) -> BenchmarkSpec | None:
    """The benchmark whose runs are stored under ``run_name`` (``Benchmark.name``), or None."""
    return next((s for s in specs() if run_name in s.run_names), None)


def spec_named(name: str) -> BenchmarkSpec | None:
    """The benchmark called ``name`` on the command line, or None."""
    return next((s for s in specs() if s.name == name), None)
