"""Built-in sample suites in toolgauge's own multi-turn tool-calling format.

``data/sample.jsonl`` is a small suite of original dialogues (weather, calendar, travel,
banking, cooking, smart home) used by ``make demo`` and by tests that must run anywhere.
Load it with :func:`toolgauge.benchmarks.suite.loader.load_suite` on
:func:`toolgauge.benchmarks.suite.loader.builtin_suite_path`; the format is described in ``docs/datasets.md``.
"""
