"""toolgauge's own multi-turn tool-calling format, and the built-in sample suite.

``data/sample.jsonl`` is a small suite of original dialogues (weather, calendar, travel, banking,
cooking, smart home) used by ``make demo`` and by tests that must run anywhere; the format is
described in ``docs/datasets.md``. Scored with MTU-Bench's call metrics (:mod:`toolgauge.metrics.calls`;
strict variant by default): the package imports no other benchmark.
"""

from toolgauge.benchmark import BenchmarkSpec
from toolgauge.benchmarks.suite.options import SuiteOptions, migrate_suite_config
from toolgauge.report.call_metrics import render_call_metrics

SPEC = BenchmarkSpec(
    name="suite",
    title="toolgauge's own multi-turn format (built-in sample suite by default)",
    render=render_call_metrics,
    headline=("tool_accuracy", "parameter_accuracy", "success_rate"),
    variants=("reference", "strict"),
    options=SuiteOptions,
    migrate=migrate_suite_config,
)
