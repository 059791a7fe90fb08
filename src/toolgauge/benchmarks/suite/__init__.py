"""toolgauge's own multi-turn tool-calling format, and the built-in sample suite.

``data/sample.jsonl`` is a small suite of original dialogues (weather, calendar, travel, banking,
cooking, smart home) used by ``make demo`` and by tests that must run anywhere; the format is
described in ``docs/datasets.md``. Scored with MTU-Bench's metrics (strict variant by default).
"""

from toolgauge.benchmark import BenchmarkSpec, lazy
from toolgauge.benchmarks.mtu.report import render_mtu

SPEC = BenchmarkSpec(
    name="suite",
    title="toolgauge's own multi-turn format (built-in sample suite by default)",
    run_names=("suite",),
    add_commands=lazy("toolgauge.benchmarks.suite.cli", "add_commands"),
    build=lazy("toolgauge.benchmarks.suite.cli", "build"),
    render=render_mtu,
    rescore=lazy("toolgauge.benchmarks.suite.cli", "rescore"),
    headline=("tool_accuracy", "parameter_accuracy", "success_rate"),
    variants=("reference", "strict"),
)
